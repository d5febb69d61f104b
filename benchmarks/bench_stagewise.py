"""Time one inner loop of the stagewise classifier (seed 004 §5) for every selection method.

Banana realisation 0 with the first 3600 test points moved into training (n = 4000), d_max = 80,
hyper-parameters fixed, as in the paper's "one inner loop (d_max = 80)" timing. Two numbers per
method: the inner loop alone (steps 2-5 of Algorithm 1, the private ``_inner_loop`` that
``fit`` calls) and a whole ``fit`` with ``optimizer=None`` (the inner loop plus one evaluation
of eq. 4 and the predictor, the same O(n d^2) extra for every method). Prints the time of each
method and the ratio validation (kappa = 59) / adaptive (kappa = 2); the paper reports about 5x
in Matlab and expects more in compiled code.

    python benchmarks/bench_stagewise.py            # full configuration
    python benchmarks/bench_stagewise.py --quick    # n = 1000, d_max = 40
    python benchmarks/bench_stagewise.py --threads 1

Compilation is excluded (one warm-up fit per method on 300 points); the best of ``--repeat``
runs is reported.
"""
import argparse
import os
import time
from pathlib import Path

import numpy as np

from sparsegp import StagewiseGPClassifier
from sparsegp._numba.adf import new_state
from sparsegp.classification._stagewise import _inner_loop
from sparsegp.datasets import load_dataset

METHODS = [
    ("adaptive k=1", dict(selection="adaptive", kappa=1)),
    ("adaptive k=2", dict(selection="adaptive", kappa=2)),
    ("random k=2", dict(selection="random", kappa=2)),
    ("validation k=59", dict(selection="validation", kappa=59)),
    ("entropy", dict(selection="entropy")),
    ("infogain", dict(selection="infogain")),
]


def _data_home(arg):
    if arg:
        return arg
    if os.environ.get("SPARSEGP_DATA"):
        return None
    shared = Path(__file__).resolve().parents[2] / "shared" / "datasets"
    return str(shared) if shared.is_dir() else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 1000, d_max = 40")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="numba threads")
    parser.add_argument("--data-home", default=None)
    args = parser.parse_args(argv)
    if args.threads:
        import numba
        numba.set_num_threads(args.threads)
    n, d_max = (1000, 40) if args.quick or os.environ.get("CI") else (4000, 80)
    X_tr, y_tr, X_te, y_te = load_dataset("raetsch_banana", split=0,
                                          data_home=_data_home(args.data_home))
    X = np.vstack([X_tr, X_te[:3600]])[:n]
    y = np.concatenate([y_tr, y_te[:3600]])[:n]
    import numba
    print(f"Banana, n = {len(y)}, d_max = {d_max}, numba threads = {numba.get_num_threads()}, "
          f"best of {args.repeat}")
    times, fit_times = {}, {}
    y_pm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    ls = np.ones(X.shape[1])
    state = new_state(len(y), d_max, 1.0)
    print(f"  {'method':16s} {'inner loop':>10s} {'fit':>9s}")
    for name, kw in METHODS:
        est = StagewiseGPClassifier(d_max=d_max, optimizer=None, random_state=0, **kw)
        est.fit(X[:300], y[:300])    # compile
        kappa = kw.get("kappa", 1)
        best, best_fit = np.inf, np.inf
        for r in range(args.repeat):
            t0 = time.perf_counter()
            _, _, _, trace = _inner_loop(X, y_pm, state, d_max, kw["selection"], kappa,
                                         "moment", 1.0, ls, 0.0, np.random.default_rng(r))
            best = min(best, time.perf_counter() - t0)
            t0 = time.perf_counter()
            est.set_params(random_state=r).fit(X, y)
            best_fit = min(best_fit, time.perf_counter() - t0)
        times[name], fit_times[name] = best, best_fit
        print(f"  {name:16s} {best:8.3f} s {best_fit:7.3f} s   train NLP_a {trace[-1]:.4f}")
    ratio = times["validation k=59"] / times["adaptive k=2"]
    print(f"ratio validation (k=59) / adaptive (k=2), inner loop: {ratio:.1f}; whole fit: "
          f"{fit_times['validation k=59'] / fit_times['adaptive k=2']:.1f}")
    return times


if __name__ == "__main__":
    main()
