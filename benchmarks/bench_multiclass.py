"""Benchmark of the multi-class classifiers of seed 002 (issue 7).

1. Time per training iteration of EP, SEP (MultiClassEPClassifier), GFITC and VI (the
   baselines, when they import) in batch mode at N in {1000, 6435}, C in {3, 6},
   M in {20, 50, 100}, on synthetic data (D = 10, labels = argmax of random smooth functions).
   Measured as the median gap between consecutive ``callback`` calls after a warm-up fit
   (compilation excluded).
2. SEP minibatch training streamed from a numpy memmap written to a temporary directory, at
   N in {1e4, 1e5, 1e6} rows: one epoch per run, each run in a fresh subprocess reporting its
   peak resident memory (ru_maxrss, includes the memmap pages it touched and the Python
   runtime) and the peak of numpy/Python allocations (tracemalloc), plus the epoch time.

    python benchmarks/bench_multiclass.py            # full configuration
    python benchmarks/bench_multiclass.py --quick    # small sizes, proves the script works

3. ``--gfitc-vs-sep``: GFITC's time per hyper-parameter iteration over SEP's at N = 3 000,
   C = 4, M = 50, and the EP iterations GFITC runs per evaluation.
4. ``--satellite``: seed 002's Satellite split 0 with the library defaults (M = 100,
   250 iterations): total time, time per iteration and its ratio to C products
   (N x M)^T (N x M) timed in the same run, test NLL and error.

5. ``--checkouts OLD,NEW``: the bench_threads multi-class cases (mc_ep, mc_sep, mc_gfitc,
   mc_vi) under two checkouts, each fit in a fresh process with that checkout first on the
   path, the checkouts alternating (``--rounds`` each, minimum reported): time per iteration
   (median gap between callbacks, wall and CPU), and for VI the ELBO evaluations per fit,
   their median time inside the fit, and the CPU time of one ELBO + gradient at the start,
   the same point under both checkouts (the ELBO printed beside it must agree), repeated
   outside the fit's thread policy, so comparable with ``--one-thread`` only
   (OPENBLAS/OMP/MKL/NUMBA_NUM_THREADS=1). On a shared machine compare the CPU figures.

       python benchmarks/bench_multiclass.py --checkouts /path/to/old,/path/to/new

The estimators manage their own thread pools (run with OPENBLAS_NUM_THREADS=1
NUMBA_NUM_THREADS=1 for one-thread figures). The machine these numbers come from may be
shared; treat absolute times as indicative.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

D_FEATURES = 10


def synthetic(n, C, D=D_FEATURES, seed=0):
    """Labels from the argmax of C random Fourier-feature functions of X ~ N(0, I_D)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    W = rng.standard_normal((D, 50)) / 1.5
    b = rng.uniform(0, 2 * np.pi, 50)
    F = np.cos(X @ W + b) @ rng.standard_normal((50, C))
    return X, np.argmax(F + 0.1 * rng.standard_normal(F.shape), axis=1)


def _estimator(method, M, max_iter, callback=None, **kw):
    import sparsegp
    # init="random": seed 002's start, M training rows drawn at random for each class
    common = dict(n_inducing=M, init="random", max_iter=max_iter, tol=None, random_state=0,
                  callback=callback, **kw)
    if method in ("ep", "sep"):
        return sparsegp.MultiClassEPClassifier(method=method, **common)
    if method == "gfitc":
        return sparsegp.MultiClassGFITCClassifier(**common)
    return sparsegp.MultiClassSVGPClassifier(**common)


def ptp_time(N, M, repeats=7):
    """Median seconds of one (N x M)^T (N x M) product, the BLAS yardstick of an iteration."""
    P = np.random.default_rng(0).standard_normal((N, M))
    P.T @ P
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        P.T @ P
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def time_per_iteration(method, N, C, M, n_iter):
    X, y = synthetic(N, C)
    _estimator(method, M, 2).fit(X[:200], y[:200])  # compile / warm up
    stamps = []
    _estimator(method, M, n_iter, callback=lambda e, it: stamps.append(time.perf_counter())
               ).fit(X, y)
    gaps = np.diff(stamps)
    return float(np.median(gaps)) if gaps.size else float("nan")


def standardised_satellite(fold=0):
    """Seed 002's Satellite split ``fold``, standardised with the training statistics."""
    from sparsegp.datasets import load_dataset
    Xtr, ytr, Xte, yte = load_dataset("satellite", split=fold)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, ytr, (Xte - mu) / sd, yte


def satellite(methods, M=100, max_iter=250, fold=0):
    """Seed 002's Satellite split with the library defaults: time, per-iteration ratio, NLL.

    Features standardised with the training statistics; everything else is the estimator's
    default (n_inducing = M). The per-iteration ratio divides the mean iteration time by C
    products (N x M)^T (N x M) timed in the same process.
    """
    import sparsegp
    from sparsegp.metrics import error_rate, mean_nlp
    Xtr, ytr, Xte, yte = standardised_satellite(fold)
    N, C = Xtr.shape[0], np.unique(ytr).size
    ptp = C * ptp_time(N, M)
    rows = []
    for method in methods:
        kw = dict(n_inducing=M, init="random", max_iter=max_iter, tol=None, random_state=0)
        if method in ("ep", "sep"):
            est = sparsegp.MultiClassEPClassifier(method=method, **kw)
        elif method == "gfitc":
            est = sparsegp.MultiClassGFITCClassifier(**kw)
        else:
            est = sparsegp.MultiClassSVGPClassifier(**kw)
        _estimator(method, 10, 2).fit(Xtr[:200], ytr[:200])      # compile outside the timing
        t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        seconds = time.perf_counter() - t0
        proba = est.predict_proba(Xte)
        row = dict(method=method, N=N, C=C, M=M, iterations=int(est.n_iter_), seconds=seconds,
                   per_iteration=seconds / max(est.n_iter_, 1), ptp_seconds=ptp,
                   test_nll=mean_nlp(yte, proba, classes=est.classes_),
                   test_error=error_rate(yte, est.predict(Xte)))
        rows.append(row)
        print(f"Satellite {method:5s} M={M} {row['iterations']} iterations: {seconds:7.2f} s "
              f"({row['per_iteration'] * 1e3:.1f} ms/iteration = "
              f"{row['per_iteration'] / ptp:.1f} x C (N x M)^T(N x M) products of "
              f"{ptp * 1e3:.2f} ms)  test NLL {row['test_nll']:.4f}  error "
              f"{row['test_error']:.4f}", flush=True)
    return rows


def gfitc_against_sep(N=3000, C=4, M=50, max_iter=100):
    """GFITC's cost per hyper-parameter iteration against a SEP batch iteration (issue 13).

    Both fit the same synthetic problem at the library defaults for ``max_iter`` iterations
    after a warm-up fit; the cost per iteration is the whole fit's time over its iterations (so
    GFITC's cold first EP run and L-BFGS-B's extra evaluations are included).
    """
    X, y = synthetic(N, C)
    # GFITC's defaults resolve to the parallel schedule at 1e-2 at this size; the exact
    # sequential schedule at 1e-6 (the default on small problems) takes seconds an iteration
    variants = [("sep", {}, max_iter),
                ("gfitc", {}, max_iter),
                ("gfitc", dict(ep_schedule="sequential"), max(2, max_iter // 10))]
    rows = []
    for method, kw, n_iter in variants:
        _estimator(method, M, 2, **kw).fit(X[:200], y[:200])
        est = _estimator(method, M, n_iter, **kw)
        t0 = time.perf_counter()
        est.fit(X, y)
        per = (time.perf_counter() - t0) / max(est.n_iter_, 1)
        row = dict(method=method, settings=kw, N=N, C=C, M=M, iterations=int(est.n_iter_),
                   seconds_per_iteration=per, ratio_to_sep=per / rows[0]["seconds_per_iteration"]
                   if rows else 1.0)
        if method == "gfitc":
            sweeps = est.ep_sweeps_
            row.update(first_sweeps=int(sweeps[0]), median_sweeps=float(np.median(sweeps[1:])),
                       evaluations=int(sweeps.size), schedule=est.ep_schedule_,
                       ep_tol=est.ep_tol_)
        rows.append(row)
        extra = (f" [{row['schedule']} EP at {row['ep_tol']:g}]; EP iterations per evaluation: "
                 f"first {row['first_sweeps']}, median of the "
                 f"rest {row['median_sweeps']:.0f} ({row['evaluations']} evaluations)"
                 if method == "gfitc" else "")
        print(f"{method} {kw or 'defaults'} N={N} C={C} M={M}, {row['iterations']} iterations: "
              f"{per * 1e3:.1f} ms/iteration = {row['ratio_to_sep']:.2f} x SEP{extra}",
              flush=True)
    return rows


def minibatch_step(methods, B=200, C=10, M=100, D=784, n_batches=20):
    """Seconds per minibatch step at MNIST's shape, and its ratio to the step's GEMM flops.

    The nominal flops of one SEP step: per class the (B x D)(D x M) kernel product and five
    (B x M)(M x M) products (V, S V for the refinement and for the evidence, V^T W V, GV A),
    two flops per multiply-add; the GEMM rate is a (B x D)(D x M) product timed in the same
    run, so the ratio says how many GEMM-equivalents of time a step costs.
    """
    X, y = synthetic(B * n_batches, C, D=D)
    A = np.random.default_rng(0).standard_normal((B, D))
    W = np.random.default_rng(1).standard_normal((D, M))
    A @ W
    times = []
    for _ in range(7):
        t0 = time.perf_counter()
        A @ W
        times.append(time.perf_counter() - t0)
    rate = 2.0 * B * D * M / float(np.median(times))
    flops = 2.0 * C * (B * D * M + 5 * B * M * M)
    rows = []
    for method in methods:
        _estimator(method, 10, 1, batch_size=B).fit(X[:2 * B], y[:2 * B])     # compile
        # one epoch without a callback (a callback makes every step also store a predictor)
        t0 = time.perf_counter()
        _estimator(method, M, 1, batch_size=B).fit(X, y)
        step = (time.perf_counter() - t0) / n_batches
        rows.append(dict(method=method, B=B, C=C, M=M, D=D, seconds=step,
                         gemm_flops_per_s=rate, nominal_flops=flops))
        print(f"minibatch {method:4s} B={B} C={C} M={M} D={D}: {step * 1e3:7.1f} ms/step = "
              f"{step * rate / flops:5.1f} x its {flops / 1e9:.2f} GFlop at the GEMM rate "
              f"({rate / 1e9:.1f} GFlop/s)", flush=True)
    return rows


def child_memory(N, M, C, batch_size, path):
    """Run in a fresh interpreter: one SEP epoch over the memmap at ``path``."""
    import resource
    import tracemalloc
    import sparsegp
    X = np.load(path, mmap_mode="r")
    y = np.load(path.replace(".npy", "_y.npy"), mmap_mode="r")
    tracemalloc.start()
    warm = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, init="random",
                                           batch_size=batch_size, max_iter=1, random_state=0)
    warm.fit(X[:2 * batch_size], np.asarray(y[:2 * batch_size]))  # compile outside the timing
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    est = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, init="random",
                                          batch_size=batch_size, max_iter=1, learning_rate=1e-3,
                                          random_state=0)
    est.fit(X, y)
    epoch = time.perf_counter() - t0
    _, peak_py = tracemalloc.get_traced_memory()
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(dict(N=N, epoch_s=epoch, peak_rss_mb=rss_kb / 1024,
                          peak_alloc_mb=peak_py / 2 ** 20)))


def memory_runs(sizes, M, C, batch_size):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for N in sizes:
            path = os.path.join(tmp, f"X_{N}.npy")
            mm = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64,
                                           shape=(N, D_FEATURES))
            ym = np.lib.format.open_memmap(path.replace(".npy", "_y.npy"), mode="w+",
                                           dtype=np.int64, shape=(N,))
            for start in range(0, N, 100_000):  # write in blocks: never hold all rows
                stop = min(N, start + 100_000)
                Xb, yb = synthetic(stop - start, C, seed=start)
                mm[start:stop], ym[start:stop] = Xb, yb
            mm.flush()
            ym.flush()
            del mm, ym
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(N), str(M), str(C), str(batch_size),
                 path], capture_output=True, text=True, check=True)
            rec = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(rec)
            print(f"SEP minibatch N={N:>8d}: epoch {rec['epoch_s']:8.1f}s  "
                  f"({1e6 * rec['epoch_s'] / N:.1f} us/row)  peak RSS {rec['peak_rss_mb']:.0f} MB"
                  f"  peak numpy/Python allocations {rec['peak_alloc_mb']:.1f} MB", flush=True)
            os.remove(path)
    return rows


#: bench_threads' multi-class cases: estimator, arguments, (N, D, C)
CHECKOUT_CASES = {
    "mc_ep": ("MultiClassEPClassifier", dict(method="ep", n_inducing=50, init="random"),
              (2000, 10, 4)),
    "mc_sep": ("MultiClassEPClassifier", dict(method="sep", n_inducing=50, init="random"),
               (2000, 10, 4)),
    "mc_gfitc": ("MultiClassGFITCClassifier", dict(n_inducing=20, init="random"),
                 (1000, 10, 3)),
    "mc_vi": ("MultiClassSVGPClassifier", dict(n_inducing=50, init="random"), (2000, 10, 4)),
}
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS")


def _threads_problem(N, D, C, seed=0):
    """bench_threads' multi-class data: labels = argmax of sin(X W) + noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    F = np.sin(X @ rng.standard_normal((D, C))) + 0.3 * rng.standard_normal((N, C))
    return X, np.argmax(F, axis=1)


def checkout_child(case, n_iter, repeats=10):
    """One fit of ``case`` in this process (whichever sparsegp is first on the path); prints
    a JSON line. Only public API, plus VI's ``_objective`` (present in every version)."""
    import warnings

    import sparsegp
    name, kwargs, (N, D, C) = CHECKOUT_CASES[case]
    cls = getattr(sparsegp, name)
    X, y = _threads_problem(N, D, C)
    Xw, yw = _threads_problem(120, D, C, seed=1)
    marks, calls = [], []
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cls(**{**kwargs, "n_inducing": 10}, max_iter=2).fit(Xw, yw)     # compile / load
        objective = getattr(cls, "_objective", None)
        if case == "mc_vi":
            def counted(self, *a, **k):
                t0, c0 = time.perf_counter(), time.process_time()
                value = objective(self, *a, **k)
                calls.append((self, a, k, time.perf_counter() - t0, time.process_time() - c0))
                return value
            cls._objective = counted
        est = cls(**kwargs, max_iter=n_iter, random_state=0,
                  callback=lambda e, it: marks.append((time.perf_counter(),
                                                       time.process_time())))
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            est.fit(X, y)
            out.update(fit_s=time.perf_counter() - t0, fit_cpu_s=time.process_time() - c0)
        finally:
            if case == "mc_vi":
                cls._objective = objective
        if calls:
            self, a, k = calls[0][:3]
            cpu = []
            for _ in range(repeats):
                c0 = time.process_time()
                value = objective(self, *a, **k)[0]
                cpu.append(time.process_time() - c0)
            out.update(evaluations=len(calls), eval_cpu_s=min(cpu), elbo_start=float(value),
                       fit_eval_s=float(np.median([c[3] for c in calls])),
                       fit_eval_cpu_s=float(np.median([c[4] for c in calls])))
    gaps = np.diff(np.array(marks), axis=0)
    out.update(iterations=len(marks), iter_s=float(np.median(gaps[:, 0])),
               iter_cpu_s=float(np.median(gaps[:, 1])))
    print(json.dumps(out))


def compare_checkouts(paths, cases, rounds, n_iter, one_thread):
    """Alternate fresh processes over ``paths`` and print the minimum of each figure."""
    rows = []
    for case in cases:
        best = {p: {} for p in paths}
        for _ in range(rounds):
            for p in paths:
                env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
                if one_thread:
                    env.update({k: "1" for k in THREAD_VARS})
                env["PYTHONPATH"] = p
                res = subprocess.run([sys.executable, os.path.abspath(__file__),
                                      "--checkout-child", case, str(n_iter)], env=env,
                                     capture_output=True, text=True, check=True)
                r = json.loads(res.stdout.strip().splitlines()[-1])
                for key, value in r.items():
                    keep = max if key in ("evaluations", "iterations", "elbo_start") else min
                    best[p][key] = keep(best[p].get(key, value), value)
        for p in paths:
            r = {"case": case, "checkout": p, "one_thread": one_thread, **best[p]}
            rows.append(r)
            vi = (f" | {r['evaluations']} evaluations of {r['fit_eval_s'] * 1e3:.1f} ms "
                  f"({r['fit_eval_cpu_s'] * 1e3:.1f} ms CPU), {r['eval_cpu_s'] * 1e3:.1f} ms CPU "
                  f"at the start (ELBO {r['elbo_start']:.6f})" if "evaluations" in r else "")
            print(f"{case:9s} {p}: per iteration {r['iter_s'] * 1e3:.1f} ms "
                  f"({r['iter_cpu_s'] * 1e3:.1f} ms CPU), fit {r['fit_s']:.3f} s "
                  f"({r['fit_cpu_s']:.3f} s CPU), {r['iterations']} iterations{vi}",
                  flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--methods", default="ep,sep,gfitc,vi")
    parser.add_argument("--skip-iterations", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--minibatch", action="store_true",
                        help="time one minibatch step at B = 200, C = 10, M = 100, D = 784")
    parser.add_argument("--satellite", action="store_true",
                        help="also fit seed 002's Satellite split 0 (M = 100, 250 iterations; "
                             "needs satellite.npz under SPARSEGP_DATA)")
    parser.add_argument("--gfitc-vs-sep", action="store_true",
                        help="GFITC's cost per hyper-parameter iteration against SEP's at "
                             "N = 3000, C = 4, M = 50 (100 iterations each)")
    parser.add_argument("--json", default=None, help="write all results to this file")
    parser.add_argument("--checkouts", default="",
                        help="OLD,NEW: the bench_threads multi-class cases under two checkouts")
    parser.add_argument("--cases", default=",".join(CHECKOUT_CASES),
                        help="with --checkouts: which of " + ", ".join(CHECKOUT_CASES))
    parser.add_argument("--rounds", type=int, default=5, help="with --checkouts")
    parser.add_argument("--iterations", type=int, default=10, help="with --checkouts")
    parser.add_argument("--one-thread", action="store_true", help="with --checkouts")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--checkout-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.checkout_child:
        checkout_child(args.checkout_child[0], int(args.checkout_child[1]))
        return
    if args.checkouts:
        rows = compare_checkouts(args.checkouts.split(","), args.cases.split(","), args.rounds,
                                 args.iterations, args.one_thread)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)
        return
    if args.child:
        N, M, C, B = map(int, args.child[:4])
        child_memory(N, M, C, B, args.child[4])
        return
    quick = args.quick or bool(os.environ.get("CI"))
    results = {"iterations": [], "memory": [], "satellite": [], "minibatch": []}
    if args.minibatch:
        results["minibatch"] = minibatch_step([m for m in args.methods.split(",")
                                               if m in ("ep", "sep", "vi")])
    if args.gfitc_vs_sep:
        results["gfitc_vs_sep"] = gfitc_against_sep(max_iter=10 if quick else 100)
    if args.satellite:
        results["satellite"] = satellite(args.methods.split(","))
    if not args.skip_iterations:
        Ns, Cs, Ms, n_iter = ([300], [3], [10, 20], 4) if quick else (
            [1000, 6435], [3, 6], [20, 50, 100], 6)
        for N in Ns:
            for C in Cs:
                for M in Ms:
                    for method in args.methods.split(","):
                        try:
                            t = time_per_iteration(method, N, C, M, n_iter)
                        except (AttributeError, ImportError) as exc:
                            print(f"skipping {method}: {exc}")
                            continue
                        ptp = C * ptp_time(N, M)
                        results["iterations"].append(dict(method=method, N=N, C=C, M=M,
                                                          seconds=t, ptp_seconds=ptp))
                        print(f"{method:5s} N={N:5d} C={C} M={M:3d}: {t * 1e3:9.1f} ms/iteration"
                              f"  = {t / ptp:6.1f} x C (N x M)^T(N x M) products "
                              f"({ptp * 1e3:.2f} ms)", flush=True)
    if not args.skip_memory:
        sizes = [2_000, 20_000] if quick else [10_000, 100_000, 1_000_000]
        results["memory"] = memory_runs(sizes, M=20, C=3, batch_size=200)
        if len(results["memory"]) > 1:
            per_row = [r["epoch_s"] / r["N"] for r in results["memory"]]
            print("epoch time per row (s): " + ", ".join(f"{p:.2e}" for p in per_row))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
