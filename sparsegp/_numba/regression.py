"""Compiled row-wise passes for the sparse regression evidence gradient (notes §4.3).

The O(N M²) products stay in BLAS; these kernels do the O(N M) and O(N M D) passes that numpy
would spread over several N×M temporaries: forming the K_fu adjoint in place, and contracting
it with the SE derivatives. Each pass is a serial row-range kernel plus a ``parallel`` driver
over row chunks; callers use the serial form for small problems, where starting threads (and
OpenMP threads spinning against BLAS threads) costs more than the work.
"""
import math

import numba
import numpy as np

from ._jit import jit


@jit
def kfu_adjoint_rows(Y, alpha, p, d, dconst, Vt, lo, hi):
    """Rows lo..hi-1 in place: ``Y[n, m] <- alpha[n] p[m] - Y[n, m] - 2 (d[n] + dconst) Vt[n, m]``.

    With Y = U H on entry this is the matrix Y of ``sparsegp.regression._base`` (the K_fu
    adjoint before the right solve with L_u). ``d`` may have length 0 (then only ``dconst``).
    Y, Vt: (N, M); alpha, d: (N,) or (0,); p: (M,).
    """
    M = Y.shape[1]
    has_d = d.shape[0] == Y.shape[0]
    for n in range(lo, hi):
        dn = dconst
        if has_d:
            dn += d[n]
        a = alpha[n]
        for m in range(M):
            Y[n, m] = a * p[m] - Y[n, m] - 2.0 * dn * Vt[n, m]


@jit(parallel=True)
def kfu_adjoint_parallel(Y, alpha, p, d, dconst, Vt, n_chunks):
    """:func:`kfu_adjoint_rows` over all rows, ``n_chunks`` row chunks in parallel."""
    N = Y.shape[0]
    step = (N + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        kfu_adjoint_rows(Y, alpha, p, d, dconst, Vt, c * step, min(N, (c + 1) * step))


@jit
def se_grad_rows(X, Z, K, W, inv_l2, lo, hi, gls, gz):
    """Rows lo..hi-1 of the SE contraction; adds into gls (D,) and gz (M, D), returns sum(W K).

    For L = sum_nm W K with K = k(X, Z): gz accumulates dL/dz_mj = sum_n W K (x_nj − z_mj)/l_j²
    and gls accumulates sum W K (x_nj − z_mj)² / l_j² (divide by l_j for dL/dl_j).
    """
    M, D = Z.shape
    swk = 0.0
    for n in range(lo, hi):
        for m in range(M):
            pw = W[n, m] * K[n, m]
            swk += pw
            for j in range(D):
                diff = X[n, j] - Z[m, j]
                g = pw * diff * inv_l2[j]
                gz[m, j] += g
                gls[j] += g * diff
    return swk


@jit(parallel=True)
def se_grad_parallel(X, Z, K, W, inv_l2, n_chunks):
    """:func:`se_grad_rows` over all rows in ``n_chunks`` parallel chunks with private sums.

    Returns ``(gls (D,), gz (M, D), swk)`` with the same meaning as in :func:`se_grad_rows`.
    O(N M D) time, O(n_chunks M D) extra memory.
    """
    N, D = X.shape
    M = Z.shape[0]
    gls = np.zeros((n_chunks, D))
    gz = np.zeros((n_chunks, M, D))
    swk = np.zeros(n_chunks)
    step = (N + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        swk[c] = se_grad_rows(X, Z, K, W, inv_l2, c * step, min(N, (c + 1) * step),
                              gls[c], gz[c])
    return gls.sum(axis=0), gz.sum(axis=0), swk.sum()


@jit
def block_se_rows(X, idx, sizes, variance, lengthscale, out, lo, hi):
    """Blocks lo..hi-1 of the padded block covariances: ``out[b, i, j] = k(x_idx[b,i], x_idx[b,j])``.

    ``idx`` (nb, B) holds the training rows of each block, ``sizes`` (nb,) how many are real;
    padding entries of ``out`` (nb, B, B) are set to 0.
    """
    B = idx.shape[1]
    D = X.shape[1]
    for b in range(lo, hi):
        nbs = sizes[b]
        for i in range(B):
            for j in range(B):
                if i >= nbs or j >= nbs:
                    out[b, i, j] = 0.0
                elif j < i:
                    out[b, i, j] = out[b, j, i]
                else:
                    s = 0.0
                    xi = idx[b, i]
                    xj = idx[b, j]
                    for d in range(D):
                        t = (X[xi, d] - X[xj, d]) / lengthscale[d]
                        s += t * t
                    out[b, i, j] = variance * math.exp(-0.5 * s)


@jit(parallel=True)
def block_se_parallel(X, idx, sizes, variance, lengthscale, out, n_chunks):
    """:func:`block_se_rows` over all blocks in ``n_chunks`` parallel chunks."""
    nb = idx.shape[0]
    step = (nb + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        block_se_rows(X, idx, sizes, variance, lengthscale, out, c * step,
                      min(nb, (c + 1) * step))


@jit
def block_se_grad_ls(X, idx, sizes, K, G, inv_l2, gls):
    """Add sum_b sum_ij G[b,i,j] K[b,i,j] (x_i,d − x_j,d)² / l_d² into ``gls`` (D,).

    Divided by l_d this is the length-scale derivative of sum G ⊙ K over the PITC blocks.
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


@jit
def se_scaled_rows(Xs, Zs, variance, out, lo, hi):
    """Rows lo..hi-1 of ``out[n, m] = variance * exp(-½ ‖Xs[n] − Zs[m]‖²)``.

    Xs, Zs are the inputs already divided by the length-scales, which takes the divisions
    out of the O(N M D) loop (same values as ``covfuncs.se_cross`` up to rounding).
    """
    M, D = Zs.shape
    for n in range(lo, hi):
        for m in range(M):
            s = 0.0
            for j in range(D):
                t = Xs[n, j] - Zs[m, j]
                s += t * t
            out[n, m] = variance * math.exp(-0.5 * s)


@jit(parallel=True)
def se_scaled_parallel(Xs, Zs, variance, out, n_chunks):
    """:func:`se_scaled_rows` over all rows in ``n_chunks`` parallel chunks."""
    N = Xs.shape[0]
    step = (N + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        se_scaled_rows(Xs, Zs, variance, out, c * step, min(N, (c + 1) * step))
