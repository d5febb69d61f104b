"""The one decorator used for every compiled kernel."""
import numba

_OPTIONS = dict(nopython=True, cache=True, fastmath=False, nogil=True)


def jit(func=None, **overrides):
    """``numba.njit`` with the package defaults; ``parallel=True`` may be passed per kernel."""
    options = {**_OPTIONS, **overrides}
    if func is None:
        return lambda f: numba.jit(**options)(f)
    return numba.jit(**options)(func)
