"""scikit-learn's own tools on every public estimator.

``parametrize_with_checks`` runs scikit-learn's estimator checks; a check an estimator cannot
pass for a principled reason is an expected failure listed, with the reason, in the estimator's
``_expected_failed_checks`` (strict xfail: a listed check that starts passing fails the suite,
so the list cannot go stale). The rest exercises what a researcher does in a notebook: a
Pipeline with ``score``, ``cross_val_score`` and ``GridSearchCV`` with default scoring, the
``neg_log_loss`` scorer with string labels, pickling, ``clone`` and pandas column names.
"""
import pickle

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsegp
from sparsegp.datasets import make_gp_classes, make_regression_1d, make_xor

from conftest import AT_THE_CAP, ON_NOISE_LABELS, ON_NOISE_TARGETS, ONE_CLASS

# Small settings that fit the checks' data (as few as 10 rows) in well under a second.
CHECK_CONFIGS = {
    "GFITCClassifier": dict(n_inducing=5, max_iter=2, random_state=0),
    "EPClassifier": dict(max_iter=2, random_state=0),
    "IVMClassifier": dict(n_active=10, random_state=0),
    "StagewiseGPClassifier": dict(d_max=5, max_iter=2, random_state=0),
    "MultiClassEPClassifier": dict(n_inducing=5, max_iter=3, random_state=0),
    "MultiClassGFITCClassifier": dict(n_inducing=5, max_iter=2, random_state=0),
    "MultiClassSVGPClassifier": dict(n_inducing=5, max_iter=3, random_state=0),
    "SparseGPRegressor": dict(n_inducing=8, max_iter=20, random_state=0),
}
# A parameter GridSearchCV can vary for each estimator, with two values.
GRIDS = {
    "GFITCClassifier": {"n_inducing": [3, 5]},
    "EPClassifier": {"bias": [0.0, 0.5]},
    "IVMClassifier": {"n_active": [8, 10]},
    "StagewiseGPClassifier": {"d_max": [4, 5]},
    "MultiClassEPClassifier": {"method": ["ep", "sep"]},
    "MultiClassGFITCClassifier": {"n_inducing": [3, 5]},
    "MultiClassSVGPClassifier": {"n_inducing": [3, 5]},
    "SparseGPRegressor": {"approximation": ["fitc", "vfe"]},
}
ESTIMATORS = sorted(n for n in sparsegp.__all__ if n[0].isupper())


def _make(name):
    return getattr(sparsegp, name)(**CHECK_CONFIGS[name])


def _data(est, n=60, seed=0):
    if not is_classifier(est):
        X, y = make_regression_1d(n, random_state=seed)
    elif est.__sklearn_tags__().classifier_tags.multi_class and "MultiClass" in type(est).__name__:
        X, y = make_gp_classes(n, n_classes=3, random_state=seed)
    else:
        X, y = make_xor(n, random_state=seed)
    return np.asarray(X, dtype=float), np.asarray(y)


def test_every_estimator_has_a_check_configuration():
    assert set(ESTIMATORS) == set(CHECK_CONFIGS) == set(GRIDS)


def _frame(pd, X):
    return pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])


def _expected_failures(estimator):
    return dict(type(estimator)._expected_failed_checks)


@parametrize_with_checks([_make(n) for n in ESTIMATORS],
                         expected_failed_checks=_expected_failures)
@AT_THE_CAP
@ON_NOISE_TARGETS
@ON_NOISE_LABELS
@ONE_CLASS
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_expected_failures_state_their_reason(name):
    reasons = getattr(sparsegp, name)._expected_failed_checks
    assert all(isinstance(r, str) and len(r) > 20 for r in reasons.values())


@pytest.mark.parametrize("name", ESTIMATORS)
@AT_THE_CAP
@ONE_CLASS
def test_pipeline_cross_validation_and_grid_search(name):
    est = _make(name)
    X, y = _data(est)
    pipe = make_pipeline(StandardScaler(), est)
    score = pipe.fit(X, y).score(X, y)
    if is_classifier(est):
        assert score == np.mean(pipe.predict(X) == y)           # accuracy, as sklearn defines it
    else:
        resid = np.sum((y - pipe.predict(X)) ** 2)
        assert score == pytest.approx(1.0 - resid / np.sum((y - y.mean()) ** 2))
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    step = type(est).__name__.lower()
    grid = {f"{step}__{k}": v for k, v in GRIDS[name].items()}
    search = GridSearchCV(pipe, grid, cv=2).fit(X, y)
    assert search.best_params_[next(iter(grid))] in next(iter(grid.values()))
    assert np.isfinite(search.best_score_)


@pytest.mark.parametrize("name", [n for n in ESTIMATORS if n != "SparseGPRegressor"])
@AT_THE_CAP
def test_neg_log_loss_scorer_with_string_labels(name):
    est = _make(name)
    X, y = _data(est)
    names = np.array(["ant", "bee", "cat", "dog"])
    y_str = names[np.searchsorted(np.unique(y), y)]
    scores = cross_val_score(est, X, y_str, cv=3, scoring="neg_log_loss")
    assert scores.shape == (3,) and np.all(np.isfinite(scores)) and np.all(scores < 0)


@pytest.mark.parametrize("name", ESTIMATORS)
@AT_THE_CAP
def test_pickle_and_clone(name):
    est = _make(name)
    X, y = _data(est)
    est.fit(X, y)
    twin = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(twin.predict(X), est.predict(X))
    fresh = clone(est)
    assert fresh.get_params() == est.get_params() and not hasattr(fresh, "n_features_in_")


@pytest.mark.parametrize("name", ESTIMATORS)
@AT_THE_CAP
def test_pandas_column_names(name):
    pd = pytest.importorskip("pandas", reason="the pandas checks need the 'test' extra")
    est = _make(name)
    X, y = _data(est)
    frame = _frame(pd, X)
    est.fit(frame, pd.Series(y, name="target"))
    assert list(est.feature_names_in_) == list(frame.columns)
    plain = clone(est).fit(X, y)             # the same data as an array: the same model
    np.testing.assert_array_equal(est.predict(frame), plain.predict(X))
    swapped = frame[frame.columns[::-1]] if X.shape[1] > 1 else frame.rename(columns={"x0": "z"})
    with pytest.raises(ValueError, match="feature names"):
        est.predict(swapped)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_non_numeric_dataframe_columns_are_named(name):
    pd = pytest.importorskip("pandas", reason="the pandas checks need the 'test' extra")
    est = _make(name)
    X, y = _data(est)
    frame = _frame(pd, X)
    frame["colour"] = np.where(np.arange(len(frame)) % 2 == 0, "red", "blue")
    with pytest.raises(ValueError, match=r"non-numeric column\(s\) \['colour'\]"):
        est.fit(frame, y)
