"""Checks every public estimator must pass (scikit-learn conventions, without scikit-learn).

Each estimator gets a tiny, fast configuration below; ``test_every_estimator_is_checked`` fails
when a public estimator is added without one.
"""
import inspect
import re

import numpy as np
import pytest

import sparsegp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sparsegp.datasets import make_gp_classes, make_regression_1d, make_xor

from conftest import AT_THE_CAP, readonly

# name -> (constructor kwargs for a quick fit, problem kind)
CONFIGS = {
    "GFITCClassifier": (dict(n_inducing=5, max_iter=2, random_state=0), "binary"),
    "EPClassifier": (dict(max_iter=2, random_state=0), "binary"),
    "IVMClassifier": (dict(n_active=15, random_state=0), "binary"),
    "StagewiseGPClassifier": (dict(d_max=10, max_iter=2, random_state=0), "binary"),
    "MultiClassEPClassifier": (dict(n_inducing=5, max_iter=3, random_state=0), "multiclass"),
    "MultiClassGFITCClassifier": (dict(n_inducing=5, max_iter=2, random_state=0), "multiclass"),
    "MultiClassSVGPClassifier": (dict(n_inducing=5, max_iter=3, random_state=0), "multiclass"),
    "SparseGPRegressor": (dict(n_inducing=8, max_iter=3, random_state=0), "regression"),
}

ESTIMATORS = sorted(n for n in sparsegp.__all__ if n[0].isupper())


def _data(kind, n=60, seed=0):
    if kind == "binary":
        X, y = make_xor(n, random_state=seed)
    elif kind == "multiclass":
        X, y = make_gp_classes(n, n_classes=3, random_state=seed)
    else:
        X, y = make_regression_1d(n, random_state=seed)
    return np.ascontiguousarray(X, dtype=float), np.asarray(y)


def _make(name):
    kwargs, kind = CONFIGS[name]
    return getattr(sparsegp, name)(**kwargs), kind


def test_every_estimator_is_checked():
    assert set(ESTIMATORS) == set(CONFIGS)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_docstring_documents_every_parameter(name):
    cls = getattr(sparsegp, name)
    doc = inspect.getdoc(cls) or ""
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    missing = [p for p in params if not re.search(rf"^\s*{p}\s*:", doc, flags=re.M)]
    assert not missing, f"{name} docstring does not document {missing}"


@pytest.mark.parametrize("name", ESTIMATORS)
def test_params_roundtrip_and_unfitted_errors(name):
    est, kind = _make(name)
    params = est.get_params()
    assert clone(est).get_params().keys() == params.keys()
    est.set_params(**params)
    X, _ = _data(kind, n=10)
    with pytest.raises(NotFittedError):
        est.predict(X)


@pytest.mark.parametrize("name", ESTIMATORS)
@AT_THE_CAP
def test_fit_predict_conventions(name):
    est, kind = _make(name)
    X, y = _data(kind)
    X_ro, y_ro = readonly(X.copy(), y.copy())
    before = est.get_params()
    assert est.fit(X_ro, y_ro) is est
    np.testing.assert_array_equal(X_ro, X)   # inputs untouched (and read-only is accepted)
    assert est.get_params().keys() == before.keys()
    learnt = [k for k in vars(est) if k not in before and not k.startswith("_")]
    assert learnt and all(k.endswith("_") for k in learnt), learnt
    assert est.n_features_in_ == X.shape[1]
    X_test, _ = _data(kind, n=25, seed=1)
    pred = est.predict(X_test)
    assert pred.shape == (25,)
    if kind == "regression":
        assert np.all(np.isfinite(pred))
        return
    assert set(np.unique(pred)) <= set(est.classes_)
    proba = est.predict_proba(X_test)
    assert proba.shape == (25, len(est.classes_))
    assert np.all((proba >= 0) & (proba <= 1))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-10)
    np.testing.assert_array_equal(pred, est.classes_[np.argmax(proba, axis=1)])


@pytest.mark.parametrize("name", [n for n in ESTIMATORS if CONFIGS[n][1] != "regression"])
@AT_THE_CAP
def test_arbitrary_labels_and_reproducibility(name):
    est, kind = _make(name)
    X, y = _data(kind)
    names = np.array(["ant", "bee", "cat", "dog"])
    y_str = names[np.searchsorted(np.unique(y), y)]
    p1 = est.fit(X, y_str).predict_proba(X[:10])
    assert list(est.classes_) == sorted(set(y_str))
    p2 = clone(est).fit(X, y_str).predict_proba(X[:10])
    np.testing.assert_array_equal(p1, p2)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_bad_input_is_refused_before_work(name):
    est, kind = _make(name)
    X, y = _data(kind)
    X_nan = X.copy()
    X_nan[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X_nan, y)
    with pytest.raises(ValueError, match="length"):
        est.fit(X, y[:-1])
    if kind != "regression":
        with pytest.raises(ValueError, match="class"):
            est.fit(X, np.full(len(y), y[0]))
