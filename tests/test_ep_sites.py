"""The EP site leaf (sparsegp._numba.ep) and the tilted moments beside it (probit.py).

Each check compares the compiled scalar algebra with an independent computation: Gaussian
products done in moment form, quadrature of the tilted distribution with scipy, or the dense
posterior after a rank-one change.
"""
import math

import numpy as np
import pytest
from scipy import integrate, stats

from sparsegp._numba import ep
from sparsegp._numba.probit import pairwise_tilted, pairwise_tilted_moments, probit_tilted


def _tilted_by_quadrature(loglik, mu, var):
    """(Z, mean, variance) of lik(f) N(f | mu, var) by adaptive quadrature."""
    sd = math.sqrt(var)
    lo, hi = mu - 12 * sd, mu + 12 * sd

    def w(f):
        return math.exp(loglik(f)) * stats.norm.pdf(f, mu, sd)

    z0 = integrate.quad(w, lo, hi, epsabs=0, epsrel=1e-12, limit=400)[0]
    z1 = integrate.quad(lambda f: f * w(f), lo, hi, epsabs=0, epsrel=1e-12, limit=400)[0]
    z2 = integrate.quad(lambda f: f * f * w(f), lo, hi, epsabs=0, epsrel=1e-12, limit=400)[0]
    mean = z1 / z0
    return z0, mean, z2 / z0 - mean * mean


# ------------------------------------------------------------------------------------------
# cavity
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("tau, nu", [(0.0, 0.0), (0.7, -0.4), (2.5, 1.3)])
def test_cavity_divides_the_site_out_of_the_marginal(tau, nu):
    """cavity x site = marginal, checked in moment form (precisions add, precision-means add)."""
    mu_c0, v_c0 = 0.4, 0.9
    v = 1.0 / (1.0 / v_c0 + tau)
    mu = v * (mu_c0 / v_c0 + nu)
    mu_c, v_c, ok = ep.cavity(mu, v, tau, nu)
    assert ok
    assert v_c == pytest.approx(v_c0, rel=1e-14)
    assert mu_c == pytest.approx(mu_c0, rel=1e-14, abs=1e-15)


@pytest.mark.parametrize("mu, v, tau", [(0.3, 0.5, 2.0), (0.3, 0.5, 2.5), (0.3, 0.0, 1.0),
                                        (0.3, -1e-3, 0.0), (0.3, np.nan, 1.0)])
def test_improper_cavity_is_reported_not_returned(mu, v, tau):
    """1 - tau v <= 0, v <= 0 or NaN: ok is False and nothing finite is pretended."""
    mu_c, v_c, ok = ep.cavity(mu, v, tau, 0.1)
    assert not ok
    assert v_c == math.inf and mu_c == 0.0


# ------------------------------------------------------------------------------------------
# site target from the tilted moments
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("y, mu_c, v_c, bias", [(1.0, 0.2, 0.8, 0.0), (-1.0, 1.5, 3.0, 0.3),
                                                (1.0, -2.5, 0.4, -0.2), (-1.0, 6.0, 2.0, 0.0)])
def test_probit_site_target_matches_the_tilted_moments_by_quadrature(y, mu_c, v_c, bias):
    """cavity x new site has the mean and variance of Phi(y (f + b)) N(f | cavity)."""
    log_z, alpha, nu_hat = probit_tilted(y, mu_c, v_c, bias)
    z0, mean, var = _tilted_by_quadrature(
        lambda f: stats.norm.logcdf(y * (f + bias)), mu_c, v_c)
    assert log_z == pytest.approx(math.log(z0), rel=1e-9)
    tau, nu, ok = ep.site_target(mu_c, v_c, alpha, nu_hat)
    assert ok and tau > 0.0
    post_var = 1.0 / (1.0 / v_c + tau)
    post_mean = post_var * (mu_c / v_c + nu)
    assert post_mean == pytest.approx(mean, rel=1e-8, abs=1e-10)
    assert post_var == pytest.approx(var, rel=1e-7)


@pytest.mark.parametrize("a_p, s_p, d_p, a_m, s_m, d_m",
                         [(0.3, 0.6, 0.2, -0.1, 0.9, 0.1), (-1.0, 0.4, 0.0, 1.2, 0.3, 0.0),
                          (2.0, 1.5, 0.5, 0.0, 0.2, 0.3)])
def test_pairwise_tilted_moments_by_quadrature(a_p, s_p, d_p, a_m, s_m, d_m):
    """log Z, g, nu and w of the step factor Theta(f_p - f_m) with extra variances d.

    Integrating the step against N(f_p | a_p, s_p + d_p) N(f_m | a_m, s_m + d_m) is one 1-D
    integral over f_p of Phi((f_p - a_m) / sqrt(s_m + d_m)); g, nu and w come from central
    differences of that quadrature in a_p and z.
    """
    def log_z_of(ap, extra=0.0):
        sm = math.sqrt(s_m + d_m)
        return math.log(_tilted_by_quadrature(
            lambda f: stats.norm.logcdf((f - a_m) / sm), ap, s_p + d_p + extra)[0])

    log_z, g, nu, w, z = pairwise_tilted(a_p, s_p, d_p, a_m, s_m, d_m)
    assert z == pytest.approx(s_p + d_p + s_m + d_m)
    assert log_z == pytest.approx(log_z_of(a_p), rel=1e-8, abs=1e-10)
    h = 1e-3  # truncation ~h^2 and quadrature noise ~1e-12 / h^2 both near 1e-6
    lp, l0, lm = log_z_of(a_p + h), log_z_of(a_p), log_z_of(a_p - h)
    assert g == pytest.approx((lp - lm) / (2 * h), rel=1e-5)
    assert nu == pytest.approx(-(lp - 2 * l0 + lm) / h**2, rel=1e-3)
    assert w == pytest.approx((log_z_of(a_p, h) - log_z_of(a_p, -h)) / (2 * h), rel=1e-5)



@pytest.mark.parametrize("a_p, a_m, z_half",
                         [(0.3, -0.1, 0.9), (-9.0, 4.0, 0.5), (40.0, -1.0, 0.2), (1.0, 1.0, 0.0),
                          (0.5, 0.1, -0.3)])
def test_pairwise_moments_are_those_of_the_full_tilted_normaliser(a_p, a_m, z_half):
    """The moments-only form the EP site updates call returns pairwise_tilted's g, nu, w, z bit
    for bit: far tails (the continued fraction, the clipped r (r + beta)) and z <= 0 too."""
    full = pairwise_tilted(a_p, z_half, 0.0, a_m, z_half, 0.0)
    assert pairwise_tilted_moments(a_p, z_half, 0.0, a_m, z_half, 0.0) == full[1:]

def test_site_target_clamps_a_negative_precision_and_refuses_an_improper_match():
    # nu_hat < 0 is never produced by a log-concave likelihood: the clamp takes it to 0
    tau, nu, ok = ep.site_target(0.5, 1.0, 0.2, -0.3)
    assert ok and tau == ep.TAU_MIN == 0.0
    assert nu == pytest.approx((0.2 + 0.5 * -0.3) / 1.3)
    # 1 - v_c nu_hat <= 0: the matched Gaussian is not proper, the site must be kept
    assert not ep.site_target(0.5, 2.0, 0.2, 0.5)[2]
    assert not ep.site_target(0.5, 2.0, 0.2, 0.7)[2]


def test_site_target_of_a_zero_curvature_is_a_zero_precision():
    """A point classified with certainty (nu_hat underflows to 0) gets tau = 0."""
    tau, nu, ok = ep.site_target(40.0, 1.0, 0.0, 0.0)
    assert ok and tau == 0.0 and nu == 0.0


# ------------------------------------------------------------------------------------------
# damping and the residual
# ------------------------------------------------------------------------------------------
def test_damping_one_returns_the_target_exactly_and_steps_scale_with_damping():
    old, target = (0.37, -1.1), (0.81, 0.23)
    assert ep.damp_site(*old, *target, 1.0) == target
    for d in (0.1, 0.5, 0.9):
        t, n = ep.damp_site(*old, *target, d)
        assert t - old[0] == pytest.approx(d * (target[0] - old[0]), rel=1e-14)
        assert n - old[1] == pytest.approx(d * (target[1] - old[1]), rel=1e-14)
        # the damped step is damping x the residual: a test on it would stop 1/d too early
        step = ep.site_residual(*old, t, n)
        assert step == pytest.approx(d * ep.site_residual(*old, *target), rel=1e-14)


def test_clamp_then_damp_keeps_a_feasible_site_feasible():
    """With the clamp on the target, any damping of a feasible site stays >= TAU_MIN."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        mu_c, v_c = rng.normal(), rng.uniform(0.01, 5.0)
        nu_hat = rng.uniform(-1.0, 1.0) / v_c     # negative curvatures included on purpose
        tau_t, nu_t, ok = ep.site_target(mu_c, v_c, rng.normal(), nu_hat)
        if not ok:
            continue
        tau_old = rng.uniform(0.0, 3.0)
        tau, _ = ep.damp_site(tau_old, 0.0, tau_t, nu_t, rng.uniform(0.01, 1.0))
        assert tau >= ep.TAU_MIN


def test_residual_is_the_largest_absolute_change():
    assert ep.site_residual(1.0, 2.0, 1.5, 1.9) == pytest.approx(0.5)
    assert ep.site_residual(1.0, 2.0, 0.9, 4.0) == pytest.approx(2.0)
    assert ep.site_residual(1.0, 2.0, 1.0, 2.0) == 0.0


# ------------------------------------------------------------------------------------------
# the rank-one move of the posterior and the evidence share of a site
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtau, dnu", [(0.8, 0.3), (-0.2, 0.5), (0.0, -0.4)])
def test_marginal_step_is_the_dense_posterior_after_the_change(dtau, dnu):
    rng = np.random.default_rng(1)
    A = rng.normal(size=(5, 5))
    K = A @ A.T + np.eye(5)
    tau, nu = rng.uniform(0.1, 1.0, 5), rng.normal(size=5)
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    m = Sigma @ nu
    n = 2
    c, g, ok = ep.marginal_step(dtau, dnu, m[n], Sigma[n, n])
    assert ok
    tau[n] += dtau
    nu[n] += dnu
    Sigma_new = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    s = Sigma[:, n]
    np.testing.assert_allclose(Sigma - c * np.outer(s, s), Sigma_new, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m + g * s, Sigma_new @ nu, rtol=1e-10, atol=1e-12)


def test_marginal_step_rejects_a_non_positive_new_variance():
    assert not ep.marginal_step(-2.0, 0.0, 0.0, 0.5)[2]
    assert ep.marginal_step(-1.9, 0.0, 0.0, 0.5)[2]


def test_site_delta_is_the_difference_of_gaussian_log_normalisers():
    """G(theta) = log integral of exp(-lam f^2 / 2 + eta f) = eta^2 / (2 lam) - 1/2 log(lam / 2 pi)."""
    def G(lam, eta):
        return eta * eta / (2.0 * lam) - 0.5 * math.log(lam / (2.0 * math.pi))

    mu, v, tau, nu = 0.3, 0.7, 0.9, -0.2
    lam, eta = 1.0 / v, mu / v
    expected = G(lam - tau, eta - nu) - G(lam, eta)
    assert ep.site_delta(tau, nu, v, mu) == pytest.approx(expected, rel=1e-13)
    assert ep.site_delta(0.0, 0.0, v, mu) == 0.0
    assert ep.site_delta(2.0, 0.0, 0.5, mu) == -math.inf


# ------------------------------------------------------------------------------------------
# one site update end to end: a fixed point of the leaf is a fixed point of EP
# ------------------------------------------------------------------------------------------
def test_single_site_ep_converges_to_the_tilted_moments_at_any_damping():
    """One latent, prior N(0, 1.5), likelihood Phi(f + 0.2): EP with one site is exact moment
    matching, so the fixed point reproduces the quadrature moments whatever the damping."""
    prior_var, bias = 1.5, 0.2
    z0, mean, var = _tilted_by_quadrature(lambda f: stats.norm.logcdf(f + bias), 0.0, prior_var)
    for damping in (1.0, 0.5, 0.2):
        tau, nu = 0.0, 0.0
        for it in range(500):
            v = 1.0 / (1.0 / prior_var + tau)
            mu_c, v_c, ok = ep.cavity(v * nu, v, tau, nu)
            assert ok
            _, alpha, nu_hat = probit_tilted(1.0, mu_c, v_c, bias)
            tau_t, nu_t, ok = ep.site_target(mu_c, v_c, alpha, nu_hat)
            if ep.site_residual(tau, nu, tau_t, nu_t) < 1e-13:
                break
            tau, nu = ep.damp_site(tau, nu, tau_t, nu_t, damping)
        else:
            pytest.fail(f"no convergence at damping {damping}")
        v = 1.0 / (1.0 / prior_var + tau)
        assert v * nu == pytest.approx(mean, rel=1e-8)
        assert v == pytest.approx(var, rel=1e-7)
