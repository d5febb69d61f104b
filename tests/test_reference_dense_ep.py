"""Checks of the dense EP reference (tests/reference/dense_ep.py) against quadrature."""
import numpy as np
import pytest
from scipy import integrate, stats

from reference.dense_ep import (
    dense_ep,
    dense_ep_bias_gradient,
    dense_ep_gradient,
    dense_ep_log_evidence,
    dense_ep_log_evidence_textbook,
    dense_ep_predict,
    fitc_covariance,
    fitc_test_covariance,
    se_kernel_dense,
    tilted_moments,
)


def _problem(n, seed, d=2, variance=1.7, ls=0.9):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = se_kernel_dense(X, X, variance, ls) + 1e-8 * np.eye(n)
    return X, y, K


@pytest.mark.parametrize("y,mu,var,bias", [(1, 0.3, 0.7, 0.0), (-1, 1.2, 2.5, 0.4),
                                           (1, -2.0, 0.2, -0.7), (-1, 3.0, 5.0, 1.0)])
def test_tilted_moments_vs_quadrature(y, mu, var, bias):
    def w(f):
        return stats.norm.cdf(y * (f + bias)) * stats.norm.pdf(f, mu, np.sqrt(var))

    lo, hi = mu - 12 * np.sqrt(var), mu + 12 * np.sqrt(var)
    z0 = integrate.quad(w, lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0]
    m1 = integrate.quad(lambda f: f * w(f), lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0] / z0
    m2 = integrate.quad(lambda f: (f - m1) ** 2 * w(f), lo, hi, epsabs=0, epsrel=1e-13,
                        limit=200)[0] / z0
    log_z, m, v = tilted_moments(float(y), mu, var, bias)
    assert np.isclose(log_z, np.log(z0), rtol=1e-10, atol=0)
    assert np.isclose(m, m1, rtol=1e-9, atol=1e-12)
    assert np.isclose(v, m2, rtol=1e-9, atol=0)


@pytest.mark.parametrize("y,k,bias", [(1.0, 2.0, 0.0), (-1.0, 0.5, 0.8), (1.0, 3.0, -1.3)])
def test_single_point_is_exact(y, k, bias):
    # With one site the cavity is the prior and EP is exact: Z = Phi(y bias / sqrt(1 + k)).
    res = dense_ep(np.array([[k]]), np.array([y]), bias=bias)
    assert res.converged
    assert np.isclose(res.log_evidence, stats.norm.logcdf(y * bias / np.sqrt(1 + k)), rtol=1e-12)
    _, m, v = tilted_moments(y, 0.0, k, bias)
    assert np.isclose(res.mean[0], m, rtol=1e-12)
    assert np.isclose(res.var[0], v, rtol=1e-12)


def test_two_points_evidence_by_2d_quadrature():
    K = np.array([[1.5, 0.9], [0.9, 1.1]])
    y = np.array([1.0, -1.0])
    bias = 0.3
    res = dense_ep(K, y, bias=bias, tol=1e-13)
    assert res.converged
    prior = stats.multivariate_normal(np.zeros(2), K)
    lim = 10.0

    # EP's evidence is the normaliser of prior x scaled sites, with site scales C_n chosen so
    # that cavity x scaled site integrates to the tilted normaliser Zhat_n.
    log_c = np.empty(2)
    for n in range(2):
        m, v = res.cav_mean[n], res.cav_var[n]

        def site(f, n=n):
            return np.exp(-0.5 * res.tau[n] * f * f + res.nu[n] * f)

        cav_int = integrate.quad(lambda f: stats.norm.pdf(f, m, np.sqrt(v)) * site(f),
                                 -30, 30, epsabs=0, epsrel=1e-13, limit=200)[0]
        log_zhat = stats.norm.logcdf(y[n] * (m + bias) / np.sqrt(1 + v))
        log_c[n] = log_zhat - np.log(cav_int)

    def integrand_ep(f2, f1):
        f = np.array([f1, f2])
        return prior.pdf(f) * np.exp(np.sum(log_c - 0.5 * res.tau * f * f + res.nu * f))

    z_ep = integrate.dblquad(integrand_ep, -lim, lim, -lim, lim, epsabs=0, epsrel=1e-11)[0]
    assert np.isclose(res.log_evidence, np.log(z_ep), rtol=1e-8)

    # and EP approximates the exact evidence closely on this easy problem
    def integrand_true(f2, f1):
        f = np.array([f1, f2])
        return prior.pdf(f) * np.prod(stats.norm.cdf(y * (f + bias)))

    z_true = integrate.dblquad(integrand_true, -lim, lim, -lim, lim, epsabs=0, epsrel=1e-11)[0]
    assert abs(res.log_evidence - np.log(z_true)) < 5e-3


@pytest.mark.parametrize("bias", [0.0, -0.6])
def test_fixed_point_moment_matching(bias):
    _, y, K = _problem(25, 1)
    res = dense_ep(K, y, bias=bias, tol=1e-12)
    assert res.converged
    _, m, v = tilted_moments(y, res.cav_mean, res.cav_var, bias)
    np.testing.assert_allclose(res.mean, m, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(res.var, v, rtol=1e-9)
    # the posterior covariance is (K^-1 + S)^-1 and its mean Sigma nu
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(res.tau))
    np.testing.assert_allclose(res.cov, Sigma, rtol=1e-6, atol=1e-8)


def test_evidence_forms_agree_and_zero_sites():
    _, y, K = _problem(20, 2)
    res = dense_ep(K, y, bias=0.4, tol=1e-12)
    tb = dense_ep_log_evidence_textbook(K, y, 0.4, res.tau, res.nu)
    assert np.isclose(res.log_evidence, tb, rtol=1e-10)
    z0 = dense_ep_log_evidence(K, y, 0.4, np.zeros(20), np.zeros(20))
    expect = np.sum(stats.norm.logcdf(y * 0.4 / np.sqrt(1 + np.diag(K))))
    assert np.isclose(z0, expect, rtol=1e-12)


def test_order_and_damping_reach_same_fixed_point():
    _, y, K = _problem(15, 3)
    a = dense_ep(K, y, bias=0.2, tol=1e-12)
    b = dense_ep(K, y, bias=0.2, tol=1e-12, damping=0.6, order=np.arange(15)[::-1])
    np.testing.assert_allclose(a.tau, b.tau, rtol=1e-8)
    np.testing.assert_allclose(a.nu, b.nu, rtol=1e-8, atol=1e-12)
    assert np.isclose(a.log_evidence, b.log_evidence, rtol=1e-11)


def test_gradients_vs_finite_differences():
    X, y, _ = _problem(12, 4)
    s2, ls, bias = 1.3, np.array([0.8, 1.4]), 0.25

    def logz(s2, ls, bias):
        K = se_kernel_dense(X, X, s2, ls)
        return dense_ep(K, y, bias=bias, tol=1e-13).log_evidence

    K = se_kernel_dense(X, X, s2, ls)
    res = dense_ep(K, y, bias=bias, tol=1e-13)
    h = 1e-5
    g = dense_ep_gradient(res, K / s2)
    fd = (logz(s2 + h, ls, bias) - logz(s2 - h, ls, bias)) / (2 * h)
    assert np.isclose(g, fd, rtol=1e-6)
    for j in range(2):
        dK = K * (X[:, None, j] - X[None, :, j]) ** 2 / ls[j] ** 3
        e = np.zeros(2)
        e[j] = h
        fd = (logz(s2, ls + e, bias) - logz(s2, ls - e, bias)) / (2 * h)
        assert np.isclose(dense_ep_gradient(res, dK), fd, rtol=1e-6)
    fd = (logz(s2, ls, bias + h) - logz(s2, ls, bias - h)) / (2 * h)
    assert np.isclose(dense_ep_bias_gradient(res), fd, rtol=1e-6)


def test_predict_at_training_inputs_equals_posterior():
    X, y, K = _problem(18, 5)
    res = dense_ep(K, y, bias=-0.3, tol=1e-12)
    m, v, p = dense_ep_predict(res, K, np.diag(K))
    np.testing.assert_allclose(m, res.mean, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(v, res.var, rtol=1e-8)
    np.testing.assert_allclose(p, stats.norm.cdf((res.mean - 0.3) / np.sqrt(1 + res.var)),
                               rtol=1e-9)


def test_fitc_covariance():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 2))
    Z = X[:5] + 0.1
    Kt = fitc_covariance(X, Z, 2.0, 0.7)
    K = se_kernel_dense(X, X, 2.0, 0.7)
    np.testing.assert_allclose(np.diag(Kt), 2.0)
    assert np.all(np.linalg.eigvalsh(Kt) > 0)
    Kuu = se_kernel_dense(Z, Z, 2.0, 0.7) + 2e-6 * np.eye(5)
    Kuf = se_kernel_dense(Z, X, 2.0, 0.7)
    Q = Kuf.T @ np.linalg.solve(Kuu, Kuf)
    off = ~np.eye(30, dtype=bool)
    np.testing.assert_allclose(Kt[off], Q[off], rtol=1e-8, atol=1e-10)
    assert np.all(np.diag(K) - np.diag(Q) > -1e-10)
    Xs = rng.normal(size=(4, 2))
    Qfs, kss = fitc_test_covariance(X, Xs, Z, 2.0, 0.7)
    Kus = se_kernel_dense(Z, Xs, 2.0, 0.7)
    np.testing.assert_allclose(Qfs, Kuf.T @ np.linalg.solve(Kuu, Kus), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(kss, 2.0)
