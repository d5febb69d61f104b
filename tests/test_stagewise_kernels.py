"""Compiled stagewise kernels (seed 004) against the dense reference of tests/reference."""
import numpy as np
import pytest
from scipy.special import log_ndtr
from scipy.stats import chi2

from sparsegp._numba import adf, stagewise as sw

from reference.dense_stagewise import (
    adf_sequence, dense_posterior, lookahead_bruteforce, se_dense, site_objective,
)


def _problem(seed, n=40, D=2, n_active=6, bias=0.2, ls=0.8, s2=1.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    K = se_dense(X, X, s2, ls)
    order = list(rng.choice(n, n_active, replace=False))
    p, m, h, A = adf_sequence(K, y, order, bias)
    return X, y, K, order, p, m, h, A, bias


def _core_state(X, y, order, bias, d_max=10, ls=0.8, s2=1.3):
    """The ADF core's state after moment-matched inclusions of ``order`` (notes §2.2)."""
    n, D = X.shape
    st = adf.new_state(n, d_max, s2)
    cols = np.arange(n, dtype=np.int64)
    work = np.empty(n)
    for i in order:
        adf.adf_include_probit(X, s2, np.full(D, ls), 0.0, *st, i, y[i], bias, cols, work)
    return st


@pytest.mark.parametrize("rule", ["all", "validation"])
@pytest.mark.parametrize("seed", [0, 1])
def test_lookahead_equals_bruteforce(seed, rule):
    X, y, K, order, p, m, h, A, bias = _problem(seed)
    n = len(y)
    st = _core_state(X, y, order, bias)
    np.testing.assert_allclose(st.h, h, rtol=0, atol=1e-12)
    np.testing.assert_allclose(st.diag_A, np.diag(A), rtol=0, atol=1e-12)
    cand = np.array([j for j in range(n) if j not in order], dtype=np.int64)
    if rule == "all":
        weights, norm = np.ones(n), n
    else:
        weights, norm = np.ones(n), n - len(order) - 1
        weights[order] = 0.0
    kt = np.empty((cand.size, n))
    nlp = np.empty(cand.size)
    al = np.empty(cand.size)
    nu = np.empty(cand.size)
    for c, j in enumerate(cand):
        adf.adf_cov_column(X, 1.3, np.full(2, 0.8), 0.0, *st, j, np.arange(n), kt[c])
    sw.lookahead_moment(cand, kt, st.diag_A, st.h, y, bias, weights, rule == "validation",
                        nlp, al, nu)
    for c, j in enumerate(cand):
        ref, pj, mj, h2, d2 = lookahead_bruteforce(K, y, order, p, m, bias, j, rule=rule)
        assert abs(nlp[c] / norm - ref) <= 1e-10 * abs(ref), (j, nlp[c] / norm, ref)
        np.testing.assert_allclose(kt[c], A[:, j], rtol=0, atol=1e-12)
        # eq. 7 with moment matching: eta = nu, alpha~ = alpha
        assert nu[c] == pytest.approx(pj / (1 + pj * A[j, j]), rel=1e-10)
        assert al[c] == pytest.approx(nu[c] * (mj - h[j]), rel=1e-10)


def test_site_objective_value_and_gradient():
    X, y, K, order, p, m, h, A, bias = _problem(3)
    n = len(y)
    j = next(i for i in range(n) if i not in order)
    kt = A[:, j].copy()
    diagA = np.diag(A).copy()
    w = np.full(n, 1.0 / n)
    for at, tau in [(0.3, -0.5), (-1.2, 1.0), (0.05, 2.5)]:
        f, ga, gt = sw.site_objective(y, h, diagA, bias, w, kt, A[j, j], at, tau, -1)
        assert f == pytest.approx(site_objective(y, h, diagA, kt, bias, at, tau, A[j, j]),
                                  rel=1e-12)
        # the same loss from an explicit dense inclusion with p = e^tau, m from alpha~
        pj = np.exp(tau)
        eta = pj / (1 + pj * A[j, j])
        ref = lookahead_bruteforce(K, y, order, p, m, bias, j, p_j=pj, m_j=h[j] + at / eta)[0]
        assert f == pytest.approx(ref, rel=1e-10)
        e = 1e-6
        fa = [sw.site_objective(y, h, diagA, bias, w, kt, A[j, j], at + s * e, tau, -1)[0]
              for s in (1, -1)]
        ft = [sw.site_objective(y, h, diagA, bias, w, kt, A[j, j], at, tau + s * e, -1)[0]
              for s in (1, -1)]
        assert ga == pytest.approx((fa[0] - fa[1]) / (2 * e), rel=1e-6, abs=1e-10)
        assert gt == pytest.approx((ft[0] - ft[1]) / (2 * e), rel=1e-6, abs=1e-10)


def test_eta_bound_is_inverse_diagonal_in_exact_arithmetic():
    # notes §3.4: k~ = A_.j with A PSD, so min_l A_ll / A_lj^2 = 1 / A_jj
    X, y, K, order, p, m, h, A, bias = _problem(4)
    for j in [i for i in range(len(y)) if i not in order][:10]:
        eb = sw.eta_upper_bound(np.diag(A).copy(), A[:, j].copy())
        assert eb * A[j, j] == pytest.approx(1.0, rel=1e-10)


def test_weighted_nlp_matches_scipy():
    rng = np.random.default_rng(5)
    n = 30
    y = rng.choice([-1.0, 1.0], n)
    h = rng.normal(size=n) * 3
    dA = rng.uniform(0, 2, n)
    w = rng.uniform(0, 1, n)
    ref = -np.sum(w * log_ndtr(y * (h - 0.4) / np.sqrt(1 + dA)))
    assert sw.weighted_nlp(y, h, dA, -0.4, w) == pytest.approx(ref, rel=1e-13)


def test_smallest_keys_orders_and_clips():
    keys = np.array([5.0, np.inf, 1.0, 3.0, np.inf, 2.0])
    out = np.empty(10, dtype=np.int64)
    found = sw.smallest_keys(keys, 10, out)
    assert found == 4
    np.testing.assert_array_equal(out[:found], [2, 5, 3, 0])
    found = sw.smallest_keys(keys, 2, out)
    assert found == 2
    np.testing.assert_array_equal(out[:2], [2, 5])


def test_adaptive_sampling_frequencies_match_eq11():
    # notes §5 item 28: a chi-square test of the first draw of J against chi_j of eq. 11
    rng = np.random.default_rng(11)
    n = 8
    y = rng.choice([-1.0, 1.0], n)
    h = rng.normal(size=n)
    dA = rng.uniform(0.1, 1.0, n)
    avail = np.zeros(n, dtype=np.bool_)
    avail[2] = True
    chi = 1 - np.exp(log_ndtr(y * (h + 0.1) / np.sqrt(1 + dA)))
    chi[2] = 0
    prob = chi / chi.sum()
    keys = np.empty(n)
    out = np.empty(1, dtype=np.int64)
    counts = np.zeros(n)
    draws = 20000
    for _ in range(draws):
        sw.sampling_keys(dA, h, y, 0.1, avail, rng.standard_exponential(n), True, keys)
        sw.smallest_keys(keys, 1, out)
        counts[out[0]] += 1
    assert counts[2] == 0
    mask = prob > 0
    stat = np.sum((counts[mask] - draws * prob[mask]) ** 2 / (draws * prob[mask]))
    assert stat < chi2.ppf(0.999, mask.sum() - 1)


def test_uniform_fallback_when_all_probabilities_underflow():
    n = 5
    y = np.ones(n)
    h = np.full(n, 100.0)          # every point certain: chi_j = Phi(-70) underflows to 0
    dA = np.zeros(n)
    avail = np.zeros(n, dtype=np.bool_)
    keys = np.empty(n)
    E = np.arange(1.0, n + 1)
    assert sw.sampling_keys(dA, h, y, 0.0, avail, E, True, keys) == 0
    np.testing.assert_array_equal(keys, E)
