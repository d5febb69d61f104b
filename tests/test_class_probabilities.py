"""The multi-class predictive quadrature (notes §6, eq. 11) at any ratio of latent s.d.s
(issue 49, bounded cost: multi-class GFITC on fuzz problem 521 spent 50 s in it).

p(y = c) = int N(f | mu_c, s_c^2) prod_{j != c} Phi((f - mu_j) / s_j) df is checked against
scipy's adaptive Gauss-Kronrod quadrature, cut at every factor's transition, on rows whose
s.d.s span 1e-4 to 1e4 and whose means coincide; against the closed form for C = 2; and the
stated error bound against the error it bounds.
"""
import time

import numpy as np
import pytest
from scipy import integrate, special

from sparsegp._numba import multiclass as nbmc
from sparsegp.classification.multiclass import likelihood as mcl


def _reference(mu, sd, c, z=13.0):
    """p(y = c) for one row by adaptive quadrature in t = (f - mu_c) / sd_c.

    The range is cut at -z .. z in t and at t_j + k w_j for k in (-z, ..., z) for every other
    class j, so each piece sees at most part of one factor's transition; below the largest
    t_j - z w_j (or -z) the integrand is under Phi(-13) = 6e-39 of phi and is left out.
    """
    others = [j for j in range(mu.size) if j != c]
    t = (mu - mu[c]) / sd[c]
    w = sd / sd[c]
    lo = max([-z] + [t[j] - z * w[j] for j in others])
    if lo >= z:
        return 0.0

    def integrand(x):
        log_v = -0.5 * x * x - 0.5 * np.log(2.0 * np.pi)
        for j in others:
            log_v += special.log_ndtr((x - t[j]) / w[j])
        return np.exp(log_v)

    cuts = {lo, z} | {float(k) for k in range(-13, 14) if lo < k < z}
    for j in others:
        for k in (-13, -8, -4, -2, -1, -0.5, 0, 0.5, 1, 2, 4, 8, 13):
            if lo < t[j] + k * w[j] < z:
                cuts.add(t[j] + k * w[j])
    cuts = sorted(cuts)
    return sum(integrate.quad(integrand, a, b, epsabs=1e-17, epsrel=1e-14, limit=200)[0]
               for a, b in zip(cuts[:-1], cuts[1:]))


def _extreme_rows(rng, n, C):
    """Rows with s.d.s log-uniform over 1e-4 .. 1e4 and means on the scale of a random one of
    them; a third with two equal means, a fifth with all means equal."""
    sd = np.exp(rng.uniform(np.log(1e-4), np.log(1e4), size=(n, C)))
    mu = rng.normal(size=(n, C)) * 2.0 * sd.max(1, keepdims=True) ** rng.uniform(0, 1, (n, 1))
    pair = rng.random(n) < 1 / 3
    mu[pair, 1] = mu[pair, 0]
    same = rng.random(n) < 0.2
    mu[same] = mu[same, :1]
    return mu, sd


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("C", [2, 3, 5])
def test_matches_adaptive_quadrature_at_extreme_sd_ratios(C):
    # the trapezoid this replaced erred by 1e-4 on such rows (its node cap)
    rng = np.random.default_rng(C)
    mu, sd = _extreme_rows(rng, 16, C)
    P = mcl.class_probabilities(mu, sd ** 2)
    ref = np.array([[_reference(mu[i], sd[i], c) for c in range(C)] for i in range(16)])
    assert np.abs(P - ref).max() < 1e-13       # measured 1e-15


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_matches_adaptive_quadrature_on_ordinary_rows():
    rng = np.random.default_rng(11)
    mu = rng.normal(size=(12, 4))
    sd = rng.uniform(0.3, 3.0, size=(12, 4))
    P = mcl.class_probabilities(mu, sd ** 2)
    ref = np.array([[_reference(mu[i], sd[i], c) for c in range(4)] for i in range(12)])
    assert np.abs(P - ref).max() < 1e-13


@pytest.mark.parametrize("C", [2, 3, 5, 10])
def test_rows_sum_to_one(C):
    rng = np.random.default_rng(20 + C)
    mu, sd = _extreme_rows(rng, 400, C)
    P = mcl.class_probabilities(mu, sd ** 2)
    assert np.all(P >= 0)
    assert np.abs(P.sum(1) - 1).max() < 1e-13    # measured 1e-15


def test_two_classes_closed_form_with_steps():
    # C = 2: p(y = 0) = Phi((mu_0 - mu_1) / sqrt(v_0 + v_1)) exactly (notes §6); a zero
    # variance makes its class's factor an exact step
    rng = np.random.default_rng(3)
    mu = rng.normal(size=(3000, 2)) * 3
    var = np.exp(rng.uniform(np.log(1e-8), np.log(1e8), size=(3000, 2)))
    var[:100, 1] = 0.0
    var[100:200, 0] = 0.0
    mu[200:300, 1] = mu[200:300, 0]
    P = mcl.class_probabilities(mu, var)
    ref = special.ndtr((mu[:, 0] - mu[:, 1]) / np.sqrt(var.sum(1)))
    assert np.abs(P[:, 0] - ref).max() < 1e-13
    assert np.abs(P[:, 1] - (1 - ref)).max() < 1e-13


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_error_bound_holds_where_it_is_not_vacuous():
    # low orders, where the bound is far above round-off: the error must stay under it
    rng = np.random.default_rng(5)
    C = 4
    mu, sd = _extreme_rows(rng, 10, C)
    ref = np.array([[_reference(mu[i], sd[i], c) for c in range(C)] for i in range(10)])
    for order in (2, 3, 4, 6):
        nodes, weights = np.polynomial.legendre.leggauss(order)
        for panel in (1.0, 2.0, 4.0):
            out = np.empty_like(mu)
            nbmc.quad_class_probs(mu, sd, np.full(10, -1), 8.5, panel, nodes, weights, out)
            bound = mcl.quadrature_error_bound(order, C - 1, panel) + (C + 1) * special.ndtr(-8.5)
            assert np.abs(out - ref).max() <= bound


def test_order_is_the_fewest_nodes_within_the_tolerance():
    for C in (2, 5, 10, 30):
        n = mcl.gauss_legendre_order(C)[0].size
        assert mcl.quadrature_error_bound(n, C - 1) <= mcl.QUAD_TOL
        assert mcl.quadrature_error_bound(n - 1, C - 1) > mcl.QUAD_TOL


def test_cost_does_not_grow_with_the_sd_ratio():
    # fuzz problem 521's rows (s.d. ratio median 1 775) took 20 000 nodes a class a row; the
    # trapezoid this replaced took 3.3 s of CPU for 200 of these rows, so about 33 s for
    # all 2000. Measured 0.13 s.
    rng = np.random.default_rng(7)
    mu, sd = _extreme_rows(rng, 2000, 5)
    mcl.class_probabilities(mu[:2], sd[:2] ** 2)           # compiled before the clock starts
    start = time.process_time()
    mcl.class_probabilities(mu, sd ** 2)
    assert time.process_time() - start < 5.0


def test_only_and_non_finite_rows():
    mu = np.array([[0.0, 1.0, -1.0], [0.0, np.nan, 1.0], [0.0, 1.0, 2.0]])
    var = np.array([[1.0, 1e-6, 1e4], [1.0, 1.0, 1.0], [1.0, np.inf, 1.0]])
    full = mcl.class_probabilities(mu, var)
    assert np.all(np.isfinite(full[0])) and np.all(np.isnan(full[1:]))
    P = mcl.class_probabilities(mu[:1], var[:1], only=np.array([2]))
    assert np.isnan(P[0, :2]).all() and P[0, 2] == full[0, 2]
