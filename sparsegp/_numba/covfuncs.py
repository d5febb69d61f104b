"""Squared-exponential covariance (isotropic or ARD) and its derivative contractions.

k(a, b) = s2 * exp(-0.5 * sum_j (a_j - b_j)^2 / l_j^2). Isotropic kernels pass a length-scale
vector with D equal entries; the isotropic gradient is the sum of the ARD one (notes §0.3).
"""
import math

import numba

from ._jit import jit


@jit(parallel=True)
def se_cross(X, Z, variance, lengthscale, out):
    """Fill ``out`` (N, M) with k(X[n], Z[m]); X (N, D), Z (M, D), lengthscale (D,)."""
    N, D = X.shape
    M = Z.shape[0]
    for n in numba.prange(N):
        for m in range(M):
            s = 0.0
            for j in range(D):
                t = (X[n, j] - Z[m, j]) / lengthscale[j]
                s += t * t
            out[n, m] = variance * math.exp(-0.5 * s)
    return out


@jit
def se_cross_grad(X, Z, K, W, lengthscale, grad_ls, grad_Z):
    """Contract a weight matrix with the derivatives of K = k(X, Z).

    With ``L = sum_nm W[n, m] K[n, m]`` (K held fixed in value, W given), adds into

    * ``grad_ls`` (D,): dL/dl_j = sum_nm W K (x_nj - z_mj)^2 / l_j^3;
    * ``grad_Z`` (M, D): dL/dz_mj = sum_n W K (x_nj - z_mj) / l_j^2.

    The derivative with respect to X is minus the same sum taken over m; for K_uu = k(Z, Z)
    with a symmetric W, dL/dZ is twice ``grad_Z``. The variance derivative is sum(W K) / s2.
    Accumulates (``+=``) so several terms can share one output buffer. O(N M D).
    """
    N, D = X.shape
    M = Z.shape[0]
    inv_l2 = 1.0 / (lengthscale * lengthscale)
    for n in range(N):
        for m in range(M):
            p = W[n, m] * K[n, m]
            if p == 0.0:
                continue
            for j in range(D):
                diff = X[n, j] - Z[m, j]
                g = p * diff * inv_l2[j]
                grad_Z[m, j] += g
                grad_ls[j] += g * diff / lengthscale[j]


@jit
def se_cross_grad_X(X, Z, K, W, lengthscale, grad_X):
    """Add dL/dX (N, D) for ``L = sum W K`` into ``grad_X``; see :func:`se_cross_grad`."""
    N, D = X.shape
    M = Z.shape[0]
    for n in range(N):
        for m in range(M):
            p = W[n, m] * K[n, m]
            for j in range(D):
                grad_X[n, j] -= p * (X[n, j] - Z[m, j]) / (lengthscale[j] * lengthscale[j])
