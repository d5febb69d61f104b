"""Fit time with the default thread settings against one thread, for every estimator.

Each measurement runs in a fresh Python process, so that thread pools start as a user's would:
"default" removes every thread variable from the environment (OpenBLAS and Numba then use all
cores), "one" sets OPENBLAS/OMP/MKL/NUMBA_NUM_THREADS=1. Inside the process one small fit loads
the compiled kernels first (compilation is not timed), then one full fit is timed. Every cell
is the minimum over ``--repeats`` processes (default 2), run alternately, and the table gives
the ratio default / one: at most 1.1 means the defaults cost nothing, below 1 means the second
core helps.

    python benchmarks/bench_threads.py                 # all estimators, about 4 minutes
    python benchmarks/bench_threads.py --only sep,ivm  # a subset
    python benchmarks/bench_threads.py --quick         # small problems, a smoke run
    python benchmarks/bench_threads.py --pythonpath /path/to/other/checkout   # compare code
    python benchmarks/bench_threads.py --loaded        # with one core kept busy throughout

``--loaded`` keeps one core busy with another program (a Python busy loop at normal priority)
for the whole run, as a user's other work would: the defaults should then cost at most 1.5x
one thread (the library runs its threads on the cores left free).
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import time

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

# name -> (estimator, constructor arguments, problem (kind, N, D, C)); moderate sizes
# that take one to a few seconds per fit on one core of a 2-core machine
CASES = {
    "gfitc": ("GFITCClassifier", dict(n_inducing=50, max_iter=10), ("binary", 5000, 2, 2)),
    # issue 25's quiet-machine outlier: small D, default iterations, under a second a fit
    "gfitc_d2": ("GFITCClassifier", dict(n_inducing=50), ("binary", 4000, 2, 2)),
    "ep_dense": ("EPClassifier", dict(max_iter=5), ("binary", 600, 2, 2)),
    "ivm": ("IVMClassifier", dict(n_active=200), ("binary", 5000, 2, 2)),
    "stagewise": ("StagewiseGPClassifier", dict(d_max=100, max_iter=3),
                  ("binary", 2000, 2, 2)),
    "mc_ep": ("MultiClassEPClassifier", dict(method="ep", n_inducing=50, max_iter=50),
              ("multi", 2000, 10, 4)),
    "mc_sep": ("MultiClassEPClassifier", dict(method="sep", n_inducing=50, max_iter=50),
               ("multi", 2000, 10, 4)),
    "mc_gfitc": ("MultiClassGFITCClassifier", dict(n_inducing=20, max_iter=5, tol=None),
                 ("multi", 1000, 10, 3)),
    "mc_vi": ("MultiClassSVGPClassifier", dict(n_inducing=50, max_iter=50),
              ("multi", 2000, 10, 4)),
    "reg_fitc": ("SparseGPRegressor", dict(approximation="fitc", n_inducing=100, max_iter=30),
                 ("regression", 20000, 5, 0)),
    # 100 rows: the thread hand-offs, not the work, set the time (26 s against 0.37 s once)
    "reg_tiny": ("SparseGPRegressor", dict(approximation="fitc", n_inducing=50),
                 ("regression", 100, 2, 0)),
    "reg_exact": ("SparseGPRegressor", dict(approximation="exact", max_iter=10),
                  ("regression", 1500, 5, 0)),
}


def _problem(kind, N, D, C, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    if kind == "binary":
        from sparsegp.datasets import make_xor
        return make_xor(N, random_state=seed)
    X = rng.standard_normal((N, D))
    if kind == "multi":
        W = rng.standard_normal((D, C))
        F = np.sin(X @ W) + 0.3 * rng.standard_normal((N, C))
        return X, np.argmax(F, axis=1)
    w = rng.standard_normal(D)
    return X, np.sin(X @ w) + 0.1 * rng.standard_normal(N)


def warmed_up(case, quick=False):
    """``(estimator class, constructor arguments, X, y)`` of ``case``, after one small fit in
    this process has loaded the compiled kernels (warnings of that fit are ignored)."""
    import warnings

    import sparsegp
    name, kwargs, (kind, N, D, C) = CASES[case]
    if quick:
        N = max(200, N // 10)
    X, y = _problem(kind, N, D, C)
    Xw, yw = _problem(kind, 120, D, C, seed=1)
    cls = getattr(sparsegp, name)
    small = dict(kwargs)
    for key in ("n_inducing", "n_active", "d_max"):
        if key in small:
            small[key] = min(small[key], 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls(**{**small, "max_iter": 2} if "max_iter" in small else small).fit(Xw, yw)
    return cls, kwargs, X, y


def run_child(case, quick, init=""):
    """Time one fit of ``case`` in this process (with ``init``, that start for an estimator
    that takes one); print a JSON line."""
    import warnings
    from inspect import signature

    cls, kwargs, X, y = warmed_up(case, quick)
    if init and "init" in signature(cls).parameters:
        kwargs = {**kwargs, "init": init}
    N = X.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(random_state=0, **kwargs)
        with _numba_count_set_in() as counts:
            t0 = time.perf_counter()
            est.fit(X, y)
            seconds = time.perf_counter() - t0
    import numba
    from threadpoolctl import threadpool_info
    blas = sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
    # the count the fit ran with: the library's first change of it, else what the process has
    print(json.dumps({"case": case, "seconds": seconds, "N": N,
                      "numba_threads": counts[0] if counts else numba.get_num_threads(),
                      "blas_threads": blas}))


@contextlib.contextmanager
def _numba_count_set_in():
    """Inside the block, record every count passed to ``numba.set_num_threads`` (a list)."""
    import numba
    original, counts = numba.set_num_threads, []

    def record(n):
        counts.append(n)
        original(n)
    numba.set_num_threads = record
    try:
        yield counts
    finally:
        numba.set_num_threads = original


def _env(setting, pythonpath):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    if setting == "one":
        env.update({k: "1" for k in THREAD_VARS})
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    return env


def measure(case, setting, quick, pythonpath, init=""):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", case]
    if quick:
        cmd.append("--quick")
    if init:
        cmd += ["--init", init]
    out = subprocess.run(cmd, env=_env(setting, pythonpath), capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated cases (default: all): "
                        + ", ".join(CASES))
    parser.add_argument("--repeats", type=int, default=2, help="fresh processes per cell")
    parser.add_argument("--quick", action="store_true", help="problems 10x smaller")
    parser.add_argument("--pythonpath", default="",
                        help="put this checkout first on the children's path (before/after)")
    parser.add_argument("--json", default="", help="also write the rows to this JSON file")
    parser.add_argument("--init", default="",
                        help="pass init=NAME to every estimator that takes one: the same fits "
                             "on both sides of a change of the default start")
    parser.add_argument("--loaded", action="store_true",
                        help="keep one core busy with another process throughout")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child, args.quick, args.init)
        return 0
    hog = None
    if args.loaded:
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        print(f"one core kept busy by process {hog.pid} (a busy loop)", flush=True)
    try:
        return _table(parser, args)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def _table(parser, args):
    cases = [c for c in args.only.split(",") if c] or list(CASES)
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; choose from {sorted(CASES)}")
    print(f"{'case':<10} {'estimator':<26} {'N':>6} {'default s':>10} {'one s':>8} "
          f"{'default/one':>12}  threads (numba in the fit, blas) default | one")
    rows = []
    for case in cases:
        best = {"default": None, "one": None}
        for _ in range(args.repeats):
            for setting in ("default", "one"):        # alternate, so drift hits both alike
                r = measure(case, setting, args.quick, args.pythonpath, args.init)
                if best[setting] is None or r["seconds"] < best[setting]["seconds"]:
                    best[setting] = r
        d, o = best["default"], best["one"]
        ratio = d["seconds"] / o["seconds"]
        rows.append({"case": case, "estimator": CASES[case][0], "N": d["N"],
                     "default_s": d["seconds"], "one_s": o["seconds"], "ratio": ratio})
        print(f"{case:<10} {CASES[case][0]:<26} {d['N']:>6} {d['seconds']:>10.3f} "
              f"{o['seconds']:>8.3f} {ratio:>12.2f}  ({d['numba_threads']}, "
              f"{d['blas_threads']}) | ({o['numba_threads']}, {o['blas_threads']})", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
