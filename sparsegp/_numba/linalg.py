"""Triangular algebra for lower Cholesky factors ``L`` with ``A = L L^T``.

Numba has ``np.linalg.cholesky`` but no triangular solve, so the substitutions live here.
The rank-one downdate checks feasibility (``||L^{-1} x|| < 1``) before writing anything, so a
failed downdate leaves ``L`` exactly as it was and the caller can fall back to a refresh.
"""
import math

from ._jit import jit

#: A downdate is refused when 1 - ||L^{-1} x||^2 falls below this: the result would be
#: singular to working precision.
DOWNDATE_MARGIN = 1e-12


@jit
def solve_lower_inplace(L, b):
    """Overwrite ``b`` (n,) with ``L^{-1} b`` (forward substitution). O(n^2)."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * b[k]
        b[i] = s / L[i, i]
    return b


@jit
def solve_lower_t_inplace(L, b):
    """Overwrite ``b`` (n,) with ``L^{-T} b`` (back substitution on L^T). O(n^2)."""
    n = L.shape[0]
    for i in range(n - 1, -1, -1):
        s = b[i]
        for k in range(i + 1, n):
            s -= L[k, i] * b[k]
        b[i] = s / L[i, i]
    return b


@jit
def chol_update_rank1(L, x):
    """In place ``L <- chol(L L^T + x x^T)``; ``x`` (n,) is overwritten. Never fails. O(n^2)."""
    n = L.shape[0]
    for k in range(n):
        lkk = L[k, k]
        r = math.hypot(lkk, x[k])
        c = r / lkk
        s = x[k] / lkk
        L[k, k] = r
        for i in range(k + 1, n):
            L[i, k] = (L[i, k] + s * x[i]) / c
            x[i] = c * x[i] - s * L[i, k]


@jit
def chol_downdate_rank1(L, x, work):
    """In place ``L <- chol(L L^T - x x^T)`` if that matrix is positive definite.

    Parameters
    ----------
    L : ndarray of shape (n, n)
        Lower factor with positive diagonal; modified only on success.
    x : ndarray of shape (n,)
        Overwritten with ``L^{-1} x``.
    work : ndarray of shape (2 n,)
        Scratch for the rotation cosines and sines.

    Returns
    -------
    ok : bool
        False, with ``L`` untouched, when ``L L^T - x x^T`` is not positive definite.
    """
    n = L.shape[0]
    solve_lower_inplace(L, x)
    nrm2 = 0.0
    for i in range(n):
        nrm2 += x[i] * x[i]
    rho2 = 1.0 - nrm2
    if not (rho2 > DOWNDATE_MARGIN):  # also catches NaN
        return False
    alpha = math.sqrt(rho2)
    # Rotations that fold the vector (x, alpha) onto (0, 1), from the last entry upwards.
    for i in range(n - 1, -1, -1):
        scale = alpha + abs(x[i])
        a = x[i] / scale
        b = alpha / scale
        norm = math.sqrt(a * a + b * b)
        work[i] = b / norm
        work[n + i] = a / norm
        alpha = scale * norm
    # Apply them to each row j of L (= column j of R = L^T); entries above the diagonal are 0.
    for j in range(n):
        xx = 0.0
        for i in range(j, -1, -1):
            c = work[i]
            s = work[n + i]
            t = c * xx + s * L[j, i]
            L[j, i] = c * L[j, i] - s * xx
            xx = t
    # Keep the diagonal positive (a column sign flip leaves L L^T unchanged).
    for k in range(n):
        if L[k, k] < 0.0:
            for i in range(k, n):
                L[i, k] = -L[i, k]
    return True


@jit
def logdet_from_chol(L):
    """``log det(L L^T)`` = 2 sum log diag(L)."""
    s = 0.0
    for i in range(L.shape[0]):
        s += math.log(L[i, i])
    return 2.0 * s
