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

The machine these numbers come from may be shared; treat absolute times as indicative.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# single-threaded BLAS (the parallelism comes from numba); see the report for why
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

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
    common = dict(n_inducing=M, max_iter=max_iter, random_state=0, callback=callback, **kw)
    if method in ("ep", "sep"):
        return sparsegp.MultiClassEPClassifier(method=method, **common)
    if method == "gfitc":
        return sparsegp.MultiClassGFITCClassifier(**common)
    return sparsegp.MultiClassSVGPClassifier(**common)


def time_per_iteration(method, N, C, M, n_iter):
    X, y = synthetic(N, C)
    _estimator(method, M, 2).fit(X[:200], y[:200])  # compile / warm up
    stamps = []
    _estimator(method, M, n_iter, callback=lambda e, it: stamps.append(time.perf_counter())
               ).fit(X, y)
    gaps = np.diff(stamps)
    return float(np.median(gaps)) if gaps.size else float("nan")


def child_memory(N, M, C, batch_size, path):
    """Run in a fresh interpreter: one SEP epoch over the memmap at ``path``."""
    import resource
    import tracemalloc
    import sparsegp
    X = np.load(path, mmap_mode="r")
    y = np.load(path.replace(".npy", "_y.npy"), mmap_mode="r")
    tracemalloc.start()
    warm = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, batch_size=batch_size,
                                           max_iter=1, random_state=0)
    warm.fit(X[:2 * batch_size], np.asarray(y[:2 * batch_size]))  # compile outside the timing
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    est = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, batch_size=batch_size,
                                          max_iter=1, learning_rate=1e-3, random_state=0)
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--methods", default="ep,sep,gfitc,vi")
    parser.add_argument("--skip-iterations", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--json", default=None, help="write all results to this file")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        N, M, C, B = map(int, args.child[:4])
        child_memory(N, M, C, B, args.child[4])
        return
    quick = args.quick or bool(os.environ.get("CI"))
    results = {"iterations": [], "memory": []}
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
                        results["iterations"].append(dict(method=method, N=N, C=C, M=M,
                                                          seconds=t))
                        print(f"{method:5s} N={N:5d} C={C} M={M:3d}: {t * 1e3:9.1f} ms/iteration",
                              flush=True)
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
