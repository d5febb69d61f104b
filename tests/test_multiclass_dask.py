"""SEP on Dask arrays: the rows stay on the workers, the iterates are the in-memory ones."""
import os

import numpy as np
import pytest

da = pytest.importorskip("dask.array", reason="needs dask (the 'distributed' extra)")
distributed = pytest.importorskip("distributed", reason="needs dask.distributed")

from sparsegp import MultiClassEPClassifier  # noqa: E402
from sparsegp.distributed import fit_on_dask  # noqa: E402
from sparsegp.distributed._cluster import local_cluster  # noqa: E402

KW = dict(method="sep", n_inducing=8, max_iter=6, tol=None, random_state=0)


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    return X, y


@pytest.fixture(scope="module")
def cluster():
    with local_cluster(n_workers=2) as c:
        yield c


@pytest.fixture
def client(cluster):
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c


def _assert_same_fit(a, b):
    np.testing.assert_allclose(a.log_evidence_, b.log_evidence_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(a.evidence_history_, b.evidence_history_, rtol=1e-10, atol=1e-10)
    for name in ("posterior_mean_", "posterior_cov_", "lengthscale_", "variance_", "noise_",
                 "inducing_points_"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-10, atol=1e-10,
                                   err_msg=name)


@pytest.mark.parametrize("method", ["sep", "ep"])
def test_batch_fit_on_dask_equals_the_in_memory_fit(client, method):
    X, y = _data()
    kw = {**KW, "method": method}
    ref = MultiClassEPClassifier(**kw).fit(X, y)
    with client.as_current():
        est = MultiClassEPClassifier(**kw).fit(da.from_array(X, chunks=(150, 3)), y)
    _assert_same_fit(ref, est)
    assert est.n_iter_ == ref.n_iter_ == KW["max_iter"]
    np.testing.assert_array_equal(est.predict(X), ref.predict(X))


def test_scheduler_address_and_dask_labels_give_the_same_fit(cluster):
    X, y = _data(seed=1)
    ref = MultiClassEPClassifier(**KW).fit(X, y)
    est = fit_on_dask(MultiClassEPClassifier(**KW), da.from_array(X, chunks=(200, 3)),
                      da.from_array(y, chunks=200), client=cluster.scheduler_address)
    _assert_same_fit(ref, est)


@pytest.mark.parametrize("init", ["random", "kmeans"])
def test_minibatch_steps_never_bring_x_to_the_driver(client, monkeypatch, init):
    X, y = _data(n=4000)
    Xd = da.from_array(X, chunks=(1000, 3))
    seen = []

    def recording(method):
        def wrapper(self, *args, **kwargs):
            seen.append(self.shape)
            return method(self, *args, **kwargs)
        return wrapper

    # every way a dask array's values come to this process
    for name in ("__array__", "compute"):
        monkeypatch.setattr(da.Array, name, recording(getattr(da.Array, name)))
    steps = []
    est = MultiClassEPClassifier(method="sep", n_inducing=8, batch_size=100, max_iter=1,
                                 init=init, random_state=0,
                                 callback=lambda e, s: steps.append(s))
    with client.as_current():
        est.fit(Xd, y)
    # two workers, minibatches of 100 from two chunks: 4000 / 200 = 20 steps in the epoch
    assert steps == list(range(1, 21))
    assert np.isfinite(est.log_evidence_) and np.all(np.isfinite(est.posterior_mean_))
    # only the start's draws came here: the inducing inputs and the median-heuristic sample,
    # and for k-means (the default) its subsample of 20 M + 1000 rows, whatever N is
    bound = 1000 if init == "random" else 20 * 8 + 1000
    assert seen and max(shape[0] for shape in seen) <= bound < X.shape[0]
    assert np.mean(est.predict(X) == y) > 0.8


def test_nan_in_a_chunk_is_named_before_training(client):
    X, y = _data()
    X[317, 1] = np.nan
    steps = []
    est = MultiClassEPClassifier(**KW, callback=lambda e, s: steps.append(s))
    with client.as_current(), pytest.raises(ValueError, match=r"chunk 2 \(rows 300 to 449; "
                                                               r"first at row 317"):
        est.fit(da.from_array(X, chunks=(150, 3)), y)
    assert steps == []


def test_minibatch_ep_and_bad_input_are_refused_before_any_work(client):
    X, y = _data()
    Xd = da.from_array(X, chunks=(150, 3))
    with client.as_current():
        with pytest.raises(ValueError, match="minibatch EP"):
            MultiClassEPClassifier(method="ep", batch_size=50).fit(Xd, y)
        with pytest.raises(ValueError, match="different lengths"):
            MultiClassEPClassifier(method="sep").fit(Xd, y[:-1])
        with pytest.raises(ValueError, match="max_iter"):
            MultiClassEPClassifier(method="sep", max_iter=0, tol=None).fit(Xd, y)
        with pytest.raises(ValueError, match="2-D"):
            MultiClassEPClassifier(method="sep").fit(da.from_array(X[:, 0], chunks=150), y)


def _worker_killer(client, killed):
    """A callback that kills one worker process at iteration 2 (its nanny starts another)."""
    def kill_one_worker(est, iteration):
        if iteration == 2 and not killed:
            victim = sorted(client.scheduler_info()["workers"])[0]
            killed.append(victim)
            try:
                client.run(os._exit, 1, workers=[victim])
            except Exception:  # the worker dies before it can answer
                pass
    return kill_one_worker


def test_a_worker_lost_mid_fit_reruns_the_step(client):
    X, y = _data(seed=2)
    ref = MultiClassEPClassifier(**KW).fit(X, y)
    killed = []
    kill_one_worker = _worker_killer(client, killed)

    with client.as_current():
        est = MultiClassEPClassifier(**KW, callback=kill_one_worker).fit(
            da.from_array(X, chunks=(100, 3)), y)
    assert killed
    # the chunks it held were recomputed and their tasks rerun: the same posterior
    _assert_same_fit(ref, est)


def test_ep_stops_with_a_clear_error_when_a_worker_with_its_sites_is_lost(client):
    X, y = _data(seed=2)
    killed = []
    kill_one_worker = _worker_killer(client, killed)

    est = MultiClassEPClassifier(**{**KW, "method": "ep"}, callback=kill_one_worker)
    with client.as_current(), pytest.raises(RuntimeError, match="per-row sites .* was lost"):
        est.fit(da.from_array(X, chunks=(100, 3)), y)
    # a fit that raises leaves no fitted state (issue 22 item 5), also after iterations ran
    assert killed and not hasattr(est, "n_iter_") and not hasattr(est, "classes_")
