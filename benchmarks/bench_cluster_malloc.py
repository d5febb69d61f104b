"""The embedded LocalCluster's worker against dask's default worker: one multi-class fit.

dask's nanny sets ``MALLOC_TRIM_THRESHOLD_=65536`` in every worker it spawns. Setting any
glibc malloc threshold switches off the adaptive mmap threshold, so each temporary above
128 KiB is mapped, page-faulted and unmapped anew. ``sparsegp.distributed._cluster.
local_cluster`` unsets it. This benchmark fits the same model on a one-worker cluster of each
kind and prints the worker's user and system CPU seconds for the fit, the wall time, and the
ratio dask default / ours (above 1: ours is faster). The two fits must agree bit for bit.

    python benchmarks/bench_cluster_malloc.py                  # about 2 minutes
    python benchmarks/bench_cluster_malloc.py --N 600 --M 40   # a smoke run

Measured on the 2-core machine with nothing else running, at the defaults (satellite-sized:
N = 1 300, D = 36, C = 6, M = 64, 100 iterations): dask default 6.5 user + 4.4 system CPU s,
10.5 s wall; ours 5.2 + 0.1, 5.1 s; ratio 2.05 (CPU), 2.07 (wall); log evidence identical.
"""
import argparse
import os
import time

import numpy as np


def problem(N, D, C, seed=0):
    """Standardised features and labels from a fixed nonlinear rule, (N, D) and (N,)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D))
    W = rng.standard_normal((D, C)) / np.sqrt(D)
    y = np.argmax(np.sin(2.0 * X @ W) + 0.3 * rng.standard_normal((N, C)), axis=1)
    return X, y


def fit_in_worker(X, y, M, max_iter):
    """Fit in the calling worker; returns the fit's (user, system) CPU s, wall s and the
    training log-evidence."""
    import sparsegp

    before = os.times()
    t0 = time.perf_counter()
    est = sparsegp.MultiClassEPClassifier(n_inducing=M, max_iter=max_iter, random_state=0)
    est.fit(X, y)
    wall = time.perf_counter() - t0
    after = os.times()
    return after.user - before.user, after.system - before.system, wall, est.log_evidence_


def run(kind, X, y, M, max_iter):
    from distributed import Client, LocalCluster

    from sparsegp.distributed._cluster import SINGLE_THREAD_ENV, local_cluster

    if kind == "ours":
        cluster = local_cluster(n_workers=1)
    else:
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=":0",
                               env=dict(SINGLE_THREAD_ENV))
    with cluster, Client(cluster) as client:
        env = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
        # a small fit first, so that compilation and imports are not timed
        client.submit(fit_in_worker, X[:200], y[:200], 10, 2, pure=False).result()
        result = client.submit(fit_in_worker, X, y, M, max_iter, pure=False).result()
    return next(iter(env.values())), result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--N", type=int, default=1300)
    parser.add_argument("--D", type=int, default=36)
    parser.add_argument("--C", type=int, default=6)
    parser.add_argument("--M", type=int, default=64, help="inducing points per class")
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args(argv)
    X, y = problem(args.N, args.D, args.C)
    print(f"MultiClassEPClassifier, N = {args.N}, D = {args.D}, C = {args.C}, M = {args.M}, "
          f"{args.iterations} iterations, one single-threaded worker")
    print(f"{'worker':<14}{'MALLOC_TRIM_THRESHOLD_':>24}{'user s':>9}{'sys s':>8}{'wall s':>9}")
    out = {}
    for kind in ("dask default", "ours"):
        env, (user, system, wall, log_z) = run(kind.split()[-1], X, y, args.M,
                                               args.iterations)
        out[kind] = (user + system, wall, log_z)
        print(f"{kind:<14}{str(env):>24}{user:9.1f}{system:8.1f}{wall:9.1f}")
    (cpu_d, wall_d, z_d), (cpu_o, wall_o, z_o) = out["dask default"], out["ours"]
    print(f"ratio dask default / ours: CPU {cpu_d / cpu_o:.2f}, wall {wall_d / wall_o:.2f}; "
          f"log evidence {'identical' if z_d == z_o else f'DIFFERS ({z_d!r} vs {z_o!r})'}")


if __name__ == "__main__":
    main()
