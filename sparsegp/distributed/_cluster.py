"""The embedded default cluster: single-threaded worker processes, one per core."""
import contextlib
import os


# Every library that may start a thread pool in a worker: one thread each, set before the
# worker imports numpy or numba (the nanny passes them to the worker process it spawns).
SINGLE_THREAD_ENV = {name: "1" for name in (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS")}


def have_distributed():
    """True when dask.distributed can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def local_cluster(n_workers=None, **kwargs):
    """The embedded default: single-threaded worker processes, one per core, that survive
    a pause of the whole run (no heartbeat timeout) and keep glibc's adaptive malloc (no
    ``MALLOC_TRIM_THRESHOLD_``, which the nanny sets by default).

    Parameters
    ----------
    n_workers : int, optional
        Default ``os.cpu_count()``.
    **kwargs
        Passed to :class:`distributed.LocalCluster`.

    Returns
    -------
    distributed.LocalCluster
    """
    import dask
    from distributed import LocalCluster

    from ._worker_env import AdoptThreadEnv

    # dashboard_address=None still binds the default :8787, so a second cluster on the machine
    # (another notebook, a table run) would fail to start: take any free port instead
    opts = dict(n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1,
                processes=True, host="127.0.0.1", dashboard_address=":0",
                env=dict(SINGLE_THREAD_ENV))
    opts.update(kwargs)
    # The nanny sets env only once the worker process runs, after it re-ran the driver's main
    # script (spawn): numba and numpy loaded there keep the driver's thread counts, and
    # numba then refuses its next compile (sparsegp.distributed._worker_env says how)
    opts["plugins"] = (AdoptThreadEnv(), *kwargs.get("plugins", ()))
    # A paused or suspended run (SIGSTOP while a benchmark is timed, a laptop put to sleep)
    # stops the heartbeats; on resume the scheduler's default five-minute worker TTL had the
    # workers killed and restarted, losing every cell in flight. The nanny still reports a
    # worker process that dies, so on one machine the TTL only ever fires on such pauses.
    # The nanny also sets MALLOC_TRIM_THRESHOLD_ in each worker by default. Setting any glibc
    # malloc threshold switches off its adaptive mmap threshold, so every temporary above
    # 128 KiB (an M x M matrix from M = 128 on) is mapped, page-faulted and unmapped anew:
    # one satellite cell spent 30 of its 80 CPU s in the kernel. Unset, the heap serves them.
    dask_value = dask.config.get("distributed.nanny.pre-spawn-environ", {}).get(
        "MALLOC_TRIM_THRESHOLD_")
    with dask.config.set({"distributed.scheduler.worker-ttl": None,
                          "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}), \
            _without_env("MALLOC_TRIM_THRESHOLD_", dask_value):
        return LocalCluster(**opts)


@contextlib.contextmanager
def _without_env(name, injected):
    """Take ``name`` out of this process's environment while the body runs, if it holds the
    value dask's nanny writes there (``injected``): an earlier dask cluster in this process
    (a notebook's) leaves it behind, and worker processes inherit the spawning environment.
    A value set otherwise is the user's and stays."""
    value = os.environ.get(name)
    if injected is None or value != str(injected):
        yield
        return
    del os.environ[name]
    try:
        yield
    finally:
        os.environ[name] = value
