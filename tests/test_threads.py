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


@pytest.mark.parametrize("pool, inside", [("numba", 1), ("blas", 2)])
def test_fit_runs_under_its_pool_and_gives_the_threads_back(openblas_at_two_threads, pool,
                                                            inside):
    counts = openblas_at_two_threads
    est = _Recorder(pool).fit(np.ones((3, 2)))
    assert set(est.seen_) == {inside}
    assert set(counts()) == {2}
    with pytest.raises(RuntimeError, match="inside fit"):
        _Recorder(pool, fail=True).fit(np.ones((3, 2)))
    assert set(counts()) == {2}            # restored on the way out of an error too


def test_the_users_settings_win(openblas_at_two_threads):
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
    assert sparsegp.GFITCClassifier(schedule="sequential")._parallel_pool() == "blas"
    assert sparsegp.EPClassifier()._parallel_pool() == "numba"
    reg = sparsegp.SparseGPRegressor
    assert reg("fitc")._parallel_pool(np.empty((10, 1))) == "numba"
    assert reg("exact")._parallel_pool(np.empty((100, 1))) == "numba"
    assert reg("exact")._parallel_pool(np.empty((5000, 1))) == "blas"
    assert reg("pitc")._parallel_pool(np.empty((10, 1))) == "blas"


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
