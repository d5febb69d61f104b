"""Keeping OpenBLAS's thread pool out of the way of Numba's.

The O(N M²) kernels split the rows among Numba's threads and call BLAS on each thread's
block (:mod:`sparsegp._numba.blas`). If OpenBLAS also starts threads for each of those
calls, two cores carry four busy threads; worse, OpenBLAS's idle workers keep spinning for
a while after every call and steal the cores that the next compiled pass needs (measured on
2 cores before the row split: the FITC evidence gradient took 0.31 s with both pools at two
threads against 0.28 s with one thread of each). So while such a kernel runs, every OpenBLAS
library loaded in the process (numpy and scipy each ship their own) is held to one thread,
and then set back. Numba's thread count, ``numba.set_num_threads`` or ``NUMBA_NUM_THREADS``,
is then the only knob.

The switch itself is not free: going to one thread and back around every evaluation cost
about 7 ms per FITC evaluation at N = 10 000, M = 100 (20 ms against 13 ms), with episodes
of 4x slowdowns. The pin is re-entrant, so loops hold it once around the whole loop.

Only OpenBLAS on Linux is handled (found through ``/proc/self/maps``); elsewhere
:func:`single_threaded_blas` does nothing, which changes speed, never results. Changing the
thread count is process-wide: another thread of the program calling BLAS at the same moment
runs single-threaded too.
"""
import contextlib
import ctypes
import sys

#: (get, set) pairs of every OpenBLAS found; None until first looked for
_CONTROLS = None
#: how OpenBLAS builds name their thread-count functions (plain, scipy's wheels, ILP64)
_PREFIXES = ("openblas", "scipy_openblas")
_SUFFIXES = ("", "64_")


def _loaded_openblas_paths():
    if not sys.platform.startswith("linux"):
        return []
    paths = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and "openblas" in fields[5].lower():
                    paths.add(fields[5].strip())
    except OSError:
        return []
    return sorted(paths)


def _thread_controls(path):
    try:
        lib = ctypes.CDLL(path)     # already loaded: dlopen hands back the same library
    except OSError:
        return None
    for prefix in _PREFIXES:
        for suffix in _SUFFIXES:
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                get.restype, get.argtypes = ctypes.c_int, []
                put.restype, put.argtypes = None, [ctypes.c_int]
                return get, put
    return None


def openblas_controls():
    """The (get, set) thread-count functions of every OpenBLAS loaded in this process."""
    global _CONTROLS
    if _CONTROLS is None:
        found = (_thread_controls(p) for p in _loaded_openblas_paths())
        _CONTROLS = [c for c in found if c is not None]
    return _CONTROLS


@contextlib.contextmanager
def single_threaded_blas(enabled=True):
    """Hold every loaded OpenBLAS to one thread inside the ``with`` block, then restore it.

    With ``enabled=False`` the block runs with the thread counts untouched, so a caller whose
    code path only sometimes splits BLAS across Numba threads states that as a condition.
    """
    if not enabled:
        yield
        return
    controls = openblas_controls()
    saved = [get() for get, _ in controls]
    for (_, put), n in zip(controls, saved):
        if n != 1:
            put(1)
    try:
        yield
    finally:
        for (_, put), n in zip(controls, saved):
            if n != 1:
                put(n)
