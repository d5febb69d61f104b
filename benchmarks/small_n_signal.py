"""Do default classifiers find the signal on small data? (issue 49)

Random binary problems with N in [8, 60], D in [1, 20] (at most 3 informative features, 5 %
flipped labels) and feature scales from 1e-3 to 1e3, each with 500 held-out rows; or, with
``--source fuzz``, the binary problems of ``benchmarks/fuzz.py`` (seed 0) that have at most 60
training rows, each with that script's held-out rows. Prints per problem the estimator's
training and test accuracy, the test accuracy of a standardised logistic regression, whether
each of the two predicts one class for every training row ("flat"), whether it does so with
probability at least 0.99 at every row ("collapsed") and how many warnings the estimator gave;
then the totals, with both counts of the two side by side (issue 49: small problems should
collapse no more often than logistic regression's).

    python benchmarks/small_n_signal.py --problems 40 --estimator StagewiseGPClassifier
    python benchmarks/small_n_signal.py --source fuzz --problems 500
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


#: The most training rows a fuzz problem may have to count as small (issue 49)
SMALL_N = 60
#: A flat fit is collapsed when every row's largest probability is at least this: issue 49's
#: "one class with probability about 1 for every row", not a flat fit near the frequencies
COLLAPSED = 0.99


def problem(seed):
    """(X_train, y_train, X_test, y_test) of problem ``seed``."""
    rng = np.random.default_rng(seed)
    N, D = int(rng.integers(8, 61)), int(rng.integers(1, 21))
    X, y = make_classification(N + 500, D, n_informative=max(1, min(D, 3)), n_redundant=0,
                               n_repeated=0, n_clusters_per_class=1, flip_y=0.05,
                               random_state=seed)
    X = X * 10.0 ** rng.uniform(-3, 3, D)
    return X[:N], y[:N], X[N:], y[N:]


def flatness(model, X):
    """(flat, collapsed): does ``model`` predict one class for every row of X, and does it
    do so with probability at least ``COLLAPSED`` at every row (issue 49's collapse)?"""
    proba = model.predict_proba(X)
    flat = np.unique(np.argmax(proba, axis=1)).size == 1
    return flat, flat and proba.max(axis=1).min() >= COLLAPSED


def fuzz_problems(count):
    """(index, (X_train, y_train, X_test, y_test)) of the binary problems among the first
    ``count`` of fuzz seed 0 with at most :data:`SMALL_N` training rows."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fuzz
    for index in range(count):
        X, y, N = fuzz.problem(0, index, "binary")
        if N <= SMALL_N:
            yield index, (X[:N], y[:N], X[N:], y[N:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--estimator", default="StagewiseGPClassifier")
    parser.add_argument("--source", choices=("make_classification", "fuzz"),
                        default="make_classification",
                        help="the problems: this script's own, or fuzz seed 0's with N <= 60")
    args = parser.parse_args()
    cls = getattr(sparsegp, args.estimator)
    problems = (fuzz_problems(args.problems) if args.source == "fuzz"
                else ((seed, problem(seed)) for seed in range(args.problems)))
    rows = []
    start = time.perf_counter()
    for seed, (Xtr, ytr, Xte, yte) in problems:
        if np.unique(ytr).size < 2:
            continue
        lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(Xtr, ytr)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est = cls(random_state=seed).fit(Xtr, ytr)
        flat, collapsed = flatness(est, Xtr)
        lr_flat, lr_collapsed = flatness(lr, Xtr)
        rows.append((seed, Xtr.shape[0], Xtr.shape[1], est.score(Xtr, ytr),
                     est.score(Xte, yte), lr.score(Xte, yte), flat, collapsed, lr_flat,
                     lr_collapsed, len(caught)))
        print("problem %4d N %2d D %2d  train %.3f test %.3f | logistic test %.3f | flat %d "
              "collapsed %d (logistic %d %d) warnings %d" % rows[-1], flush=True)
    r = np.array([row[3:] for row in rows], dtype=float)

    def count(column):
        return int(r[:, column].sum())

    print(f"{len(rows)} problems, {args.estimator}: flat {count(3)} (silent "
          f"{int(np.sum((r[:, 3] > 0) & (r[:, 7] == 0)))}), collapsed {count(4)}; logistic "
          f"regression flat {count(5)}, collapsed {count(6)}; mean test accuracy "
          f"{r[:, 1].mean():.3f} against logistic regression's {r[:, 2].mean():.3f}; more than "
          f"0.1 below it on {int(np.sum(r[:, 1] < r[:, 2] - 0.1))}; "
          f"{time.perf_counter() - start:.0f} s")

if __name__ == "__main__":
    main()
