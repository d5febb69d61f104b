"""Seed 000, Figure 1 (right): GFITC posterior-probability contours on the xor problem.

Four unit-variance Gaussian clusters at (+-1.5, +-1.5) (``sparsegp.datasets.make_xor``); the
classifier starts from four pseudo-inputs drawn at random from the training inputs and runs
ten conjugate-gradient iterations on the EP evidence (kernel parameters, bias and pseudo-input
locations). The figure shows the contours of p(y = +1 | x), the data, the initial pseudo-inputs
(open circles) and the learnt ones (black dots).

Usage::

    python figures/gfitc_fig1_xor.py [--out DIR] [--quick]

Writes ``gfitc_fig1_xor.png`` into ``--out`` (default: this folder).
"""
import argparse
import os
from pathlib import Path

import numpy as np

from sparsegp.classification import GFITCClassifier
from sparsegp.datasets import make_xor
from sparsegp.inducing import init_inducing
from sparsegp.kernels import SquaredExponential
from sparsegp.metrics import error_rate, mean_nlp
from sparsegp.plotting import plot_decision_contours

SEED = 7
N_INDUCING = 4
CG_ITERATIONS = 10


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent),
                        help="output folder (default: figures/)")
    parser.add_argument("--quick", action="store_true", help="smaller data (CI smoke run)")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    n_train, n_test = (100, 500) if quick else (400, 4000)

    X, y = make_xor(n_train, random_state=SEED)
    X_test, y_test = make_xor(n_test, random_state=SEED + 1)
    initial = init_inducing(X, N_INDUCING, "random", np.random.default_rng(SEED))
    model = GFITCClassifier(inducing_points=initial, kernel=SquaredExponential(1.0, 1.0),
                            optimizer="cg", max_iter=CG_ITERATIONS, tol=None,
                            ep_search_rtol=0.0, random_state=SEED)
    model.fit(X, y)
    err = error_rate(y_test, model.predict(X_test))
    nlp = mean_nlp(y_test, model.predict_proba(X_test), classes=model.classes_)
    print(f"xor: N = {n_train}, M = {N_INDUCING}, {CG_ITERATIONS} CG iterations: "
          f"test error {err:.3f}, NLP {nlp:.3f}, log Z_EP {model.log_evidence_:.2f}")

    ax = plot_decision_contours(model, X, y, initial_inducing=initial)
    ax.set_title(f"FITC on xor, {CG_ITERATIONS} CG iterations from random pseudo-inputs\n"
                 f"(open: initial, black: learnt; test error {err:.3f})", fontsize=9)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "gfitc_fig1_xor.png")
    ax.figure.savefig(path, dpi=130, bbox_inches="tight")
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
