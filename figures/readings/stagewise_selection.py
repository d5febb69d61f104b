"""Which training points seed 004's entropy and information-gain rules choose as basis
vectors, and whether that explains why information gain trails entropy in our Figure 3
(the paper says it leads on Banana, Waveform and Ringnorm).

Information gain scores a candidate by KL(Q_new || Q) = 1/2 (-log(1 - a nu) - a nu + a alpha^2)
(notes binary_sparse_gpc.md §2.3): the entropy part -1/2 log(1 - a nu) plus a term in the
squared shift of the mean, a alpha^2. That term is largest for points the current model gets
confidently wrong, which on noisy data are mostly points with the wrong label. This script
fits both rules (and adaptive sampling, kappa = 2, for reference) with Figure 3's settings
and counts, among each fit's basis vectors, the *suspect labels*: training points whose label
disagrees with most of their ``--neighbours`` nearest neighbours (standardised inputs),
a proxy for label noise that needs no ground truth.

    python figures/readings/stagewise_selection.py [--dataset banana] [--realizations 5]
        [--dmax 40 80] [--max-iter 20] [--neighbours 10]

Prints one line per fit and a summary per rule: test error, and the share of suspect labels
among the basis vectors against their share in the whole training set.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.neighbors import NearestNeighbors

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the figure script beside us
from stagewise_fig3_methods import SEED, fit_model, load_split  # noqa: E402

RULES = ("entropy", "infogain", "adaptive k=2")


def suspect_labels(X, y, k):
    """Boolean mask of the training points whose label differs from the majority label of
    their k nearest other points (inputs standardised per feature)."""
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    _, idx = NearestNeighbors(n_neighbors=k + 1).fit(Z).kneighbors(Z)
    same = (y[idx[:, 1:]] == y[:, None]).mean(axis=1)        # column 0 is the point itself
    return same < 0.5


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="banana")
    parser.add_argument("--realizations", type=int, default=5)
    parser.add_argument("--dmax", type=int, nargs="+", default=[40, 80])
    parser.add_argument("--max-iter", type=int, default=20)
    parser.add_argument("--neighbours", type=int, default=10)
    args = parser.parse_args(argv)
    rows = []
    for r in range(args.realizations):
        X, y, Xt, yt = load_split(args.dataset, r)
        suspect = suspect_labels(X, y, args.neighbours)
        for d in args.dmax:
            for rule in RULES:
                # Figure 3's fit and seed, kept here to read its active set
                est = fit_model(X, y, d, rule, args.max_iter, SEED + r)
                error = float(np.mean(est.predict(Xt) != yt))
                share = float(suspect[est.active_set_].mean())
                rows.append((rule, d, r, error, share, float(suspect.mean())))
                print(f"{args.dataset} r{r} d_max {d:3d} {rule:13s} test error {error:.4f}  "
                      f"suspect labels among basis vectors {share:.3f} "
                      f"(training set {suspect.mean():.3f})", flush=True)
    print()
    for d in args.dmax:
        for rule in RULES:
            sel = [row for row in rows if row[0] == rule and row[1] == d]
            err = np.array([row[3] for row in sel])
            share = np.array([row[4] for row in sel])
            print(f"d_max {d:3d} {rule:13s} mean test error {err.mean():.4f}  suspect share "
                  f"{share.mean():.3f} (min {share.min():.3f}, max {share.max():.3f}; training "
                  f"set {np.mean([row[5] for row in sel]):.3f}), {len(sel)} realisations")
    return rows


if __name__ == "__main__":
    main()
