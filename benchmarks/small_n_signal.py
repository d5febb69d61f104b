"""Do default classifiers find the signal on small data? (issue 49)

Random binary problems with N in [8, 60], D in [1, 20] (at most 3 informative features, 5 %
flipped labels) and feature scales from 1e-3 to 1e3, each with 500 held-out rows. Prints per
problem the estimator's training and test accuracy, the test accuracy of a standardised
logistic regression, whether the fit predicts one class for every training row ("flat") and
how many warnings it gave; then the totals.

    python benchmarks/small_n_signal.py --problems 40 --estimator StagewiseGPClassifier
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sparsegp


def problem(seed):
    """(X_train, y_train, X_test, y_test) of problem ``seed``."""
    rng = np.random.default_rng(seed)
    N, D = int(rng.integers(8, 61)), int(rng.integers(1, 21))
    X, y = make_classification(N + 500, D, n_informative=max(1, min(D, 3)), n_redundant=0,
                               n_repeated=0, n_clusters_per_class=1, flip_y=0.05,
                               random_state=seed)
    X = X * 10.0 ** rng.uniform(-3, 3, D)
    return X[:N], y[:N], X[N:], y[N:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--estimator", default="StagewiseGPClassifier")
    args = parser.parse_args()
    cls = getattr(sparsegp, args.estimator)
    rows = []
    start = time.perf_counter()
    for seed in range(args.problems):
        Xtr, ytr, Xte, yte = problem(seed)
        if np.unique(ytr).size < 2:
            continue
        lr = make_pipeline(StandardScaler(), LogisticRegression()).fit(Xtr, ytr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = cls(random_state=seed).fit(Xtr, ytr)
        flat = np.unique(est.predict(Xtr)).size == 1
        rows.append((seed, Xtr.shape[0], Xtr.shape[1], est.score(Xtr, ytr),
                     est.score(Xte, yte), lr.score(Xte, yte), flat, len(caught)))
        print("seed %3d N %2d D %2d  train %.3f test %.3f | logistic test %.3f | flat %d "
              "warnings %d" % rows[-1], flush=True)
    r = np.array([row[3:] for row in rows], dtype=float)
    print(f"{len(rows)} problems, {args.estimator}: flat {int(r[:, 3].sum())} "
          f"(silent {int(np.sum((r[:, 3] > 0) & (r[:, 4] == 0)))}); mean test accuracy "
          f"{r[:, 1].mean():.3f} against logistic regression's {r[:, 2].mean():.3f}; more "
          f"than 0.1 below it on {int(np.sum(r[:, 1] < r[:, 2] - 0.1))}; "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
