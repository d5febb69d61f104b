"""The exact multi-class likelihood's pieces every engine shares (notes multiclass_ep.md §1.2,
§6).

The likelihood of label y is prod_{k != y} Theta(f_y - f_k); the engines approximate it by
pairwise factors, whose number per class is :func:`class_counts_factors`, and predict with
the exact form by 1-D quadrature (:func:`class_probabilities`).
"""
import functools

import numpy as np

from ..._numba import multiclass as _nbmc


def class_counts_factors(y_index, C):
    """n_c = (N - N_c) + N_c (C - 1): number of pairwise factors touching each class (§1.2)."""
    Nc = np.bincount(y_index, minlength=C).astype(np.float64)
    return (Nc.sum() - Nc) + Nc * (C - 1)


# --------------------------------------------------------------------------------------------
# class probabilities by 1-D quadrature (notes §6)
# --------------------------------------------------------------------------------------------
#: Bound on the quadrature error of one probability that fixes the Gauss-Legendre order
QUAD_TOL = 1e-13


def quadrature_error_bound(order, n_factors, panel=2.0, n_sd=8.5):
    """Bound on the Gauss-Legendre error of one class probability (see
    :func:`sparsegp._numba.multiclass._class_integral`, which derives it).

    Parameters
    ----------
    order : int
        Gauss-Legendre nodes per panel.
    n_factors : int
        Most Phi factors in play on one piece of the range (at most C - 1).
    panel, n_sd : float
        As in :func:`class_probabilities`.

    Returns
    -------
    float
        min over rho > 1 of (64/15) z phi(0) e^{Y^2/2} K^m rho^{2-2n} / (rho^2 - 1), on a
        grid of rho (any rho gives a valid bound, so the grid only makes it less tight).
    """
    rho = np.exp(np.linspace(1e-3, 5.0, 2000))
    Y = panel * (rho - 1.0 / rho) / 4.0
    phi0 = 1.0 / np.sqrt(2.0 * np.pi)
    with np.errstate(over="ignore"):
        log_k = np.log1p(Y * np.exp(0.5 * Y * Y) * phi0)
        log_b = (np.log(64.0 / 15.0 * n_sd * phi0) + 0.5 * Y * Y + n_factors * log_k
                 + (2.0 - 2.0 * order) * np.log(rho) - np.log(rho * rho - 1.0))
    return float(np.exp(np.min(log_b)))


@functools.lru_cache(maxsize=None)
def gauss_legendre_order(n_classes, panel=2.0, n_sd=8.5, tol=QUAD_TOL):
    """Fewest Gauss-Legendre nodes per panel whose error bound is below ``tol``.

    Returns
    -------
    nodes, weights : ndarray of shape (n,)
        The rule on [-1, 1], n the order chosen for ``n_classes - 1`` factors (n >= 4).
    """
    order = 4
    while quadrature_error_bound(order, max(n_classes - 1, 1), panel, n_sd) > tol:
        order += 1
    nodes, weights = np.polynomial.legendre.leggauss(order)
    return np.ascontiguousarray(nodes), np.ascontiguousarray(weights)


def class_probabilities(mean, var, n_sd=8.5, panel=2.0, only=None):
    """p(y = c) = int N(f | mu_c, v_c) prod_{j != c} Phi((f - mu_j) / sqrt(v_j)) df.

    Exact likelihood (1) under independent Gaussian latents (notes §6, eq. 11), by composite
    Gauss-Legendre quadrature in t = (f - mu_c) / sd_c, cut where each Phi factor changes and
    with panels scaled to the narrowest factor in play there
    (:func:`sparsegp._numba.multiclass._class_integral`). The error of each entry is below
    :data:`QUAD_TOL` plus (C + 1) Phi(-n_sd) by a bound that holds for any standard
    deviations, and the cost per entry does not grow with their ratios. Rows are not
    renormalised: they sum to one within the same error.

    Parameters
    ----------
    mean, var : ndarray of shape (N, C)
        Latent means and variances (variances > 0; a row with a non-finite entry gives NaN).
    n_sd : float, default=8.5
        Half-width of the range, and of each factor's window, in standard deviations.
    panel : float, default=2.0
        Panel length in units of the narrowest standard deviation in play.
    only : ndarray of shape (N,) of int, optional
        Compute only column ``only[i]`` of row i (others NaN); e.g. the true class for a test NLL.

    Returns
    -------
    P : ndarray of shape (N, C)
    """
    mean = np.ascontiguousarray(mean, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.ascontiguousarray(var, dtype=np.float64), 1e-300))
    if mean.ndim != 2 or mean.shape != sd.shape:
        raise ValueError(f"mean and var must be 2-D of equal shape; got {mean.shape}, {sd.shape}")
    N, C = mean.shape
    only_arr = (np.full(N, -1, dtype=np.int64) if only is None
                else np.ascontiguousarray(only, dtype=np.int64))
    nodes, weights = gauss_legendre_order(C, float(panel), float(n_sd))
    out = np.empty_like(mean)
    _nbmc.quad_class_probs(mean, sd, only_arr, float(n_sd), float(panel), nodes, weights, out)
    return out


def true_class_probability(mean, var, y_index, **kwargs):
    """p(y_i = y_index[i]) for every row, shape (N,); see :func:`class_probabilities`."""
    y_index = np.asarray(y_index, dtype=np.int64)
    P = class_probabilities(mean, var, only=y_index, **kwargs)
    return P[np.arange(P.shape[0]), y_index]
