"""Default fits finish on their stopping rule: no ConvergenceWarning on ordinary data (issue 45).

The suite turns every warning into an error (setup.cfg), so each fit below fails on any
warning; where an estimator reports ``converged_`` it must be True. The data are the sets a
new user reaches for first: scikit-learn's bundled sets, raw and standardised, and the xor
problem of seed 000 at three sizes. The warnings that stay truthful (a bound, a constant
predictor) have their own tests beside their estimators.
"""
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris, load_wine
from sklearn.preprocessing import StandardScaler

import sparsegp
from sparsegp.datasets import make_xor

BINARY = ("GFITCClassifier", "EPClassifier", "IVMClassifier", "StagewiseGPClassifier",
          "MultiClassEPClassifier", "MultiClassGFITCClassifier", "MultiClassSVGPClassifier")
MULTICLASS = ("IVMClassifier", "MultiClassEPClassifier", "MultiClassGFITCClassifier",
              "MultiClassSVGPClassifier")
#: Every approximation (SoR and DTC too since their inducing inputs are placed by the VFE
#: bound: their own evidence over them ran to the variance bound on diabetes, issue 49).
APPROXIMATIONS = ("fitc", "vfe", "fic", "pitc", "sod", "exact", "sor", "dtc")


def _both_units(X):
    return {"raw": X, "standardised": StandardScaler().fit_transform(X)}


def _fit(est, X, y):
    est.fit(X, y)
    if getattr(est, "tol", None) is not None and hasattr(est, "converged_"):
        # a default with a stopping rule met it (the multi-class defaults keep a budget)
        assert est.converged_
    return est


@pytest.mark.parametrize("units", ["raw", "standardised"])
@pytest.mark.parametrize("name", BINARY)
def test_binary_defaults_finish_on_breast_cancer(name, units):
    X, y = load_breast_cancer(return_X_y=True)
    est = _fit(getattr(sparsegp, name)(random_state=0), _both_units(X)[units], y)
    assert est.score(_both_units(X)[units], y) > 0.95


@pytest.mark.parametrize("units", ["raw", "standardised"])
@pytest.mark.parametrize("load", [load_wine, load_iris], ids=["wine", "iris"])
@pytest.mark.parametrize("name", MULTICLASS)
def test_multiclass_defaults_finish(name, load, units):
    X, y = load(return_X_y=True)
    est = _fit(getattr(sparsegp, name)(random_state=0), _both_units(X)[units], y)
    assert est.score(_both_units(X)[units], y) > 0.9


@pytest.mark.parametrize("units", ["raw", "standardised"])
@pytest.mark.parametrize("approximation", APPROXIMATIONS)
def test_regressor_defaults_finish_on_diabetes(approximation, units):
    X, y = load_diabetes(return_X_y=True)
    est = _fit(sparsegp.SparseGPRegressor(approximation, random_state=0),
               _both_units(X)[units], y)
    # training R²: the exact GP 0.52, a subset of data (SoD, 50 rows) 0.26
    assert est.score(_both_units(X)[units], y) > 0.2


@pytest.mark.parametrize("n", [400, 4000, 16000])
def test_gfitc_default_finishes_on_xor(n):
    X, y = make_xor(n, random_state=0)
    est = _fit(sparsegp.GFITCClassifier(random_state=0), X, y)
    Xt, yt = make_xor(2000, random_state=1)
    # Bayes error 0.125
    assert np.mean(est.predict(Xt) != yt) < 0.14
    assert 0 < est.n_iter_ < est.max_iter
