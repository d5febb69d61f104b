"""ADF core and selection scores of the IVM against dense O(n^3) recomputations (notes §5, 20-24)."""
import numpy as np
import pytest

from reference.dense_ivm import (
    brute_force_scores,
    dense_adf,
    posterior_b_form,
    posterior_from_sites,
    se_bias_kernel,
)
from sparsegp._numba import adf, scoring


def _problem(rng, n=40, D=2, ard=False):
    X = rng.uniform(0.0, 5.0, size=(n, D))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    ls = np.array([0.8, 1.1][:D]) if ard else np.full(D, 0.9)
    return X, y, 1.3, ls, 0.1, -0.3


def _include_all(X, y, var, ls, vb, bias, order, cols=None):
    n = X.shape[0]
    state = adf.new_state(n, len(order), var, vb)
    cols = np.arange(n) if cols is None else cols
    work = np.empty(n)
    for i in order:
        p, m, _ = adf.adf_include_probit(X, var, ls, vb, *state, i, y[i], bias, cols, work)
        assert p >= 0.0
    return state


@pytest.mark.parametrize("ard", [False, True])
def test_full_inclusion_equals_dense_posterior(rng, ard):
    X, y, var, ls, vb, bias = _problem(rng, ard=ard)
    n = X.shape[0]
    order = rng.permutation(n)
    state = _include_all(X, y, var, ls, vb, bias, order)
    active, p, m, L = adf.active_sites(state)
    np.testing.assert_array_equal(active, order)
    K = se_bias_kernel(X, X, var, ls, vb)
    P = np.zeros(n)
    P[active] = p
    mm = np.zeros(n)
    mm[active] = m
    A = posterior_from_sites(K, P)          # literal (K^-1 + Pi)^-1
    h = A @ (P * mm)
    np.testing.assert_allclose(state.h, h, rtol=1e-10, atol=1e-10 * np.abs(h).max())
    np.testing.assert_allclose(state.diag_A, np.diag(A), rtol=1e-10)
    hb, Ab = posterior_b_form(K, active, p, m)
    np.testing.assert_allclose(state.h, hb, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.diag_A, np.diag(Ab), rtol=1e-10)
    # the sites equal those of a dense sequential ADF run, and L, M are what eq. 3 says
    h2, A2, p2, m2 = dense_adf(K, y, bias, order)
    np.testing.assert_allclose(p, p2, rtol=1e-10)
    np.testing.assert_allclose(m, m2, rtol=1e-10)
    S = np.sqrt(p)
    B = np.eye(n) + S[:, None] * K[np.ix_(active, active)] * S[None, :]
    np.testing.assert_allclose(L @ L.T, B, rtol=1e-12, atol=1e-12)
    M = np.linalg.solve(L, S[:, None] * K[active, :])
    np.testing.assert_allclose(state.Mt[:, :n].T, M, rtol=1e-9, atol=1e-12)


def test_partial_inclusion_and_arbitrary_sites(rng):
    """Arbitrary (p, m) (the stagewise classifier's use) give the dense posterior too."""
    X, y, var, ls, vb, bias = _problem(rng, n=30)
    n = X.shape[0]
    state = adf.new_state(n, 10, var, vb)
    order = rng.choice(n, 10, replace=False)
    p = rng.uniform(0.1, 3.0, 10)
    m = rng.normal(size=10)
    cols, work = np.arange(n), np.empty(n)
    K = se_bias_kernel(X, X, var, ls, vb)
    for t, i in enumerate(order):
        # look-ahead column equals the dense posterior covariance column
        hb, Ab = posterior_b_form(K, order[:t], p[:t], m[:t]) if t else (np.zeros(n), K)
        col = adf.adf_cov_column(X, var, ls, vb, *state, i, cols, work).copy()
        np.testing.assert_allclose(col, Ab[:, i], rtol=1e-10, atol=1e-12)
        eta, at = adf.adf_include_column(*state, i, p[t], m[t], col, cols)
        np.testing.assert_allclose(eta, p[t] / (1 + p[t] * Ab[i, i]), rtol=1e-12)
        np.testing.assert_allclose(at, eta * (m[t] - hb[i]), rtol=1e-10, atol=1e-14)
    hb, Ab = posterior_b_form(K, order, p, m)
    np.testing.assert_allclose(state.h, hb, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.diag_A, np.diag(Ab), rtol=1e-10)
    # refusals change nothing
    before = [a.copy() for a in state]
    assert adf.adf_include(X, var, ls, vb, *state, order[0], 1.0, 0.0, cols, work)[0] == -1.0
    for a, b in zip(before, state):
        np.testing.assert_array_equal(a, b)


def test_delayed_updates_equal_full_updates(rng):
    """Columns updated lazily (random selection indices) equal a full run after catch-up."""
    X, y, var, ls, vb, bias = _problem(rng, n=50)
    n, d = X.shape[0], 25
    order = rng.choice(n, d, replace=False)
    full = _include_all(X, y, var, ls, vb, bias, order)
    lazy = adf.new_state(n, d, var, vb)
    work = np.empty(n)
    for i in order:
        J = np.sort(rng.choice(n, 8, replace=False)).astype(np.int64)
        adf.adf_include_probit(X, var, ls, vb, *lazy, i, y[i], bias, J, work)
    assert np.any(lazy.count < d)       # some columns really were left behind
    adf.adf_catch_up(X, var, ls, vb, *lazy, np.arange(n))
    np.testing.assert_array_equal(lazy.active, full.active)
    np.testing.assert_allclose(lazy.sqrt_p, full.sqrt_p, rtol=1e-12)
    np.testing.assert_allclose(lazy.h, full.h, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(lazy.diag_A, full.diag_A, rtol=1e-10)
    np.testing.assert_allclose(lazy.Mt, full.Mt, rtol=1e-9, atol=1e-13)


def test_scores_equal_brute_force(rng):
    X, y, var, ls, vb, bias = _problem(rng, n=25)
    n = X.shape[0]
    order = rng.choice(n, 6, replace=False)
    state = _include_all(X, y, var, ls, vb, bias, order)
    K = se_bias_kernel(X, X, var, ls, vb)
    active, p, m, _ = adf.active_sites(state)
    h, A = posterior_b_form(K, active, p, m)
    cols = np.arange(n)
    ent = scoring.compute_scores(scoring.SCORE_ENTROPY, y, state.h, state.diag_A, bias, cols,
                                 np.empty(n))
    info = scoring.compute_scores(scoring.SCORE_INFOGAIN, y, state.h, state.diag_A, bias,
                                  cols, np.empty(n))
    for j in range(n):
        if j in active:
            continue
        e_ref, kl_ref = brute_force_scores(A, h, y, bias, j)
        np.testing.assert_allclose(ent[j], e_ref, rtol=1e-10)
        np.testing.assert_allclose(info[j], kl_ref, rtol=1e-10)
    assert np.all(ent[np.setdiff1d(cols, active)] > 0)


def test_select_best_never_picks_active_on_ties_or_nan(rng):
    n = 20
    is_active = np.zeros(n, dtype=bool)
    is_active[[0, 3, 7]] = True
    cols = np.arange(n)
    key = rng.random(n)
    for scores in (np.zeros(n), np.full(n, np.nan), np.full(n, -np.inf)):
        t = scoring.select_best(scores, cols, is_active, key)
        assert not is_active[cols[t]]
        free = np.flatnonzero(~is_active)
        assert cols[t] == free[np.argmax(key[free])]
    scores = np.zeros(n)
    scores[[0, 3, 7]] = 10.0
    scores[5] = np.nan
    scores[9] = 1.0
    assert scoring.select_best(scores, cols, is_active, key) == 9
    assert scoring.select_best(scores, cols, np.ones(n, dtype=bool), key) == -1


def test_blas_column_equals_compiled_column(rng):
    X, y, var, ls, vb, bias = _problem(rng, n=40, ard=True)
    state = _include_all(X, y, var, ls, vb, bias, rng.choice(40, 12, replace=False))
    Xs, sq = adf.scaled_inputs(X, ls)
    cols = np.arange(40)
    for i in (0, 7, 33):
        ref = adf.adf_cov_column(X, var, ls, vb, *state, i, cols, np.empty(40))
        got = adf.cov_column_blas(Xs, sq, var, vb, state, i, np.empty(40))
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-13)
