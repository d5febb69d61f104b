"""plot_rejection_curve / plot_learning_curves, and slow smoke runs of the IVM figure scripts."""
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from sparsegp.metrics import rejection_curve
from sparsegp.plotting import plot_learning_curves, plot_rejection_curve

from conftest import require_data

FIGURES = Path(__file__).resolve().parents[1] / "figures"


def test_rejection_curve_plot_draws_the_metric(rng):
    y = np.where(rng.random(200) < 0.3, 1, -1)
    p = np.clip(0.5 + 0.4 * y * rng.random(200) + 0.2 * rng.normal(size=200), 0, 1)
    ax = plot_rejection_curve(y, p, label="model", log_scale=False)
    frac, err = rejection_curve(p, y)
    x_plot, y_plot = ax.lines[0].get_data()
    np.testing.assert_allclose(x_plot, frac)
    np.testing.assert_allclose(y_plot, err)
    assert ax.get_legend().get_texts()[0].get_text() == "model"
    ax2 = plot_rejection_curve(y, p, max_fraction=0.2)
    x2, y2 = ax2.lines[0].get_data()
    assert x2.max() <= 0.2 and ax2.get_yscale() == "log"
    # zero error rates are not drawable on a log axis: they become gaps, not -inf
    assert np.all(np.isnan(y2) | (y2 > 0))


def test_learning_curves_mean_and_errors():
    n = [40, 80, 120]
    curves = {"a": np.array([[1.0, 2.0, np.nan], [3.0, 4.0, 6.0]]), "b": [5.0, 5.0, 5.0]}
    ax = plot_learning_curves(n, curves)
    a, b = ax.containers                  # one ErrorbarContainer per curve
    x, mean = a.lines[0].get_data()
    np.testing.assert_allclose(x, n)
    np.testing.assert_allclose(mean, [2.0, 3.0, 6.0])      # NaN left out of the mean
    np.testing.assert_allclose(b.lines[0].get_data()[1], 5.0)
    # standard error of the mean: std(ddof=1) / sqrt(count); one value -> no bar
    segs = a.lines[2][0].get_segments()
    np.testing.assert_allclose(segs[0][:, 1], [1.0, 3.0])
    np.testing.assert_allclose(segs[2][:, 1], [6.0, 6.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    with pytest.raises(ValueError, match="sizes"):
        plot_learning_curves([1, 2], {"a": [1.0, 2.0, 3.0]})


def _run_script(name, tmp_path, *args):
    spec = importlib.util.spec_from_file_location(name, FIGURES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(["--quick", "--out", str(tmp_path), *args])


# the quick runs cut the papers' fixed budgets further, so a fit ending before convergence is
# expected there and says so; the smoke test asks only that the script runs and draws
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sparsegp.exceptions.ConvergenceWarning")
def test_learning_curve_script_quick(tmp_path):
    path = _run_script("gfitc_fig1_learning_curves", tmp_path)
    assert os.path.getsize(path) > 0


@pytest.mark.slow
@pytest.mark.data
def test_rejection_script_quick(tmp_path, monkeypatch):
    require_data("mnist")
    path = _run_script("ivm_fig1_rejection", tmp_path)
    assert os.path.getsize(path) > 0
    stored = np.load(tmp_path / "ivm_fig1_rejection_quick.npz")
    assert set(stored.files) == {"y_test", "IVM", "SVM (n = 2000)"}
    os.remove(path)
    assert _run_script("ivm_fig1_rejection", tmp_path, "--redraw") == path   # no refit
    assert os.path.getsize(path) > 0
    # a rerun fits only what the store lacks: here nothing
    from sklearn.svm import SVC

    from sparsegp import IVMClassifier

    def refit(*args, **kwargs):
        raise AssertionError("a stored curve was refitted")

    monkeypatch.setattr(IVMClassifier, "fit", refit)
    monkeypatch.setattr(SVC, "fit", refit)
    assert _run_script("ivm_fig1_rejection", tmp_path) == path
