"""Time two fit paths on the same fixed schedule, at the default thread settings (issue 45).

For comparing two checkouts (run it with each on ``PYTHONPATH``, alternating): GFITC on xor
(N = 16 000, M = 50, 20 CG steps from given Z and unit SE-ARD, EP solved exactly at every
step) and FITC regression (N = 50 000, M = 100, D = 5, 10 L-BFGS-B iterations over the
evidence). Both run their fixed schedule whatever the checkout's defaults, so equal outputs
mean the same path; prints the fastest of three fits of each and the objective reached.

    PYTHONPATH=/path/to/checkout python benchmarks/time_fixed_schedules.py
"""
import inspect
import time
import warnings

import numpy as np


def main():
    from sparsegp import GFITCClassifier, SparseGPRegressor
    from sparsegp.datasets import make_xor
    from sparsegp.kernels import SquaredExponential
    warnings.simplefilter("ignore")
    fixed = {}
    if "tol" in inspect.signature(GFITCClassifier).parameters:
        # a checkout with the stopping rule: the old schedule, explicitly
        fixed = dict(tol=None, ep_search_rtol=0.0)
    X, y = make_xor(16000, random_state=0)
    Z = X[np.random.default_rng(2).choice(16000, 50, replace=False)]
    kw = dict(inducing_points=Z, kernel=SquaredExponential(1.0, np.ones(2)), optimizer="cg",
              max_iter=20, random_state=0, **fixed)
    GFITCClassifier(**{**kw, "max_iter": 2}).fit(X, y)          # compile outside the timing
    times = []
    for _ in range(3):
        t = time.perf_counter()
        gfitc = GFITCClassifier(**kw).fit(X, y)
        times.append(time.perf_counter() - t)
    rng = np.random.default_rng(0)
    Xr = rng.standard_normal((50000, 5))
    yr = np.sin(Xr[:, 0]) + 0.3 * rng.standard_normal(50000)
    rk = dict(inducing_points=Xr[:100], kernel=SquaredExponential(1.0, np.ones(5)),
              optimizer="lbfgs", max_iter=10, random_state=0, inducing_objective="evidence",
              **({"tol": None} if fixed else {}))
    SparseGPRegressor("fitc", **{**rk, "max_iter": 1}).fit(Xr, yr)
    reg_times = []
    for _ in range(3):
        t = time.perf_counter()
        reg = SparseGPRegressor("fitc", **rk).fit(Xr, yr)
        reg_times.append(time.perf_counter() - t)
    print(f"GFITC N=16000 M=50, 20 CG steps: fastest {min(times):.3f} s, log Z "
          f"{gfitc.log_evidence_:.10f}")
    print(f"FITC N=50000 M=100, 10 iterations: fastest {min(reg_times):.3f} s, log ML "
          f"{reg.log_marginal_likelihood_:.8f}")


if __name__ == "__main__":
    main()
