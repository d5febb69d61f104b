"""The stagewise classifier's outer loop (Algorithm 1, step 6 of seed 004): the NLP of eq. 4 and
its gradient with the active set and the sites fixed (notes §3.7), and the search over it.

Eq. 4 is the mean negative log predictive probability of the non-active points under the
model the inner loop (:mod:`sparsegp.classification._stagewise_select`) built; its value and
gradient in ``[log s2, log l, b]`` cost O(n d^2 + n d D) (:func:`nlp_eq4`). For an isotropic
kernel the squared distances of one active set (:func:`active_sqdist`) serve every evaluation
of one outer iteration. :func:`_optimise_hyper` runs the training driver on it for up to
``CG_MAXITER`` iterations. Used by the estimator (:mod:`sparsegp.classification._stagewise`).
"""
import numpy as np
from scipy import linalg as sla

from .. import _covariance as _cov
from .._numba import covfuncs as _cf
from .._numba.covfuncs import SE
from .._numba.probit import inv_mills_vec, log_ndtr_vec
from ..kernels import grad_contract, kernel_matrix
from .._optimize import maximize
from ._binary import theta_gradient, unpack_theta

#: Optimiser (CG) iterations per outer iteration on the NLP of eq. 4 (not stated in the paper;
#: notes §3.7).
CG_MAXITER = 20


def unpack_full(theta, D, ard, with_bias_variance=False):
    """``(s2, l (D,), b, v_b)`` of the full vector ``[log s2, log l (1 or D), (log v_b,) b]``;
    v_b is None without ``with_bias_variance``."""
    if not with_bias_variance:
        s2, ls, b, _ = unpack_theta(theta, D, ard)
        return s2, ls, b, None
    s2, ls, b, _ = unpack_theta(np.delete(theta, -2), D, ard)
    return s2, ls, b, float(np.exp(theta[-2]))


def nlp_eq4(theta, X, y, active, p, m, ard, gradient=False, family=SE, sqdist=None,
            with_bias_variance=False):
    """NLP of eq. 4 over the non-active points, and optionally d NLP / d theta.

    Parameters
    ----------
    theta : ndarray
        ``[log s2, log l (1 or D), b]`` (:func:`pack_theta`), or with
        ``with_bias_variance`` ``[log s2, log l, log v_b, b]`` (:func:`unpack_full`): the
        kernel plus the constant v_b in every entry.
    X : ndarray of shape (n, D)
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    active : ndarray of shape (d,), int
    p, m : ndarray of shape (d,)
        Fixed site parameters of the active points.
    ard : bool
    gradient : bool
    family : int, default=0
        Stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE).
    sqdist : tuple of ndarray, optional
        Isotropic kernels only: ``(d2_cu (n - d, d), d2_uu (d, d))`` from
        :func:`active_sqdist` for this ``active``; the covariances and the length-scale
        derivative are then one pass over them instead of new distances (the optimiser
        calls this function with the same active set at every step).

    Returns
    -------
    nlp : float
    grad : ndarray like theta or None

    With S = diag(sqrt(p)), B = I + S K_uu S = L L^T, C = S B^-1 S, w = C m:
    f_hat_i = k_iu w, A_ii = s2 - |L^-1 S k_ui|^2. Cost O(n d^2 + n d D).
    """
    n, D = X.shape
    s2, ls, b, vb = unpack_full(theta, D, ard, with_bias_variance)
    mask = np.ones(n, dtype=bool)
    mask[active] = False
    yc = y[mask]
    nc = yc.shape[0]
    if sqdist is None:
        Xu, Xc = X[active], X[mask]
        Kuu = kernel_matrix(Xu, Xu, family, s2, ls)
        Kcu = kernel_matrix(Xc, Xu, family, s2, ls)
    else:
        if ard:
            raise ValueError("sqdist holds isotropic distances; it cannot serve an ARD kernel")
        (Kcu, Fcu), (Kuu, Fuu) = (_cov.from_iso_sqdist(d2, family, s2, ls[0], gradient)
                                  for d2 in sqdist)
    # the stationary parts stay in Kcu, Kuu (the derivatives contract with them)
    Kcu_b, Kuu_b, prior = Kcu, Kuu, s2
    if vb is not None:
        Kcu_b, Kuu_b, prior = Kcu + vb, Kuu + vb, s2 + vb
    S = np.sqrt(p)
    B = np.eye(len(active)) + S[:, None] * Kuu_b * S[None, :]
    L = np.linalg.cholesky(B)
    # V is (d, nc) in Fortran order, the layout LAPACK's triangular solves use, so each solve
    # works in place; this function runs at every CG step, and its d x nc temporaries are what
    # it costs beyond the two solves
    V = np.multiply(Kcu_b.T, S[:, None], order="F")
    V = sla.solve_triangular(L, V, lower=True, overwrite_b=True, check_finite=False)
    c = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    f = c @ V
    A = np.maximum(prior - np.einsum("ij,ij->j", V, V), 0.0)
    s = np.sqrt(1.0 + A)
    z = yc * (f + b) / s
    nlp = -float(np.mean(log_ndtr_vec(z)))
    if not gradient:
        return nlp, None
    r = inv_mills_vec(z)
    g = r * yc / s                    # d log Phi / d f_hat_i
    q = -0.5 * r * z / (s * s)        # d log Phi / d A_ii
    w = S * sla.solve_triangular(L, c, trans="T", lower=True, check_finite=False)   # C m
    W = sla.solve_triangular(L, V, trans="T", lower=True, overwrite_b=True,
                             check_finite=False)
    W *= S[:, None]                   # C K_uc, in V's memory
    Wg = W @ g
    G_uu = -0.5 * (np.outer(Wg, w) + np.outer(w, Wg)) + (W * q) @ W.T
    scale = -1.0 / nc
    if sqdist is None:
        # G_cu = g w^T - 2 diag(q) W^T, built as one (nc, d) C-ordered array
        G_cu = W.T * (-2.0 * q)[:, None]
        G_cu += np.outer(g, w)
        sum_k = _cov.variance_gradient(G_cu, Kcu, order="dot")
        gl_cu, _ = grad_contract(Xc, Xu, Kcu, G_cu, family, s2, ls)
        gl_uu, _ = grad_contract(Xu, Xu, Kuu, G_uu, family, s2, ls, symmetric=True)
        g_ls = scale * (gl_cu + gl_uu)
    else:
        # q = d2 / l^2, so dK/dl = s2 G(q) q / l = s2 G(q) d2 / l^3 (covfuncs' table)
        sum_k, sum_l = _cf.iso_rank1_contractions(W.T, Kcu, Fcu, sqdist[0], g, w, q)
        sum_l += _cov.iso_contract(G_uu, Fuu, sqdist[1])
        g_ls = np.array([scale * sum_l / ls[0] ** 3])
    g_s2 = scale * ((sum_k + _cov.variance_gradient(G_uu, Kuu, order="dot")) / s2 + np.sum(q))
    g_b = scale * np.sum(g)
    grad = theta_gradient(g_s2, g_ls, g_b, s2, ls, ard)
    if vb is None:
        return nlp, grad
    # every entry's derivative by v_b is one: the sums of the adjoints of K_cu (G_cu =
    # g w^T - 2 diag(q) W^T), K_uu and diag A
    g_vb = scale * (np.sum(g) * np.sum(w) - 2.0 * float(q @ W.sum(axis=0)) + np.sum(G_uu)
                    + np.sum(q))
    return nlp, np.insert(grad, grad.size - 1, vb * g_vb)


def active_sqdist(X, active):
    """Unscaled squared distances ``(d2_cu (n - d, d), d2_uu (d, d))`` of the non-active rows
    (in order) to the active ones and among the active ones, for :func:`nlp_eq4`.

    Kept for one outer iteration: as large as K_cu itself (n = 4 000, d = 320: 10 MB)."""
    mask = np.ones(X.shape[0], dtype=bool)
    mask[active] = False
    Xu = X[active]
    return _cov.sqdist(X[mask], Xu), _cov.sqdist(Xu, Xu)


def _optimise_hyper(X, y, active, p, m, theta0, ard, family=SE, free=None, bounds=None,
                    method="cg", with_bias_variance=False):
    """``method`` ("cg" or "lbfgs") on the NLP of eq. 4 (Algorithm 1 step 6); returns
    (theta, nlp).

    ``free`` (bool mask over theta, default all True) selects the entries the optimiser moves;
    the others (kernel parameters held "fixed") keep their values in ``theta0``. ``bounds``
    (n_free, 2), optional, bound the free entries; CG meets them as the training driver does
    (:func:`sparsegp._optimize.maximize`: evaluated at the clipped point, result clipped).
    """
    free = np.ones(theta0.size, dtype=bool) if free is None else free
    sqdist = None if ard else active_sqdist(X, active)

    def evaluate(x, _warm):
        theta = theta0.copy()
        theta[free] = x
        nlp, grad = nlp_eq4(theta, X, y, active, p, m, ard, gradient=True, family=family,
                            sqdist=sqdist, with_bias_variance=with_bias_variance)
        return -nlp, -grad[free], None

    # one CG run per outer iteration of Algorithm 1: its cap is the algorithm's, not a fit's
    best = maximize(evaluate, theta0[free], method=method, bounds=bounds, max_iter=CG_MAXITER,
                    label="NLP eq. 4", warn_at_cap=False)
    theta = theta0.copy()
    theta[free] = best.theta
    return theta, -best.value
