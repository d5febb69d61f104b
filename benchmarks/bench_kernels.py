"""Each estimator with each stationary family: fit time beside the squared exponential's.

Every estimator takes ``kernel=`` (``sparsegp.kernels``); SE is the family the compiled engines
were first written for, the Matérn families share its compiled passes through one family
switch, plus one pass for the derivative factor where a gradient needs it. This prints, per
estimator, the median fit time of each family and its ratio to SE's, measured in the same
run on the same data, start and iteration count::

    python benchmarks/bench_kernels.py [--quick] [--repeats 3] [--only regressor_fitc,gfitc]

Times are wall-clock seconds at the library's default threads; compile once outside the
timing (a warm-up fit per family).
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
            n_inducing=20, kernel=k, max_iter=20, random_state=0), Xm[:1000 // s],
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="problems 10x smaller")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="", help="comma-separated cases (default: all)")
    args = parser.parse_args(argv)
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
