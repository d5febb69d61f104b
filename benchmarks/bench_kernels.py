"""Each estimator with each stationary family: fit time beside the squared exponential's.

Every estimator takes ``kernel=`` (``sparsegp.kernels``); SE is the family the compiled engines
were first written for, the Matérn families share its compiled passes through one family
switch, plus one pass for the derivative factor where a gradient needs it. This prints, per
estimator, the median fit time of each family and its ratio to SE's, measured in the same
run on the same data, start and iteration count::

    python benchmarks/bench_kernels.py [--quick] [--repeats 3] [--only regressor_fitc,gfitc]

Times are wall-clock seconds at the library's default threads; compile once outside the
timing (a warm-up fit per family).

``--cross`` times the compiled cross pass ``covfuncs.stationary_cross`` (the kernel objects',
the classifiers' and the predictions' K(X, Z)) on one thread against a compiled per-pair
loop over ``scaled_sqdist``, the form it had until it ran its inner loop over Z's rows, and
checks that both give the same numbers bit for bit. Measured 2026-11-27 on the 2-core
machine, table runs paused: 3.76x at N 5 000, M 1 130, D 169 (MNIST's IVM prediction),
1.87x at 20 000 x 50, D 8, 1.41x at 1 900 x 100, D 2, 1.25x at 3 000 x 200, D 1.
At the default threads (2 here; the old pass's parallel form, same values checked): 4.75x,
2.11x and 1.58x at the first three shapes.
"""
import argparse
import statistics
import time
import warnings

import numpy as np

FAMILIES = {"se": None, "matern12": 0.5, "matern32": 1.5, "matern52": 2.5}


def _kernel(family):
    from sparsegp.kernels import Matern, SquaredExponential

    nu = FAMILIES[family]
    return SquaredExponential() if nu is None else Matern(nu=nu)


def _cases(quick):
    import sparsegp
    from sparsegp.datasets import make_gp_classes, make_xor

    s = 10 if quick else 1
    rng = np.random.default_rng(0)
    Xr = rng.uniform(-3, 3, size=(100_000 // s, 5))
    yr = np.sin(Xr[:, 0]) * np.cos(Xr[:, 1]) + 0.1 * rng.normal(size=Xr.shape[0])
    Xb, yb = make_xor(16_000 // s, random_state=0)
    Xm, ym = make_gp_classes(3000 // s, n_classes=3, random_state=0)
    Xi, yi = make_xor(4000 // s, random_state=1)
    return {
        "regressor_fitc": (lambda k: sparsegp.SparseGPRegressor(
            "fitc", n_inducing=100, kernel=k, max_iter=20, random_state=0), Xr, yr),
        "regressor_vfe": (lambda k: sparsegp.SparseGPRegressor(
            "vfe", n_inducing=100, kernel=k, max_iter=20, random_state=0), Xr, yr),
        "gfitc": (lambda k: sparsegp.GFITCClassifier(
            n_inducing=50, kernel=k, random_state=0), Xb, yb),
        "ep_dense": (lambda k: sparsegp.EPClassifier(kernel=k, max_iter=5, random_state=0),
                     Xb[:1500 // s], yb[:1500 // s]),
        "ivm": (lambda k: sparsegp.IVMClassifier(n_active=200, kernel=k, random_state=0),
                Xi, yi),
        "stagewise": (lambda k: sparsegp.StagewiseGPClassifier(
            d_max=40, kernel=k, random_state=0), Xi[:2000 // s], yi[:2000 // s]),
        "multiclass_sep": (lambda k: sparsegp.MultiClassEPClassifier(
            method="sep", n_inducing=50, kernel=k, max_iter=50, random_state=0), Xm, ym),
        "multiclass_gfitc": (lambda k: sparsegp.MultiClassGFITCClassifier(
            n_inducing=20, kernel=k, max_iter=20, tol=None, random_state=0), Xm[:1000 // s],
            ym[:1000 // s]),
        "multiclass_svgp": (lambda k: sparsegp.MultiClassSVGPClassifier(
            n_inducing=50, kernel=k, max_iter=50, random_state=0), Xm, ym),
    }


def _time_fit(make, X, y, family, repeats):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        make(_kernel(family)).fit(X[:200], y[:200])          # compile outside the timing
        times = []
        for _ in range(repeats):
            est = make(_kernel(family))
            t = time.perf_counter()
            est.fit(X, y)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def _per_pair_reference():
    import numba

    from sparsegp._numba import covfuncs as cf

    @numba.njit(cache=False)
    def per_pair(X, Z, family, variance, lengthscale, deriv, out):
        for n in range(X.shape[0]):
            for m in range(Z.shape[0]):
                out[n, m] = cf.stationary_value(cf.scaled_sqdist(X, n, Z, m, lengthscale),
                                                family, variance, deriv)
        return out
    return per_pair


def cross_pass(quick, repeats):
    """Print the cross pass's time beside the per-pair reference's, one thread."""
    import numba

    from sparsegp._numba import covfuncs as cf

    per_pair = _per_pair_reference()
    s = 10 if quick else 1
    rng = np.random.default_rng(0)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        print(f"{'N x M, D':22s} {'per pair':>10s} {'cross':>10s} {'ratio':>7s}")
        for N, M, D in ((5000 // s, 1130 // s, 169), (20_000 // s, 50, 8), (1900, 100, 2),
                        (3000, 200, 1)):
            X, Z = rng.normal(size=(N, D)), rng.normal(size=(M, D))
            ls = rng.uniform(0.5, 2.0, size=D)
            a, b = np.empty((N, M)), np.empty((N, M))
            per_pair(X, Z, 0, 1.3, ls, False, a)
            cf.stationary_cross(X, Z, 0, 1.3, ls, False, b)
            if not np.array_equal(a, b):
                raise AssertionError(f"cross pass differs from the per-pair sum at {N, M, D}")
            t = {}
            for name, fn, out in (("pair", per_pair, a), ("cross", cf.stationary_cross, b)):
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    fn(X, Z, 0, 1.3, ls, False, out)
                    times.append(time.perf_counter() - t0)
                t[name] = statistics.median(times)
            print(f"{f'{N} x {M}, {D}':22s} {t['pair']:9.4f}s {t['cross']:9.4f}s "
                  f"{t['pair'] / t['cross']:6.2f}x", flush=True)
    finally:
        numba.set_num_threads(threads)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="problems 10x smaller")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated cases (default: all)")
    parser.add_argument("--cross", action="store_true",
                        help="only the compiled cross pass against the per-pair loop")
    args = parser.parse_args(argv)
    if args.cross:
        cross_pass(args.quick, args.repeats)
        return
    cases = _cases(args.quick)
    names = [c for c in args.only.split(",") if c] or list(cases)
    unknown = sorted(set(names) - set(cases))
    if unknown:
        parser.error(f"unknown case(s) {unknown}; valid: {', '.join(cases)}")
    print(f"{'case':18s} " + " ".join(f"{f:>16s}" for f in FAMILIES))
    for name in names:
        make, X, y = cases[name]
        t = {f: _time_fit(make, X, y, f, args.repeats) for f in FAMILIES}
        cells = [f"{t[f]:7.3f}s ({t[f] / t['se']:4.2f}x)" for f in FAMILIES]
        print(f"{name:18s} " + " ".join(f"{c:>16s}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
