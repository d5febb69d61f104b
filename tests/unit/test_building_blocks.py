"""Compiled building blocks: probit moments, rank-one Cholesky updates, SE covariance gradients."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special, stats

from sparsegp._numba import ep_fitc, probit
from sparsegp.kernels import kuu, se_grad_contract, se_kernel

# --- probit ------------------------------------------------------------------------------

REFERENCE_MILLS = [(-40.0, 40.024968847207), (-10.0, 10.0980932339625),
                   (-5.0, 5.18650396712585), (0.0, math.sqrt(2 / math.pi)),
                   (1.0, 0.287599970939178)]


@pytest.mark.parametrize("z, expected", REFERENCE_MILLS)
def test_inverse_mills_reference_values(z, expected):
    assert probit.inv_mills(z) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("z, expected", [(-40.0, -804.608442013754),
                                         (-10.0, -53.2312851505125)])
def test_log_ndtr_reference_values(z, expected):
    assert probit.log_ndtr(z) == pytest.approx(expected, rel=1e-13)


def test_log_ndtr_matches_scipy_over_range():
    z = np.linspace(-40, 40, 8001)
    np.testing.assert_allclose(probit.log_ndtr_vec(z), special.log_ndtr(z), rtol=1e-12,
                               atol=1e-300)


def test_inverse_mills_continuous_at_switch_and_stable_shift():
    left, right = probit.inv_mills(-5.0 - 1e-12), probit.inv_mills(-5.0 + 1e-12)
    assert left == pytest.approx(right, rel=1e-11)
    for z in [-40.0, -20.0, -6.0]:
        r, shift = probit.inv_mills_and_shift(z)
        # independent reference: r = sqrt(2/pi) / erfcx(-z/sqrt(2)); z + r loses at most
        # log10(|z| / shift) ~ 3 digits to cancellation there, so 1e-10 is still tight
        r_ref = math.sqrt(2 / math.pi) / special.erfcx(-z / math.sqrt(2))
        assert r == pytest.approx(r_ref, rel=1e-13)
        assert shift == pytest.approx(z + r_ref, rel=1e-10)
        assert shift > 0


@pytest.mark.parametrize("y", [-1.0, 1.0])
@pytest.mark.parametrize("mu, var, bias", [(0.3, 2.0, 0.1), (-4.0, 0.5, 0.0),
                                           (12.0, 3.0, -1.0), (-30.0, 0.1, 0.0)])
def test_probit_tilted_moments_match_quadrature(y, mu, var, bias):
    log_z, alpha, nu = probit.probit_tilted(y, mu, var, bias)
    # Gauss-Hermite quadrature of the tilted distribution Phi(y(f+b)) N(f|mu,var)
    x, w = np.polynomial.hermite_e.hermegauss(200)
    f = mu + math.sqrt(var) * x
    lik = stats.norm.cdf(y * (f + bias))
    Z = np.sum(w * lik) / math.sqrt(2 * math.pi)
    if Z < 1e-200:
        pytest.skip("tilted mass below quadrature resolution")
    mean = np.sum(w * lik * f) / math.sqrt(2 * math.pi) / Z
    second = np.sum(w * lik * f * f) / math.sqrt(2 * math.pi) / Z
    assert log_z == pytest.approx(math.log(Z), rel=1e-8)
    assert mu + var * alpha == pytest.approx(mean, rel=1e-7, abs=1e-9)
    assert var * (1 - var * nu) == pytest.approx(second - mean**2, rel=1e-6)
    assert 0 < nu < 1 / (1 + var)


@pytest.mark.parametrize("z", [-40.0, -12.0, -5.0, -4.99, -0.3, 0.0, 2.0, 9.0, 40.0])
def test_probit_moments_only_equal_the_full_tilted_moments(z):
    for y, var, bias in [(1.0, 0.7, 0.0), (-1.0, 2.5, 0.4)]:
        mu = z * math.sqrt(1.0 + var) / y - bias
        _, alpha, nu = probit.probit_tilted(y, mu, var, bias)
        assert probit.probit_tilted_moments(y, mu, var, bias) == (alpha, nu)


# --- Cholesky rank-one (the upper-factor update GFITC's EP uses) ------------------------------

def _spd(rng, n):
    B = rng.standard_normal((n, n))
    return B @ B.T + n * np.eye(n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), seed=st.integers(0, 2**31 - 1), scale=st.floats(0.01, 3.0))
def test_update_then_downdate_restores_factor(n, seed, scale):
    rng = np.random.default_rng(seed)
    A = _spd(rng, n)
    R = np.linalg.cholesky(A).T.copy()
    x = scale * rng.standard_normal(n)
    R1 = R.copy()
    assert ep_fitc.chol_update_upper(R1, x.copy(), 1.0)
    np.testing.assert_allclose(R1, np.linalg.cholesky(A + np.outer(x, x)).T, rtol=1e-10,
                               atol=1e-12)
    assert ep_fitc.chol_update_upper(R1, x.copy(), -1.0)
    np.testing.assert_allclose(R1, R, rtol=1e-9, atol=1e-11)


def test_downdate_matches_recomputation_and_refuses_infeasible(rng):
    n = 8
    A = _spd(rng, n)
    x = 0.5 * rng.standard_normal(n)
    R = np.linalg.cholesky(A).T.copy()
    assert ep_fitc.chol_update_upper(R, x.copy(), -1.0)
    np.testing.assert_allclose(R, np.linalg.cholesky(A - np.outer(x, x)).T, rtol=1e-10,
                               atol=1e-12)
    # infeasible (A - x x^T not positive definite) and NaN downdates are refused
    assert not ep_fitc.chol_update_upper(R.copy(), 100 * rng.standard_normal(n), -1.0)
    assert not ep_fitc.chol_update_upper(R.copy(), np.full(n, np.nan), -1.0)


# --- SE covariance -------------------------------------------------------------------------

def test_se_kernel_matches_definition(rng):
    X, Z = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    ls, s2 = np.array([0.5, 1.0, 3.0]), 2.5
    d2 = (((X[:, None, :] - Z[None, :, :]) / ls) ** 2).sum(-1)
    np.testing.assert_allclose(se_kernel(X, Z, s2, ls), s2 * np.exp(-0.5 * d2), rtol=1e-14)
    K = kuu(Z, s2, ls, 1e-6)
    np.testing.assert_allclose(np.diag(K), s2 * (1 + 1e-6))


def _central(f, x, h=1e-6):
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        g[idx] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("symmetric", [False, True])
def test_se_gradient_contraction_matches_finite_differences(rng, symmetric):
    Z = rng.standard_normal((5, 3))
    X = Z if symmetric else rng.standard_normal((9, 3))
    W = rng.standard_normal((X.shape[0], 5))
    if symmetric:
        W = W + W.T
    ls, s2 = np.array([0.7, 1.3, 2.0]), 1.7
    K = se_kernel(X, Z, s2, ls)
    g_ls, g_Z = se_grad_contract(X, Z, K, W, ls, symmetric=symmetric)

    def obj_ls(l):
        return np.sum(W * se_kernel(X, Z, s2, l))

    def obj_Z(z):
        return np.sum(W * se_kernel(z if symmetric else X, z, s2, ls))

    np.testing.assert_allclose(g_ls, _central(obj_ls, ls), rtol=1e-7)
    np.testing.assert_allclose(g_Z, _central(obj_Z, Z), rtol=1e-6, atol=1e-8)
