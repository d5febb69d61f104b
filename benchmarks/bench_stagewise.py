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
    python benchmarks/bench_stagewise.py --eq4      # the outer loop's objective, see below

``--eq4`` times what the outer loop spends its time on: one evaluation of eq. 4 with its
gradient (``nlp_eq4``, called about 30 times per outer iteration by conjugate gradients) on
Waveform realisation 0 with 3600 test points moved in (n = 4000, D = 21) at d_max = 160 and
320, over distances formed once per outer iteration (``sqdist``, what the optimiser passes for
an isotropic kernel) against the same evaluation forming the kernel and its length-scale
contraction pair by pair (the reference, ``sqdist=None``). The function is called outside
the estimator, so BLAS is held to one thread here as the stagewise ``fit`` holds it (its
thread policy is "numba"). Measured 2026-11-27, background runs paused, cached / pairwise: with
OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=NUMBA_NUM_THREADS=1 26.5 / 59.3 ms at d_max = 160 (2.2x)
and 78 / 140 ms at 320 (1.8x); value and gradient equal to 3e-12 relative or better. (Before
BLAS was held here, the default threads gave 40 / 96 and 91 / 176 ms: two BLAS threads beside
two Numba threads on two cores, slower than one thread.) A Waveform d_max = 320 adaptive fit
(20 outer iterations, one thread) went from 99 to 67 CPU s.

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
from sparsegp.classification._stagewise_select import _inner_loop
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
    parser.add_argument("--eq4", action="store_true",
                        help="time one eq. 4 evaluation, cached distances against pairwise")
    args = parser.parse_args(argv)
    if args.threads:
        import numba
        numba.set_num_threads(args.threads)
    if args.eq4:
        return bench_eq4(args)
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


def bench_eq4(args):
    """Seconds per eq. 4 evaluation with gradient, ``{d_max: (cached, pairwise)}``."""
    import numba

    from sparsegp.classification._binary import pack_theta
    from sparsegp.classification._stagewise_eq4 import active_sqdist, nlp_eq4

    from sparsegp._threads import single_threaded_blas

    n, sizes = (1000, (40,)) if args.quick or os.environ.get("CI") else (4000, (160, 320))
    X_tr, y_tr, X_te, _ = load_dataset("raetsch_waveform", split=0,
                                       data_home=_data_home(args.data_home))
    X = np.vstack([X_tr, X_te[:3600]])[:n]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = np.where(np.concatenate([y_tr, load_dataset(
        "raetsch_waveform", split=0, data_home=_data_home(args.data_home))[3][:3600]])[:n]
        == np.unique(y_tr)[1], 1.0, -1.0)
    rng = np.random.default_rng(0)
    theta = pack_theta(2.0, np.array([3.0]), 0.0, False)
    print(f"Waveform, n = {n}, D = {X.shape[1]}, numba threads = {numba.get_num_threads()}, "
          f"best of {args.repeat}")
    out = {}
    for d in sizes:
        active = rng.choice(n, d, replace=False)
        p, m = rng.uniform(0.2, 2.0, d), rng.standard_normal(d)
        sqdist = active_sqdist(X, active)
        times = []
        values = []
        for cached in (sqdist, None):
            nlp_eq4(theta, X, y, active, p, m, False, True, sqdist=cached)     # compile
            best = np.inf
            with single_threaded_blas():
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    for _ in range(5):
                        f, g = nlp_eq4(theta, X, y, active, p, m, False, True, sqdist=cached)
                    best = min(best, (time.perf_counter() - t0) / 5)
            times.append(best)
            values.append(np.append(f, g))
        diff = np.max(np.abs(values[0] - values[1]) / np.abs(values[1]))
        out[d] = tuple(times)
        print(f"  d_max {d:4d}: cached {times[0] * 1e3:7.1f} ms   pairwise "
              f"{times[1] * 1e3:7.1f} ms   ratio {times[1] / times[0]:.2f}   "
              f"max rel. difference {diff:.1e}")
    return out


if __name__ == "__main__":
    main()
