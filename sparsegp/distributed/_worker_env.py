"""Make a worker process obey the thread settings its nanny gives it, whenever it loaded numba.

The nanny writes its ``env`` (here :data:`~sparsegp.distributed._cluster.SINGLE_THREAD_ENV`)
into ``os.environ`` only once the worker process runs, and with the ``spawn`` start method the
process has already run the driver's main script by then (as ``__mp_main__``, without its
``if __name__ == "__main__"`` block). A script that imports sparsegp at the top, as every
figure script does, has thus loaded numba and numpy in the worker with the driver's settings:
numba's config holds the default thread count (2 on two cores) while the environment says 1,
and OpenBLAS has started its default threads. The first ``numba.get_num_threads()`` (in
:func:`~sparsegp.experiments.grid.run_cell`) launches numba's pool at the default count, and
the next compile re-reads the environment and raises "Cannot set NUMBA_NUM_THREADS to a
different value once the threads have been launched". Cells whose kernels were in numba's
on-disk cache compiled nothing and passed; the others failed (in the run that found this,
every multi-class GFITC and VI cell of ``figures/multiclass_tables.py --quick``).

:class:`AdoptThreadEnv` runs as the worker starts, before it takes any task: it has numba
re-read the environment while its pool is still unlaunched and launch it at that count, and
holds the thread pools that threadpoolctl finds to the counts the environment names.
"""
import os
import sys

from distributed import WorkerPlugin

#: threadpoolctl's ``user_api`` and the variables that set its thread count at library load
_POOL_VARIABLES = {"blas": ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"),
                   "openmp": ("OMP_NUM_THREADS",)}


def adopt_thread_env():
    """Apply this process's thread variables to the pools loaded before they were set.

    Numba, if loaded and its pool not yet launched, re-reads its environment
    (:func:`numba.core.config.reload_config`, which its compiler runs before every compile)
    and launches its pool at the count read then: the count numba fixed when it was imported
    (``numba.np.ufunc.parallel.NUM_THREADS``) is set to it too, so that the pool, its config
    and ``numba.get_num_threads()`` agree as in a worker that loaded numba after its nanny
    set the variable (``NUM_THREADS`` is numba's private name: tests/test_experiments.py
    reads both counts in such a worker, so a rename shows). A pool already launched (a main script that ran parallel code on
    import) keeps its size, and the variable is set back to that size so that compiles still
    work. BLAS and OpenMP libraries are limited through threadpoolctl to the smallest count
    their variables name.
    """
    numba = sys.modules.get("numba")
    if numba is not None and "NUMBA_NUM_THREADS" in os.environ:
        from numba.np.ufunc import parallel

        try:
            numba.config.reload_config()
        except RuntimeError:          # "Cannot set NUMBA_NUM_THREADS ...": pool launched
            os.environ["NUMBA_NUM_THREADS"] = str(numba.config.NUMBA_NUM_THREADS)
            numba.config.reload_config()
        else:
            parallel.NUM_THREADS = numba.config.NUMBA_NUM_THREADS
    limits = {}
    for api, names in _POOL_VARIABLES.items():
        counts = [int(os.environ[name]) for name in names if name in os.environ]
        if counts:
            limits[api] = min(counts)
    if limits:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=limits)


class AdoptThreadEnv(WorkerPlugin):
    """Worker plugin running :func:`adopt_thread_env` as the worker starts."""

    name = "sparsegp-adopt-thread-env"

    def setup(self, worker):
        adopt_thread_env()
