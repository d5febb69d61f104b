"""IVMClassifier and StagewiseGPClassifier with ``kernel=``: every stationary family through the
compiled ADF core against the dense references (on a precomputed K), gradients of the IVM's
approximate likelihood and of eq. 4 against central differences in log space, fits with
scikit-learn kernels, fixed parameters, and argument conflicts."""
import numpy as np
import pytest
from scipy import stats
from sklearn.gaussian_process import kernels as sk

from reference.dense_ivm import dense_adf, dense_greedy_entropy, posterior_b_form
from reference.dense_stagewise import adf_sequence, nlp_eq4 as dense_nlp_eq4
from sparsegp import IVMClassifier, StagewiseGPClassifier
from sparsegp._numba import adf
from sparsegp.classification._binary import pack_theta
from sparsegp.classification._ivm_model import approx_log_likelihood
from sparsegp.classification._ivm_select import select_active_set
from sparsegp.classification._stagewise_eq4 import active_sqdist, nlp_eq4
from sparsegp.classification._stagewise_select import _inner_loop
from sparsegp.datasets import make_xor
from sparsegp.kernels import ConstantKernel, Matern, SquaredExponential, kernel_matrix

#: family code -> kernel object factory (codes of sparsegp._numba.covfuncs)
FAMILIES = [0, 1, 2, 3]
MATERN = [1, 2, 3]
_NU = {1: 0.5, 2: 1.5, 3: 2.5}


def _kernel(family, variance, lengthscale, **kw):
    if family == 0:
        return SquaredExponential(variance, lengthscale, **kw)
    return Matern(variance, lengthscale, _NU[family], **kw)


def _K(X, Z, family, s2, ls, vb=0.0):
    return kernel_matrix(np.ascontiguousarray(X), np.ascontiguousarray(Z), family, s2,
                         np.ascontiguousarray(ls, dtype=float)) + vb


def _problem(seed=0, n=40, D=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    X[5] = X[17]          # a duplicate input: Matérn 1/2 is not smooth at r = 0
    y = np.where(X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    return np.ascontiguousarray(X), y


def _xor(n=80, seed=0):
    X, y = make_xor(n, random_state=seed)
    return np.ascontiguousarray(X, dtype=float), np.asarray(y)


# ------------------------------------------------------------------------------------------
# compiled ADF core


@pytest.mark.parametrize("family", FAMILIES)
def test_adf_core_matches_dense_adf(family):
    X, y = _problem(1)
    n = len(y)
    s2, ls, vb, bias = 1.4, np.array([0.8, 1.3, 1.0]), 0.1, 0.2
    order = np.random.default_rng(2).permutation(n)[:12]
    order = np.concatenate([[5, 17], order[~np.isin(order, [5, 17])]])[:12]
    K = _K(X, X, family, s2, ls, vb)
    h_ref, A_ref, p_ref, m_ref = dense_adf(K, y, bias, order)

    cols = np.arange(n, dtype=np.int64)
    work = np.empty(n)
    full = adf.new_state(n, 12, s2, vb)
    for i in order:
        adf.adf_include_probit(X, s2, ls, vb, *full, int(i), y[i], bias, cols, work, family)
    _, p, m, _ = adf.active_sites(full)
    np.testing.assert_allclose(p, p_ref, rtol=1e-9)
    np.testing.assert_allclose(m, m_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(full.h, h_ref, atol=1e-10)
    np.testing.assert_allclose(full.diag_A, np.diag(A_ref), atol=1e-10)

    # delayed updates: only a few columns kept current, the rest caught up at the end
    lazy = adf.new_state(n, 12, s2, vb)
    J = np.arange(0, n, 3, dtype=np.int64)
    for i in order:
        adf.adf_include_probit(X, s2, ls, vb, *lazy, int(i), y[i], bias, J, work, family)
    adf.adf_catch_up(X, s2, ls, vb, *lazy, cols, family)
    np.testing.assert_allclose(lazy.h, h_ref, atol=1e-10)
    np.testing.assert_allclose(lazy.diag_A, np.diag(A_ref), atol=1e-10)


@pytest.mark.parametrize("family", FAMILIES)
def test_blas_column_matches_compiled_column(family):
    X, y = _problem(3)
    n = len(y)
    s2, ls, vb = 0.9, np.full(3, 0.7), 0.05
    state = adf.new_state(n, 6, s2, vb)
    cols = np.arange(n, dtype=np.int64)
    work = np.empty(n)
    for i in (17, 3, 30, 11):
        adf.adf_include_probit(X, s2, ls, vb, *state, i, y[i], 0.0, cols, work, family)
    Xs, sq = adf.scaled_inputs(X, ls)
    _, A = posterior_b_form(_K(X, X, family, s2, ls, vb), *adf.active_sites(state)[:3])
    for i in (5, 17, 0, 39):
        ref = adf.adf_cov_column(X, s2, ls, vb, *state, i, cols, np.empty(n), family)
        got = adf.cov_column_blas(Xs, sq, s2, vb, state, i, np.empty(n), family)
        # the duplicate pair (5, 17) included: explicit differences keep Matérn 1/2 exact
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ref, A[:, i], rtol=0, atol=1e-10)
    # the stagewise working sets take several columns in one call (rows of a larger buffer),
    # one at a time below BATCH_COLUMNS and by GEMM from there on
    for idx in (np.array([5, 17, 0, 39, 5]), np.array([5, 17, 0, 39, 5, 2, 8, 1, 33, 21])):
        assert (len(idx) >= adf.BATCH_COLUMNS) == (len(idx) == 10)
        out = np.full((12, n), np.nan)
        adf.cov_columns_blas(Xs, sq, s2, vb, state, idx, out, family)
        # measured: 1.5e-15 from the dense A (all four families), 6e-16 from the one-column
        # path (values O(1)); the dense A carries its own round-off, hence the 7x margin
        np.testing.assert_allclose(out[:len(idx)], A[:, idx].T, rtol=0, atol=1e-14)
        for r, i in enumerate(idx):
            single = adf.cov_column_blas(Xs, sq, s2, vb, state, i, np.empty(n), family)
            if len(idx) < adf.BATCH_COLUMNS:
                np.testing.assert_array_equal(out[r], single)      # the same calls
            else:
                np.testing.assert_allclose(out[r], single, rtol=0, atol=4e-15)
        assert np.isnan(out[len(idx):]).all()


@pytest.mark.parametrize("family", FAMILIES)
def test_entropy_selection_matches_dense_greedy(family):
    X, y = _xor(70, seed=4)
    ypm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    s2, ls, vb, bias = 1.6, np.full(2, 0.9), 0.1, -0.1
    state = select_active_set(X, ypm, s2, ls, vb, bias, 15, "entropy", None,
                              np.random.default_rng(0), family=family)
    active = state.active[:15]
    K = _K(X, X, family, s2, ls, vb)
    ref = dense_greedy_entropy(K, ypm, bias, 15, first=active[:1])
    np.testing.assert_array_equal(active, ref)


# ------------------------------------------------------------------------------------------
# IVM: predictions, approximate likelihood and its gradient


@pytest.mark.parametrize("family", FAMILIES)
def test_ivm_predictions_and_evidence_match_dense(family):
    X, y = _xor(60, seed=5)
    Xt = np.random.default_rng(6).normal(size=(9, 2))
    ls = np.array([0.8, 1.2])
    clf = IVMClassifier(n_active=14, kernel=_kernel(family, 1.7, ls) + ConstantKernel(0.1),
                        bias=0.3, random_state=0).fit(X, y)
    Z = np.vstack([X, Xt])
    K = _K(Z, Z, family, 1.7, ls, 0.1)
    # one binary task: the per-task attributes have a leading axis of length 1
    a, p, m = clf.active_set_[0], clf.site_precision_[0], clf.site_mean_[0]
    h, A = posterior_b_form(K, a, p, m)
    mean, var = clf.predict_latent(Xt)
    np.testing.assert_allclose(mean, h[60:], atol=1e-10)
    np.testing.assert_allclose(var, np.diag(A)[60:], atol=1e-10)
    G = K[np.ix_(a, a)] + np.diag(1.0 / p)
    ref = stats.multivariate_normal(np.zeros(a.size), G).logpdf(m)
    np.testing.assert_allclose(clf.log_evidence_, [ref], rtol=1e-10)
    # kernel_: per task, the fitted stationary kernel plus the bias variance (not optimised
    # here: a given kernel is kept without optimizer="lbfgs")
    assert len(clf.kernel_) == 1
    assert type(clf.kernel_[0].k1) is type(_kernel(family, 1.0, 1.0))
    np.testing.assert_array_equal(clf.kernel_[0].k1.lengthscale, ls)
    assert clf.kernel_[0].k2.constant_value == 0.1


@pytest.mark.parametrize("family", MATERN)
@pytest.mark.parametrize("ard", [False, True])
def test_approx_log_likelihood_log_gradient_matern(family, ard):
    rng = np.random.default_rng(7 + family)
    Xa = rng.normal(size=(12, 2))
    p = rng.uniform(0.2, 2.0, 12)
    m = rng.normal(size=12)
    s2, vb = 1.3, 0.1
    ls = np.array([0.9, 1.4]) if ard else np.full(2, 1.1)
    v, gv, gl, gvb, _ = approx_log_likelihood(Xa, p, m, s2, ls, vb, grad=True, family=family)
    K = _K(Xa, Xa, family, s2, ls, vb)
    ref = stats.multivariate_normal(np.zeros(12), K + np.diag(1 / p)).logpdf(m)
    np.testing.assert_allclose(v, ref, rtol=1e-12)

    def f(log_s2, log_ls):
        ls_ = np.exp(log_ls) * np.ones(2)
        return approx_log_likelihood(Xa, p, m, np.exp(log_s2), ls_, vb, family=family)

    e = 1e-6
    log_ls = np.log(ls) if ard else np.log(ls[:1])
    fd = (f(np.log(s2) + e, log_ls) - f(np.log(s2) - e, log_ls)) / (2 * e)
    np.testing.assert_allclose(gv * s2, fd, rtol=1e-6)
    g_log_ls = gl * ls if ard else [np.sum(gl) * ls[0]]
    for j in range(log_ls.size):
        d = np.zeros(log_ls.size)
        d[j] = e
        fd = (f(np.log(s2), log_ls + d) - f(np.log(s2), log_ls - d)) / (2 * e)
        np.testing.assert_allclose(g_log_ls[j], fd, rtol=1e-6, atol=1e-9)
    ls_ = ls if ard else np.full(2, ls[0])
    fd_vb = (approx_log_likelihood(Xa, p, m, s2, ls_, vb + e, family=family)
             - approx_log_likelihood(Xa, p, m, s2, ls_, vb - e, family=family)) / (2 * e)
    np.testing.assert_allclose(gvb, fd_vb, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# stagewise: inner loop and eq. 4


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("selection", ["adaptive", "entropy"])
def test_stagewise_inner_loop_matches_dense(family, selection):
    X, y = _problem(8, n=45)
    n = len(y)
    s2, ls, b = 1.2, np.array([0.7, 1.1, 0.9]), 0.1
    state = adf.new_state(n, 8, s2)
    active, p, m, trace = _inner_loop(X, y, state, 8, selection, 3, "moment", s2, ls, b,
                                      np.random.default_rng(0), family)
    K = _K(X, X, family, s2, ls)
    p_ref, m_ref, h, A = adf_sequence(K, y, list(active), b)
    np.testing.assert_allclose(p, p_ref, rtol=1e-9)
    np.testing.assert_allclose(m, m_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(state.h, h, atol=1e-10)
    np.testing.assert_allclose(state.diag_A, np.diag(A), atol=1e-10)


@pytest.mark.parametrize("family", MATERN)
@pytest.mark.parametrize("ard, cached", [(False, False), (False, True), (True, False)])
def test_nlp_eq4_value_and_log_gradient_matern(family, ard, cached):
    X, y = _problem(9, n=45)
    ls = np.array([0.9, 1.4, 0.7]) if ard else np.full(3, 1.1)
    s2, b = 1.7, -0.3
    active = [3, 17, 8, 30, 41, 0, 22]
    p, m, _, _ = adf_sequence(_K(X, X, family, s2, ls), y, active, b)
    theta = pack_theta(s2, ls, b, ard)
    sqdist = active_sqdist(X, np.array(active)) if cached else None
    f, g = nlp_eq4(theta, X, y, np.array(active), p, m, ard, gradient=True, family=family,
                   sqdist=sqdist)

    def dense(t):
        s2_, ls_ = np.exp(t[0]), np.exp(t[1:1 + (3 if ard else 1)]) * np.ones(3)
        return dense_nlp_eq4(X, y, active, p, m, s2_, ls_, t[-1],
                             K=_K(X, X, family, s2_, ls_))

    assert f == pytest.approx(dense(theta), rel=1e-12)
    eps = 1e-5
    for i in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[i] += eps
        tm[i] -= eps
        fd = (dense(tp) - dense(tm)) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-9), (i, g[i], fd)


@pytest.mark.parametrize("family", FAMILIES)
def test_stagewise_predictions_match_dense(family):
    X, y = _xor(50, seed=2)
    Xt = np.random.default_rng(3).normal(size=(7, 2))
    est = StagewiseGPClassifier(d_max=10, optimizer=None, bias=0.2, random_state=0,
                                kernel=_kernel(family, 1.5, 0.7)).fit(X, y)
    Z = np.vstack([X, Xt])
    K = _K(Z, Z, family, 1.5, np.full(2, 0.7))
    h, A = posterior_b_form(K, est.active_set_, est.site_precision_, est.site_mean_)
    mean, var = est.predict_latent(Xt)
    np.testing.assert_allclose(mean, h[50:], atol=1e-10)
    np.testing.assert_allclose(var, np.diag(A)[50:], atol=1e-10)
    staged = list(est.staged_predict_proba(Xt))
    np.testing.assert_allclose(staged[-1], est.predict_proba(Xt), atol=1e-10)


# ------------------------------------------------------------------------------------------
# estimators: scikit-learn kernels, kernel_, fixed parameters, conflicts


def test_both_fit_sklearn_constant_times_matern():
    X, y = _xor(120, seed=1)
    kern = sk.ConstantKernel() * sk.Matern(nu=1.5)
    before = kern.get_params()
    ivm = IVMClassifier(n_active=30, kernel=kern, optimizer="lbfgs", max_iter=2,
                        random_state=0).fit(X, y)
    sw = StagewiseGPClassifier(d_max=20, kernel=kern, max_iter=3, random_state=0).fit(X, y)
    # the IVM's one binary task against the stagewise model's scalars
    for est, kernel, variance, lengthscale in ((ivm, ivm.kernel_[0], ivm.variance_[0],
                                               ivm.lengthscale_[0]),
                                              (sw, sw.kernel_, sw.variance_, sw.lengthscale_)):
        assert isinstance(kernel, Matern) and kernel.nu == 1.5
        assert kernel.variance == variance
        assert kernel.lengthscale == lengthscale
        assert variance != 1.0                 # the optimiser moved the kernel
        assert est.score(X, y) > 0.8
    assert kern.get_params() == before         # the user's kernel is not modified
    assert ivm.kernel is kern and sw.kernel is kern


def test_ivm_multiclass_kernel_is_one_per_class():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])
    clf = IVMClassifier(n_active=15, kernel=Matern(1.0, [1.0, 0.8], nu=2.5),
                        optimizer="lbfgs", max_iter=1, random_state=0).fit(X, y)
    assert isinstance(clf.kernel_, list) and len(clf.kernel_) == 3
    for c, k in enumerate(clf.kernel_):
        assert isinstance(k, Matern) and k.nu == 2.5
        assert k.variance == clf.variance_[c]
        np.testing.assert_array_equal(k.lengthscale, clf.lengthscale_[c])
    assert clf.lengthscale_.shape == (3, 2)    # ARD comes from the kernel


def test_default_kernel_is_the_se_and_given_values_are_kept():
    X, y = _xor(60)
    for est, kernel in ((IVMClassifier(n_active=10, optimizer=None, random_state=0),
                         lambda e: e.kernel_[0]),
                        (StagewiseGPClassifier(d_max=8, optimizer=None, random_state=0),
                         lambda e: e.kernel_)):
        assert isinstance(kernel(est.fit(X, y)), SquaredExponential)
    clf = IVMClassifier(n_active=10, kernel=SquaredExponential(2.0, 0.5),
                        random_state=0).fit(X, y)
    (kernel,) = clf.kernel_
    assert isinstance(kernel, SquaredExponential)
    assert (kernel.variance, kernel.lengthscale) == (2.0, 0.5)
    sw = StagewiseGPClassifier(d_max=8, kernel=SquaredExponential(1.0, np.array([0.5, 0.9])),
                               optimizer=None, random_state=0).fit(X, y)
    assert isinstance(sw.kernel_, SquaredExponential)
    np.testing.assert_array_equal(sw.kernel_.lengthscale, [0.5, 0.9])


def test_fixed_parameters_stay_fixed():
    X, y = _xor(100, seed=3)
    k = Matern(1.0, 0.7, nu=0.5, lengthscale_bounds="fixed")
    ivm = IVMClassifier(n_active=20, kernel=k, optimizer="lbfgs", max_iter=1,
                        random_state=0).fit(X, y)
    sw = StagewiseGPClassifier(d_max=12, kernel=k, max_iter=2, random_state=0).fit(X, y)
    for lengthscale, kernel, variance in ((ivm.lengthscale_[0], ivm.kernel_[0], ivm.variance_[0]),
                                          (sw.lengthscale_, sw.kernel_, sw.variance_)):
        assert lengthscale == 0.7 and kernel.lengthscale == 0.7
        assert variance != 1.0
    k = SquaredExponential(1.3, 0.9, variance_bounds="fixed", lengthscale_bounds="fixed")
    ivm = IVMClassifier(n_active=20, kernel=k, optimizer="lbfgs", random_state=0).fit(X, y)
    assert (ivm.variance_.tolist(), ivm.lengthscale_.tolist(), ivm.n_iter_.tolist()) \
        == ([1.3], [0.9], [0])
    sw = StagewiseGPClassifier(d_max=12, kernel=k, max_iter=2, random_state=0).fit(X, y)
    assert (sw.variance_, sw.lengthscale_) == (1.3, 0.9)


@pytest.mark.parametrize("cls,kw", [(IVMClassifier, dict(n_active=10)),
                                    (StagewiseGPClassifier, dict(d_max=8))])
@pytest.mark.parametrize("legacy", [dict(lengthscale=2.0), dict(variance=0.5),
                                    dict(ard=True), dict(optimize=False)])
def test_legacy_covariance_arguments_are_gone(cls, kw, legacy):
    # the covariance comes from one place, the kernel: the old names are refused
    with pytest.raises(TypeError, match=next(iter(legacy))):
        cls(kernel=sk.ConstantKernel() * sk.Matern(nu=1.5), **kw, **legacy)


@pytest.mark.parametrize("cls,kw", [(IVMClassifier, dict(n_active=10)),
                                    (StagewiseGPClassifier, dict(d_max=8))])
def test_unsupported_kernel_is_a_clear_error(cls, kw):
    X, y = _xor(40)
    with pytest.raises(ValueError, match=cls.__name__):
        cls(kernel=sk.RBF() + sk.Matern(nu=1.5), **kw).fit(X, y)
    with pytest.raises(ValueError, match="WhiteKernel"):
        cls(kernel=sk.RBF() + sk.WhiteKernel(), **kw).fit(X, y)
    with pytest.raises(ValueError, match="nu"):
        cls(kernel=sk.Matern(nu=3.5), **kw).fit(X, y)


def test_kernel_bounds_are_kept():
    X, y = _xor(100, seed=3)
    k = Matern(1.0, 0.55, nu=1.5, variance_bounds=(0.8, 1.25), lengthscale_bounds=(0.5, 0.6))
    ivm = IVMClassifier(n_active=20, kernel=k, optimizer="lbfgs", max_iter=2,
                        random_state=0).fit(X, y)
    sw = StagewiseGPClassifier(d_max=12, kernel=k, max_iter=3, random_state=0).fit(X, y)
    for variance, lengthscale in ((ivm.variance_[0], ivm.lengthscale_[0]),
                                  (sw.variance_, sw.lengthscale_)):
        assert 0.8 * (1 - 1e-12) <= variance <= 1.25 * (1 + 1e-12)
        assert 0.5 * (1 - 1e-12) <= lengthscale <= 0.6 * (1 + 1e-12)
        # both unconstrained optima lie far outside the box: some bound must be active
        assert np.isclose(variance, [0.8, 1.25]).any() \
            or np.isclose(lengthscale, [0.5, 0.6]).any()
