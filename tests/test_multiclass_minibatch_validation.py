"""Minibatch fits validate their inputs exactly as batch fits do (issue 23, item 5)."""
import warnings

import numpy as np
import pytest

from sparsegp import MultiClassEPClassifier, MultiClassSVGPClassifier
from sparsegp.datasets import make_gp_classes

ESTIMATORS = [
    lambda **kw: MultiClassEPClassifier(method="sep", n_inducing=5, max_iter=2, tol=None,
                                        random_state=0, **kw),
    lambda **kw: MultiClassSVGPClassifier(n_inducing=5, max_iter=2, random_state=0, **kw),
]


@pytest.fixture(scope="module")
def data():
    X, y = make_gp_classes(80, n_classes=3, random_state=0)
    return np.asarray(X, dtype=float), np.asarray(y)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_dataframe_in_minibatch_mode_equals_the_array_fit(make, data):
    pd = pytest.importorskip("pandas")
    X, y = data
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    seen = []
    for rows in (frame, X):
        # two iterations: SVGP's fit is still flat, and says so, the same for both inputs
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seen.append((make(batch_size=20).fit(rows, y), [str(w.message) for w in caught]))
    (a, said_a), (b, said_b) = seen
    assert said_a == said_b
    assert all("no better than the class frequencies" in m for m in said_a)
    assert list(a.feature_names_in_) == list(frame.columns)
    np.testing.assert_array_equal(a.predict_proba(frame), b.predict_proba(X))


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("batch_size", [None, 20])
def test_continuous_targets_are_refused_in_both_modes(make, batch_size, data):
    X, _ = data
    y = np.random.default_rng(0).normal(size=X.shape[0])
    with pytest.raises(ValueError, match="Unknown label type"):
        make(batch_size=batch_size).fit(X, y)


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("batch_size", [None, 20])
def test_complex_inputs_are_refused_in_both_modes(make, batch_size, data):
    X, y = data
    with pytest.raises(ValueError, match="[Cc]omplex"):
        make(batch_size=batch_size).fit(X + 1j, y)


def test_memmap_stays_unread_but_is_checked(tmp_path, data):
    X, y = data
    path = tmp_path / "X.dat"
    mm = np.memmap(path, dtype=np.float64, mode="w+", shape=X.shape)
    mm[:] = X
    mm.flush()
    ro = np.memmap(path, dtype=np.float64, mode="r", shape=X.shape)
    fit = ESTIMATORS[0](batch_size=20).fit(ro, y)
    np.testing.assert_array_equal(fit.predict_proba(X),
                                  ESTIMATORS[0](batch_size=20).fit(X, y).predict_proba(X))
    with pytest.raises(ValueError, match="Unknown label type"):
        ESTIMATORS[0](batch_size=20).fit(ro, y + 0.5)


@pytest.mark.parametrize("method", ["ep", "sep"])
def test_a_failed_minibatch_step_leaves_the_state_as_it_was(method, monkeypatch):
    # a minibatch step refines the sites before its evidence is known; when the evidence
    # fails the training driver steps back, and the sites must step back with it (issue 48)
    from sparsegp.classification.multiclass import engine
    X, y = make_gp_classes(120, n_classes=3, random_state=4)
    real = engine.minibatch_update
    seen = []

    def state_of(state):
        sites = () if not isinstance(state.sites, tuple) else tuple(s.copy() for s in state.sites)
        return (state.T.copy(), state.h.copy()) + sites

    def failing_third(Xb, yb, idx, hyp, state, *args):
        seen.append(state_of(state))
        out = real(Xb, yb, idx, hyp, state, *args)
        return (np.nan,) + tuple(out[1:]) if len(seen) == 3 else out

    monkeypatch.setattr(engine, "minibatch_update", failing_third)
    MultiClassEPClassifier(method=method, n_inducing=5, batch_size=30, max_iter=2,
                           random_state=0).fit(X, y)
    assert len(seen) > 3
    # the step after the failed one starts from the state the failed one started from
    for before, after in zip(seen[2], seen[3]):
        np.testing.assert_array_equal(after, before)
    # and a step that succeeded did change it (the comparison above can fail)
    assert not np.array_equal(seen[1][0], seen[2][0])
