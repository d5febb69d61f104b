"""Compiled row-wise passes for the sparse regression evidence gradient (notes §4.3).

The O(N M²) products stay in BLAS; these kernels do the O(N M) and O(N M D) passes that numpy
would spread over several N×M temporaries: forming the K_fu adjoint in place, and contracting
it with the SE derivatives in parallel over row chunks.
"""
import math

import numba
import numpy as np

from ._jit import jit


@jit
def se_cross_serial(X, Z, variance, lengthscale, out):
    """Fill ``out`` (N, M) with k(X[n], Z[m]) on one thread (small blocks: no thread start-up).

    Same formula as :func:`sparsegp._numba.covfuncs.se_cross`.
    """
    N, D = X.shape
    M = Z.shape[0]
    for n in range(N):
        for m in range(M):
            s = 0.0
            for j in range(D):
                t = (X[n, j] - Z[m, j]) / lengthscale[j]
                s += t * t
            out[n, m] = variance * math.exp(-0.5 * s)
    return out


@jit(parallel=True)
def form_kfu_adjoint(Y, alpha, p, d, dconst, Vt):
    """In place: ``Y[n, m] <- alpha[n] p[m] - Y[n, m] - 2 (d[n] + dconst) Vt[n, m]``.

    With Y = U H on entry this is the matrix Y of ``sparsegp.regression._base`` (the K_fu
    adjoint before the right solve with L_u). ``d`` may have length 0 (then only ``dconst``).
    Y, Vt: (N, M); alpha, d: (N,); p: (M,).
    """
    N, M = Y.shape
    has_d = d.shape[0] == N
    for n in numba.prange(N):
        dn = dconst
        if has_d:
            dn += d[n]
        a = alpha[n]
        for m in range(M):
            Y[n, m] = a * p[m] - Y[n, m] - 2.0 * dn * Vt[n, m]


@jit(parallel=True)
def se_cross_grad_parallel(X, Z, K, W, lengthscale, n_chunks):
    """Parallel version of ``covfuncs.se_cross_grad`` that also returns sum(W K).

    Returns ``(grad_ls (D,), grad_Z (M, D), swk)`` for L = sum_nm W[n, m] K[n, m] with
    K = k(X, Z): dL/dl_j = sum W K (x_nj − z_mj)² / l_j³, dL/dz_mj = sum_n W K (x_nj − z_mj) / l_j²
    and swk = sum W K (= s² dL/ds²). Rows are split into ``n_chunks`` chunks, each with its own
    accumulators (no races), summed at the end. O(N M D) time, O(n_chunks M D) extra memory.
    """
    N, D = X.shape
    M = Z.shape[0]
    inv_l2 = 1.0 / (lengthscale * lengthscale)
    gls = np.zeros((n_chunks, D))
    gz = np.zeros((n_chunks, M, D))
    swk = np.zeros(n_chunks)
    step = (N + n_chunks - 1) // n_chunks
    for c in numba.prange(n_chunks):
        lo = c * step
        hi = min(N, lo + step)
        for n in range(lo, hi):
            for m in range(M):
                pw = W[n, m] * K[n, m]
                swk[c] += pw
                for j in range(D):
                    diff = X[n, j] - Z[m, j]
                    g = pw * diff * inv_l2[j]
                    gz[c, m, j] += g
                    gls[c, j] += g * diff
    grad_ls = np.zeros(D)
    grad_Z = np.zeros((M, D))
    total = 0.0
    for c in range(n_chunks):
        total += swk[c]
        for j in range(D):
            grad_ls[j] += gls[c, j] / lengthscale[j]
            for m in range(M):
                grad_Z[m, j] += gz[c, m, j]
    return grad_ls, grad_Z, total
