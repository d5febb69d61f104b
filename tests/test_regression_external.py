"""Independent implementations: GPy (FITC, VarDTC, exact) and GPflow (SGPR, GPRFITC, GPR).

Marked slow (TensorFlow's import alone takes seconds) and skipped when the packages of the
``bench`` extra are absent. Jitter is matched: GPy's FITC and GPflow add an absolute 1e-6 to
K_uu, GPy's VarDTC 1e-8, while sparsegp's jitter is a multiple of the signal variance; GPy's
exact inference adds 1e-8 to the noise.
"""
import os

import numpy as np
import pytest

from sparsegp import SparseGPRegressor
from sparsegp.kernels import SquaredExponential
from sparsegp.regression import _base

pytestmark = [
    pytest.mark.slow,
    # GPy's parameter library (paramz) assigns ndarray.data, which numpy >= 2.x deprecates;
    # a notice about GPy's internals, not about anything compared here
    pytest.mark.filterwarnings("ignore:Assigning the 'data' attribute:DeprecationWarning"),
]

S2, SN2 = 1.3, 0.05
LS = np.array([0.8, 1.1, 1.5])


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=200)
    Z = rng.normal(size=(15, 3))
    Xs = rng.normal(size=(20, 3))
    return X, y, Z, Xs


def _rel(a, b):
    a, b = np.ravel(a), np.ravel(b)
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("name, method, abs_jitter", [("FITC", "fitc", 1e-6),
                                                      ("VarDTC", "vfe", 1e-8)])
def test_against_gpy_sparse(name, method, abs_jitter):
    GPy = pytest.importorskip("GPy", reason="comparison with GPy needs the 'bench' extra")
    from GPy.inference.latent_function_inference import FITC, VarDTC

    X, y, Z, Xs = _data()
    inf = {"FITC": FITC, "VarDTC": VarDTC}[name]()
    m = GPy.core.SparseGP(X, y[:, None], Z.copy(), GPy.kern.RBF(3, variance=S2, lengthscale=LS,
                                                                ARD=True),
                          GPy.likelihoods.Gaussian(variance=SN2), inference_method=inf)
    jit = abs_jitter / S2
    lml, g, _ = _base.sparse_lml(X, y, Z, S2, LS, SN2, method, jitter=jit)
    assert _rel(m.log_likelihood(), lml) <= 1e-10
    assert _rel(m.kern.lengthscale.gradient, g["lengthscale"]) <= 1e-8
    assert _rel(m.likelihood.variance.gradient, g["noise_variance"]) <= 1e-8
    assert _rel(m.Z.gradient, g["inducing_points"]) <= 1e-8
    # s² gradient: GPy's jitter is absolute, ours scales with s² -> differs by the jitter term
    assert _rel(m.kern.variance.gradient, g["variance"]) <= 1e-4
    gp = SparseGPRegressor(method, inducing_points=Z, kernel=SquaredExponential(S2, LS),
                           noise_variance=SN2, jitter=jit, optimizer=None).fit(X, y)
    mean, std = gp.predict(Xs, return_std=True)
    mu, var = m.predict_noiseless(Xs)
    assert _rel(mean, mu) <= 1e-10 and _rel(std ** 2, var) <= 1e-10


def test_against_gpy_exact():
    GPy = pytest.importorskip("GPy", reason="comparison with GPy needs the 'bench' extra")
    X, y, _, Xs = _data()
    m = GPy.models.GPRegression(X, y[:, None], GPy.kern.RBF(3, variance=S2, lengthscale=LS,
                                                             ARD=True), noise_var=SN2)
    gp = SparseGPRegressor("exact", kernel=SquaredExponential(S2, LS),
                           noise_variance=SN2 + 1e-8, optimizer=None).fit(X, y)
    assert _rel(m.log_likelihood(), gp.log_marginal_likelihood_) <= 1e-12
    mean, std = gp.predict(Xs, return_std=True)
    mu, var = m.predict_noiseless(Xs)
    assert _rel(mean, mu) <= 1e-10 and _rel(std ** 2, var) <= 1e-10


@pytest.mark.parametrize("cls_name, method", [("SGPR", "vfe"), ("GPRFITC", "fitc"),
                                              ("GPR", "exact")])
def test_against_gpflow(cls_name, method):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    gpflow = pytest.importorskip("gpflow", reason="comparison with GPflow needs the 'bench' extra")
    X, y, Z, _ = _data()
    kw = {} if method == "exact" else {"inducing_variable": Z.copy()}
    model = getattr(gpflow.models, cls_name)(
        (X, y[:, None]), kernel=gpflow.kernels.SquaredExponential(variance=S2, lengthscales=LS),
        noise_variance=SN2, **kw)
    value = float(model.maximum_log_likelihood_objective().numpy())
    if method == "exact":
        lml = _base.exact_lml(X, y, S2, LS, SN2, eval_gradient=False)[0]
    else:
        lml = _base.sparse_lml(X, y, Z, S2, LS, SN2, method, jitter=1e-6 / S2,
                               eval_gradient=False)[0]
    assert _rel(value, lml) <= 1e-10
