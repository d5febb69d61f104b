"""The library's thread policy (sparsegp._threads) as estimators apply it."""
import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import sparsegp
from sparsegp import _threads
from sparsegp._base import SparseGPEstimator

ESTIMATORS = sorted(n for n in sparsegp.__all__ if n[0].isupper())


class _Recorder(SparseGPEstimator):
    """Records the BLAS thread counts its fit sees; raises when asked to."""

    def __init__(self, pool="numba", fail=False):
        self.pool = pool
        self.fail = fail

    def _parallel_pool(self, X=None):
        return self.pool

    def fit(self, X, y=None):
        self.seen_ = _threads.blas_thread_counts()
        self.numba_threads_ = numba.get_num_threads()
        if self.fail:
            raise RuntimeError("failed inside fit")
        return self


def _machine_load(monkeypatch, busy, cores=2):
    """Make the load probe report ``busy`` cores of ``cores`` taken by other programs."""
    monkeypatch.setattr(_threads, "_recent_busy_cores", lambda: float(busy))
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: cores)


@pytest.fixture
def quiet_machine(monkeypatch):
    _machine_load(monkeypatch, 0.0)


@pytest.mark.parametrize("pool, inside", [("numba", 1), ("blas", 2)])
def test_fit_runs_under_its_pool_and_gives_the_threads_back(openblas_at_two_threads, pool,
                                                            inside, quiet_machine):
    counts = openblas_at_two_threads
    big = np.ones((_threads.PARALLEL_MIN_ROWS, 2))
    est = _Recorder(pool).fit(big)
    assert set(est.seen_) == {inside}
    assert set(counts()) == {2}
    with pytest.raises(RuntimeError, match="inside fit"):
        _Recorder(pool, fail=True).fit(big)
    assert set(counts()) == {2}            # restored on the way out of an error too


@pytest.mark.skipif(numba.config.NUMBA_DEFAULT_NUM_THREADS < 2, reason="one core")
@pytest.mark.parametrize("pool, blas_inside", [("numba", 1), ("blas", 2)])
def test_small_work_runs_on_one_numba_thread_without_a_probe(monkeypatch,
                                                             openblas_at_two_threads, pool,
                                                             blas_inside):
    default = numba.config.NUMBA_DEFAULT_NUM_THREADS
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)

    def no_probe():
        raise AssertionError("small work waited for a load probe")
    monkeypatch.setattr(_threads, "_recent_busy_cores", no_probe)
    small = np.ones((_threads.PARALLEL_MIN_ROWS - 1, 2))
    for X in (small, small.tolist()):
        est = _Recorder(pool).fit(X)
        # OpenBLAS keeps small products on one thread itself: "blas" work keeps its count
        assert est.numba_threads_ == 1 and set(est.seen_) == {blas_inside}
    assert numba.get_num_threads() == default and set(openblas_at_two_threads()) == {2}
    # theta (1-D) says nothing of the work's size: that is large work, which asks for the load
    with pytest.raises(AssertionError, match="waited for a load probe"):
        _Recorder(pool).fit(np.ones(3))


def test_the_users_settings_win(openblas_at_two_threads, quiet_machine):
    saved = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        est = _Recorder("numba").fit(np.ones((3, 2)))
        assert est.numba_threads_ == 1 and numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(saved)
    with threadpool_limits(limits=1, user_api="blas"):
        est = _Recorder("blas").fit(np.ones((3, 2)))   # a caller's limit is never raised
        assert set(est.seen_) == {1}
    assert set(openblas_at_two_threads()) == {2}


@pytest.mark.parametrize("busy, cores, limit, expected", [
    (0.0, 2, 2, 2), (0.3, 2, 2, 2), (0.9, 2, 2, 1), (1.0, 2, 2, 1), (2.0, 2, 2, 1),
    (1.0, 8, 4, 4), (5.2, 8, 8, 3)])
def test_free_threads_counts_the_cores_others_leave(monkeypatch, busy, cores, limit, expected):
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: cores)
    assert _threads.free_threads(limit, busy=busy) == expected


@pytest.mark.skipif(numba.config.NUMBA_DEFAULT_NUM_THREADS < 2, reason="one core")
def test_a_busy_machine_gets_fewer_threads_and_they_come_back(monkeypatch,
                                                              openblas_at_two_threads):
    default = numba.config.NUMBA_DEFAULT_NUM_THREADS
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    _machine_load(monkeypatch, busy=default - 1, cores=default)
    big = np.ones((_threads.PARALLEL_MIN_ROWS, 2))
    for pool in ("numba", "blas"):
        est = _Recorder(pool).fit(big)
        assert est.numba_threads_ == 1 and set(est.seen_) == {1}, pool
        assert numba.get_num_threads() == default
    assert set(openblas_at_two_threads()) == {2}
    # a thread count the user set is theirs, busy machine or not
    monkeypatch.setenv("NUMBA_NUM_THREADS", str(default))
    assert _Recorder("numba").fit(big).numba_threads_ == default
    # a real fit on the busy machine runs one thread and gives the default back
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    seen = []
    n = _threads.PARALLEL_MIN_ROWS
    X, y = np.random.default_rng(0).normal(size=(n, 2)), np.arange(n) % 3
    sparsegp.MultiClassEPClassifier(n_inducing=3, max_iter=2, tol=None, random_state=0,
                                    callback=lambda e, it: seen.append(numba.get_num_threads())
                                    ).fit(X, y)
    assert set(seen) == {1} and numba.get_num_threads() == default


@pytest.mark.skipif(not _threads.os.path.exists("/proc/stat"), reason="needs Linux's /proc")
def test_the_probe_sees_another_program_but_not_our_own_threads():
    import subprocess
    import sys
    import threading
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        import time
        time.sleep(0.5)
        assert _threads.busy_cores(window=0.2) > 0.5
    finally:
        hog.kill()
        hog.wait()
    base = _threads.busy_cores(window=0.2)                # whatever else runs here now
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass
    worker = threading.Thread(target=spin)
    worker.start()
    try:
        # our own busy thread is not another program's load (only the GIL's hand-offs leak)
        own = _threads.busy_cores(window=0.2)
    finally:
        stop.set()
        worker.join()
    assert own < base + 0.5


def test_niced_work_is_busy_where_the_kernel_groups_by_session(monkeypatch):
    line = b"cpu  100 40 10 800 5 1 2 3 0 0\n"   # user nice system idle iowait irq softirq steal
    monkeypatch.setattr(_threads, "_nice_is_busy", lambda: True)
    assert _threads._split_ticks(line) == (156, 961)
    monkeypatch.setattr(_threads, "_nice_is_busy", lambda: False)
    assert _threads._split_ticks(line) == (116, 961)
    assert _threads._split_ticks(b"intr 1 2 3") is None


def test_the_load_estimate_comes_from_two_calls_without_waiting(monkeypatch):
    """Two managed calls 0.5 s apart give the estimate; only a call without one waits."""
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_threads, "_PROBE", {"start": None, "time": -1e9, "busy": 0.0})
    # (seconds, machine busy ticks, machine total ticks, own ticks): over 0.5 s on 2 cores,
    # 60 of 100 ticks busy, 10 of them ours, so others kept one core busy
    readings = iter([(10.0, 0, 0, 0), (10.5, 60, 100, 10), (10.52, 62, 104, 10),
                     (20.0, 1000, 2000, 20), (20.05, 1010, 2010, 30)])
    monkeypatch.setattr(_threads, "_reading", lambda: next(readings))
    slept = []
    monkeypatch.setattr(_threads.time, "sleep", slept.append)
    with _threads._PROBE_LOCK:
        _threads._observe_load()               # a small call opens the window
    assert _threads._recent_busy_cores() == pytest.approx(1.0)
    assert _threads._recent_busy_cores() == pytest.approx(1.0)    # 20 ms on: reused
    assert slept == []
    # 9.4 s later the estimate is stale: a new window, waited out, finds a quiet machine
    assert _threads._recent_busy_cores() == pytest.approx(0.0)
    assert slept == [pytest.approx(_threads.PROBE_SECONDS)]


def test_a_long_call_leaves_an_estimate_for_the_next_one(monkeypatch):
    """A managed call that ran longer than PROBE_MAX_AGE closes its own window as it returns,
    so the fit that follows it (a benchmark's timed fit after its warm-up) does not wait."""
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(_threads, "_PROBE", {"start": None, "time": -1e9, "busy": 0.0})
    # entry at 10.0 (no estimate: waits out the window to 10.05), return at 13.0 after a call
    # in which others kept half a core busy (150 of 600 ticks), the next entry at 13.01
    readings = iter([(10.0, 0, 0, 0), (10.05, 10, 10, 0), (13.0, 160, 610, 0),
                     (13.01, 161, 612, 0)])
    monkeypatch.setattr(_threads, "_reading", lambda: next(readings))
    slept = []
    monkeypatch.setattr(_threads.time, "sleep", slept.append)
    assert _threads._recent_busy_cores() == pytest.approx(2.0)      # the first call waits
    assert slept == [pytest.approx(_threads.PROBE_SECONDS)]
    with _threads._PROBE_LOCK:
        _threads._observe_load(closing=True)   # the call returns 2.95 s later
    assert _threads._recent_busy_cores() == pytest.approx(0.5)
    assert len(slept) == 1
    # without closing, the same 2.95 s window would be too old to count: it waits again
    readings2 = iter([(10.0, 0, 0, 0), (10.05, 10, 10, 0), (13.0, 160, 610, 0),
                      (13.01, 161, 612, 0), (13.06, 170, 622, 0)])
    monkeypatch.setattr(_threads, "_reading", lambda: next(readings2))
    monkeypatch.setattr(_threads, "_PROBE", {"start": None, "time": -1e9, "busy": 0.0})
    _threads._recent_busy_cores()
    with _threads._PROBE_LOCK:
        _threads._observe_load()
    _threads._recent_busy_cores()
    assert len(slept) == 3


def test_managed_calls_close_their_window_on_return(monkeypatch):
    """The wrapper reads the counters as the method returns, also when it raises."""
    closed = []
    monkeypatch.setattr(_threads, "_observe_load", lambda closing=False: closed.append(closing))

    class Est:
        def _parallel_pool(self, X):
            return "numba"

        def _parallel_rows(self, name, X):
            return 10              # small work: no probe at entry

        @_threads.managed
        def fit(self, X):
            if X is None:
                raise ValueError("X")
            return self

    Est().fit(np.zeros((10, 1)))
    with pytest.raises(ValueError):
        Est().fit(None)
    assert closed.count(True) == 2


def test_openmp_workers_sleep_between_regions_unless_the_user_chose():
    import subprocess
    import sys
    code = ("import os, sparsegp; sparsegp.SparseGPRegressor; "
            "print(os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in _threads.os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "PASSIVE"
    env["OMP_WAIT_POLICY"] = "ACTIVE"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "ACTIVE"


def test_unknown_pool_is_refused():
    with pytest.raises(ValueError, match="pool must be one of"):
        _threads.thread_policy("gpu")


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_public_fit_and_predict_method_is_managed(name):
    cls = getattr(sparsegp, name)
    present = [m for m in _threads.MANAGED_METHODS if hasattr(cls, m)]
    assert "fit" in present and "predict" in present
    assert all(getattr(getattr(cls, m), "_thread_managed", False) for m in present), present


def test_pools_of_the_estimators():
    assert sparsegp.GFITCClassifier()._parallel_pool() == "numba"
    assert sparsegp.GFITCClassifier(ep_schedule="sequential")._parallel_pool() == "blas"
    assert sparsegp.EPClassifier()._parallel_pool() == "numba"
    reg = sparsegp.SparseGPRegressor
    assert reg("fitc")._parallel_pool(np.empty((10, 1))) == "numba"
    assert reg("exact")._parallel_pool(np.empty((100, 1))) == "numba"
    assert reg("exact")._parallel_pool(np.empty((5000, 1))) == "blas"
    # PITC holds BLAS to one thread: its fit is then the same at any thread count (issue 23)
    assert reg("pitc")._parallel_pool(np.empty((10, 1))) == "numba"


def test_map_threads_keeps_order_and_honours_numbas_count():
    import threading

    import numba

    from sparsegp._threads import map_threads
    seen = []

    def work(i):
        seen.append(threading.current_thread().name)
        return i * i

    assert map_threads(work, range(7)) == [i * i for i in range(7)]
    previous = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        seen.clear()
        assert map_threads(work, range(5)) == [0, 1, 4, 9, 16]
        assert set(seen) == {threading.current_thread().name}  # no pool at one thread
    finally:
        numba.set_num_threads(previous)


def test_ivm_parallel_rows_are_those_its_passes_split():
    from sparsegp.classification._ivm_select import _fit_parallel_rows
    from sparsegp._numba import adf, scoring
    big = min(scoring.PARALLEL_MIN_CANDIDATES, -(-adf.PARALLEL_MIN_WORK // adf.APPEND_WORK))
    # full greedy below the passes' thresholds: only the kernel blocks over the d active rows
    assert _fit_parallel_rows(5000, 200, "entropy", None) == 200
    assert _fit_parallel_rows(big - 1, "auto", "infogain", False) == 100
    assert _fit_parallel_rows(50, "auto", "random", True) == 50        # d <= n
    assert _fit_parallel_rows(5000, 1500, "random", {"size": 10}) == 1500
    # the selection passes go parallel: all n rows
    assert _fit_parallel_rows(big, 200, "entropy", None) == big
    assert _fit_parallel_rows(5000, 200, "entropy", True) == 5000
    assert _fit_parallel_rows(5000, 200, "infogain", {"size": 100}) == 5000
    # parameters the fit will refuse say nothing of the work
    for bad in ("many", 2.5, True, None):
        assert _fit_parallel_rows(5000, bad, "entropy", None) == 5000
    est = sparsegp.IVMClassifier(n_active=200)
    assert est._parallel_rows("fit", np.empty((5000, 2))) == 200
    assert est._parallel_rows("predict", np.empty((5000, 2))) == 5000   # test rows
    assert est._parallel_rows("fit", np.empty(3)) is None


@pytest.mark.skipif(numba.config.NUMBA_DEFAULT_NUM_THREADS < 2,
                    reason="one core: Numba has one thread already, so the policy has no "
                           "thread to hold back and never probes the load")
def test_an_ivm_fit_with_serial_passes_runs_one_thread_without_a_probe(monkeypatch):
    """The IVM at the default full greedy on a few thousand rows: its selection passes are
    serial, so the fit runs its few kernel blocks on one thread and never waits for a probe
    (bench_threads' ivm case was slower at the default threads than at one)."""
    from sparsegp.classification import _ivm_search
    default = numba.config.NUMBA_DEFAULT_NUM_THREADS
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)

    def no_probe():
        raise AssertionError("the fit waited for a load probe")
    monkeypatch.setattr(_threads, "_recent_busy_cores", no_probe)
    seen = []
    select = _ivm_search.select_active_set

    def spy(*args, **kwargs):
        seen.append(numba.get_num_threads())
        return select(*args, **kwargs)
    monkeypatch.setattr(_ivm_search, "select_active_set", spy)
    n = _threads.PARALLEL_MIN_ROWS + 200
    X, y = sparsegp.datasets.make_xor(n, random_state=0)
    sparsegp.IVMClassifier(n_active=20, optimizer=None, random_state=0).fit(X, y)
    assert seen == [1] and numba.get_num_threads() == default
    # the randomized scheme's catch-up passes split the rows: large work, which asks for the
    # load
    with pytest.raises(AssertionError, match="waited for a load probe"):
        sparsegp.IVMClassifier(n_active=20, optimizer=None, randomized=True,
                               random_state=0).fit(X, y)
