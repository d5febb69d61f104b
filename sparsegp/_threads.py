"""One thread policy for the whole library, built on threadpoolctl.

Two pools can do the parallel work of a fit: Numba's (``prange`` loops that split the rows,
each thread taking its own block through small BLAS calls) and the BLAS library's own (one
large product threaded inside OpenBLAS/MKL). Running both at once puts four busy threads on two
cores, and OpenBLAS's idle workers keep spinning for a while after every call, stealing the
cores the next compiled pass needs: on main before this policy, the default settings made the
stagewise and multi-class fits 2-3.5x *slower* than one thread of each.

So every public ``fit``/``predict`` names the pool that does its parallel work
(:func:`thread_policy`):

* ``"numba"``: Numba's threads split the rows; every BLAS library in the process is held to one
  thread for the duration and set back afterwards, also on error;
* ``"blas"``: the work is a few large products (the dense EP classifier, the exact GP); BLAS
  keeps the threads it has and Numba runs its compiled loops as usual.

The user's explicit settings win: the policy never changes Numba's thread count (set it with
``NUMBA_NUM_THREADS`` or ``numba.set_num_threads``) and never raises a BLAS limit, it only
lowers BLAS to one thread inside ``"numba"`` work; a caller's ``threadpoolctl`` limit or
``OPENBLAS_NUM_THREADS`` therefore still caps what runs. The switch costs about 10 us, so it
wraps whole fits rather than single evaluations.
"""
import contextlib
import functools
from concurrent.futures import ThreadPoolExecutor

import numba

from threadpoolctl import ThreadpoolController

#: the parallel pools a method can name
POOLS = ("numba", "blas")

#: public estimator methods that run under the estimator's thread policy
MANAGED_METHODS = ("fit", "predict", "predict_proba", "predict_log_proba", "decision_function",
                   "predict_latent", "score", "log_marginal_likelihood")

_CONTROLLER = None


def controller():
    """The process's :class:`threadpoolctl.ThreadpoolController` (created on first use).

    Created lazily so that it sees the BLAS libraries numpy and scipy have loaded by then.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def blas_thread_counts():
    """Current thread count of every BLAS library threadpoolctl finds, as a tuple."""
    return tuple(lib.num_threads for lib in controller().select(user_api="blas").lib_controllers)


@contextlib.contextmanager
def single_threaded_blas(enabled=True):
    """Hold every BLAS library to one thread inside the ``with`` block, then restore it.

    Re-entrant; the previous counts come back also when the block raises. With
    ``enabled=False`` the block runs with the thread counts untouched, so a caller whose code
    path only sometimes splits rows across Numba threads states that as a condition.
    """
    if not enabled:
        yield
        return
    with controller().limit(limits=1, user_api="blas"):
        yield


def thread_policy(pool):
    """Context manager that lets ``pool`` (one of :data:`POOLS`) do the parallel work."""
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {list(POOLS)}; got {pool!r}")
    return single_threaded_blas(pool == "numba")


def map_threads(func, items, serial=False):
    """``[func(item) for item in items]``, on as many Python threads as Numba may use.

    For independent pieces of level-3 BLAS work (one per class, say) inside ``"numba"`` work,
    where BLAS itself is held to one thread: numpy releases the GIL in its products, so the
    pieces share the cores as Numba's row splits would. The width is Numba's thread count, so
    ``NUMBA_NUM_THREADS`` and ``numba.set_num_threads`` bound it as they bound every other
    parallel loop of the library; with one thread (or one item), or ``serial`` (the caller
    knows the pieces are too small to be worth a hand-off), they run here in order.

    Keep Numba parallel regions out of code that alternates with these threads: after a
    region, OpenMP's workers spin for a while and take the cores from them (multi-class GFITC
    ran 45 ms an iteration that way against 31 ms). Row-split work goes through this pool
    too, as serial GIL-free kernels over row ranges.
    """
    items = list(items)
    width = 1 if serial else min(numba.get_num_threads(), len(items))
    if width <= 1:
        return [func(item) for item in items]
    return list(_executor(width).map(func, items))


_EXECUTORS = {}


def _executor(width):
    """A process-wide pool of ``width`` threads, kept: starting threads on every call cost
    more than the work (1.3 s of a 3.5 s multi-class GFITC fit)."""
    pool = _EXECUTORS.get(width)
    if pool is None:
        pool = _EXECUTORS[width] = ThreadPoolExecutor(max_workers=width,
                                                      thread_name_prefix="sparsegp")
    return pool


def managed(method):
    """Run an estimator method under ``self._parallel_pool(X)``'s thread policy.

    ``X`` is the method's first argument (None if it has none), so that the choice can depend
    on the size of the problem.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        X = args[0] if args else kwargs.get("X")
        with thread_policy(self._parallel_pool(X)):
            return method(self, *args, **kwargs)

    wrapper._thread_managed = True
    return wrapper
