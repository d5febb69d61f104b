"""Slow GFITC reproductions of seed 000 (run with ``pytest -m slow``); numbers in the report."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import require_data

from sparsegp.classification import GFITCClassifier
from sparsegp.datasets import load_dataset
from sparsegp.metrics import error_rate, mean_nlp

pytestmark = pytest.mark.slow


def test_ripley_synth_m4():
    """Seed 000 Table 1, synth (250 train, 1000 test): paper 0.087 error, 0.234 NLP."""
    require_data("synth")
    X, y, Xt, yt = load_dataset("synth")
    clf = GFITCClassifier(n_inducing=4, max_iter=20, n_restarts=4, random_state=0).fit(X, y)
    err = error_rate(yt, clf.predict(Xt))
    nlp = mean_nlp(yt, clf.predict_proba(Xt), classes=clf.classes_)
    print(f"synth: error {err:.4f}, NLP {nlp:.4f}")
    assert err <= 0.095
    assert nlp <= 0.25


def test_banana_realisations_1_to_10_m20():
    """Seed 000 Table 1, banana (realisations 1-10), M = 20: paper 0.107 mean error."""
    require_data("raetsch_banana")
    errs = []
    for r in range(10):
        X, y, Xt, yt = load_dataset("banana", split=r)
        clf = GFITCClassifier(n_inducing=20, max_iter=20, n_restarts=2,
                              random_state=r).fit(X, y)
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
