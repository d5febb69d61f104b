"""Plotting helpers and reproduction scripts of the stagewise classifier (seed 004)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparsegp import StagewiseGPClassifier
from sparsegp.datasets import make_xor
from sparsegp.kernels import SquaredExponential
from sparsegp.metrics import error_rate, mean_nlp
from sparsegp.plotting import plot_method_comparison, plot_stagewise_curves, summarize_runs

from conftest import require_data

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fitted():
    X, y = make_xor(60, random_state=0)
    Xt, yt = make_xor(40, random_state=1)
    est = StagewiseGPClassifier(d_max=8, optimizer=None, kernel=SquaredExponential(1.0, 0.7),
                                random_state=0)
    return est.fit(X, y), X, y, Xt, yt


def test_staged_curves_end_at_final_model(fitted):
    est, X, y, Xt, yt = fitted
    ax = plot_stagewise_curves(est, X, y, Xt, yt, metric="nlp", label="moment")
    train, test = ax.get_lines()
    assert len(train.get_xdata()) == 8
    assert test.get_ydata()[-1] == pytest.approx(mean_nlp(yt, est.predict_proba(Xt),
                                                          classes=est.classes_), rel=1e-10)
    ax = plot_stagewise_curves(est, X, y, metric="error")
    assert ax.get_lines()[0].get_ydata()[-1] == pytest.approx(error_rate(y, est.predict(X)))
    with pytest.raises(ValueError, match="metric"):
        plot_stagewise_curves(est, X, y, metric="auc")


def test_summary_and_comparison_bars():
    values = {"a": {40: [0.1, 0.3], 80: [0.2]}, "b": {40: [0.5, 0.5, 0.5], 80: [np.nan, 1.0]}}
    s = summarize_runs(values)
    assert s["a"][40][0] == pytest.approx(0.2)
    assert s["a"][40][1] == pytest.approx(np.std([0.1, 0.3], ddof=1) / np.sqrt(2))
    assert s["a"][80] == (0.2, 0.0, 1)
    assert s["b"][80] == (1.0, 0.0, 1)           # NaN results are dropped
    ax = plot_method_comparison(values, ylabel="error")
    assert len(ax.patches) == 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["40", "80"]


@pytest.mark.slow
@pytest.mark.parametrize("script", ["stagewise_fig3_methods.py",
                                    "stagewise_fig3_methods.py --kappa-sweep",
                                    "stagewise_fig2_site_updates.py"])
def test_figure_script_quick(script, tmp_path):
    require_data("raetsch_banana")
    require_data("raetsch_waveform")
    require_data("raetsch_image")
    env = dict(os.environ, CI="1")
    script, *extra = script.split()
    subprocess.run([sys.executable, str(ROOT / "figures" / script), *extra, "--out", str(tmp_path)],
                   check=True, env=env, cwd=str(ROOT / "figures"), timeout=1200)
    assert list(tmp_path.glob("*.png"))


@pytest.mark.slow
def test_benchmark_quick():
    require_data("raetsch_banana")
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_stagewise.py"),
                    "--quick", "--repeat", "1"], check=True, timeout=1200)
    require_data("raetsch_waveform")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_stagewise.py"),
                          "--eq4", "--quick", "--repeat", "1"], check=True, timeout=1200,
                         capture_output=True, text=True).stdout
    # the two paths are one function: the benchmark prints how far apart they are
    diff = float(out.split("max rel. difference")[-1])
    assert diff < 1e-11, out       # measured <= 3.1e-12 (n = 4 000, d_max 160 and 320)


def test_significance_report_from_results():
    import importlib.util
    from sparsegp.experiments.stats import friedman
    spec = importlib.util.spec_from_file_location(
        "fig3", ROOT / "figures" / "stagewise_fig3_methods.py")
    fig3 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fig3)
    rng = np.random.default_rng(1)
    results, means = {}, {m: [] for m in fig3.TESTED}
    for ds in ("banana", "waveform", "image"):
        for k, m in enumerate(fig3.TESTED):
            vals = 0.1 * k + rng.uniform(0, 0.05, 4)
            means[m].append(vals.mean())
            for r, v in enumerate(vals):
                results[f"{ds}|{r}|40|{m}"] = [v, 2 * v, 1.0]
    results["banana|9|40|entropy"] = [0.5, 1.0, 1.0]        # a realisation no other has
    md = fig3.significance_report(results, ["banana", "waveform", "image", "ringnorm"], [40, 80])
    assert "| banana | 40 | 4 |" in md                     # only the shared realisations
    # the control is best on every partition: the exact two-sided p of n = 4 is 2/16
    assert "0.125 (+)" in md
    p = friedman(means)["p_value"]
    assert f"d_max 40, error (3 data sets: banana, waveform, image): Friedman p **{p:.3g}**" in md
    assert "d_max 80, NLP: 0 data set(s) with all four methods; no test" in md


def _reading(name):
    """The module of ``figures/readings/<name>.py`` (the readings are scripts, not a package)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "figures" / "readings" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suspect_labels_flag_a_flipped_point_among_its_neighbours():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 0.5, (30, 2)), rng.normal(3, 0.5, (30, 2))])
    y = np.repeat([0, 1], 30)
    y[[4, 40]] = 1 - y[[4, 40]]            # one wrong label in each cluster
    suspect = _reading("stagewise_selection").suspect_labels(X, y, 10)
    assert np.flatnonzero(suspect).tolist() == [4, 40]


def test_selection_reading_runs_on_banana():
    require_data("raetsch_banana")
    rows = _reading("stagewise_selection").main(["--realizations", "1", "--dmax", "10",
                                                 "--max-iter", "2"])
    assert [(row[0], row[1]) for row in rows] == [
        ("entropy", 10), ("infogain", 10), ("adaptive k=2", 10)]
    for rule, d, r, error, share, base in rows:
        assert 0.0 <= error <= 1.0 and 0.0 <= base < 0.5
        assert abs(share * d - round(share * d)) < 1e-9   # a count among the d basis vectors


def test_hyper_reading_reports_the_kept_model_on_banana():
    require_data("raetsch_banana")
    reading = _reading("stagewise_hyper")
    rows = reading.main(["--dataset", "banana", "--realizations", "0", "--dmax", "10",
                         "--rules", "adaptive k=2", "--max-iter", "2"])
    assert len(rows) == 1
    row = rows[0]
    assert (row["rule"], row["d_max"], row["realization"]) == ("adaptive k=2", 10, 0)
    assert 0.0 <= row["test_error"] <= 1.0 and 0.0 <= row["train_error"] <= 1.0
    assert 1 <= row["kept_iteration"] <= row["n_outer"] <= 2
    low, high = reading.DEFAULT_BOUNDS
    assert low * (1 - 1e-9) <= row["variance"] <= high * (1 + 1e-9)
    assert row["at_ceiling"] == (row["variance"] >= high * (1 - 1e-6))
    assert row["lengthscale"] > 0


def test_hyper_reading_length_scale_does_not_depend_on_the_units_of_X():
    # the reading reports the length-scale in feature standard deviations, so refitting on
    # rescaled inputs must give the same number (a wrong conversion would scale with X);
    # measured: 1.2e-10 (length-scale) and 7.4e-10 (variance) apart; the bound is the
    # optimiser stopping at slightly different points, not machine round-off
    require_data("raetsch_banana")
    reading = _reading("stagewise_hyper")
    fig3 = sys.modules["stagewise_fig3_methods"]
    X, y, _, _ = fig3.load_split("banana", 0)
    X, y = X[:300], y[:300]
    scale = np.array([10.0, 0.01])
    got = [reading.kept_hyper(fig3.fit_model(Z, y, 10, "adaptive k=2", 2, fig3.SEED), Z)
           for Z in (X, X * scale)]
    assert got[0][1] == pytest.approx(got[1][1], rel=1e-9)
    assert got[0][0] == pytest.approx(got[1][0], rel=1e-8)
