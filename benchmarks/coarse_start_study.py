"""The regressor's coarse start against none, at the defaults, on T2 problems (issue 45).

For each seed, approximation (FITC, VFE) and ``coarse_rows`` ("auto", None), one
``SparseGPRegressor`` fit from bench_peers' T2 start (its data from the seed, the shared
inducing inputs, unit SE-ARD hyper-parameters and noise, ``normalize_y=False``), otherwise at
the defaults. Prints and appends to ``--out`` (JSON lines) the fit's wall and CPU time,
iterations, coarse rows, final objective, whether it converged, and test NLP and RMSE.

Usage::

    python benchmarks/coarse_start_study.py [--seeds 0,1,2] [--n 100000] [--out FILE]
    python benchmarks/coarse_start_study.py --levels [--seeds 0] [--variants vfe]

``--levels`` traces one search per coarse setting (none; one subset of 5 000, 10 140 or
25 000 rows; the default's levels) on the first seed: every evaluated point is scored on the
test rows afterwards (``bench_peers``' T2 trace), and it prints the evaluations of each search,
the full-evaluation equivalents (a coarse evaluation counted at its share of the rows) until
the model first has ``--target-nlp`` and ``--target-rmse`` (default: GPflow SGPR's final T2
accuracy in ``PEERS_DEFAULTS.md``), and the final objective, test NLP and RMSE.

Runs in this process, one fit after another (the first compiles, outside the timing).
"""
import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_peers import (  # noqa: E402
    CONFIG,
    _sparsegp_accuracy_trace,
    _traced_sparsegp_search,
    gaussian_scores,
    make_t2,
)

#: --levels' settings: (name, coarse_rows, level factor); a factor larger than any N / size
#: leaves one coarse search
LEVELS = [("none", None, None), ("5 000 rows", 5000, 10 ** 9), ("10 140 rows", 10140, 10 ** 9),
          ("25 000 rows", 25000, 10 ** 9), ("the default", "auto", None)]


def trace_levels(d, variant, target_nlp, target_rmse):
    """One traced search per LEVELS setting; a printed row each."""
    import sparsegp
    from sparsegp.kernels import SquaredExponential
    from sparsegp.regression import _search
    D, N = d["Xtr"].shape[1], d["Xtr"].shape[0]
    factor = _search.COARSE_LEVEL_FACTOR
    for name, rows, level_factor in LEVELS:
        _search.COARSE_LEVEL_FACTOR = level_factor or factor
        try:
            gp = sparsegp.SparseGPRegressor(variant, inducing_points=d["Z"],
                                            kernel=SquaredExponential(1.0, np.ones(D)),
                                            noise_variance=1.0, normalize_y=False,
                                            coarse_rows=rows, random_state=0)
            points = []
            with _traced_sparsegp_search(points):
                t0 = time.perf_counter()
                gp.fit(d["Xtr"], d["ytr"])
        finally:
            _search.COARSE_LEVEL_FACTOR = factor
        accuracy = _sparsegp_accuracy_trace(gp, variant, d, points, t0)
        searches, cost, reached = {}, 0.0, None
        for (_, x, label), (_, nlp, rmse) in zip(points, accuracy, strict=True):
            searches[label] = searches.get(label, 0) + 1
            share = 1.0
            if "coarse start on " in label:
                share = int(label.split("coarse start on ")[1].split(" of")[0]) / N
            cost += share
            if reached is None and nlp <= target_nlp and rmse <= target_rmse:
                reached = cost
        mean, std = gp.predict(d["Xte"], return_std=True)
        nlp, rmse = gaussian_scores(d["yte"], mean, std ** 2 + gp.noise_variance_)
        print(f"{name:12s} evaluations {' + '.join(str(n) for n in searches.values()):16s} "
              f"to the target: {'never' if reached is None else f'{reached:6.1f}'} "
              f"full-evaluation equivalents; objective {gp.log_marginal_likelihood_:10.1f}, "
              f"test NLP {nlp:.4f}, RMSE {rmse:.4f}", flush=True)


def fit_one(d, variant, coarse_rows):
    """One default fit from T2's shared start; its row of the study."""
    import sparsegp
    from sparsegp.kernels import SquaredExponential
    D = d["Xtr"].shape[1]
    gp = sparsegp.SparseGPRegressor(variant, inducing_points=d["Z"],
                                    kernel=SquaredExponential(1.0, np.ones(D)),
                                    noise_variance=1.0, normalize_y=False,
                                    coarse_rows=coarse_rows, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0, c0 = time.perf_counter(), time.process_time()
        gp.fit(d["Xtr"], d["ytr"])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    mean, std = gp.predict(d["Xte"], return_std=True)
    nlp, rmse = gaussian_scores(d["yte"], mean, std ** 2 + gp.noise_variance_)
    return dict(variant=variant, coarse_rows=coarse_rows, wall=wall, cpu=cpu,
                n_iter=int(gp.n_iter_), coarse_rows_=int(gp.coarse_rows_),
                objective=float(gp.log_marginal_likelihood_), converged=bool(gp.converged_),
                warnings=[str(w.message)[:200] for w in caught], test_nlp=nlp, test_rmse=rmse)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--n", type=int, default=CONFIG["T2"]["N"])
    parser.add_argument("--variants", default="fitc,vfe")
    parser.add_argument("--out", default=None)
    parser.add_argument("--levels", action="store_true", help="trace the coarse settings")
    parser.add_argument("--target-nlp", type=float, default=0.21354)
    parser.add_argument("--target-rmse", type=float, default=0.29937)
    args = parser.parse_args(argv)
    cfg = dict(CONFIG["T2"], N=args.n)
    if args.levels:
        seed = int(args.seeds.split(",")[0])
        trace_levels(make_t2(cfg, seed), args.variants.split(",")[0], args.target_nlp,
                     args.target_rmse)
        return
    first = True
    for seed in (int(s) for s in args.seeds.split(",")):
        d = make_t2(cfg, seed)
        for variant in args.variants.split(","):
            if first:                       # compile outside the timing
                import sparsegp
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    sparsegp.SparseGPRegressor(variant, inducing_points=d["Z"], max_iter=1,
                                               tol=None).fit(d["Xtr"], d["ytr"])
                first = False
            for coarse in ("auto", None):
                row = dict(fit_one(d, variant, coarse), seed=seed, N=args.n)
                print(f"seed {seed} {variant:4s} coarse={str(coarse):4s}: "
                      f"{row['wall']:6.1f} s ({row['cpu']:6.1f} CPU s), {row['n_iter']:4d} "
                      f"iterations, objective {row['objective']:10.1f}, test NLP "
                      f"{row['test_nlp']:.4f}, RMSE {row['test_rmse']:.4f}, converged "
                      f"{row['converged']}, {len(row['warnings'])} warnings", flush=True)
                if args.out:
                    with open(args.out, "a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
