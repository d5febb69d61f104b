"""``kernel=`` for the binary probit EP classifiers (GFITCClassifier, EPClassifier).

Every stationary family (SE, Matérn 1/2, 3/2, 5/2): GFITC with Z = X is the dense EP classifier,
the evidence gradients match central differences, scikit-learn kernels fit, fixed
hyper-parameters stay fixed, and a kernel together with the legacy arguments is refused.
"""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import kernels as skk

from sparsegp.classification import EPClassifier, GFITCClassifier, StagewiseGPClassifier
from sparsegp.exceptions import ConvergenceWarning
from sparsegp.kernels import ConstantKernel, Matern, SquaredExponential

FAMILIES = ["se", "matern12", "matern32", "matern52"]


def _kernel(family, variance, lengthscale, **bounds):
    if family == "se":
        return SquaredExponential(variance, lengthscale, **bounds)
    nu = {"matern12": 0.5, "matern32": 1.5, "matern52": 2.5}[family]
    return Matern(variance, lengthscale, nu, **bounds)


def _xor(n, seed, noise=0.4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * 1.3
    y = np.where(X[:, 0] * X[:, 1] + noise * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def _grid():
    # the well-separated inputs of test_gfitc's Z = X equivalence keep K_uu well conditioned
    rng = np.random.default_rng(11)
    X = np.array([[i, j] for i in range(5) for j in range(4)], dtype=float) * 1.1
    X += 0.05 * rng.standard_normal(X.shape)
    y = np.where(np.sin(X[:, 0]) + np.cos(X[:, 1]) > 0.3, 1, -1)
    return X, y


# ------------------------------------------------------------------------------------------
# (a) GFITC at Z = X is the dense EP classifier, for every family
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("lengthscale", [1.3, np.array([0.9, 1.6])])
def test_gfitc_with_inducing_equal_training_inputs_matches_ep(family, lengthscale):
    X, y = _grid()
    kernel = _kernel(family, 2.0, lengthscale)
    # tolerances of test_gfitc's SE equivalence test; jitter 1e-10 as there (the difference
    # in log Z_EP scales with the jitter on K_uu)
    kw = dict(kernel=kernel, bias=0.2, optimizer=None, ep_tol=1e-12, ep_max_sweeps=5000,
              jitter=1e-10, random_state=0)
    g = GFITCClassifier(inducing_points=X, **kw).fit(X, y)
    e = EPClassifier(**kw).fit(X, y)
    assert abs(g.log_evidence_ - e.log_evidence_) <= 1e-8 * abs(e.log_evidence_)
    Xs = X + 0.3
    m_g, v_g = g.predict_latent(Xs)
    m_e, v_e = e.predict_latent(Xs)
    np.testing.assert_allclose(m_g, m_e, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(v_g, v_e, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(g.predict_proba(Xs), e.predict_proba(Xs), rtol=1e-7, atol=1e-9)


def test_families_give_different_models():
    # guards against a family code being dropped on the way to the compiled kernels
    X, y = _grid()
    lz = [EPClassifier(kernel=_kernel(f, 2.0, 1.3), optimizer=None, random_state=0)
          .fit(X, y).log_evidence_ for f in FAMILIES]
    assert len({round(v, 6) for v in lz}) == len(FAMILIES)


def test_se_kernel_equals_its_sklearn_twin():
    X, y = _xor(50, seed=3)
    for cls, extra in ((GFITCClassifier, dict(n_inducing=6)), (EPClassifier, {})):
        kw = dict(optimizer=None, bias=0.1, random_state=0, **extra)
        a = cls(kernel=skk.ConstantKernel(1.7) * skk.RBF([0.8, 1.2]), **kw).fit(X, y)
        b = cls(kernel=SquaredExponential(1.7, [0.8, 1.2]), **kw).fit(X, y)
        assert a.log_evidence_ == b.log_evidence_
        np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


# ------------------------------------------------------------------------------------------
# (b) evidence gradients against central differences
# ------------------------------------------------------------------------------------------
def _gfitc_fixed(X, y, Z, kernel, beta):
    return GFITCClassifier(inducing_points=Z, kernel=kernel, bias=beta, optimizer=None,
                           ep_tol=1e-10, ep_max_sweeps=5000, random_state=0).fit(X, y)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("ard", [True, False])
def test_gfitc_gradient_log_theta_and_Z_match_central_differences(family, ard):
    X, y = _xor(40, seed=12)
    Z = np.random.default_rng(13).standard_normal((4, 2)) * 1.2
    s2, beta, h = 1.4, 0.25, 1e-5
    ls = np.array([0.8, 1.3]) if ard else 1.1
    clf = _gfitc_fixed(X, y, Z, _kernel(family, s2, ls), beta)
    g = clf.log_evidence_gradient_

    def logz(log_s2=0.0, log_ls=0.0, beta_=beta, Z_=Z):
        k = _kernel(family, s2 * np.exp(log_s2), ls * np.exp(log_ls))
        return _gfitc_fixed(X, y, Z_, k, beta_).log_evidence_

    def check(analytic, plus, minus):
        fd = (plus - minus) / (2 * h)
        assert abs(analytic - fd) <= 1e-5 * max(abs(fd), 1e-3), (analytic, fd)

    # d/dlog p = p d/dp from the natural-parameter gradient
    check(g["variance"] * s2, logz(log_s2=h), logz(log_s2=-h))
    check(g["bias"], logz(beta_=beta + h), logz(beta_=beta - h))
    if ard:
        assert g["lengthscale"].shape == (2,)
        for j in range(2):
            e = np.zeros(2)
            e[j] = h
            check(g["lengthscale"][j] * ls[j], logz(log_ls=e), logz(log_ls=-e))
    else:
        assert isinstance(g["lengthscale"], float)
        check(g["lengthscale"] * ls, logz(log_ls=h), logz(log_ls=-h))
    assert g["inducing_points"].shape == Z.shape
    for m in range(Z.shape[0]):
        for j in range(2):
            E = np.zeros_like(Z)
            E[m, j] = h
            check(g["inducing_points"][m, j], logz(Z_=Z + E), logz(Z_=Z - E))


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("ard", [True, False])
def test_ep_gradient_log_theta_matches_central_differences(family, ard):
    X, y = _xor(30, seed=4)
    ls = np.array([0.9, 1.2]) if ard else 1.05
    est = EPClassifier(kernel=_kernel(family, 1.5, ls), bias=0.2, optimizer=None, ep_tol=1e-10,
                       random_state=0).fit(X, y)
    n_ls = 2 if ard else 1
    assert est.theta_.shape == (2 + n_ls,)
    lz, grad = est.log_marginal_likelihood(est.theta_, eval_gradient=True)
    assert lz == pytest.approx(est.log_evidence_, rel=1e-9)
    h = 1e-5
    for k in range(est.theta_.size):
        e = np.zeros_like(est.theta_)
        e[k] = h
        fd = (est.log_marginal_likelihood(est.theta_ + e)
              - est.log_marginal_likelihood(est.theta_ - e)) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-8)


# ------------------------------------------------------------------------------------------
# (c) scikit-learn kernels
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, extra", [(GFITCClassifier, dict(n_inducing=6)),
                                        (EPClassifier, {})])
@pytest.mark.parametrize("optimizer", ["cg", "lbfgs"])
def test_fits_with_sklearn_constant_times_matern(cls, extra, optimizer):
    X, y = _xor(50, seed=5)
    kernel = skk.ConstantKernel() * skk.Matern(nu=1.5)
    before = repr(kernel)
    start = cls(kernel=kernel, optimizer=None, random_state=0, **extra).fit(X, y)
    est = cls(kernel=kernel, max_iter=8, optimizer=optimizer, random_state=0, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert repr(kernel) == before                       # the user's kernel is not modified
    assert est.kernel is kernel
    k = est.kernel_
    assert isinstance(k, Matern) and float(k.nu) == 1.5
    assert k.variance == est.variance_ and k.lengthscale == est.lengthscale_
    assert isinstance(est.lengthscale_, float)
    assert est.log_evidence_ > start.log_evidence_
    if optimizer == "lbfgs":
        # scikit-learn's default box (1e-5, 1e5) is respected
        assert 1e-5 <= est.variance_ <= 1e5 and 1e-5 <= est.lengthscale_ <= 1e5
    p = est.predict_proba(X)
    assert p.shape == (50, 2) and np.all(np.isfinite(p))
    # clone copies the kernel argument: the clone's fit is the same fit (EP converges on its
    # stopping rule within the 8 iterations, GFITC stops at them and warns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        again = clone(est).fit(X, y)
    np.testing.assert_array_equal(again.theta_, est.theta_)
    assert again.converged_ == est.converged_


@pytest.mark.parametrize("cls, extra", [(GFITCClassifier, dict(n_inducing=6)),
                                        (EPClassifier, {})])
def test_lbfgs_keeps_lengthscale_inside_kernel_bounds(cls, extra):
    X, y = _xor(50, seed=6)
    # a box the optimum lies outside of (the data want a length-scale near 1)
    kernel = Matern(1.0, 3.0, 2.5, lengthscale_bounds=(2.5, 4.0))
    est = cls(kernel=kernel, optimizer="lbfgs", max_iter=10, random_state=0, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    assert 2.5 - 1e-12 <= est.lengthscale_ <= 4.0 + 1e-12
    assert est.lengthscale_ == pytest.approx(2.5)       # the box is active: ends on its face
    assert est.kernel_.lengthscale_bounds == (2.5, 4.0)


# ------------------------------------------------------------------------------------------
# (d) fixed hyper-parameters stay fixed
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, extra", [(GFITCClassifier, dict(n_inducing=6)),
                                        (EPClassifier, {})])
@pytest.mark.parametrize("optimizer", ["cg", "lbfgs"])
def test_fixed_hyperparameters_stay_fixed(cls, extra, optimizer):
    X, y = _xor(50, seed=7)
    kw = dict(optimizer=optimizer, max_iter=6, random_state=0, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = cls(kernel=Matern(1.7, 0.6, 0.5, variance_bounds="fixed"), **kw).fit(X, y)
        b = cls(kernel=Matern(1.7, [0.6, 0.9], 0.5, lengthscale_bounds="fixed"), **kw).fit(X, y)
        c = cls(kernel=SquaredExponential(1.7, 0.6, "fixed", "fixed"), **kw).fit(X, y)
    assert a.variance_ == 1.7 and a.lengthscale_ != 0.6
    np.testing.assert_array_equal(b.lengthscale_, [0.6, 0.9])
    assert b.variance_ != 1.7
    assert c.variance_ == 1.7 and c.lengthscale_ == 0.6 and c.bias_ != 0.0
    assert a.kernel_.variance_bounds == "fixed" and b.kernel_.lengthscale_bounds == "fixed"
    if cls is EPClassifier:
        # fixed hyper-parameters are not in theta_: [log l, bias], [log s2, bias], [bias]
        assert a.theta_.shape == (2,) and b.theta_.shape == (2,) and c.theta_.shape == (1,)
        lz, g = b.log_marginal_likelihood(b.theta_, eval_gradient=True)
        assert g.shape == (2,)
        with pytest.raises(ValueError, match="theta"):
            b.log_marginal_likelihood(np.zeros(4))


# ------------------------------------------------------------------------------------------
# (e) the legacy arguments are gone; unsupported kernels
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [GFITCClassifier, EPClassifier])
@pytest.mark.parametrize("legacy", [dict(lengthscale=2.0), dict(variance=0.5), dict(ard=True),
                                    dict(optimize=False), dict(max_sweeps=10),
                                    dict(damping=0.5)])
def test_legacy_arguments_are_refused(cls, legacy):
    # the covariance comes from one place, the kernel: the old names are refused
    with pytest.raises(TypeError, match=next(iter(legacy))):
        cls(kernel=Matern(), **legacy)


@pytest.mark.parametrize("cls", [GFITCClassifier, EPClassifier])
@pytest.mark.parametrize("kernel", [Matern() + Matern(), Matern(nu=3.5),
                                    skk.RationalQuadratic(), Matern(lengthscale=[1.0, 2.0, 3.0]),
                                    Matern(variance=-1.0)])
def test_unsupported_kernels_raise_clear_value_error(cls, kernel):
    X, y = _xor(30, seed=9)
    with pytest.raises(ValueError, match="kernel|Matern|length-scales"):
        cls(kernel=kernel, optimizer=None).fit(X, y)


def test_a_constant_summand_is_refused_where_unsupported():
    # every binary classifier takes a stationary kernel plus a constant
    # (tests/test_constant_sum.py), and so does the regressor
    # (tests/test_regression_constant_sum.py)
    X, y = _xor(30, seed=9)
    for cls in (EPClassifier, GFITCClassifier):
        cls(kernel=Matern() + ConstantKernel(), optimizer=None).fit(X, y)
    StagewiseGPClassifier(kernel=Matern() + ConstantKernel(), d_max=5, max_iter=1).fit(X, y)
