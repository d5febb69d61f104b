"""Multi-class EP: plotting helpers (fast) and, marked slow, the reproduction scripts in quick
mode and the UCI accuracy check of issue 7 (EP/SEP at M = 10 %, first five folds)."""
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import require_data

from sparsegp.classification import MultiClassEPClassifier
from sparsegp.datasets import make_gp_classes

ROOT = Path(__file__).resolve().parents[1]


def test_plotting_helpers_return_axes():
    from sparsegp.plotting import (plot_metric_vs_time, plot_multiclass_boundaries,
                                   plot_probability_comparison)
    from sparsegp.plotting._mpl import pyplot
    X, y = make_gp_classes(60, n_classes=3, random_state=1)
    est = MultiClassEPClassifier(n_inducing=3, max_iter=2, tol=None, random_state=0).fit(X, y)
    ax = plot_multiclass_boundaries(est, X, y, resolution=20, title="EP")
    assert len(ax.collections) >= 4  # three classes of points + inducing inputs
    with pytest.raises(ValueError, match="shape"):
        plot_multiclass_boundaries(est, np.c_[X, X], y)
    ax = plot_metric_vs_time({"EP": ([1, 2, 3], [0.9, 0.5, 0.4])})
    assert ax.get_xscale() == "log" and len(ax.lines) == 1
    with pytest.raises(ValueError, match="differ"):
        plot_metric_vs_time({"EP": ([1, 2], [0.9])})
    P = est.predict_proba(X)
    ax = plot_probability_comparison(P, P[:, ::-1], names=("EP", "reversed"))
    assert len(ax.collections) == 3 and ax.get_xlabel().startswith("EP")
    gap = np.max(np.abs(P[:, 0] - P[:, 2]))
    assert f"{gap:.3f}" in ax.get_legend().get_texts()[0].get_text()
    with pytest.raises(ValueError, match="one shape"):
        plot_probability_comparison(P, P[:, :2])
    pyplot().close("all")


def test_class_regions_redraw_a_figure_without_the_estimator():
    from sparsegp.plotting import class_regions, plot_class_regions, plot_multiclass_boundaries
    from sparsegp.plotting._mpl import pyplot
    X, y = make_gp_classes(60, n_classes=3, random_state=1)
    est = MultiClassEPClassifier(n_inducing=3, max_iter=2, tol=None, random_state=0).fit(X, y)
    labels = class_regions(est, X, resolution=15)
    assert labels.shape == (15, 15)
    # row i, column j is the grid point (x0_j, x1_i) over the padded box of X
    pad = 0.05 * (X.max(0) - X.min(0))
    x0 = np.linspace(X[:, 0].min() - pad[0], X[:, 0].max() + pad[0], 15)
    x1 = np.linspace(X[:, 1].min() - pad[1], X[:, 1].max() + pad[1], 15)
    i, j = 4, 11
    point = np.array([[x0[j], x1[i]]])
    assert labels[i, j] == np.argmax(est.predict_proba(point)[0])
    # what a figure script stores (digits and Z) draws what the estimator draws
    stored = "".join(map(str, labels.ravel()))
    back = np.array(list(stored), dtype=int).reshape(15, 15)
    a = plot_multiclass_boundaries(est, X, y, resolution=15)
    b = plot_class_regions(back, X, y, est.classes_, inducing_points=est.inducing_points_)
    assert len(a.collections) == len(b.collections) >= 4
    assert a.get_xlim() == b.get_xlim() and a.get_ylim() == b.get_ylim()
    with pytest.raises(ValueError, match="square grid"):
        plot_class_regions(back[:3], X, y, est.classes_)
    pyplot().close("all")


@pytest.mark.slow
@pytest.mark.parametrize("script", ["figures/multiclass_tables.py",
                                    "figures/multiclass_fig1_schedules.py",
                                    "figures/multiclass_fig2_ep_sep.py",
                                    "figures/multiclass_fig3_inducing.py",
                                    "figures/multiclass_fig4_satellite.py",
                                    "figures/multiclass_fig5_minibatch.py",
                                    "benchmarks/bench_multiclass.py"])
def test_scripts_run_in_quick_mode(tmp_path, script):
    if "fig4" in script or "tables" in script:
        require_data("satellite")
    if "fig1" in script:
        require_data("vehicle")
    args = [sys.executable, str(ROOT / script), "--quick"]
    if not script.startswith("benchmarks"):
        args += ["--out", str(tmp_path)]
    env = dict(os.environ)
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    assert out.returncode == 0, out.stderr[-2000:]
    if not script.startswith("benchmarks"):
        assert any(p.suffix in (".png", ".md") for p in tmp_path.iterdir())


# Table 2 (NLL) and Table 3 (error) of the paper at M = 10 % (notes §9)
PAPER = {"glass": ((.74, .79), (.29, .30)), "new_thyroid": ((.06, .06), (.02, .03)),
         "satellite": ((.30, .34), (.11, .12)), "svmguide2": ((.67, .74), (.20, .20)),
         "vehicle": ((.33, .34), (.16, .16)), "vowel6": ((.19, .19), (.05, .06)),
         "waveform3": ((.36, .41), (.16, .16)), "wine": ((.06, .07), (.02, .03))}


# The issue allows two sets per method and metric outside the bands (6 of 8 must hold). These
# are the known misses, measured with this test's protocol (5 folds, estimator defaults), as
# strict xfails: each still runs its assertions, and turns red if it starts to pass. Measured
# at 54f433f. EP on glass (NLL 0.717, error 0.291) and satellite (0.292, 0.110) came inside
# both bands with batch EP's pooled sign test of the length-scale rates (99932e6, issue 47)
# and later numerics changes, and run as plain tests.
_KNOWN_MISSES = {
    ("ep", "svmguide2"): "NLL 0.480 vs 0.67 and error 0.165 vs 0.20: both better than the paper",
    ("sep", "glass"): "NLL 0.701 vs paper 0.79: better by 0.089 (error 0.282 vs 0.30 holds)",
    ("sep", "svmguide2"): "NLL 0.527 vs 0.74 and error 0.155 vs 0.20: both better than the paper",
}
_UCI_CASES = [
    pytest.param(method, name, marks=pytest.mark.xfail(reason=_KNOWN_MISSES[method, name],
                                                       strict=True))
    if (method, name) in _KNOWN_MISSES else (method, name)
    for method in ("ep", "sep") for name in sorted(PAPER)
]


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("method, name", _UCI_CASES)
def test_uci_ten_percent_matches_paper(method, name):
    """Issue 7: mean test NLL within 0.05 of Table 2 and error within 0.03 of Table 3 (the
    issue asks this on at least 6 of the 8 sets; each set is one test here). Per method and
    metric at most two sets miss (``_KNOWN_MISSES``), so the issue's 6-of-8 holds."""
    from sparsegp.datasets import load_dataset
    require_data(name)
    nll, err = [], []
    for fold in range(5):
        Xtr, ytr, Xte, yte = load_dataset(name, split=fold)
        mu, sd = Xtr.mean(0), Xtr.std(0)
        sd[sd == 0] = 1.0
        Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
        M = int(round(0.1 * len(Xtr)))
        est = MultiClassEPClassifier(method=method, n_inducing=M, random_state=fold).fit(Xtr, ytr)
        proba = est.predict_proba(Xte)
        idx = np.searchsorted(est.classes_, yte)
        nll.append(-np.mean(np.log(proba[np.arange(len(yte)), idx])))
        err.append(np.mean(est.classes_[proba.argmax(1)] != yte))
    j = 0 if method == "ep" else 1
    assert abs(np.mean(nll) - PAPER[name][0][j]) <= 0.05
    assert abs(np.mean(err) - PAPER[name][1][j]) <= 0.03


def _figure(script, monkeypatch=None):
    """``figures/<script>.py`` loaded as a module; with ``monkeypatch``, its siblings in the
    folder importable (Figure 3 reads multiclass_fig2_ep_sep)."""
    import importlib.util
    if monkeypatch is not None:
        monkeypatch.syspath_prepend(str(ROOT / "figures"))
    spec = importlib.util.spec_from_file_location(script, ROOT / "figures" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figure3_resumes_from_its_json_on_a_fresh_machine(tmp_path, monkeypatch):
    import json
    fig3 = _figure("multiclass_fig3_inducing", monkeypatch)
    fig3.main(["--quick", "--out", str(tmp_path), "--methods", "EP,GFITC"])
    store = tmp_path / "multiclass_fig3_inducing_quick.json"
    panels = json.loads(store.read_text())
    assert sorted((p["method"], p["M"]) for p in panels) == [
        ("EP", 2), ("EP", 8), ("GFITC", 2), ("GFITC", 8)]
    for p in panels:
        labels = fig3.regions(p)
        assert labels.shape == (80, 80) and set(np.unique(labels)) <= {0, 1, 2}
        assert np.asarray(p["inducing_points"]).shape == (3, p["M"], 2)
        assert p["cpu_seconds"] > 0
    # the PNG gone (a fresh clone has only the JSON): redrawn with no fit at all
    (tmp_path / "multiclass_fig3_inducing_quick.png").unlink()

    def no_fit(*args, **kwargs):
        raise AssertionError("a stored panel was refitted")

    monkeypatch.setattr(fig3, "fit_panel", no_fit)
    fig3.main(["--quick", "--out", str(tmp_path), "--methods", "EP,GFITC"])
    assert (tmp_path / "multiclass_fig3_inducing_quick.png").stat().st_size > 10_000
    assert json.loads(store.read_text()) == panels
    # GFITC records its EP settings; a GFITC panel made with others is refitted, alone; one
    # written before ep_search_rtol existed (the committed panels) ran with it at 0: kept
    assert all(p["ep"] == fig3.GFITC_EP for p in panels if p["method"] == "GFITC")
    before = {k: v for k, v in fig3.GFITC_EP.items() if k not in fig3.GFITC_EP_BEFORE}
    changed = {("GFITC", 2): {"ep_schedule": "auto"}, ("GFITC", 8): before}
    store.write_text(json.dumps([dict(p, ep=changed[p["method"], p["M"]])
                                 if (p["method"], p["M"]) in changed else p
                                 for p in panels]))
    refits = []

    def fit_again(method, M, *args):
        refits.append((method, M))
        return next(p for p in panels if (p["method"], p["M"]) == (method, M))

    monkeypatch.setattr(fig3, "fit_panel", fit_again)
    fig3.main(["--quick", "--out", str(tmp_path), "--methods", "EP,GFITC"])
    assert refits == [("GFITC", 2)]


def test_figure3_keeps_every_committed_panel(monkeypatch):
    """A change of the script's settings that leaves the stored fits as they were must not
    send the committed panels (GFITC's take about 1 400 CPU s) back to be refitted."""
    import json
    fig3 = _figure("multiclass_fig3_inducing", monkeypatch)
    store = ROOT / "figures" / "multiclass_fig3_inducing.json"
    assert len(fig3.load_panels(store)) == len(json.loads(store.read_text())) == 36


def test_figure4_merge_refits_only_the_methods_named(tmp_path, capsys):
    import json
    require_data("satellite")
    fig4 = _figure("multiclass_fig4_satellite")
    args = ["--quick", "--out", str(tmp_path)]
    store = tmp_path / "multiclass_fig4_satellite_quick.json"
    with pytest.raises(SystemExit):             # nothing stored to merge with
        fig4.main(args + ["--methods", "sep", "--merge"])
    fig4.main(args + ["--methods", "vi,sep"])
    first = json.loads(store.read_text())
    # a marked VI trace: kept as stored, in its place, when SEP alone is refitted
    marked = dict(first, vi=dict(first["vi"], nll=[1e-3] * len(first["vi"]["nll"])))
    store.write_text(json.dumps(marked))
    capsys.readouterr()
    fig4.main(args + ["--methods", "sep", "--merge"])
    merged = json.loads(store.read_text())
    assert list(merged) == ["vi", "sep"] and merged["vi"] == marked["vi"]
    for key in ("nll", "error", "iteration"):               # SEP refitted, the same fit
        assert merged["sep"][key] == first["sep"][key]
    assert "SEP never reaches VI's final NLL" in capsys.readouterr().out   # read from both
    (tmp_path / "multiclass_fig4_satellite_quick.png").unlink()
    fig4.main(args + ["--methods", "sep"])                 # without --merge: SEP alone
    assert list(json.loads(store.read_text())) == ["sep"]
    assert (tmp_path / "multiclass_fig4_satellite_quick.png").stat().st_size > 10_000


def test_figure5_stops_at_its_budget_and_keeps_finished_methods(tmp_path, monkeypatch):
    import json
    require_data("usps")
    fig5 = _figure("multiclass_fig5_minibatch")
    args = ["--quick", "--dataset", "usps", "--out", str(tmp_path), "--methods", "sep,vi",
            "--budget", "0"]
    fig5.main(args)
    store = tmp_path / "multiclass_fig5_usps_quick.json"
    runs = json.loads(store.read_text())
    for method in ("sep", "vi"):
        # a zero budget ends each method at its first evaluation
        assert runs[method]["finished"] and runs[method]["stopped"] == "budget"
        assert len(runs[method]["time"]) == 1 and runs[method]["budget"] == 0

    def refit(*a, **k):
        raise AssertionError("a finished method was refitted")

    monkeypatch.setattr(fig5.sparsegp.MultiClassEPClassifier, "fit", refit)
    monkeypatch.setattr(fig5.sparsegp.MultiClassSVGPClassifier, "fit", refit)
    fig5.main(args)
    assert json.loads(store.read_text()) == runs
    # other settings are a different figure: fitted afresh
    with pytest.raises(AssertionError, match="refitted"):
        fig5.main(args[:-1] + ["1e9"])


def test_figure5_recorder_keeps_time_on_its_clock_without_the_evaluations():
    fig5 = _figure("multiclass_fig5_minibatch")
    ticks = iter(range(100))

    class Fitted:
        classes_ = np.array([0, 1])

        def predict_proba(self, X):
            return np.tile([0.75, 0.25], (len(X), 1))

    rec = fig5.Recorder(np.zeros((4, 1)), np.array([0, 0, 1, 0]), every=1,
                        clock=lambda: float(next(ticks)))
    rec(Fitted(), 0)        # reads the clock at 1 and, after evaluating, at 2
    rec(Fitted(), 1)        # at 3: three ticks since t0, one of them spent evaluating
    assert [row[0] for row in rec.rows] == [1.0, 2.0]
    assert rec.rows[0][1] == pytest.approx(-np.log(0.75) * 0.75 - np.log(0.25) * 0.25)
    assert rec.rows[0][2] == 0.25
    assert fig5.CLOCKS["cpu"] is time.process_time


def test_figure5_keeps_traces_of_its_clock_only(tmp_path, monkeypatch):
    import json
    require_data("usps")
    fig5 = _figure("multiclass_fig5_minibatch")
    args = ["--quick", "--dataset", "usps", "--out", str(tmp_path), "--methods", "sep",
            "--budget", "0"]
    fig5.main(args + ["--clock", "cpu"])
    store = tmp_path / "multiclass_fig5_usps_quick.json"
    assert json.loads(store.read_text())["sep"]["clock"] == "cpu"
    fig5.main(args)                              # wall, the default: a different figure
    runs = json.loads(store.read_text())
    assert runs["sep"]["clock"] == "wall"
    # a trace written before the clock was recorded was timed on the wall clock: kept
    store.write_text(json.dumps({m: {k: v for k, v in r.items() if k != "clock"}
                                 for m, r in runs.items()}))

    def refit(*a, **k):
        raise AssertionError("a finished method was refitted")

    monkeypatch.setattr(fig5.sparsegp.MultiClassEPClassifier, "fit", refit)
    fig5.main(args)
    with pytest.raises(AssertionError, match="refitted"):
        fig5.main(args + ["--clock", "cpu"])
