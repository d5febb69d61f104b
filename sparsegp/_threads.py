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

On a busy machine a parallel region is only as fast as its slowest thread: with one of two
cores taken by another program, two threads made the stagewise fit 4x slower than one. So the
policy also counts the cores other programs keep busy (:func:`busy_cores`, from the kernel's
CPU-time counters over a short window; niced work counts as free, since it yields) and, while
the method runs, uses only the free ones (:func:`free_threads`): Numba's thread count and, for
``"blas"`` work, BLAS's are lowered to them and set back afterwards.

The user's explicit settings win: the policy never raises a thread count, and it leaves
Numba's alone when ``NUMBA_NUM_THREADS`` is set or ``numba.set_num_threads`` chose a count other
than the default; a caller's ``threadpoolctl`` limit or ``OPENBLAS_NUM_THREADS`` still caps
what runs. The switch costs about 10 us (plus one load probe of :data:`PROBE_SECONDS` at most
every :data:`PROBE_MAX_AGE` seconds), so it wraps whole fits rather than single evaluations.
"""
import contextlib
import functools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba

from threadpoolctl import ThreadpoolController

from ._config import LOAD_PROBE_MIN_ROWS

#: the parallel pools a method can name
POOLS = ("numba", "blas")

#: public estimator methods that run under the estimator's thread policy
MANAGED_METHODS = ("fit", "predict", "predict_proba", "predict_log_proba", "decision_function",
                   "predict_latent", "score", "log_marginal_likelihood")

#: length of the window over which busy_cores() reads the CPU-time counters (the kernel counts
#: in 10 ms ticks: 50 ms on two cores resolves a fifth of a core)
PROBE_SECONDS = 0.05
#: a load probe is reused for this long (predict after fit, cross-validation loops)
PROBE_MAX_AGE = 2.0

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_CONTROLLER = None
_PROBE = {"time": -1e9, "busy": 0.0}
_PROBE_LOCK = threading.Lock()


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


def _cpu_ticks():
    """(busy, total) CPU ticks of the whole machine since boot; None where unreadable.

    Busy is user + system + irq + softirq + steal; nice time (work that yields to ours) and
    idle/iowait are free.
    """
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != b"cpu":
        return None
    ticks = [int(v) for v in fields[1:9]] + [0] * max(0, 9 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = ticks[:8]
    return user + system + irq + softirq + steal, sum(ticks[:8])


def busy_cores(window=PROBE_SECONDS):
    """How many cores other programs keep busy, measured over ``window`` seconds.

    The calling thread sleeps through the window, so what is counted is everyone else's
    (non-niced) work. 0.0 where the counters cannot be read (not Linux).
    """
    start = _cpu_ticks()
    if start is None:
        return 0.0
    own = os.times()
    time.sleep(window)
    end = _cpu_ticks()
    own_end = os.times()
    # this process's other threads (OpenMP or BLAS workers still spinning after their last
    # region) are not another program's load
    own_ticks = (own_end.user + own_end.system - own.user - own.system) * _TICKS_PER_SECOND
    busy, total = end[0] - start[0] - own_ticks, end[1] - start[1]
    if total <= 0:
        return 0.0
    return (os.cpu_count() or 1) * max(0.0, busy) / total


def _recent_busy_cores():
    with _PROBE_LOCK:
        now = time.monotonic()
        if now - _PROBE["time"] > PROBE_MAX_AGE:
            _PROBE["busy"] = busy_cores()
            _PROBE["time"] = time.monotonic()
        return _PROBE["busy"]


def free_threads(limit, busy=None):
    """Threads worth running when ``busy`` cores are taken: the free cores, 1 to ``limit``.

    A core counts as taken from half busy on (round to nearest), so a machine at one busy core
    of two gives 1 and a quiet one gives ``limit``.
    """
    if busy is None:
        busy = _recent_busy_cores()
    cores = os.cpu_count() or 1
    return max(1, min(int(limit), int(cores - busy + 0.5)))


def _numba_count_is_ours():
    """True when the user has not chosen Numba's thread count (env or set_num_threads)."""
    return ("NUMBA_NUM_THREADS" not in os.environ
            and numba.get_num_threads() == numba.config.NUMBA_DEFAULT_NUM_THREADS)


@contextlib.contextmanager
def load_aware_threads(pool):
    """Inside the block, run ``pool``'s threads on the cores other programs leave free."""
    numba_threads = numba.get_num_threads()
    adapt_numba = numba_threads > 1 and _numba_count_is_ours()
    blas = max(blas_thread_counts() or (1,)) if pool == "blas" else 1
    if not adapt_numba and blas <= 1:
        yield
        return
    target = free_threads(max(numba_threads, blas))
    with contextlib.ExitStack() as stack:
        if adapt_numba and target < numba_threads:
            numba.set_num_threads(target)
            stack.callback(numba.set_num_threads, numba_threads)
        if blas > 1 and target < blas:
            stack.enter_context(controller().limit(limits=target, user_api="blas"))
        yield


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
        pool = self._parallel_pool(X)
        rows = getattr(X, "shape", (0,))[0] if X is not None else 0
        # below LOAD_PROBE_MIN_ROWS the work is too short to lose much to a busy core, and a
        # 50 ms probe would cost more than it saves
        adapt = rows is not None and rows >= LOAD_PROBE_MIN_ROWS
        with (load_aware_threads(pool) if adapt else contextlib.nullcontext()), \
                thread_policy(pool):
            return method(self, *args, **kwargs)

    wrapper._thread_managed = True
    return wrapper
