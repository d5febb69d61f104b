"""Squared-exponential covariance in Python: allocation, jitter and gradient helpers.

These wrap the compiled kernels of :mod:`sparsegp._numba.covfuncs`; the parameters are natural
(signal variance ``s2``, length-scales ``l``), not logs. ``lengthscale`` is always an array of
shape (D,); isotropic models repeat one value and sum the per-dimension gradient.
"""
import numpy as np

from ._numba import covfuncs as _cf


def se_kernel(X, Z=None, variance=1.0, lengthscale=1.0):
    """k(X, Z) as a new (N, M) array; ``Z=None`` gives the symmetric k(X, X)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    Z = X if Z is None else np.ascontiguousarray(Z, dtype=np.float64)
    ls = _as_lengthscale(lengthscale, X.shape[1])
    out = np.empty((X.shape[0], Z.shape[0]))
    _cf.se_cross(X, Z, float(variance), ls, out)
    return out


def se_kernel_diag(X, variance=1.0):
    """diag k(X, X) = s2 for every row, shape (N,)."""
    return np.full(np.shape(X)[0], float(variance))


def kuu(Z, variance, lengthscale, jitter):
    """K_uu = k(Z, Z) + jitter * s2 * I (notes §0.2: jitter proportional to the variance)."""
    K = se_kernel(Z, None, variance, lengthscale)
    K[np.diag_indices_from(K)] += jitter * variance
    return K


def se_grad_contract(X, Z, K, W, lengthscale, symmetric=False):
    """Gradients of ``sum(W * K)`` with K = k(X, Z) (or K_uu if ``symmetric``).

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    K : ndarray of shape (N, M)
        The covariance k(X, Z) (without jitter; jitter scales with s2 only).
    W : ndarray of shape (N, M)
        Weights; for ``symmetric=True`` it must be symmetric and X is Z.
    lengthscale : ndarray of shape (D,)

    Returns
    -------
    grad_ls : ndarray of shape (D,)
        Per-dimension length-scale derivative (sum it for an isotropic kernel).
    grad_Z : ndarray of shape (M, D)
        Derivative with respect to the second argument (both arguments if ``symmetric``).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    K = np.ascontiguousarray(K, dtype=np.float64)
    ls = _as_lengthscale(lengthscale, X.shape[1])
    grad_ls = np.zeros(X.shape[1])
    grad_Z = np.zeros_like(Z)
    _cf.se_cross_grad(X, Z, K, W, ls, grad_ls, grad_Z)
    if symmetric:
        grad_Z *= 2.0
    return grad_ls, grad_Z


def _as_lengthscale(lengthscale, D):
    ls = np.asarray(lengthscale, dtype=np.float64)
    if ls.ndim == 0:
        return np.full(D, float(ls))
    return np.ascontiguousarray(ls)
