"""A binary IVM given its active set and sites: predictions (seed 003 eq. 5) and the
approximate marginal likelihood (notes §2.6).

:class:`_BinaryIVM` is what a fitted task keeps; :func:`one_vs_rest_proba` couples the
c-against-rest tasks of a multi-class fit. :func:`approx_log_likelihood` is the toolbox's
"approximate log likelihood" log N(m_I | 0, K_II + Pi_I^-1), the objective of the evidence
search (:mod:`sparsegp.classification._ivm_search`) and the estimator's ``log_evidence_``
(B-form, with the constant -d/2 log 2 pi, at the final active set and sites); it is NOT an EP
evidence. Sites with p = 0 (points classified with certainty, whose Gaussian site is flat) are
left out of it.
"""
from dataclasses import dataclass

import numpy as np
from scipy import linalg as sla
from scipy import special

from .. import kernels as _kernels
from .._covariance import variance_gradient
from .._config import PREDICT_BLOCK as _PREDICT_BLOCK
from .._numba import adf as _adf
from .._numba.covfuncs import SE


@dataclass
class _BinaryIVM:
    """A fitted binary IVM: everything eq. 5 needs, plus the fit's summary.

    Inputs and length-scales are in the model units of the fit (:mod:`sparsegp._scaling`).
    """

    active: np.ndarray       # (d,) int64, inclusion order
    X_active: np.ndarray     # (d, D)
    p: np.ndarray            # (d,) site precisions
    m: np.ndarray            # (d,) site means
    L: np.ndarray            # (d, d) lower, L L^T = I + S K_II S
    w: np.ndarray            # (d,) S B^-1 S m (eq. 5)
    variance: float
    lengthscale: np.ndarray  # (D,)
    bias_variance: float
    bias: float
    log_evidence: float
    n_iter: int
    family: int = SE         # stationary family code of sparsegp._numba.covfuncs
    # the end-of-fit check's numbers, over the judged training rows (judged_rows)
    judged_z: np.ndarray = None      # probit arguments (f + b) / sqrt(1 + A) of those rows
    train_log_loss: float = np.nan   # mean -log p(y_i | x_i)
    class_entropy: float = np.nan    # entropy of their class frequencies (nats)
    proba_spread: float = np.nan     # s.d. of p(y = +1 | x_i)

    def latent(self, X):
        """(mean, var) of f* at the rows of X (eq. 5): O(d) mean, O(d^2) variance each."""
        S = np.sqrt(self.p)
        n = X.shape[0]
        mean = np.empty(n)
        var = np.empty(n)
        for start in range(0, n, _PREDICT_BLOCK):
            stop = min(n, start + _PREDICT_BLOCK)
            Kx = _kernels.kernel_matrix(self.X_active, X[start:stop], self.family,
                                        self.variance, self.lengthscale) + self.bias_variance
            mean[start:stop] = self.w @ Kx
            V = sla.solve_triangular(self.L, S[:, None] * Kx, lower=True, check_finite=False)
            var[start:stop] = self.variance + self.bias_variance - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def probit_argument(self, X):
        """z = (mu + b) / sqrt(1 + sigma^2) at the rows of X, shape (n,): P(y = +1 | x) =
        Phi(z)."""
        mean, var = self.latent(X)
        return (mean + self.bias) / np.sqrt(1.0 + var)

    def log_proba_positive(self, X):
        """log P(y = +1 | x) = log Phi((mu + b) / sqrt(1 + sigma^2)), shape (n,)."""
        return special.log_ndtr(self.probit_argument(X))


def one_vs_rest_proba(Z):
    """Class probabilities from the c-against-rest IVMs' probit arguments.

    The tasks are independent binary models; the label is class c exactly when task c says
    +1 and every other task -1. Conditioned on exactly one task saying +1,
    P(c) = P_c(+) prod_{k != c} P_k(-) / sum_j (...) = odds_c / sum_j odds_j, with
    odds_c = P_c(+) / P_c(-). Normalising the P_c(+) themselves (the earlier rule) leaves
    every other task's P_k(+) in the denominator: on standardised digits, ten tasks at
    P_k(+) ~ 0.3 far from their active sets gave a median largest probability of 0.25.
    The argmax, hence ``predict``, is that of P_c(+) (odds are increasing in it).

    Parameters
    ----------
    Z : ndarray of shape (n_samples, n_classes)
        z_c = (mu_c + b_c) / sqrt(1 + sigma_c^2), P_c(+) = Phi(z_c).

    Returns
    -------
    P : ndarray of shape (n_samples, n_classes)
        Rows sum to 1.
    """
    # log odds = log Phi(z) - log Phi(-z), exact in both tails; normalised in log space so
    # that a row of tiny odds does not become 0/0
    log_odds = special.log_ndtr(Z) - special.log_ndtr(-Z)
    log_odds -= log_odds.max(axis=1, keepdims=True)
    P = np.exp(log_odds)
    return P / P.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------------------------
# approximate marginal likelihood (notes §2.6)


def approx_log_likelihood(X_active, p, m, variance, lengthscale, bias_variance, grad=False,
                          family=SE):
    """log N(m_I | 0, K_II + Pi_I^-1) in the B-form, optionally with its gradient.

    Parameters
    ----------
    X_active : ndarray of shape (d, D)
    p, m : ndarray of shape (d,)
        Site precisions (> 0; callers drop p = 0 sites) and means.
    variance : float
    lengthscale : ndarray of shape (D,)
    bias_variance : float
    grad : bool
    family : int, default=0
        Stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE).

    Returns
    -------
    value : float
        -1/2 log|B| + 1/2 sum log p - 1/2 m^T S B^-1 S m - d/2 log 2 pi, B = I + S K_II S.
    g_variance : float
        d value / d s2 (only if ``grad``).
    g_lengthscale : ndarray of shape (D,)
        d value / d l_j per dimension (only if ``grad``).
    g_bias_variance : float
        d value / d v_b (only if ``grad``): dK_II/dv_b is the all-ones matrix, so the sum of
        the adjoint's entries (notes §2.7).
    g_noise : float
        d value / d delta for K_II + Pi_I^-1 + delta I (only if ``grad``): the adjoint's trace.
    """
    d = p.size
    S = np.sqrt(p)
    X_active = np.ascontiguousarray(X_active, dtype=np.float64)
    ls = np.ascontiguousarray(lengthscale, dtype=np.float64)
    Ks = _kernels.kernel_matrix(X_active, X_active, family, variance, ls)
    B = np.eye(d) + S[:, None] * (Ks + bias_variance) * S[None, :]
    L = np.linalg.cholesky(B)
    u = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    value = (-np.sum(np.log(np.diag(L))) + 0.5 * np.sum(np.log(p)) - 0.5 * u @ u
             - 0.5 * d * np.log(2.0 * np.pi))
    if not grad:
        return value
    w = S * sla.solve_triangular(L, u, lower=True, trans="T", check_finite=False)
    Linv_S = sla.solve_triangular(L, np.diag(S), lower=True, check_finite=False)
    C = Linv_S.T @ Linv_S                         # S B^-1 S
    W = 0.5 * (np.outer(w, w) - C)                # dvalue/dK_II (notes §2.6)
    g_variance = variance_gradient(W, Ks) / variance
    g_ls, _ = _kernels.grad_contract(X_active, X_active, Ks, W, family, variance, ls,
                                     symmetric=True)
    return value, g_variance, g_ls, float(np.sum(W)), float(np.trace(W))


def _finish(X, state, variance, lengthscale, bias_variance, bias, n_iter, spec):
    active, p, m, L = _adf.active_sites(state)
    S = np.sqrt(p)
    u = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    w = S * sla.solve_triangular(L, u, lower=True, trans="T", check_finite=False)
    X_active = X[active].copy()
    keep = p > 0
    log_ev = float(approx_log_likelihood(X_active[keep], p[keep], m[keep], variance,
                                         lengthscale, bias_variance, family=spec.family)
                   ) if keep.any() else 0.0
    return _BinaryIVM(active, X_active, p, m, L, w, float(variance), lengthscale.copy(),
                      float(bias_variance), float(bias), log_ev, n_iter, spec.family)


def _marginals(X, state, exact, variance, lengthscale, bias_variance, family, rows=None):
    """Posterior (mean, variance) of f at the training rows ``rows`` (default: all) under
    the state's sites.

    After full-greedy or random selection every column of M is current, so the state's h and
    diag A are exact and free; the randomized scheme lets columns lag, so eq. 5 is used, at
    O(d^2) a row.
    """
    rows = slice(None) if rows is None else rows
    if exact:
        return state.h[rows].copy(), state.diag_A[rows].copy()
    active, p, m, L = _adf.active_sites(state)
    S = np.sqrt(p)
    u = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    w = S * sla.solve_triangular(L, u, lower=True, trans="T", check_finite=False)
    model = _BinaryIVM(active, X[active], p, m, L, w, variance, lengthscale, bias_variance,
                       0.0, 0.0, 0, family)
    return model.latent(X[rows])


def _mean_nlp(f, A, y, bias):
    """Mean of -log Phi(y (f + b) / sqrt(1 + A)) (the probit predictive of eq. 5)."""
    return -float(np.mean(special.log_ndtr(y * (f + bias) / np.sqrt(1.0 + A))))

