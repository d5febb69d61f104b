"""A stationary kernel plus a constant in every estimator that takes one (issue 48).

``k(x, x') + v_b``: the constant summands' bias variance v_b is added to every covariance
entry (:func:`sparsegp.kernels.split_bias_variance`). Here each estimator's objective with
such a kernel is checked against a reference formed independently, from the fitted
``kernel_`` object itself (which computes the Sum by its own ``__call__``); the gradients are
checked by central differences in ``tests/test_log_marginal_likelihood.py`` (its
``constant-sum`` configurations). A kernel the estimator does not take is a clear ValueError.
"""
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

import sparsegp
from sparsegp.classification import _ep
from sparsegp.datasets import make_xor
from sparsegp.kernels import ConstantKernel, Matern, SquaredExponential, Sum

from reference.dense_stagewise import dense_posterior, nlp_points, posterior_extended


def _xor(n=40, seed=0):
    X, y = make_xor(n, random_state=seed)
    return X * np.array([2.0, 0.5]) + 5.0, y


def _fit(est, X, y):
    with warnings.catch_warnings():
        # small fits stop at max_iter: their ConvergenceWarnings are not the subject here
        warnings.simplefilter("ignore")
        return est.fit(X, y)


@pytest.mark.parametrize("kernel", [
    Matern(1.0, 0.8, nu=2.5) + ConstantKernel(0.7),
    ConstantKernel(0.2, "fixed") + SquaredExponential(1.3, [1.0, 2.0]) + ConstantKernel(0.1),
    skk.RBF(1.0) + skk.ConstantKernel(0.5),
])
def test_ep_evidence_equals_dense_ep_on_the_kernel_objects_covariance(kernel):
    X, y = _xor()
    est = _fit(sparsegp.EPClassifier(kernel=kernel, max_iter=3, ep_tol=1e-12, random_state=0),
               X, y)
    k = est.kernel_
    assert isinstance(k, Sum) and isinstance(k.k2, ConstantKernel)
    vb = k.k2.constant_value
    assert np.isfinite(vb) and vb > 0
    # the kernel object's own k(X, X) + v_b (user units) and the fit's relative jitter
    K = k(X)
    K[np.diag_indices_from(K)] += est.jitter * est.variance_
    y_pm = est.y_train_
    ref = _ep._run_ep(K, y_pm, est.bias_, None, None, 1e-12, 500, 1.0,
                      np.random.default_rng(0))
    # the same EP on the same matrix: measured 2e-16
    np.testing.assert_allclose(est.log_evidence_, ref.log_evidence, rtol=1e-13)
    # predictions at the training inputs, densely: k* = k(X, X) (no jitter), then
    # mean k*^T (K + S^-1)^-1 S^-1 nu, variance k** - k*^T (K + S^-1)^-1 k* (RW eq. 3.60)
    Ks = k(X)
    G = K + np.diag(1.0 / ref.tau)
    mean, var = est.predict_latent(X)
    # two solves of the same system (measured 8.5e-13 and 2.4e-12 absolute)
    np.testing.assert_allclose(mean, Ks @ np.linalg.solve(G, ref.nu / ref.tau), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(var, k.diag(X) - np.einsum("ij,ij->j", Ks,
                                                           np.linalg.solve(G, Ks)),
                               rtol=1e-10, atol=1e-10)


def test_ep_constant_sum_fits_learns_v_b_and_predicts():
    X, y = _xor(60, seed=2)
    free = _fit(sparsegp.EPClassifier(kernel=SquaredExponential() + ConstantKernel(0.5),
                                      max_iter=20, random_state=0), X, y)
    fixed = _fit(sparsegp.EPClassifier(kernel=SquaredExponential()
                                       + ConstantKernel(0.5, "fixed"),
                                       max_iter=20, random_state=0), X, y)
    plain = _fit(sparsegp.EPClassifier(kernel=SquaredExponential(), max_iter=20,
                                       random_state=0), X, y)
    # theta_: the free v_b adds one entry (after the kernel's), the fixed one none
    assert free.theta_.size == plain.theta_.size + 1 == fixed.theta_.size + 1
    assert free.kernel_.k2.constant_value != 0.5
    np.testing.assert_allclose(free.theta_[2], np.log(free.kernel_.k2.constant_value))
    assert fixed.kernel_.k2.constant_value == 0.5
    assert fixed.kernel_.k2.constant_value_bounds == "fixed"
    assert "bias_variance" in free.log_evidence_gradient_
    for est in (free, fixed):
        proba = est.predict_proba(X)
        assert proba.shape == (60, 2) and np.all(np.isfinite(proba))
        assert np.mean(est.predict(X) == y) > 0.7
    # the kernel_ round trip: refitting from the fitted kernel without search keeps the
    # evidence
    again = _fit(sparsegp.EPClassifier(kernel=free.kernel_, optimizer=None, random_state=0,
                                       bias=free.bias_), X, y)
    # the same EP from the same parameters (measured 1.7e-14)
    np.testing.assert_allclose(again.log_evidence_, free.log_evidence_, rtol=1e-12)


@pytest.mark.parametrize("kernel", [Matern() + Matern(), ConstantKernel(0.5),
                                    SquaredExponential() + ConstantKernel(-0.1)])
def test_ep_unsupported_sums_raise(kernel):
    X, y = _xor(30)
    with pytest.raises(ValueError, match="one stationary kernel|bias variance"):
        sparsegp.EPClassifier(kernel=kernel, optimizer=None).fit(X, y)


@pytest.mark.parametrize("schedule", ["sequential", "parallel"])
@pytest.mark.parametrize("kernel", [
    SquaredExponential(1.0, 1.0) + ConstantKernel(0.6),
    ConstantKernel(0.3, "fixed") + Matern(1.2, [1.0, 2.0], nu=1.5),
])
def test_gfitc_evidence_equals_dense_ep_on_the_fitc_prior_of_the_kernel_object(kernel,
                                                                                schedule):
    X, y = _xor()
    est = _fit(sparsegp.GFITCClassifier(n_inducing=6, kernel=kernel, max_iter=3, ep_tol=1e-12,
                                        ep_max_sweeps=500, ep_schedule=schedule,
                                        random_state=0), X, y)
    k = est.kernel_
    assert isinstance(k, Sum) and isinstance(k.k2, ConstantKernel)
    # the FITC prior, densely, from the kernel object's own K_fu, K_uu and diagonal (each
    # with the constant): Q_ff + diag(K_ff - Q_ff), K_uu with the fit's relative jitter
    Z = est.inducing_points_
    Kfu = k(X, Z)
    Kuu = k(Z)
    Kuu[np.diag_indices_from(Kuu)] += est.jitter_ * est.variance_
    Q = Kfu @ np.linalg.solve(Kuu, Kfu.T)
    K = Q + np.diag(k.diag(X) - np.diag(Q))
    y_pm = np.where(y == est.classes_[1], 1.0, -1.0)
    ref = _ep._run_ep(K, y_pm, est.bias_, None, None, 1e-12, 500, 1.0,
                      np.random.default_rng(0))
    # the same EP on the same FITC matrix, formed two ways (measured 6.8e-16)
    np.testing.assert_allclose(est.log_evidence_, ref.log_evidence, rtol=1e-12)
    # predictions at new inputs: the FITC predictive of the same prior (k* through Q)
    Xt = X[:7] + 0.3
    kt = k(Xt, Z) @ np.linalg.solve(Kuu, Kfu.T)                  # Q_*f (7, N)
    G = K + np.diag(1.0 / ref.tau)
    mean, var = est.predict_latent(Xt)
    # measured 5.9e-14 and 8.3e-14 absolute
    np.testing.assert_allclose(mean, kt @ np.linalg.solve(G, ref.nu / ref.tau), rtol=1e-10,
                               atol=1e-11)
    np.testing.assert_allclose(var, k.diag(Xt) - np.einsum("ij,ji->i", kt,
                                                            np.linalg.solve(G, kt.T)),
                               rtol=1e-10, atol=1e-11)


def test_gfitc_constant_sum_fits_and_predicts():
    X, y = _xor(60, seed=2)
    est = _fit(sparsegp.GFITCClassifier(n_inducing=8, kernel=SquaredExponential()
                                        + ConstantKernel(0.5), max_iter=20, random_state=0),
               X, y)
    plain = _fit(sparsegp.GFITCClassifier(n_inducing=8, kernel=SquaredExponential(),
                                          max_iter=20, random_state=0), X, y)
    assert est.theta_.size == plain.theta_.size + 1
    np.testing.assert_allclose(est.theta_[2], np.log(est.kernel_.k2.constant_value))
    assert "bias_variance" in est.log_evidence_gradient_
    proba = est.predict_proba(X)
    assert proba.shape == (60, 2) and np.all(np.isfinite(proba))
    assert np.mean(est.predict(X) == y) > 0.7


def test_extended_reference_is_the_b_form():
    # posterior_extended against the float64 B-form where float64 is ample: cond(B) = 3.5,
    # measured 4.5e-16 (h) and 8.3e-16 (diag A) relative
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    K = SquaredExponential(1.3, 0.9)(X) + 1e-3 * np.eye(12)
    active, p, m = np.array([1, 4, 7, 9]), rng.uniform(0.5, 2.0, 4), rng.normal(size=4)
    h, A = dense_posterior(K, active, p, m)
    he, Ae = posterior_extended(K[np.ix_(active, active)], K[:, active], np.diag(K), p, m)
    np.testing.assert_allclose(he, h, rtol=1e-14, atol=0)
    np.testing.assert_allclose(Ae, np.diag(A), rtol=1e-14, atol=0)


@pytest.fixture(scope="module", params=[
    SquaredExponential(1.0, 1.0) + ConstantKernel(0.6),
    ConstantKernel(0.3, "fixed") + Matern(1.2, [1.0, 2.0], nu=2.5),
], ids=["se+constant", "constant+matern"])
def stagewise_xor(request):
    """A Stagewise fit on xor with a Sum kernel, its data, and the B-form's pieces: active set
    a, the other points, S = diag(p^1/2) and B = I + S K_uu S from the kernel object."""
    X, y = _xor(50)
    est = _fit(sparsegp.StagewiseGPClassifier(d_max=8, max_iter=2, kernel=request.param,
                                              random_state=0), X, y)
    a = est.active_set_
    S = np.diag(np.sqrt(est.site_precision_))
    B = np.eye(a.size) + S @ est.kernel_(X[a]) @ S
    return est, X, y, a, np.setdiff1d(np.arange(X.shape[0]), a), S, B


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18,
                    reason="the dense reference needs an extended-precision np.longdouble")
def test_stagewise_objective_from_the_kernel_object(stagewise_xor):
    est, X, y, a, rest, S, B = stagewise_xor
    k = est.kernel_
    assert isinstance(k, Sum) and isinstance(k.k2, ConstantKernel)
    # eq. 4 densely from the kernel object's covariances (each with the constant): with
    # C = S B^-1 S, f_i = k_iu C m, A_ii = k_ii - k_iu C k_ui. These fits end at the variance
    # box (s2 = 1e5) with cond(B) 1.5e5 and 3.5e5, and A_ii is a difference of numbers of
    # that size: formed in float64 it was 6.4e-9 and 1.2e-8 off on two machines, so the
    # reference is formed in extended precision (7e-16 from 50 digits of mpmath)
    y_pm = np.where(y[rest] == est.classes_[1], 1.0, -1.0)
    f, A = posterior_extended(k(X[a]), k(X[rest], X[a]), k.diag(X[rest]),
                              est.site_precision_, est.site_mean_)
    nlp = nlp_points(y_pm, f, A, est.bias_)
    # the estimator solves through B in float64: eps cond(B) relative, 3.2e-11 and 7.7e-11
    # here (measured 1.5e-12 and 3.5e-12)
    rtol = np.finfo(float).eps * np.linalg.cond(B)
    np.testing.assert_allclose(est.log_marginal_likelihood(est.theta_), -nlp, rtol=rtol)


def test_stagewise_predictions_from_the_kernel_object(stagewise_xor):
    est, X, y, a, rest, S, B = stagewise_xor
    k = est.kernel_
    assert isinstance(k, Sum) and isinstance(k.k2, ConstantKernel)
    # predictions at new inputs: the posterior C = S B^-1 S of the active sites
    C = S @ np.linalg.solve(B, S)
    Xt = X[:9] + 0.2
    Ktu = k(Xt, X[a])
    mean, var = est.predict_latent(Xt)
    # measured 3.4e-11 absolute, 5e-10 relative
    np.testing.assert_allclose(mean, Ktu @ C @ est.site_mean_, rtol=1e-8, atol=1e-9)
    # the variance is k_** (about s2 = 1e5 here) less a term of the same size solved through
    # B: its round-off is eps cond(B) k_** (measured 1.1e-6 against that bound's 7.7e-6)
    bound = np.finfo(float).eps * np.linalg.cond(B) * np.max(k.diag(Xt))
    np.testing.assert_allclose(var, k.diag(Xt) - np.einsum("ij,ij->i", Ktu @ C, Ktu),
                               rtol=0, atol=bound)
    # the staged probabilities end at predict_proba's
    *_, last = est.staged_predict_proba(Xt)
    np.testing.assert_allclose(last, est.predict_proba(Xt), rtol=1e-10)
    assert np.all(np.isfinite(est.predict_proba(X)))
