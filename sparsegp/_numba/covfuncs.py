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
"""
import math

import numba

from ._jit import jit

SE, MATERN12, MATERN32, MATERN52 = 0, 1, 2, 3
_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@jit
def unit_k(q, family):
    """g(q) of the table above: the covariance over s2 at squared scaled distance q."""
    if family == SE:
        return math.exp(-0.5 * q)
    r = math.sqrt(q)
    if family == MATERN12:
        return math.exp(-r)
    if family == MATERN32:
        a = _SQRT3 * r
        return (1.0 + a) * math.exp(-a)
    a = _SQRT5 * r
    return (1.0 + a + a * a / 3.0) * math.exp(-a)


@jit
def unit_g(q, family):
    """G(q) = -2 dg/dq of the table above (0 for Matérn 1/2 at q = 0)."""
    if family == SE:
        return math.exp(-0.5 * q)
    r = math.sqrt(q)
    if family == MATERN12:
        return math.exp(-r) / r if r > 0.0 else 0.0
    if family == MATERN32:
        return 3.0 * math.exp(-_SQRT3 * r)
    a = _SQRT5 * r
    return (5.0 / 3.0) * (1.0 + a) * math.exp(-a)


@jit(parallel=True)
def stationary_cross(X, Z, family, variance, lengthscale, deriv, out):
    """Fill ``out`` (N, M) with k(X[n], Z[m]), or with ``deriv`` its derivative factor
    s2 G(r²); X (N, D), Z (M, D), lengthscale (D,)."""
    N, D = X.shape
    M = Z.shape[0]
    for n in numba.prange(N):
        for m in range(M):
            s = 0.0
            for j in range(D):
                t = (X[n, j] - Z[m, j]) / lengthscale[j]
                s += t * t
            out[n, m] = variance * (unit_g(s, family) if deriv else unit_k(s, family))
    return out


@jit
def stationary_from_sqdist(Q, family, variance, K, G):
    """From squared scaled distances Q (N, M): ``K = s2 g(Q)`` and ``G = s2 G(Q)``.

    Either output may be Q itself: each entry of Q is read before it is written."""
    N, M = Q.shape
    for n in range(N):
        for m in range(M):
            q = Q[n, m]
            K[n, m] = variance * unit_k(q, family)
            G[n, m] = variance * unit_g(q, family)


@jit
def stationary_k_inplace(Q, family, variance):
    """Overwrite squared scaled distances Q (N, M) with K = s2 g(Q)."""
    N, M = Q.shape
    for n in range(N):
        for m in range(M):
            Q[n, m] = variance * unit_k(Q[n, m], family)


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
