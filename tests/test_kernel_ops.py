"""The kernel layer's operations (sparsegp._covariance, sparsegp._numba.covfuncs) against dense
formulas written here from the definitions, and their gradients against central differences.

These are the operations the engines call instead of forming distances and contractions of
their own (issue 48 item 1; tests/test_kernel_layer.py checks that they do).
"""
import numpy as np
import pytest

from sparsegp import _covariance as cov
from sparsegp._numba import covfuncs as cf

FAMILIES = (cf.SE, cf.MATERN12, cf.MATERN32, cf.MATERN52)


def dense(X, Z, family, s2, ls):
    """k(X, Z) from the family table, by explicit differences in NumPy."""
    r = np.sqrt(np.sum(((X[:, None, :] - Z[None, :, :]) / ls) ** 2, axis=-1))
    if family == cf.SE:
        return s2 * np.exp(-0.5 * r * r)
    if family == cf.MATERN12:
        return s2 * np.exp(-r)
    if family == cf.MATERN32:
        return s2 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
    return s2 * (1 + np.sqrt(5) * r + 5 * r * r / 3) * np.exp(-np.sqrt(5) * r)


def _data(N=23, M=7, D=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    Z = rng.normal(size=(M, D))
    ls = np.exp(rng.normal(size=D) * 0.3)
    return rng, X, Z, ls


def _central(f, x, h=1e-6):
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("symmetric", [False, True])
def test_log_gradient_matches_central_differences(family, symmetric):
    rng, X, Z, ls = _data()
    if symmetric:
        Z = X
    s2 = 1.7
    W = rng.normal(size=(X.shape[0], Z.shape[0]))
    if symmetric:
        W = W + W.T
    if family == cf.MATERN12 and symmetric:
        # Matérn 1/2 is not differentiable where two points coincide (the diagonal)
        np.fill_diagonal(W, 0.0)
    g_theta, g_Z, g_X = cov.log_gradient(X, Z, W, family, s2, ls, symmetric=symmetric,
                                         wrt_X=True)

    def L(theta):
        return np.sum(W * dense(X, Z, family, np.exp(theta[0]), np.exp(theta[1:])))
    np.testing.assert_allclose(g_theta, _central(L, np.r_[np.log(s2), np.log(ls)]),
                               rtol=1e-6, atol=1e-7)
    if symmetric:
        gx = _central(lambda x: np.sum(W * dense(x, x, family, s2, ls)), X)
        np.testing.assert_allclose(g_Z, gx, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g_X, gx, rtol=1e-6, atol=1e-7)
    else:
        gz = _central(lambda z: np.sum(W * dense(X, z, family, s2, ls)), Z)
        gx = _central(lambda x: np.sum(W * dense(x, Z, family, s2, ls)), X)
        np.testing.assert_allclose(g_Z, gz, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g_X, gx, rtol=1e-6, atol=1e-7)
    # isotropic and fixed parameters: the entries θ holds
    iso, _ = cov.log_gradient(X, Z, W, family, s2, ls, symmetric=symmetric, ard=False)
    assert iso.shape == (2,) and iso[1] == pytest.approx(np.sum(g_theta[1:]), rel=1e-13)
    only_l, _ = cov.log_gradient(X, Z, W, family, s2, ls, symmetric=symmetric,
                                 free_variance=False)
    np.testing.assert_array_equal(only_l, g_theta[1:])
    none, _ = cov.log_gradient(X, Z, W, family, s2, ls, symmetric=symmetric,
                               free_variance=False, free_lengthscale=False)
    assert none.shape == (0,)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("shape", [(20, 6, 3), (400, 30, 10), (400, 40, 3)])
def test_cross_by_size_every_form_matches_dense(family, shape):
    """Small (explicit differences), many features (GEMM) and the compiled loop."""
    N, M, D = shape
    rng, X, Z, ls = _data(N, M, D, seed=1)
    X *= 0.5
    K = cov.cross_by_size(X, Z, family, 1.3, ls)
    np.testing.assert_allclose(K, dense(X, Z, family, 1.3, ls), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("family", FAMILIES)
def test_grad_by_size_matches_grad_contract(family):
    rng, X, Z, ls = _data(400, 30, 10, seed=2)
    X *= 0.3
    Z *= 0.3
    K = cov.kernel_matrix(X, Z, family, 1.3, ls)
    W = rng.normal(size=K.shape)
    got = cov.grad_by_size(X, Z, K, W, family, 1.3, ls)
    ref = cov.grad_contract(X, Z, K, W, family, 1.3, ls)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(b).max())


@pytest.mark.parametrize("family", [cf.SE, cf.MATERN32])
@pytest.mark.parametrize("N", [30, 3000])
def test_stacked_cross_matches_per_class_dense(family, N):
    """The stacked GEMM (SE, large) and the per-class forms."""
    rng = np.random.default_rng(3)
    C, M, D = 3, 30, 12
    X = rng.normal(size=(N, D)) * 0.4
    Z = rng.normal(size=(C, M, D)) * 0.4
    s2 = np.array([0.5, 1.0, 2.0])
    ls = np.exp(rng.normal(size=(C, D)) * 0.2) * 2
    K = cov.stacked_cross(X, Z, family, s2, ls, 2)
    assert K.shape == (C, N, M) and K.flags.c_contiguous
    for c in range(C):
        np.testing.assert_allclose(K[c], dense(X, Z[c], family, s2[c], ls[c]), rtol=1e-11,
                                   atol=1e-14)


@pytest.mark.parametrize("family", FAMILIES)
def test_iso_sqdist_forms_match_dense(family):
    rng, X, Z, _ = _data(seed=4)
    d2 = cov.sqdist(X, Z)
    np.testing.assert_allclose(d2, np.sum((X[:, None] - Z[None]) ** 2, -1), rtol=1e-13)
    K, F = cov.from_iso_sqdist(d2, family, 1.4, 0.8, True)
    ls = np.full(3, 0.8)
    np.testing.assert_allclose(K, dense(X, Z, family, 1.4, ls), rtol=1e-12)
    np.testing.assert_allclose(F, cov.kernel_matrix(X, Z, family, 1.4, ls, deriv=True),
                               rtol=1e-12)
    K2, F2 = cov.from_iso_sqdist(d2, family, 1.4, 0.8, False)
    assert F2 is None and np.array_equal(K, K2)


@pytest.mark.parametrize("family", FAMILIES)
def test_columns_and_pairs_match_dense(family):
    rng, X, _, ls = _data(60, seed=5)
    Kd = dense(X, X, family, 1.2, ls)
    Xs, sq = cf.scaled_inputs(X, ls)
    for i in (0, 17):
        np.testing.assert_allclose(cf.gram_column(Xs, sq, i, family, 1.2, np.empty(60)),
                                   Kd[:, i], rtol=1e-12, atol=1e-12)
    idx = np.array([3, 9, 0, 59, 20, 21, 22, 23, 24])
    rows = cf.gram_columns(Xs, sq, idx, family, 1.2, np.empty((len(idx), 60)))
    np.testing.assert_allclose(rows, Kd[idx], rtol=1e-12, atol=1e-12)
    assert cf.pair_value(X, 4, 11, family, 1.2, 1.0 / ls) == pytest.approx(Kd[4, 11],
                                                                         rel=1e-13)
    x2 = np.einsum("nd,nd->n", X[:3] / ls, X[:3] / ls)
    Zs = X[10:14] / ls
    cross = np.stack([(X[:3] / ls) @ Zs.T] * 2)
    K = cross.copy()
    cf.se_stacked_from_cross(K, np.stack([x2] * 2), np.stack([np.sum(Zs * Zs, 1)] * 2),
                             np.array([1.2, 0.6]))
    ref = dense(X[:3], X[10:14], cf.SE, 1.0, ls)
    np.testing.assert_allclose(K, np.stack([1.2 * ref, 0.6 * ref]), rtol=1e-12)


@pytest.mark.parametrize("family", FAMILIES)
def test_fused_contractions_match_dense_sums(family):
    """contract_rows / contract_parallel (W + α wtᵀ), blocks_grad_ls, iso_rank1_contractions."""
    rng, X, Z, ls = _data(50, 8, 3, seed=6)
    s2 = 1.3
    K = dense(X, Z, family, s2, ls)
    G = cov.kernel_matrix(X, Z, family, s2, ls, deriv=True)
    W = rng.normal(size=K.shape)
    alpha, wt = rng.normal(size=50), rng.normal(size=8)
    F = W + np.outer(alpha, wt)
    Xs, ZsT = X / ls, np.ascontiguousarray((Z / ls).T)
    D, M = ZsT.shape
    gz, gq, cs = np.zeros((D, M)), np.zeros((D, M)), np.zeros(M)
    cf.contract_rows(Xs, ZsT, K, G, W, alpha, wt, gz, gq, cs, 0, 50)
    g_ls, g_Z = cov.grad_contract(X, Z, K, F, family, s2, ls)
    np.testing.assert_allclose(gz.T / ls, g_Z, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(gq.sum(1) / ls, g_ls, rtol=1e-11)
    np.testing.assert_allclose(cs.sum(), np.sum(F * K), rtol=1e-12)
    for a, b in zip(cf.contract_parallel(Xs, ZsT, K, G, W, alpha, wt, 3), (gz, gq, cs)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)

    # padded blocks: two blocks of the rows of X, the second one short
    idx = np.array([[0, 1, 2, 3], [4, 5, 6, -1]])
    sizes = np.array([4, 3])
    Kb = np.zeros((2, 4, 4))
    cf.stationary_blocks_rows(X, idx, sizes, family, s2, ls, True, Kb, 0, 2)
    Wb = rng.normal(size=(2, 4, 4))
    gls = np.zeros(3)
    cf.blocks_grad_ls(X, idx, sizes, Kb, Wb, 1.0 / ls ** 2, gls)
    ref = np.zeros(3)
    for b in range(2):
        r = idx[b, :sizes[b]]
        ref += cov.grad_contract(X[r], X[r], dense(X[r], X[r], family, s2, ls),
                                 Wb[b, :sizes[b], :sizes[b]], family, s2, ls)[0] * ls
    np.testing.assert_allclose(gls, ref, rtol=1e-11)

    # isotropic rank-one-plus-scaled weights G = g wᵀ − 2 diag(q) Wt
    l = 0.9
    d2 = cov.sqdist(X, Z)
    Ki, Fi = cov.from_iso_sqdist(d2, family, s2, l, True)
    g, q, w = rng.normal(size=50), rng.normal(size=50), rng.normal(size=8)
    Wt = rng.normal(size=(50, 8))
    Gw = np.outer(g, w) - 2 * q[:, None] * Wt
    s_k, s_l = cf.iso_rank1_contractions(Wt, Ki, Fi, d2, g, w, q)
    assert s_k == pytest.approx(np.sum(Gw * Ki), rel=1e-12)
    assert s_l == pytest.approx(np.sum(Gw * Fi * d2), rel=1e-12)
    # the length-scale term over l^3 is dL/dl (central difference of Σ G ⊙ K)
    fd = _central(lambda v: np.sum(Gw * cov.from_iso_sqdist(d2, family, s2, v[0], False)[0]),
                  [l])[0]
    assert s_l / l ** 3 == pytest.approx(fd, rel=1e-6)


@pytest.mark.parametrize("family", FAMILIES)
def test_variance_gradient_every_order(family):
    """d/dlog s² of Σ W ⊙ K (central difference) in each summation order the engines use:
    NumPy's pairwise sum, BLAS's dot ("dot", exactly np.vdot) and the compiled row passes'
    row-after-row sum (exactly a Python loop in that order)."""
    rng, X, Z, ls = _data(31, 9, 3, seed=7)
    s2 = 0.8
    K = cov.kernel_matrix(X, Z, family, s2, ls)
    W = rng.normal(size=K.shape)
    g = cov.variance_gradient(W, K)
    fd = _central(lambda t: np.sum(W * dense(X, Z, family, np.exp(t[0]), ls)),
                  [np.log(s2)])[0]
    assert g == pytest.approx(fd, rel=1e-7)
    assert cov.variance_gradient(W, K, order="dot") == float(np.vdot(W, K))
    assert cov.variance_gradient(W, K, order="dot") == pytest.approx(g, rel=1e-13)
    s = 0.0
    for i in range(10, 20):
        for m in range(K.shape[1]):
            s += W[i, m] * K[i, m]
    assert cf.variance_gradient_rows(W[10:20], K[10:20]) == s
    total = sum(cf.variance_gradient_rows(W[a:a + 8], K[a:a + 8]) for a in range(0, 31, 8))
    assert total == pytest.approx(g, rel=1e-13)
