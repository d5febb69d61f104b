"""Is a default regressor fit continuous in its data? (issue 49 item 5)

On standardised ``load_diabetes`` (70/30 split, seed 0), fits each approximation for three
``random_state`` values at X and at X (1 ± 1e-12), and prints the test R², the largest move of
the test predictions in s.d. of y (target: at most 1e-6), the iterations, whether the search
converged, the fitted variance and noise (in var(y)) and the number of warnings.

    python benchmarks/sor_dtc_continuity.py --approximations dtc,sor \
        --inducing-objective evidence        # the joint search the default replaced
"""
import argparse
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sparsegp import SparseGPRegressor


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--approximations", default="dtc,sor")
    parser.add_argument("--inducing-objective", default="auto")
    parser.add_argument("--seeds", type=int, default=3, help="random_state 0, 1, ...")
    args = parser.parse_args(argv)
    objective = None if args.inducing_objective == "none" else args.inducing_objective
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    for method in args.approximations.split(","):
        for seed in range(args.seeds):
            fits = {}
            for eps in (0.0, 1e-12, -1e-12):
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    gp = SparseGPRegressor(method, inducing_objective=objective,
                                           random_state=seed).fit(Xtr * (1.0 + eps), ytr)
                fits[eps] = (gp, gp.predict(Xte), len(caught))
            gp, mean, n_warn = fits[0.0]
            move = max(np.max(np.abs(fits[e][1] - mean)) for e in (1e-12, -1e-12)) / np.std(y)
            print(f"{method} random_state {seed}: test R2 {r2_score(yte, mean):.3f}, move "
                  f"{move:.2e} s.d. of y, {gp.n_iter_} iterations, converged {gp.converged_}, "
                  f"variance {gp.variance_ / np.var(ytr):.3g} and noise "
                  f"{gp.noise_variance_ / np.var(ytr):.3g} var(y), {n_warn} warnings",
                  flush=True)


if __name__ == "__main__":
    main()
