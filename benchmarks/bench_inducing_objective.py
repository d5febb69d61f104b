"""What places the FITC family's inducing inputs: test R² and NLPD per data set (issue 23).

Compares ``SparseGPRegressor(approximation, inducing_objective=...)`` at otherwise default
arguments (M = 50, 200 L-BFGS-B iterations, ``random_state=0``): ``"evidence"`` (the papers'
joint search of the approximation's own evidence over the hyper-parameters and the inducing
inputs), ``"vfe"`` (the default for FITC, FIC and PITC: the inducing inputs by the VFE bound,
then the approximation's evidence over the hyper-parameters) and None (inducing inputs held
at their random start), beside VFE and the exact GP as references. Results in
``benchmarks/DEFAULTS.md``.

Usage::

    python benchmarks/bench_inducing_objective.py [--data diabetes friedman1 ...]
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes, make_friedman1, make_friedman2
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from sparsegp import SparseGPRegressor
from sparsegp.datasets import make_regression_1d

#: (approximation, inducing_objective) rows of each data set's table
SETTINGS = [("fitc", "evidence"), ("fitc", "vfe"), ("fitc", None), ("pitc", "evidence"),
            ("pitc", "vfe"), ("vfe", "auto"), ("exact", "auto")]
#: the exact GP only up to this many training rows (O(N³) per evaluation)
EXACT_MAX_ROWS = 1000


def _kin_like(n, n_test=1000, seed=0):
    """An 8-D smooth function with noise s.d. 0.1 (the kin/pumadyn kind of problem)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n + n_test, 8))
    f = (np.sin(2.0 * X[:, 0]) * np.cos(X[:, 1]) + X[:, 2] * X[:, 3]
         + 0.5 * np.sin(3.0 * X[:, 4]))
    y = f + 0.1 * rng.standard_normal(n + n_test)
    return X[:n], X[n:], y[:n], y[n:]


def data_sets(names):
    """{label: (X_train, X_test, y_train, y_test)} for the families in ``names``."""
    out = {}
    if "diabetes" in names:
        X, y = load_diabetes(return_X_y=True)
        for split in range(4):
            out[f"diabetes split {split}"] = train_test_split(X, y, test_size=0.3,
                                                              random_state=split)
    if "friedman1" in names:
        for n in (300, 1000, 3000):
            X, y = make_friedman1(n + 1000, noise=1.0, random_state=n)
            out[f"Friedman #1 N={n}"] = (X[:n], X[n:], y[:n], y[n:])
    if "friedman2" in names:
        X, y = make_friedman2(1300, noise=50.0, random_state=0)
        out["Friedman #2 N=300"] = (X[:300], X[300:], y[:300], y[300:])
    if "toy1d" in names:
        Xt, yt = make_regression_1d(2000, random_state=1)
        for n in (200, 2000):
            X, y = make_regression_1d(n, random_state=0)
            out[f"1-D toy N={n}"] = (X, Xt, y, yt)
    if "kin" in names:
        out["8-D kin-like N=2000"] = _kin_like(2000)
    return out


def nlpd(gp, X, y):
    """Mean negative log predictive density of y (latent variance + noise)."""
    mean, std = gp.predict(X, return_std=True)
    var = std ** 2 + gp.noise_variance_
    return float(np.mean(0.5 * np.log(2.0 * np.pi * var) + 0.5 * (y - mean) ** 2 / var))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+",
                        default=["diabetes", "friedman1", "friedman2", "toy1d", "kin"])
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # compiles the kernels
        SparseGPRegressor(n_inducing=5, max_iter=2).fit(*make_regression_1d(50, random_state=0))
    print("| data | approximation | inducing_objective | test R² | test NLPD | "
          "noise / var(y) | CPU (s) |")
    print("|---|---|---|---|---|---|---|")
    for label, (Xtr, Xte, ytr, yte) in data_sets(args.data).items():
        for approximation, objective in SETTINGS:
            if approximation == "exact" and Xtr.shape[0] > EXACT_MAX_ROWS:
                continue
            gp = SparseGPRegressor(approximation, inducing_objective=objective,
                                   random_state=0)
            start = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")       # capped searches: the table says enough
                gp.fit(Xtr, ytr)
            cpu = time.process_time() - start
            print(f"| {label} | {approximation} | {objective} | "
                  f"{r2_score(yte, gp.predict(Xte)):.3f} | {nlpd(gp, Xte, yte):.3f} | "
                  f"{gp.noise_variance_ / np.var(ytr):.2g} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
