"""Kernels of the additive-model (stagewise) sparse GP classifier of seed 004.

They read the ADF state of :mod:`sparsegp._numba.adf` (notes §2.2) and never change it:

* ``Mt`` (n, d_max) C-contiguous, the transpose of M = L^-1 Pi_u^1/2 K_u.; its first ``k``
  columns are valid, so that A = K - Mt[:, :k] Mt[:, :k]^T;
* ``diagA`` (n,) and ``h`` (n,) = f_hat, the posterior marginals at the training inputs.

For a candidate j the column k~_.j = A_.j = K_.j - Mt Mt[j]^T costs O(n k) (notes §3.2; computed
by the core, ``adf.cov_column_blas`` or ``adf.adf_cov_column``, called from Python so that these
cached kernels do not embed the core's code: numba's cache does not see changes in other
modules). Nothing here evaluates the kernel, so these kernels serve every stationary family:
the columns arrive computed for the estimator's kernel (the core's ``family`` argument). With
the site's eta_j = p_j / (1 + p_j A_jj), alpha~_j = eta_j (m_j - f_hat_j) the inclusion moves
(eq. 7)

    f_hat' = f_hat + alpha~_j k~_.j,      diag A' = diag A - eta_j k~_.j^2,

so the loss after the inclusion is known in O(n k) without including j. Moment matching (eq. 2)
gives eta_j = nu_j and alpha~_j = alpha_j exactly (notes §2.1).

Losses are weighted sums ``-sum_l w_l log Phi(y_l (f_l + b) / sqrt(1 + A_ll))``: weights 1 on
every point give n NLP_a of eq. 5; weights 1 on the non-active points with the candidate itself
dropped give (|u^c| - 1) times the validation loss of eq. 4 (notes §3.5). The caller divides.
"""
import math

import numpy as np

from ._jit import jit
from .ep import marginal_step, site_target
from .probit import inv_mills, log_ndtr, probit_tilted

_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@jit
def weighted_nlp(y, h, diagA, bias, weights):
    """``-sum_l w_l log Phi(y_l (h_l + b) / sqrt(1 + diagA_l))`` (eqs. 4/5 with weights)."""
    total = 0.0
    for l in range(y.shape[0]):
        w = weights[l]
        if w != 0.0:
            total -= w * log_ndtr(y[l] * (h[l] + bias) / math.sqrt(1.0 + diagA[l]))
    return total


@jit
def _nlp_after(y, h, diagA, bias, weights, kt, alpha_t, eta, skip):
    """Weighted NLP after the rank-one move of eq. 7; index ``skip`` (if >= 0) is left out."""
    total = 0.0
    for l in range(y.shape[0]):
        w = weights[l]
        if w == 0.0 or l == skip:
            continue
        v = diagA[l] - eta * kt[l] * kt[l]
        if v < 0.0:
            # diag A is kept non-negative; a round-off negative would only shrink 1 + A
            v = 0.0
        z = y[l] * (h[l] + alpha_t * kt[l] + bias) / math.sqrt(1.0 + v)
        total -= w * log_ndtr(z)
    return total


@jit
def lookahead_moment(J, kt, diag_A, h, y, bias, weights, skip_self, nlp_out, alpha_out,
                     nu_out):
    """Loss after including each candidate of ``J`` with its moment-matched site (eqs. 2, 5, 7).

    Parameters
    ----------
    J : ndarray of shape (kappa,), int64
        Candidate indices (not in the active set).
    kt : ndarray of shape (kappa, n)
        Row c holds k~_.j = A[:, J[c]], the posterior covariance column of candidate c
        (``adf.adf_cov_column``; the chosen row is later passed to ``adf.adf_include_column``
        so it is computed once).
    diag_A, h : ndarray of shape (n,)
        Current posterior marginals (ADF state); only read.
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    bias : float
    weights : ndarray of shape (n,)
        Loss weights (1 everywhere for n * eq. 5; 1 on the non-active points for |u^c| * eq. 4).
    skip_self : bool
        Leave the candidate itself out of the sum (the validation loss of eq. 4 sums over the
        non-active set after the inclusion).
    nlp_out, alpha_out, nu_out : ndarray of shape (kappa,)
        Receive the weighted loss and the inclusion's alpha~_j and eta_j
        (:func:`sparsegp._numba.ep.marginal_step` of the moment-matched site; equal to the
        moments alpha_j and nu_j in exact arithmetic).

    O(kappa n).
    """
    for c in range(J.shape[0]):
        j = J[c]
        # the moment-matched ADF site (cavity = marginal: the site is still zero) and the
        # rank-one move it causes, (eta, alpha~) = (nu, alpha) in exact arithmetic
        _, alpha, nu = probit_tilted(y[j], h[j], diag_A[j], bias)
        p, pm, ok = site_target(h[j], diag_A[j], alpha, nu)
        eta, alpha_t = 0.0, 0.0
        if ok and p > 0.0:
            # p = 0 when nu underflows (a point classified with certainty): a zero site
            eta, alpha_t, _ = marginal_step(p, pm, h[j], diag_A[j])
        alpha_out[c] = alpha_t
        nu_out[c] = eta
        nlp_out[c] = _nlp_after(y, h, diag_A, bias, weights, kt[c], alpha_t, eta,
                                j if skip_self else -1)


@jit
def site_objective(y, h, diagA, bias, weights, kt, a_jj, alpha_t, tau, skip):
    """Loss after including j with sites (alpha~, tau = log p) and its gradient (notes §3.4).

    eta = e^tau / (1 + e^tau a_jj); f_hat' = h + alpha~ kt; diag A' = diagA - eta kt^2.

    Returns
    -------
    f : float
    g_alpha : float
        d f / d alpha~ = -sum w r y kt / s.
    g_tau : float
        d f / d tau = (d f / d eta) eta (1 - eta a_jj), d f / d eta = -sum w r z kt^2 / (2 s^2).
    """
    p = math.exp(tau)
    eta = p / (1.0 + p * a_jj)
    f = 0.0
    ga = 0.0
    ge = 0.0
    for l in range(y.shape[0]):
        w = weights[l]
        if w == 0.0 or l == skip:
            continue
        kl = kt[l]
        s2 = 1.0 + diagA[l] - eta * kl * kl
        s = math.sqrt(s2)
        z = y[l] * (h[l] + alpha_t * kl + bias) / s
        f -= w * log_ndtr(z)
        r = inv_mills(z)
        ga -= w * r * y[l] * kl / s
        ge -= w * r * z * kl * kl / (2.0 * s2)
    # eta(tau) = p / (1 + p a); d eta / d tau = eta (1 - eta a) = eta / (1 + p a)
    return f, ga, ge * eta / (1.0 + p * a_jj)


@jit
def eta_upper_bound(diagA, kt):
    """eta~_j = min_l diagA_l / k~_lj^2 over k~_lj != 0 (notes §3.4): eta <= eta~ keeps diag A'
    non-negative. Returns +inf when the column is zero."""
    best = np.inf
    for l in range(kt.shape[0]):
        k2 = kt[l] * kt[l]
        if k2 > 0.0:
            v = diagA[l] / k2
            if v < best:
                best = v
    return best


@jit
def sampling_keys(diagA, h, y, bias, is_active, E, adaptive, keys):
    """Keys whose kappa smallest entries are a draw of the working set J without replacement.

    With ``adaptive`` the distribution is chi_j proportional to 1 - Phi(y_j (h_j + b) /
    sqrt(1 + A_jj)) (eq. 11) and key_j = E_j / chi_j (E_j ~ Exp(1): the exponential-race form
    of sequential sampling without replacement); otherwise key_j = E_j (uniform). Active points
    (``is_active[j]``, bool (n,)) get +inf. Returns the number of available points with chi_j > 0; when
    it is 0 the keys fall back to uniform.
    """
    n = y.shape[0]
    positive = 0
    for j in range(n):
        if is_active[j]:
            keys[j] = np.inf
            continue
        if adaptive:
            z = y[j] * (h[j] + bias) / math.sqrt(1.0 + diagA[j])
            # 1 - Phi(z) = erfc(z / sqrt 2) / 2 keeps its relative accuracy for large z
            chi = 0.5 * math.erfc(z * _INV_SQRT2)
            if chi > 0.0:
                positive += 1
                keys[j] = E[j] / chi
            else:
                keys[j] = np.inf
        else:
            positive += 1
            keys[j] = E[j]
    if positive == 0:
        for j in range(n):
            if not is_active[j]:
                keys[j] = E[j]
    return positive


@jit
def smallest_keys(keys, kappa, out):
    """``out`` (kappa,) <- indices of the kappa smallest finite keys, in increasing order.

    Returns how many were found (fewer than kappa when fewer finite keys exist). O(n kappa).
    """
    n = keys.shape[0]
    found = 0
    for j in range(n):
        v = keys[j]
        if not (v < np.inf):
            continue
        # insertion into the sorted prefix out[:found]
        if found < kappa:
            pos = found
            found += 1
        elif v < keys[out[kappa - 1]]:
            pos = kappa - 1
        else:
            continue
        while pos > 0 and keys[out[pos - 1]] > v:
            out[pos] = out[pos - 1]
            pos -= 1
        out[pos] = j
    return found
