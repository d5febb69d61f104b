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

    python benchmarks/bench_regression.py --per-eval [--against CHECKOUT] [--fits]

``--per-eval`` times one objective + gradient call per method at a fixed theta (D = 5 ARD;
FITC and VFE at N = 20 000 and 100 000 with M = 100, the exact GP at N = 1 500: bench_threads'
problems and issue 25's T2) in fresh processes, ``--processes`` of them per thread setting
(``--settings default,one``), each taking the minimum of ``--repeats`` calls, and prints wall
and CPU seconds per call and their ratio to one (N×M)ᵀ(N×M) ``A.T @ A`` timed in the same
processes. ``--against`` runs another checkout's ``sparsegp`` (e.g. a worktree of an older
commit) in processes alternating with this one's, so that a busy machine's drift hits both,
and adds the ratio this/against and the largest difference of the value and gradient; both
call only ``_base.sparse_lml``/``_base.exact_lml``, which every version since issue 4 has.
``--fits`` then times bench_threads' default FITC and exact fits the same way and counts their
evidence calls.

``--quick`` uses N in {2 000, 10 000}, M in {20, 50} and 10 L-BFGS iterations (a smoke run;
with ``--per-eval``, no N = 100 000 case).
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

import json  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402

from sparsegp.inducing import median_split_blocks  # noqa: E402
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
        blocks = median_split_blocks(X, M) if method == "pitc" else None
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
    from sparsegp import SparseGPRegressor
    from sparsegp.kernels import SquaredExponential
    X, y, Z = problem(N, M, D)
    gp = SparseGPRegressor("fitc", inducing_points=Z,
                           kernel=SquaredExponential(1.0, np.full(D, 1.5)), noise_variance=0.1,
                           max_iter=iters)
    t0 = time.perf_counter()
    gp.fit(X, y)
    return time.perf_counter() - t0, gp.n_iter_, gp.log_marginal_likelihood_


# ---------------------------------------------------------------------------- per evaluation
#: name -> (method, N, M); D = 5, ARD. The 20 000 / 1 500 rows are bench_threads' reg_fitc and
#: reg_exact problems, the 100 000 rows issue 25's T2.
PER_EVAL_CASES = {
    "fitc N=20k M=100": ("fitc", 20_000, 100),
    "vfe N=20k M=100": ("vfe", 20_000, 100),
    "exact N=1500": ("exact", 1_500, 0),
    "fitc N=100k M=100 (T2)": ("fitc", 100_000, 100),
    "vfe N=100k M=100 (T2)": ("vfe", 100_000, 100),
}
#: the fixed point: s², ARD ℓ (D = 5), σ²; the same numbers for every code version
PER_EVAL_THETA = (1.3, np.array([0.8, 1.0, 1.2, 1.5, 2.0]), 0.05)


def per_eval_problem(N, M, D=5, seed=0):
    """bench_threads' regression data (X standard normal, y = sin(X w) + noise) and Z."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    y = np.sin(X @ rng.standard_normal(D)) + 0.1 * rng.standard_normal(N)
    Z = X[np.sort(rng.choice(N, size=M, replace=False))].copy() if M else None
    return X, y, Z


def per_eval_child(repeats, cases):
    """Time objective + gradient at :data:`PER_EVAL_THETA` for ``cases`` with whatever
    ``sparsegp`` is first on the path; print one JSON line.

    Only the functions both old and new code have are called (``_base.sparse_lml`` and
    ``_base.exact_lml`` with positional arguments; the thread policy of ``fit``, which pins
    BLAS to one thread for these sizes).
    """
    import sparsegp
    from sparsegp import _threads
    s2, ls, sn2 = PER_EVAL_THETA
    out = {"sparsegp": os.path.dirname(sparsegp.__file__), "cases": {}}
    for name in cases:
        method, N, M = PER_EVAL_CASES[name]
        X, y, Z = per_eval_problem(N, M)
        if method == "exact":
            def call():
                return _base.exact_lml(X, y, s2, ls, sn2, True)
        else:
            ws = _base.Workspace()

            def call():
                return _base.sparse_lml(X, y, Z, s2, ls, sn2, method, None, 1e-6, True, ws)
        with _threads.thread_policy("numba"):
            lml, grad, _ = call()                  # compile / page faults
            times, cpu = [], []
            for _ in range(repeats):
                t0, c0 = time.perf_counter(), time.process_time()
                call()
                times.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            # the unit of the ratio: one (N×M)ᵀ(N×M) product (BLAS syrk) in the same process,
            # on the BLAS threads the evaluation had
            A = np.random.default_rng(1).random((N, M or N))
            A.T @ A
            t_ata = min(_timed(lambda: A.T @ A) for _ in range(repeats))
        g = [np.atleast_1d(np.asarray(grad[k], float)).ravel()
             for k in ("variance", "lengthscale", "noise_variance", "inducing_points")
             if grad.get(k) is not None]
        out["cases"][name] = {"seconds": min(times), "cpu": min(cpu), "ata": t_ata,
                              "lml": float(lml),
                              "grad": np.concatenate(g).tolist()}
    print(json.dumps(out))


#: bench_threads' regression fits (its reg_fitc and reg_exact cases): name -> (arguments, N)
FIT_CASES = {
    "fit fitc N=20k M=100": (dict(approximation="fitc", n_inducing=100, max_iter=30), 20_000),
    # the same fit with Z placed by FITC's own evidence, as before the two-stage default
    # (inducing_objective="auto" places Z by the VFE bound, then fits FITC's few
    # hyper-parameters): the like-for-like case for an older checkout
    "fit fitc Z by evidence": (dict(approximation="fitc", n_inducing=100, max_iter=30,
                                    inducing_objective="evidence"), 20_000),
    "fit exact N=1500": (dict(approximation="exact", max_iter=10), 1_500),
}


def fit_child(cases):
    """One default fit per case, as bench_threads times it, counting the evidence calls.

    Prints one JSON line: fit seconds, calls of ``_base.sparse_lml``/``exact_lml`` and the
    seconds spent in them, and ``n_iter_``.
    """
    import warnings

    import sparsegp
    from sparsegp import SparseGPRegressor
    out = {"sparsegp": os.path.dirname(sparsegp.__file__), "cases": {}}
    stats = {"calls": 0, "seconds": 0.0}

    def counted(fn):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                stats["calls"] += 1
                stats["seconds"] += time.perf_counter() - t0
        return wrapper

    _base.sparse_lml = counted(_base.sparse_lml)
    _base.exact_lml = counted(_base.exact_lml)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Xw, yw = per_eval_problem(120, 0, seed=1)[:2]
        SparseGPRegressor(n_inducing=10, max_iter=2).fit(Xw, yw)          # compile
        SparseGPRegressor("exact", max_iter=2).fit(Xw, yw)
        for name in cases:
            kwargs, N = FIT_CASES[name]
            X, y = per_eval_problem(N, 0)[:2]
            # a checkout older than inducing_objective has one stage, Z by the evidence
            known = SparseGPRegressor().get_params()
            kwargs = {k: v for k, v in kwargs.items()
                      if k in known or k != "inducing_objective"}
            stats.update(calls=0, seconds=0.0)
            t0 = time.perf_counter()
            est = SparseGPRegressor(random_state=0, **kwargs).fit(X, y)
            total = time.perf_counter() - t0
            # in y's units, the name both versions have
            lml = est.log_marginal_likelihood_
            out["cases"][name] = {"seconds": total, "calls": stats["calls"],
                                  "in_calls": stats["seconds"], "n_iter": int(est.n_iter_),
                                  "lml": float(lml)}
    print(json.dumps(out))


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _run_alternately(args, child_flag, cases):
    """Run ``child_flag`` children over both versions and thread settings, alternately.

    Returns ``(best, versions, settings)``: ``best[(version, setting, case)]`` is the row of
    the child with the smallest ``seconds`` (``ata``: the smallest over all children).
    """
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    versions = [("this", here)] + ([("against", os.path.abspath(args.against))]
                                   if args.against else [])
    settings = args.settings.split(",")
    best = {}
    for _ in range(args.processes):
        for setting in settings:
            for label, path in versions:           # alternate, so drift hits both alike
                env = {k: v for k, v in os.environ.items() if k not in _THREAD_VARS}
                if setting == "one":
                    env.update({k: "1" for k in _THREAD_VARS})
                env["PYTHONPATH"] = path
                cmd = [sys.executable, os.path.abspath(__file__), child_flag,
                       "--repeats", str(args.repeats), "--cases", ",".join(cases)]
                # cwd "/": the child must not import a sparsegp from the current directory
                res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/",
                                     check=True)
                got = json.loads(res.stdout.strip().splitlines()[-1])
                if os.path.realpath(got["sparsegp"]) != os.path.realpath(
                        os.path.join(path, "sparsegp")):
                    raise RuntimeError(f"child imported {got['sparsegp']}, not {path}")
                for case, row in got["cases"].items():
                    key = (label, setting, case)
                    if key not in best or row["seconds"] < best[key]["seconds"]:
                        old = best.get(key, row)
                        # the unit and the CPU seconds: their own minima over the children
                        best[key] = {**row, **{k: min(row[k], old[k]) for k in ("ata", "cpu")
                                               if k in row}}
    return best, versions, settings


def fits(args):
    """Before/after table of whole fits: time, evidence calls, time outside them, and the
    log evidence each fit ends at (FITC's own, whatever placed Z)."""
    best, versions, settings = _run_alternately(args, "--fit-child", list(FIT_CASES))
    print(f"# one default fit (bench_threads' cases), min over {args.processes} processes; "
          "calls = evaluations of the evidence + gradient, 'outside' = fit time not in them")
    print(f"{'case':22s} {'threads':7s} {'version':8s} {'fit s':>8s} {'calls':>6s} "
          f"{'s/call':>8s} {'outside s':>10s} {'n_iter':>7s} {'log evidence':>14s}")
    for case in FIT_CASES:
        for setting in settings:
            for label, _ in versions:
                r = best[(label, setting, case)]
                print(f"{case:22s} {setting:7s} {label:8s} {r['seconds']:8.3f} {r['calls']:6d} "
                      f"{r['in_calls'] / r['calls']:8.4f} {r['seconds'] - r['in_calls']:10.3f} "
                      f"{r['n_iter']:7d} {r['lml']:14.4f}", flush=True)


def per_eval(args):
    """Before/after table of objective + gradient time: fresh processes, versions alternated."""
    cases = [c for c in PER_EVAL_CASES if not args.quick or "100k" not in c]
    best, versions, settings = _run_alternately(args, "--per-eval-child", cases)
    print(f"# objective + gradient at a fixed theta, D = 5 ARD; min over {args.processes} "
          f"processes x {args.repeats} calls; 'one' = every thread pool at 1; /AtA = per "
          f"call over one (N×M)ᵀ(N×M) numpy product in the same processes; max diff = largest "
          f"difference of the value and gradient entries over the largest of them; cpu = "
          f"process CPU seconds per call (all threads), steadier than wall time on a busy machine")
    head = f"{'case':24s} {'threads':7s} {'this s':>9s} {'/AtA':>6s} {'cpu':>7s}"
    if args.against:
        head += (f" {'against s':>10s} {'/AtA':>6s} {'cpu':>7s} {'this/against':>12s} "
                 f"{'cpu ratio':>9s} {'max diff':>9s}")
    print(head)
    for case in cases:
        for setting in settings:
            a = best[("this", setting, case)]
            ratio = (lambda r: f"{r['seconds'] / r['ata']:6.2f}" if PER_EVAL_CASES[case][2]
                     else f"{'-':>6s}")
            line = f"{case:24s} {setting:7s} {a['seconds']:9.4f} {ratio(a)} {a['cpu']:7.4f}"
            if args.against:
                b = best[("against", setting, case)]
                va = np.array([a["lml"]] + a["grad"])
                vb = np.array([b["lml"]] + b["grad"])
                rel = float(np.max(np.abs(va - vb)) / np.max(np.abs(vb)))
                line += (f" {b['seconds']:10.4f} {ratio(b)} {b['cpu']:7.4f} "
                         f"{a['seconds'] / b['seconds']:12.3f} {a['cpu'] / b['cpu']:9.3f} "
                         f"{rel:9.1e}")
            print(line, flush=True)


_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-external", action="store_true", help="skip GPflow and GPy")
    parser.add_argument("--threads", type=int, default=None,
                        help="cap every thread pool at this many threads")
    parser.add_argument("--per-eval", action="store_true",
                        help="time objective + gradient per call (fresh processes)")
    parser.add_argument("--against", default="",
                        help="with --per-eval: another checkout to compare, run alternately")
    parser.add_argument("--processes", type=int, default=5,
                        help="with --per-eval: fresh processes per version and setting")
    parser.add_argument("--settings", default="default,one",
                        help="with --per-eval: thread settings, 'default' and/or 'one'")
    parser.add_argument("--fits", action="store_true",
                        help="with --per-eval: also time whole default fits and count their "
                        "evidence calls")
    parser.add_argument("--per-eval-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fit-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cases", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.per_eval_child:
        per_eval_child(args.repeats, args.cases.split(","))
        return
    if args.fit_child:
        fit_child(args.cases.split(","))
        return
    if args.per_eval:
        per_eval(args)
        if args.fits:
            fits(args)
        return
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
