"""Stationary covariances k(a, b) = s2 * g(r²), r² = sum_j (a_j - b_j)^2 / l_j^2, compiled.

One family switch serves every kernel of :mod:`sparsegp.kernels` (notes §0.3):

=====  ============  ============================================  ==========================
code   family        g(q), q = r²                                  G(q) = -2 dg/dq
=====  ============  ============================================  ==========================
0      SE            exp(-q/2)                                     exp(-q/2) (= g)
1      Matérn 1/2    exp(-r)                                       exp(-r) / r  (0 at r = 0)
2      Matérn 3/2    (1 + √3 r) exp(-√3 r)                         3 exp(-√3 r)
3      Matérn 5/2    (1 + √5 r + 5r²/3) exp(-√5 r)                 5/3 (1 + √5 r) exp(-√5 r)
=====  ============  ============================================  ==========================

With ``s2 * G`` in hand every derivative of a weighted sum L = Σ W ⊙ K is one contraction:
dL/dz_mj = Σ_n W s2 G (x_nj - z_mj) / l_j², dL/dl_j = Σ W s2 G (x_nj - z_mj)² / l_j³, and
dL/dx = minus the first, summed over m. For SE, s2 G is K itself, so callers pass K. Matérn 1/2
is not differentiable where two points coincide; its G is set to 0 there (a subgradient).

g and G are written once, in :func:`unit_kg`; every covariance of the library is s2 times its
value (:func:`stationary_value`). The squared distance q reaches it in four ways, which
differ only in rounding:

* **pairwise** (:func:`stationary_cross`, :func:`stationary_blocks_rows`): q from
  ((a − b) / l)² per pair; the kernel objects and the classifiers use this form;
* **row blocks** (:func:`stationary_rows`) for the fused regression passes: inputs divided by
  the length-scales once (Xs = X / l, Zs = Z / l, Zs transposed so the inner loop runs over
  the M columns and vectorises), q from (a/l − b/l)²;
* **formed from BLAS products** (:func:`stationary_from_sqdist`, :func:`gram_column`,
  :func:`se_stacked_from_cross`): |a|² + |b|² − 2 a·b (the IVM's and the stagewise columns,
  the multi-class stacked GEMM and ``sparsegp._covariance``'s GEMM form; SE only, as the
  square root of the Matérn forms would magnify the cancellation);
* **isotropic, cached** (:func:`stationary_from_iso_sqdist`): q = |a − b|² / l² from unscaled
  squared distances summed once from exact differences, reused while only s2 and l change
  (the stagewise eq. 4); any family.

The engines' fused loops call the forms at the bottom (one pair, one column, the row-block
contraction with a rank-one addend, the padded blocks' length-scale term, the isotropic
contraction of eq. 4) rather than forming a distance of their own; the forms over plain arrays
that are no loop are in :mod:`sparsegp._covariance` (``tests/test_kernel_layer.py``).

The row form once wrote SE as exp(log s2 − q/2). Writing it as s2 exp(−q/2) like
the others moved the seeded regression fits of ``benchmarks/compare_fits.py`` by at most
1.6e-12, except three fits that their own code does not fix to that level: DTC and SoR stop
at ``max_iter`` and move by 0.70 in the objective, FITC with CG by 1e-7, and perturbing y by
one part in 1e15 under the old code moved them by 0.70 and 4e-7 as well. Its time per
evaluation did not change (0.92-1.02 of the old form at N = 20 000).
"""
import math

import numba
import numpy as np

from ._jit import jit
from .blas import sum_parts

SE, MATERN12, MATERN32, MATERN52 = 0, 1, 2, 3
_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)
#: rows of one thread's share in :func:`stationary_cross` (a call costs about a row's work
#: at M = 10)
CROSS_BLOCK_ROWS = 32


@jit
def unit_kg(q, family):
    """``(g(q), G(q))`` of the table above, sharing one exponential (G = 0 for Matérn 1/2
    at q = 0)."""
    if family == SE:
        e = math.exp(-0.5 * q)
        return e, e
    r = math.sqrt(q)
    if family == MATERN12:
        e = math.exp(-r)
        return e, (e / r if r > 0.0 else 0.0)
    if family == MATERN32:
        a = _SQRT3 * r
        e = math.exp(-a)
        return (1.0 + a) * e, 3.0 * e
    a = _SQRT5 * r
    e = math.exp(-a)
    return (1.0 + a + a * a / 3.0) * e, (5.0 / 3.0) * (1.0 + a) * e


@jit
def stationary_value(q, family, variance, deriv):
    """s2 g(q), or with ``deriv`` the derivative factor s2 G(q), at squared scaled distance q."""
    return variance * unit_kg(q, family)[1 if deriv else 0]


@jit
def stationary_from_sqdist(d2, family, variance, out):
    """``out[i] = s2 g(max(d2[i], 0))`` over flat arrays (``out`` may be ``d2``).

    For squared scaled distances formed by BLAS as |a|² + |b|² − 2 a·b, whose cancellation
    can leave tiny distances below 0. SE only in practice: the square root of the Matérn
    forms turns that cancellation error into ~1e-8 near coincident points.
    """
    for i in range(d2.shape[0]):
        q = d2[i]
        if q < 0.0:
            q = 0.0
        out[i] = stationary_value(q, family, variance, False)
    return out


@jit(parallel=True)
def stationary_from_iso_sqdist(d2, inv_l2, family, variance, K, G, want_g):
    """``K[i] = s2 g(q)`` and, with ``want_g``, ``G[i] = s2 G(q)``, q = d2[i] * inv_l2.

    Flat arrays; ``d2`` holds unscaled squared distances summed from exact differences, so
    every family is safe (no cancellation). For an isotropic kernel evaluated many times on
    the same pairs with new (s2, l): the distances are formed once and each evaluation is one
    pass of g (the stagewise eq. 4 under conjugate gradients).
    """
    for i in numba.prange(d2.shape[0]):
        k, g = unit_kg(d2[i] * inv_l2, family)
        K[i] = variance * k
        if want_g:
            G[i] = variance * g


@jit
def scaled_sqdist(A, i, B, j, lengthscale):
    """q = sum_d ((A[i, d] − B[j, d]) / l_d)² for rows i of A (., D) and j of B (., D)."""
    s = 0.0
    for d in range(A.shape[1]):
        t = (A[i, d] - B[j, d]) / lengthscale[d]
        s += t * t
    return s


@jit
def stationary_cross_rows(X, ZT, family, variance, lengthscale, deriv, out, lo, hi):
    """Rows lo..hi-1 of :func:`stationary_cross`, in place; ``ZT`` (D, M) is Zᵀ, C-contiguous.

    Each entry is summed over d in order from the same ((x_d − z_d) / l_d)² terms as
    :func:`scaled_sqdist`, so the values are those of the per-pair loop bit for bit; running
    the inner loop over the M columns lets it vectorise, divisions included (3.7× at
    N = 5 000, M = 1 130, D = 169; 1.4× at D = 2, M = 100; one thread).
    """
    D, M = ZT.shape
    for n in range(lo, hi):
        for m in range(M):
            out[n, m] = 0.0
        for d in range(D):
            x = X[n, d]
            ld = lengthscale[d]
            for m in range(M):
                t = (x - ZT[d, m]) / ld
                out[n, m] += t * t
        for m in range(M):
            out[n, m] = stationary_value(out[n, m], family, variance, deriv)


@jit(parallel=True)
def stationary_cross(X, Z, family, variance, lengthscale, deriv, out):
    """Fill ``out`` (N, M) with k(X[n], Z[m]), or with ``deriv`` its derivative factor
    s2 G(r²); X (N, D), Z (M, D), lengthscale (D,). Pairwise form (module docstring)."""
    # the threads share blocks of CROSS_BLOCK_ROWS rows, each a call of the serial pass:
    # Numba does not inline the compiled functions a prange body calls, and calling the
    # per-entry helpers from here took twice the time of the same loop inlined (4.0 against
    # 1.8 ms at 1900 x 100, D = 2, one thread; issue 22's stagewise slowdown). Fixed-size
    # blocks rather than one per thread: numba.get_num_threads() would make this uncacheable.
    N = X.shape[0]
    ZT = np.ascontiguousarray(Z.T)
    n_blocks = (N + CROSS_BLOCK_ROWS - 1) // CROSS_BLOCK_ROWS
    for b in numba.prange(n_blocks):
        stationary_cross_rows(X, ZT, family, variance, lengthscale, deriv, out,
                              b * CROSS_BLOCK_ROWS, min(N, (b + 1) * CROSS_BLOCK_ROWS))
    return out


@jit
def stationary_rows(Xs, ZsT, family, variance, K, G, want_g, lo, hi):
    """Rows lo..hi-1 of K = k(X, Z), and with ``want_g`` of its derivative factor G, in place.

    Row-block form (module docstring): Xs (N, D) = X / l and ZsT (D, M) = (Z / l)ᵀ, C-contiguous.
    Writes K = s2 g(q) and, with ``want_g``, G = s2 G(q) (SE callers leave it off: their
    derivative factor is K itself). K, G: (N, M). Each row is
    finished while it is in cache, so a fused pass that goes on to use the rows (the
    regression's forward phase) reads them from cache, not memory.
    """
    D, M = ZsT.shape
    for n in range(lo, hi):
        for m in range(M):
            K[n, m] = 0.0
        for j in range(D):
            x = Xs[n, j]
            for m in range(M):
                t = x - ZsT[j, m]
                K[n, m] += t * t
        for m in range(M):
            k, g = unit_kg(K[n, m], family)
            K[n, m] = variance * k
            if want_g:
                G[n, m] = variance * g


@jit(parallel=True)
def stationary_rows_parallel(Xs, ZsT, family, variance, K, G, want_g, n_chunks):
    """:func:`stationary_rows` over all rows in ``n_chunks`` parallel chunks."""
    N = Xs.shape[0]
    step = (N + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        stationary_rows(Xs, ZsT, family, variance, K, G, want_g, c * step,
                        min(N, (c + 1) * step))


@jit
def stationary_blocks_rows(X, idx, sizes, family, variance, lengthscale, deriv, out, lo, hi):
    """Blocks lo..hi-1 of padded block covariances: ``out[b, i, j] = k(x_idx[b,i], x_idx[b,j])``.

    ``idx`` (nb, B) holds the rows of X (N, D) in each block, ``sizes`` (nb,) how many are
    real; padding entries of ``out`` (nb, B, B) are set to 0. With ``deriv`` the blocks hold
    the derivative factor s2 G(r²) instead. Pairwise form (module docstring); PITC's K_bb.
    """
    B = idx.shape[1]
    for b in range(lo, hi):
        nbs = sizes[b]
        for i in range(B):
            for j in range(B):
                if i >= nbs or j >= nbs:
                    out[b, i, j] = 0.0
                elif j < i:
                    out[b, i, j] = out[b, j, i]
                else:
                    q = scaled_sqdist(X, idx[b, i], X, idx[b, j], lengthscale)
                    out[b, i, j] = stationary_value(q, family, variance, deriv)


@jit(parallel=True)
def stationary_blocks_parallel(X, idx, sizes, family, variance, lengthscale, deriv, out,
                               n_chunks):
    """:func:`stationary_blocks_rows` over all blocks in ``n_chunks`` parallel chunks."""
    nb = idx.shape[0]
    step = (nb + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        stationary_blocks_rows(X, idx, sizes, family, variance, lengthscale, deriv, out,
                               c * step, min(nb, (c + 1) * step))


@jit
def stationary_grad(X, Z, G, W, lengthscale, grad_ls, grad_Z, grad_X, want_X):
    """Contract a weight matrix with the derivatives of K = k(X, Z).

    With ``L = sum_nm W[n, m] K[n, m]`` and G = s2 G(r²) of the module table (K itself for SE),
    adds into

    * ``grad_ls`` (D,): dL/dl_j = sum_nm W G (x_nj - z_mj)^2 / l_j^3;
    * ``grad_Z`` (M, D): dL/dz_mj = sum_n W G (x_nj - z_mj) / l_j^2;
    * ``grad_X`` (N, D), when ``want_X``: dL/dx_nj = -sum_m W G (x_nj - z_mj) / l_j^2.

    For K_uu = k(Z, Z) with a symmetric W, dL/dZ is twice ``grad_Z``. The variance derivative
    is sum(W K) / s2. Accumulates (``+=``) so several terms can share one output. O(N M D).
    """
    N, D = X.shape
    M = Z.shape[0]
    inv_l2 = 1.0 / (lengthscale * lengthscale)
    for n in range(N):
        for m in range(M):
            p = W[n, m] * G[n, m]
            if p == 0.0:
                continue
            for j in range(D):
                diff = X[n, j] - Z[m, j]
                g = p * diff * inv_l2[j]
                grad_Z[m, j] += g
                grad_ls[j] += g * diff / lengthscale[j]
                if want_X:
                    grad_X[n, j] -= g


@jit
def variance_gradient_rows(W, K):
    """Σ W ⊙ K over a block of rows, W and K (nb, M): the variance term of
    :func:`sparsegp._covariance.variance_gradient` (d/dlog s²) for a compiled row pass that
    holds one block of the adjoint at a time. Summed row after row, left to right, into one
    float: the order the FITC-EP evidence gradient's row pass always used (NumPy's pairwise
    sum of the Python form rounds differently)."""
    s = 0.0
    for i in range(W.shape[0]):
        for m in range(W.shape[1]):
            s += W[i, m] * K[i, m]
    return s


# ----------------------------------------------------------------------------------------------
# the forms the engines' fused loops call (issue 48: no engine forms its own distances)

@jit
def pair_value(X, a, b, family, variance, inv_ls):
    """k(x_a, x_b) = s2 g(|(x_a - x_b) / l|^2) for rows a, b of X (n, D); ``inv_ls`` = 1 / l.

    The ADF core's one-entry form (its catch-up and covariance columns): multiplying by the
    stored 1 / l rather than dividing is its rounding, kept.
    """
    s = 0.0
    for t in range(X.shape[1]):
        u = (X[a, t] - X[b, t]) * inv_ls[t]
        s += u * u
    return stationary_value(s, family, variance, False)


@jit
def scaled_column(Xs, i, family, variance, out):
    """``out[j] = s2 g(|Xs[j] - Xs[i]|^2)`` for every row j of the scaled inputs Xs (n, D).

    Exact differences: any family (the Matérn forms' square root forbids the GEMM form).
    """
    D = Xs.shape[1]
    for j in range(Xs.shape[0]):
        q = 0.0
        for t in range(D):
            u = Xs[j, t] - Xs[i, t]
            q += u * u
        out[j] = stationary_value(q, family, variance, False)
    return out


@jit(parallel=True)
def se_stacked_from_cross(cross, x2, z2, variance):
    """K[c, n, m] = s2_c exp(-(x2[c, n] + z2[c, m] - 2 cross[c, n, m]) / 2), in place of cross.

    The squared distances of scaled inputs from their norms and inner products (clipped at
    0 against rounding); ``cross`` (C, N, M) is overwritten with the covariances. SE only
    (module docstring: formed by the caller).
    """
    C, N, M = cross.shape
    for t in numba.prange(C * N):
        c = t // N
        n = t - c * N
        for m in range(M):
            d2 = x2[c, n] + z2[c, m] - 2.0 * cross[c, n, m]
            if d2 < 0.0:
                d2 = 0.0
            cross[c, n, m] = stationary_value(d2, SE, variance[c], False)


@jit
def contract_rows(Xs, ZsT, K, G, W, alpha, wt, gz, gq, cs, lo, hi):
    """Rows lo..hi-1 of the contraction of ``F = W + α wtᵀ`` with a stationary K, in place.

    With d_nmj = Xs[n, j] − Zs[m, j] (inputs divided by the length-scales) and G the
    derivative factor s² G(r²) of the module table (K itself for SE):
    ``gz[j, m] += Σ_n F_nm G_nm d_nmj``, ``gq[j, m] += Σ_n F_nm G_nm d_nmj²``,
    ``cs[m] += Σ_n F_nm K_nm``. For L = Σ F ⊙ K, dL/dz_mj = gz[j, m] / l_j,
    dL/dl_j = Σ_m gq[j, m] / l_j and dL/ds² = Σ_m cs[m] / s². The rank-one term α wtᵀ is
    added on the fly so the caller never forms it. K, G, W: (N, M); gz, gq: (D, M); cs: (M,).
    The row-block form of :func:`stationary_grad`, for the regression's fused passes.
    """
    D, M = ZsT.shape
    f = np.empty(M)
    for n in range(lo, hi):
        a = alpha[n]
        for m in range(M):
            fw = W[n, m] + a * wt[m]
            cs[m] += fw * K[n, m]
            f[m] = fw * G[n, m]
        for j in range(D):
            x = Xs[n, j]
            for m in range(M):
                t = x - ZsT[j, m]
                ft = f[m] * t
                gz[j, m] += ft
                gq[j, m] += ft * t


@jit(parallel=True)
def contract_parallel(Xs, ZsT, K, G, W, alpha, wt, n_chunks):
    """:func:`contract_rows` over all rows with private sums; returns ``(gz, gq, cs)``."""
    N = Xs.shape[0]
    D, M = ZsT.shape
    gz = np.zeros((n_chunks, D, M))
    gq = np.zeros((n_chunks, D, M))
    cs = np.zeros((n_chunks, M))
    step = (N + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        contract_rows(Xs, ZsT, K, G, W, alpha, wt, gz[c], gq[c], cs[c], c * step,
                      min(N, (c + 1) * step))
    return sum_parts(gz), sum_parts(gq), sum_parts(cs)


@jit
def blocks_grad_ls(X, idx, sizes, K, G, inv_l2, gls):
    """Add sum_b sum_ij G[b,i,j] K[b,i,j] (x_i,d − x_j,d)² / l_d² into ``gls`` (D,).

    With K the blocks' derivative factor s² G(r²) (the covariance itself for SE), divided by
    l_d this is the length-scale derivative of sum G ⊙ k over the padded blocks of
    :func:`stationary_blocks_rows` (PITC's K_bb).
    """
    D = X.shape[1]
    for b in range(idx.shape[0]):
        nbs = sizes[b]
        for i in range(nbs):
            xi = idx[b, i]
            for j in range(nbs):
                pw = G[b, i, j] * K[b, i, j]
                if pw == 0.0:
                    continue
                xj = idx[b, j]
                for d in range(D):
                    diff = X[xi, d] - X[xj, d]
                    gls[d] += pw * diff * diff * inv_l2[d]


@jit(parallel=True)
def iso_rank1_contractions(Wt, K, F, d2, g, w, q):
    """The two sums of Σ G ⊙ K's gradient for an isotropic kernel, G = g wᵀ − 2 diag(q) Wt.

    The weight G_ij = g_i w_j - 2 q_i Wt_ij is never formed. Returns
    ``(sum_ij G_ij K_ij, sum_ij G_ij F_ij d2_ij)``: the variance term, and the isotropic
    length-scale term before its 1 / l^3 (F the derivative factor s2 G(q), d2 the unscaled
    squared distances of :func:`stationary_from_iso_sqdist`). Wt, K, F, d2: (nc, d)
    C-contiguous; g, q (nc,); w (d,). The stagewise eq. 4 gradient's cross block.
    """
    nc, d = K.shape
    s_k = 0.0
    s_l = 0.0
    for i in numba.prange(nc):
        gi = g[i]
        qi = -2.0 * q[i]
        a = 0.0
        c = 0.0
        for j in range(d):
            gij = gi * w[j] + qi * Wt[i, j]
            a += gij * K[i, j]
            c += gij * F[i, j] * d2[i, j]
        s_k += a
        s_l += c
    return s_k, s_l


# ----------------------------------------------------------------------------------------------
# columns of k(X, X) over scaled inputs (called from Python: their SE form is BLAS)

def scaled_inputs(X, lengthscale):
    """(X / l, squared row norms of X / l): the precomputation of :func:`gram_column`."""
    Xs = np.ascontiguousarray(X / np.asarray(lengthscale, dtype=np.float64))
    return Xs, np.einsum("ij,ij->i", Xs, Xs)


def gram_column(Xs, sq_norms, i, family, variance, out):
    """``out = k(X, x_i)`` (n,) from the scaled inputs of :func:`scaled_inputs`.

    SE forms |a - b|^2 = |a|^2 + |b|^2 - 2 a.b with one gemv (at memory bandwidth, about twice
    the compiled loop's speed at n = 60 000; round-off differs from it at the 1e-15 level).
    The Matérn families take exact differences (:func:`scaled_column`): their square root
    turns the gemv form's ~1e-16 cancellation at (near-)coincident points into ~1e-8.
    """
    if family == SE:
        d2 = Xs @ Xs[i]
        d2 *= -2.0
        d2 += sq_norms
        d2 += sq_norms[i]
        stationary_from_sqdist(d2, SE, variance, out)
    else:
        scaled_column(Xs, i, family, variance, out)
    return out


def gram_columns(Xs, sq_norms, idx, family, variance, rows):
    """``rows[c] = k(X, x_idx[c])`` for every c: :func:`gram_column` as one GEMM for SE.

    ``rows`` (len(idx), n) C-contiguous. One GEMM reads Xs once for all the columns (blocked
    sums: round-off differs from the one-column form at the 1e-16 level).
    """
    if family == SE:
        Xi = Xs[idx]
        np.matmul(Xi, Xs.T, out=rows)
        rows *= -2.0
        rows += sq_norms
        rows += sq_norms[idx][:, None]
        flat = rows.reshape(-1)
        stationary_from_sqdist(flat, SE, variance, flat)
    else:
        for r in range(len(idx)):
            scaled_column(Xs, idx[r], family, variance, rows[r])
    return rows
