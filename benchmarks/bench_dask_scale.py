"""Scale test (issue 15): SEP over 10^7 rows of an on-disk zarr array on the LocalCluster.

Writes a synthetic set (``--rows`` x 8 features, 3 classes from a fixed nonlinear rule) to a
chunked zarr store chunk by chunk, never holding it whole, then fits
``MultiClassEPClassifier(method="sep")`` on ``dask.array.from_zarr`` with 1 and with 2
single-threaded workers, each in a fresh driver process. Printed per worker count: the fit's
wall time (reading the chunks onto the workers, the NaN check, the start and ``--iterations``
batch passes), the time of the passes alone, and the peak resident memory of the driver and of
every worker. Needs the ``distributed`` extra and ``zarr``::

    python benchmarks/bench_dask_scale.py [--rows 10000000] [--M 20] [--workers 1,2]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

FEATURES, CLASSES = 8, 3


def _labels(X, W):
    """A fixed nonlinear rule: the class whose random Fourier feature score is largest."""
    return np.argmax(np.cos(X @ W[:, :, 0]) + 0.5 * np.sin(X @ W[:, :, 1]), axis=1)


def write_data(path, rows, chunk):
    import zarr
    if os.path.exists(os.path.join(path, "done")):
        return
    W = np.random.default_rng(0).standard_normal((FEATURES, CLASSES, 2)) / 2.0
    X = zarr.open_array(os.path.join(path, "X"), mode="w", shape=(rows, FEATURES),
                        chunks=(chunk, FEATURES), dtype="f8")
    y = zarr.open_array(os.path.join(path, "y"), mode="w", shape=(rows,), chunks=(chunk,),
                        dtype="i1")
    for i, start in enumerate(range(0, rows, chunk)):
        block = np.random.default_rng(1 + i).standard_normal((min(chunk, rows - start),
                                                              FEATURES))
        X[start:start + block.shape[0]] = block
        y[start:start + block.shape[0]] = _labels(block, W).astype(np.int8)
    open(os.path.join(path, "done"), "w").close()


def child(path, workers, M, iterations):
    """One fit in this fresh process; prints a JSON line."""
    import dask.array as da
    from distributed import Client

    import sparsegp
    from sparsegp.distributed import fit_on_dask
    from sparsegp.distributed._cluster import local_cluster

    X = da.from_zarr(os.path.join(path, "X"))
    y = da.from_zarr(os.path.join(path, "y"))
    stamps = []
    est = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, max_iter=iterations,
                                          random_state=0,
                                          callback=lambda e, it: stamps.append(
                                              time.perf_counter()))
    with local_cluster(n_workers=workers) as cluster, Client(cluster) as client:
        # compile (or load the cached kernels) on every worker outside the timing
        small = da.from_array(np.asarray(X[:2000]), chunks=(1000, FEATURES))
        fit_on_dask(sparsegp.MultiClassEPClassifier(method="sep", n_inducing=4, max_iter=1),
                    small, np.asarray(y[:2000]), client=client)
        t0 = time.perf_counter()
        fit_on_dask(est, X, y, client=client)
        wall = time.perf_counter() - t0
        worker_mb = client.run(
            lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    passes = stamps[-1] - stamps[0] if len(stamps) > 1 else float("nan")
    print(json.dumps(dict(workers=workers, rows=int(X.shape[0]), chunks=int(X.numblocks[0]),
                          M=M, iterations=iterations, fit_s=wall,
                          per_pass_s=passes / max(len(stamps) - 1, 1),
                          driver_peak_mb=resource.getrusage(
                              resource.RUSAGE_SELF).ru_maxrss / 1024,
                          worker_peak_mb=sorted(worker_mb.values()),
                          log_evidence=est.log_evidence_)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--M", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=3,
                        help="batch passes (each one SEP epoch over every row)")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--path", default=None, help="zarr store (default: a temp folder)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        path, workers, M, iterations = args.child
        child(path, int(workers), int(M), int(iterations))
        return
    import tempfile
    path = args.path or os.path.join(tempfile.gettempdir(), f"sparsegp_scale_{args.rows}.zarr")
    t0 = time.perf_counter()
    write_data(path, args.rows, args.chunk)
    print(f"data: {args.rows} x {FEATURES} float64 in {path} "
          f"({time.perf_counter() - t0:.1f} s to write or find)", flush=True)
    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        out = subprocess.run([sys.executable, __file__, "--child", path, str(workers),
                              str(args.M), str(args.iterations)],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{workers} worker(s): fit {row['fit_s']:.1f} s, {row['per_pass_s']:.1f} s per "
              f"epoch (batch pass), driver peak {row['driver_peak_mb']:.0f} MB, worker peaks "
              f"{', '.join(f'{m:.0f}' for m in row['worker_peak_mb'])} MB, log Z "
              f"{row['log_evidence']:.2f}", flush=True)
    if len(rows) > 1:
        print(f"time per epoch, {rows[0]['workers']} / {rows[-1]['workers']} workers: "
              f"{rows[0]['per_pass_s'] / rows[-1]['per_pass_s']:.2f}")


if __name__ == "__main__":
    main()
