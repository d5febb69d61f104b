"""Timing of the sparse GP regression evidence + full gradient (issue 4 benchmark).

For N in {10 000, 100 000}, D = 5, M in {50, 100, 200}: median of ``--repeats`` timings of the
log marginal likelihood and its full gradient (s², ℓ, σ² and every inducing-input coordinate)
for SoR/DTC, FITC/FIC, PITC (balanced blocks of M/2..M points) and VFE, each divided by the time numpy
takes for the (N×M)ᵀ(N×M) product measured in the same run: ``A.T @ A`` (column "/ AtA"; numpy
computes this Gram matrix with BLAS syrk, half the flops of a general product) and ``A.T @ B``
for two different N×M arrays (column "/ AtB", BLAS gemm). Each method reuses one
``Workspace`` across its repeats, as ``SparseGPRegressor.fit`` does across optimiser steps; FITC
is also timed as a one-off call (fresh buffers, and its own switch of OpenBLAS to one thread
and back, which ``fit`` makes once per optimisation: see ``_base.blas_pin``). Then 100 L-BFGS
iterations of FITC at N = 100 000, M = 100 through ``SparseGPRegressor.fit``. Where GPflow
(SGPR = VFE, GPRFITC) and GPy (SparseGPRegression with VarDTC and with FITC) are importable,
the same objective + gradient is timed with them too (Z trainable), with the same ratio.

Usage::

    python benchmarks/bench_regression.py [--quick] [--repeats 5] [--threads T] [--no-external]

``--quick`` uses N in {2 000, 10 000}, M in {20, 50} and 10 L-BFGS iterations (a smoke run).
The machine load matters: compare the ratios, and re-measure on a quiet machine.
``--threads T`` caps OpenBLAS, OpenMP, Numba and TensorFlow at T threads (set before numpy is
imported); without it every library uses its defaults (all cores), which is how sparsegp's
FITC/DTC/VFE passes are meant to run: they split rows among Numba's threads and hold OpenBLAS
to one thread themselves. The references run with the same settings, so on a machine with
several cores report both the default run and ``--threads 1``. On an oversubscribed machine
multi-threaded OpenBLAS is pathological (A.T @ A was measured 20x slower with 2 threads than
with 1 at a load average of 20), so use ``--threads 1`` there.
"""
import argparse
import os
import sys
import time


def _threads_from_argv(argv):
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--threads="):
            return arg.split("=", 1)[1]
    return None


_THREADS = _threads_from_argv(sys.argv[1:])
if _THREADS is not None:            # must happen before numpy / numba / BLAS are loaded
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
        os.environ[_var] = _THREADS

import numpy as np  # noqa: E402

from sparsegp import SparseGPRegressor  # noqa: E402
from sparsegp.kernels import SquaredExponential  # noqa: E402
from sparsegp.regression import _base  # noqa: E402

METHODS = ("dtc", "fitc", "pitc", "vfe")      # SoR shares DTC's evidence, FIC shares FITC's


def median_time(fn, repeats):
    fn()                                       # warm-up: compiles and page faults
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def baseline_time(N, M, repeats):
    """Median times of numpy's (N×M)ᵀ(N×M) products on C-ordered N×M arrays.

    Returns ``(t_AtA, t_AtB)``: ``A.T @ A`` is the Gram matrix, which numpy hands to BLAS syrk
    (half the flops of a general product); ``A.T @ B`` with B another N×M array is the general
    product (gemm). The ratios in the table are to the former, the stricter reference.
    """
    rng = np.random.default_rng(1)
    A, B = rng.random((N, M)), rng.random((N, M))
    return median_time(lambda: A.T @ A, repeats), median_time(lambda: A.T @ B, repeats)


def problem(N, M, D=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(N, D))
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=N)
    Z = X[rng.choice(N, size=M, replace=False)].copy()
    return X, y, Z


def bench_sparsegp(N, M, repeats, D=5):
    X, y, Z = problem(N, M, D)
    ls = np.full(D, 1.5)
    base, base_gemm = baseline_time(N, M, repeats)
    rows = []
    for method in METHODS:
        blocks = _base.median_split_blocks(X, M) if method == "pitc" else None
        ws = _base.Workspace()             # as in SparseGPRegressor.fit: buffers reused
        with _base.blas_pin(method):       # as in fit: one BLAS thread switch for the loop
            t = median_time(lambda: _base.sparse_lml(X, y, Z, 1.0, ls, 0.1, method, blocks,
                                                     1e-6, True, ws), repeats)
        rows.append((f"sparsegp {method}", t))
        if method == "fitc":               # a one-off call: new arrays, its own BLAS switch
            t = median_time(lambda: _base.sparse_lml(X, y, Z, 1.0, ls, 0.1, method, blocks,
                                                     1e-6, True), repeats)
            rows.append(("sparsegp fitc, one-off call", t))
    return base, base_gemm, rows


def bench_gpflow(N, M, repeats, D=5):
    try:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import gpflow
        import tensorflow as tf
        if _THREADS is not None:
            tf.config.threading.set_intra_op_parallelism_threads(int(_THREADS))
            tf.config.threading.set_inter_op_parallelism_threads(int(_THREADS))
    except Exception as exc:                   # noqa: BLE001 - any import failure means skip
        return None, f"GPflow skipped: cannot import gpflow/tensorflow ({type(exc).__name__}: {exc})"
    X, y, Z = problem(N, M, D)
    rows = []
    try:
        for name, cls in (("gpflow SGPR (VFE)", gpflow.models.SGPR),
                          ("gpflow GPRFITC", gpflow.models.GPRFITC)):
            model = cls((X, y[:, None]), kernel=gpflow.kernels.SquaredExponential(
                lengthscales=np.full(D, 1.5)), inducing_variable=Z.copy(), noise_variance=0.1)
            variables = model.trainable_variables

            @tf.function
            def loss_and_grad():
                with tf.GradientTape() as tape:
                    loss = model.training_loss()
                return loss, tape.gradient(loss, variables)

            rows.append((name, median_time(lambda: [v.numpy() for v in
                                                    tf.nest.flatten(loss_and_grad())], repeats)))
    except Exception as exc:                   # noqa: BLE001
        return rows, f"GPflow failed at run time ({type(exc).__name__}: {exc})"
    return rows, None


def bench_gpy(N, M, repeats, D=5):
    try:
        import GPy
    except Exception as exc:                   # noqa: BLE001
        return None, f"GPy skipped: cannot import GPy ({type(exc).__name__}: {exc})"
    X, y, Z = problem(N, M, D)
    rows = []
    try:
        from GPy.inference.latent_function_inference import FITC, VarDTC
        for name, inf in (("GPy VarDTC", VarDTC), ("GPy FITC", FITC)):
            kern = GPy.kern.RBF(D, lengthscale=1.5, ARD=True)
            model = GPy.core.SparseGP(X, y[:, None], Z.copy(), kern,
                                      GPy.likelihoods.Gaussian(variance=0.1),
                                      inference_method=inf())
            x0 = model.optimizer_array.copy()
            rows.append((name, median_time(lambda: model._objective_grads(x0), repeats)))
    except Exception as exc:                   # noqa: BLE001
        return rows, f"GPy failed at run time ({type(exc).__name__}: {exc})"
    return rows, None


def bench_lbfgs(N, M, iters, D=5):
    X, y, Z = problem(N, M, D)
    gp = SparseGPRegressor("fitc", inducing_points=Z,
                           kernel=SquaredExponential(1.0, np.full(D, 1.5)), noise_variance=0.1,
                           max_iter=iters)
    t0 = time.perf_counter()
    gp.fit(X, y)
    return time.perf_counter() - t0, gp.n_iter_, gp.log_marginal_likelihood_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-external", action="store_true", help="skip GPflow and GPy")
    parser.add_argument("--threads", type=int, default=None,
                        help="cap every thread pool at this many threads")
    args = parser.parse_args(argv)
    Ns, Ms = ((2_000, 10_000), (20, 50)) if args.quick else ((10_000, 100_000), (50, 100, 200))
    lbfgs = (10_000, 50, 10) if args.quick else (100_000, 100, 100)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"# objective + full gradient, D = 5, median of {args.repeats}; "
          f"{os.cpu_count()} CPUs, threads {args.threads or 'default'}, load average {load:.1f}",
          flush=True)
    print(f"{'N':>7} {'M':>4}  {'what':26s} {'seconds':>9} {'/ AtA':>7} {'/ AtB':>7}")
    skipped = set()
    for N in Ns:
        for M in Ms:
            base, base_gemm, rows = bench_sparsegp(N, M, args.repeats)
            print(f"{N:7d} {M:4d}  {'numpy A.T @ A (syrk)':26s} {base:9.4f} {1.0:7.2f} "
                  f"{base / base_gemm:7.2f}", flush=True)
            print(f"{N:7d} {M:4d}  {'numpy A.T @ B (gemm)':26s} {base_gemm:9.4f} "
                  f"{base_gemm / base:7.2f} {1.0:7.2f}", flush=True)
            if not args.no_external:
                for fn in (bench_gpflow, bench_gpy):
                    extra, why = fn(N, M, args.repeats)
                    rows += extra or []
                    if why:
                        skipped.add(why)
            for name, t in rows:
                print(f"{N:7d} {M:4d}  {name:26s} {t:9.4f} {t / base:7.2f} "
                      f"{t / base_gemm:7.2f}", flush=True)
    for why in sorted(skipped):
        print(f"# {why}")
    N, M, iters = lbfgs
    t, nit, lml = bench_lbfgs(N, M, iters)
    print(f"# FITC L-BFGS fit, N = {N}, M = {M}, max_iter = {iters}: {t:.2f} s for {nit} "
          f"iterations ({t / max(nit, 1):.3f} s/iteration incl. line-search evaluations), "
          f"log ML {lml:.2f}")


if __name__ == "__main__":
    main()
