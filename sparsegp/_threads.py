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
cores taken by another program, two threads made the stagewise fit 4x slower than one. Three
things keep that from happening:

* Numba's OpenMP workers *sleep* between parallel regions (``OMP_WAIT_POLICY=PASSIVE``, set
  when this module is imported, with the first estimator, unless the user chose a policy).
  With OpenMP's default they spin for a while after every region, burning the time slice
  they share with another program's process; the next region then waits for the scheduler
  to give that worker its core back. A 100-row FITC fit (M = 50, 240 evaluations of two
  regions each) took 6-14 s that way against 0.3-1.2 s on one thread, tens of milliseconds
  a region; with sleeping workers it took 0.3-1.0 s. The variable only acts on an OpenMP
  runtime loaded after it is set (Numba loads its own at its first parallel call).
* Work on fewer than :data:`PARALLEL_MIN_ROWS` rows runs on one Numba thread, without a load
  probe (:func:`managed`): a hand-off to a second thread costs more than such regions gain.
  The rows are those the method splits among threads, which the estimator states
  (``_parallel_rows``): by default the rows of ``X``; the IVM's full-greedy fit on fewer than
  ``SCORING_PARALLEL_MIN_CANDIDATES`` rows runs its selection passes serially whatever the
  thread count, and splits only kernel blocks over its d active rows.
* Larger work counts the cores other programs keep busy (:func:`busy_cores`, from the kernel's
  CPU-time counters) and, while the method runs, uses only the free ones
  (:func:`free_threads`): Numba's thread count and, for ``"blas"`` work, BLAS's are lowered to
  them and set back afterwards. Niced work counts as busy where the kernel groups processes
  by session (``sched_autogroup``, Linux's default): there niceness only orders the threads of
  one session, and a nice-19 job started from another terminal takes a core as fully as any.

The user's explicit settings win: the policy never raises a thread count, and it leaves
Numba's alone when ``NUMBA_NUM_THREADS`` is set or ``numba.set_num_threads`` chose a count other
than the default; a caller's ``threadpoolctl`` limit or ``OPENBLAS_NUM_THREADS`` still caps
what runs. The switch costs about 10 us, so it wraps whole fits rather than single
evaluations. The load estimate comes from the counters read at the last two managed calls when
they are :data:`PROBE_SECONDS` to :data:`PROBE_MAX_AGE` seconds apart, or at the entry and
return of the last call however long it ran (free: a fit after a fit, predict after fit,
cross-validation); otherwise the call waits out a :data:`PROBE_SECONDS` window.

Why the CPU-time counters and not a cheaper signal: the load average is a minute-long
exponential mean that counts this process's own threads and tasks blocked on disk, so it
still reports a finished job a minute later and misses one that started a second ago; the
instantaneous count of runnable tasks (``procs_running``) is one sample, which a job that
computes in bursts escapes. ``os.sched_getaffinity`` says which cores the process may use,
not which are busy. The counters give the busy share over a window at the cost of one file
read per managed call, and a work size under :data:`PARALLEL_MIN_ROWS` skips the wait
altogether.
"""
import contextlib
import functools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numba

from threadpoolctl import ThreadpoolController

from ._config import PARALLEL_MIN_ROWS

# before Numba's OpenMP runtime is loaded (the module docstring says why)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: the parallel pools a method can name
POOLS = ("numba", "blas")

#: public estimator methods that run under the estimator's thread policy
MANAGED_METHODS = ("fit", "predict", "predict_proba", "predict_log_proba", "decision_function",
                   "predict_latent", "score", "log_marginal_likelihood")

#: shortest window over which the CPU-time counters give a load estimate (the kernel counts
#: in 10 ms ticks: 50 ms on two cores resolves a fifth of a core)
PROBE_SECONDS = 0.05
#: a load estimate, and a counter reading as the start of the next window, is used for this
#: long (predict after fit, cross-validation loops)
PROBE_MAX_AGE = 2.0

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

_CONTROLLER = None
# "start": the counter reading that opens the next window; "busy"/"time": the last estimate
_PROBE = {"start": None, "time": -1e9, "busy": 0.0}
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


@functools.lru_cache(maxsize=1)
def _nice_is_busy():
    """True where niced work takes a core like any other (the kernel's session autogroups)."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled", "rb") as f:
            return f.read().strip() == b"1"
    except OSError:
        return False


def _cpu_ticks():
    """(busy, total) CPU ticks of the whole machine since boot; None where unreadable."""
    try:
        with open("/proc/stat", "rb") as f:
            return _split_ticks(f.readline())
    except OSError:
        return None


def _split_ticks(line):
    """(busy, total) ticks from /proc/stat's first line (bytes); None if it is not that line.

    Busy is user + system + irq + softirq + steal, and nice where :func:`_nice_is_busy`;
    idle/iowait are free.
    """
    fields = line.split()
    if not fields or fields[0] != b"cpu":
        return None
    ticks = [int(v) for v in fields[1:9]] + [0] * max(0, 9 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = ticks[:8]
    busy = user + system + irq + softirq + steal + (nice if _nice_is_busy() else 0)
    return busy, sum(ticks[:8])


def _reading():
    """(monotonic seconds, machine busy ticks, machine total ticks, this process's ticks), or
    None where the counters cannot be read."""
    ticks = _cpu_ticks()
    if ticks is None:
        return None
    own = os.times()
    return time.monotonic(), ticks[0], ticks[1], (own.user + own.system) * _TICKS_PER_SECOND


def _busy_between(start, end):
    """Cores other programs kept busy between two :func:`_reading` results."""
    # this process's threads (OpenMP or BLAS workers still spinning after their last region,
    # the fit itself between two calls) are not another program's load
    busy = end[1] - start[1] - (end[3] - start[3])
    total = end[2] - start[2]
    if total <= 0:
        return 0.0
    return (os.cpu_count() or 1) * max(0.0, busy) / total


def busy_cores(window=PROBE_SECONDS):
    """How many cores other programs keep busy, measured over ``window`` seconds.

    The calling thread sleeps through the window and this process's own CPU time is taken
    off, so what is counted is everyone else's work. 0.0 where the counters cannot be read
    (not Linux).
    """
    start = _reading()
    if start is None:
        return 0.0
    time.sleep(window)
    return _busy_between(start, _reading())


def _observe_load(closing=False):
    """Read the counters; close the open window into an estimate if it is long enough.

    Cheap (one read of /proc/stat), so every managed call makes it: the next call that needs
    an estimate then usually finds one. ``closing``: the reading is taken as a managed call
    returns, so the window spans that call (opened at its entry, or at most
    :data:`PROBE_MAX_AGE` before) and says what other programs did meanwhile however long
    the call ran. Call with ``_PROBE_LOCK`` held; returns the reading.
    """
    now = _reading()
    if now is None:
        return None
    start = _PROBE["start"]
    age = now[0] - start[0] if start is not None else float("inf")
    if start is not None and PROBE_SECONDS <= age and (closing or age <= PROBE_MAX_AGE):
        _PROBE.update(busy=_busy_between(start, now), time=now[0], start=now)
    elif age > PROBE_MAX_AGE:
        _PROBE["start"] = now          # too old to say anything about the load now
    return now


def _recent_busy_cores():
    """Cores other programs keep busy: the estimate of the last :data:`PROBE_MAX_AGE` seconds,
    or, without one, a wait until the open window is :data:`PROBE_SECONDS` long."""
    with _PROBE_LOCK:
        now = _observe_load()
        if now is None:
            return 0.0
        if now[0] - _PROBE["time"] > PROBE_MAX_AGE:
            start = _PROBE["start"]
            time.sleep(max(0.0, PROBE_SECONDS - (now[0] - start[0])))
            end = _reading()
            _PROBE.update(busy=_busy_between(start, end), time=end[0], start=end)
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
def load_aware_threads(pool, rows=None):
    """Inside the block, run ``pool``'s threads on the cores other programs leave free.

    ``rows`` is the size of the work (rows of the method's data; None where unknown): below
    :data:`PARALLEL_MIN_ROWS` Numba runs it on one thread, whatever the load, and BLAS is left
    as it is (OpenBLAS runs small products on one thread by itself).
    """
    numba_threads = numba.get_num_threads()
    adapt_numba = numba_threads > 1 and _numba_count_is_ours()
    small = rows is not None and rows < PARALLEL_MIN_ROWS
    blas = max(blas_thread_counts() or (1,)) if pool == "blas" and not small else 1
    if small:
        with _PROBE_LOCK:
            _observe_load()            # opens a window for the next, larger call
    if not adapt_numba and blas <= 1:
        yield
        return
    target = 1 if small else free_threads(max(numba_threads, blas))
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
    on the size of the problem: ``self._parallel_rows(name, X)`` gives the rows of the work
    the method splits among threads (by default those of a 2-D ``X``, :func:`rows_of`; None,
    as for ``log_marginal_likelihood``'s theta, leaves the size unknown, and the method runs
    as large work).
    """
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        X = args[0] if args else kwargs.get("X")
        pool = self._parallel_pool(X)
        try:
            with load_aware_threads(pool, self._parallel_rows(name, X)), thread_policy(pool):
                return method(self, *args, **kwargs)
        finally:
            # a fit right after a fit (a benchmark's warm-up, a search over settings) then
            # finds an estimate instead of waiting out a window when this call ran long
            with _PROBE_LOCK:
                _observe_load(closing=True)

    wrapper._thread_managed = True
    return wrapper


def rows_of(X):
    """Rows of a 2-D array-like ``X``; None for anything else."""
    shape = getattr(X, "shape", None)
    if shape is None and isinstance(X, (list, tuple)) and X and isinstance(X[0], (list, tuple)):
        shape = (len(X), len(X[0]))
    return shape[0] if shape is not None and len(shape) == 2 else None
