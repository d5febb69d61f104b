"""Slow GFITC reproductions of seed 000 (run with ``pytest -m slow``); numbers in the report."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import require_data

from sparsegp._scaling import start_lengthscale
from sparsegp.classification import GFITCClassifier
from sparsegp.datasets import load_dataset
from sparsegp.kernels import UNBOUNDED, SquaredExponential
from sparsegp.metrics import error_rate, mean_nlp

pytestmark = pytest.mark.slow


#: Seeds of the synth fit: each draws its own pseudo-input starts and restarts
SYNTH_SEEDS = range(5)


def test_ripley_synth_m4():
    """Seed 000 Table 1, synth (250 train, 1000 test): paper 0.087 error, 0.234 NLP.

    The paper's model: "the isotropic squared exponential kernel" in the data's units, twenty
    CG steps (``tol=None``: the schedule ``max_iter=20`` meant before the stopping rule), the
    best of several random starts (here 5 restarts, for each of 5 seeds). Its kernel is passed
    as a user's, started and searched as the default is (length-scale
    ``start_lengthscale(2)`` = 1 times the features' root-mean-square spread, no bounds):
    the default covariance is isotropic on *standardised* inputs, which holds synth's two
    length-scales at its features' 1.92 : 1 spread ratio (seeds 0-4: error .102-.104, NLP
    .255-.257, log evidence -82.8 to -82.9; this kernel .088-.089, .236-.237, -77.0).
    """
    require_data("synth")
    X, y, Xt, yt = load_dataset("synth")
    start = start_lengthscale(X.shape[1]) * float(np.sqrt(np.mean(X.var(axis=0))))
    kernel = SquaredExponential(1.0, start, UNBOUNDED, UNBOUNDED)
    errs, nlps = [], []
    for seed in SYNTH_SEEDS:
        clf = GFITCClassifier(n_inducing=4, kernel=kernel, optimizer="cg", max_iter=20,
                              tol=None, n_restarts=5, random_state=seed).fit(X, y)
        errs.append(error_rate(yt, clf.predict(Xt)))
        nlps.append(mean_nlp(yt, clf.predict_proba(Xt), classes=clf.classes_))
    print(f"synth: errors {np.round(errs, 4).tolist()}, NLP {np.round(nlps, 4).tolist()}")
    assert max(errs) <= 0.095
    assert max(nlps) <= 0.25


def test_banana_realisations_1_to_10_m20():
    """Seed 000 Table 1, banana (realisations 1-10), M = 20: paper 0.107 mean error.

    The paper's schedule, as the table's SPGPC cells run it (``GFITC_TABLE1``): twenty CG
    steps (``tol=None``: the fixed schedule ``max_iter=20`` meant before the stopping rule,
    which would warn at that cap on realisation 1, where L-BFGS-B still gains over its last
    five steps) with exact EP inside the search (``ep_search_rtol=0``), two restarts.
    """
    require_data("raetsch_banana")
    errs = []
    for r in range(10):
        X, y, Xt, yt = load_dataset("banana", split=r)
        clf = GFITCClassifier(n_inducing=20, optimizer="cg", max_iter=20, tol=None,
                              n_restarts=2, ep_search_rtol=0.0, random_state=r).fit(X, y)
        errs.append(error_rate(yt, clf.predict(Xt)))
    print(f"banana: errors {np.round(errs, 4).tolist()}, mean {np.mean(errs):.4f}")
    assert np.mean(errs) <= 0.115


def test_figure_script_quick(tmp_path):
    script = Path(__file__).resolve().parents[1] / "figures" / "gfitc_fig1_xor.py"
    out = subprocess.run([sys.executable, str(script), "--quick", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "gfitc_fig1_xor.png").stat().st_size > 10_000


def test_benchmark_script_quick():
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gfitc.py"
    out = subprocess.run([sys.executable, str(script), "--quick", "--repeats", "1",
                          "--skip", "cg"], capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr
    assert "EPClassifier" in out.stdout and "ratio" in out.stdout
