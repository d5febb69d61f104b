"""Compiled pieces of dense (full-GP) EP for the probit-with-bias likelihood.

``ep_dense_sweep`` runs one sequential sweep over the sites with O(N^2) rank-one updates of the
dense posterior covariance (Rasmussen & Williams 2006, Algorithm 3.5 lines 4-8);
``probit_cavity_terms`` computes, for every site at once, the cavity moments and the tilted
log-normaliser and its derivative from given posterior marginals (used by the evidence, the bias
gradient and the convergence bookkeeping).  The refresh of the covariance, the evidence and the
gradients are BLAS work done in numpy by the caller.
"""
import math

from ._jit import jit
from .probit import probit_tilted


@jit
def ep_dense_sweep(Sigma, mu, tau, nu, y, bias, damping, order, work):
    """One sequential EP sweep over ``order``, updating the posterior in place.

    Parameters
    ----------
    Sigma : ndarray of shape (N, N)
        Posterior covariance (K^-1 + diag(tau))^-1, symmetric; updated in place by rank-one
        terms (RW eq. 3.70).  During the sweep only the lower triangle is maintained; the upper
        triangle is copied from it at the end.
    mu : ndarray of shape (N,)
        Posterior mean Sigma @ nu; updated in place.
    tau, nu : ndarray of shape (N,)
        Site precisions and precision-times-means; updated in place.
    y : ndarray of shape (N,)
        Labels in {-1, +1}.
    bias : float
        Likelihood bias: p(y | f) = Phi(y (f + bias)).
    damping : float
        In (0, 1]: new site = (1 - damping) old + damping moment-matched, in natural parameters.
    order : ndarray of int64, shape (N,)
        Site visiting order.
    work : ndarray of shape (N,)
        Scratch (receives a copy of the updated column of Sigma).

    Returns
    -------
    max_change : float
        Largest |change| of any tau_n or nu_n during the sweep.
    n_skipped : int
        Sites skipped because the cavity precision or the updated marginal variance was not
        positive (round-off only, for the log-concave probit; notes §1.3 step 2).
    """
    n = Sigma.shape[0]
    max_change = 0.0
    n_skipped = 0
    for idx in range(order.shape[0]):
        i = order[idx]
        s_ii = Sigma[i, i]
        tau_c = 1.0 / s_ii - tau[i]
        nu_c = mu[i] / s_ii - nu[i]
        if not (tau_c > 0.0):
            n_skipped += 1
            continue
        var_c = 1.0 / tau_c
        mu_c = nu_c * var_c
        _, alpha, nu_hat = probit_tilted(y[i], mu_c, var_c, bias)
        # site from matched moments (notes §0.4): tau = nu/(1 - s2 nu), nu~ = (alpha + mu nu)/(...)
        denom = 1.0 - var_c * nu_hat
        tau_new = (1.0 - damping) * tau[i] + damping * (nu_hat / denom)
        nu_new = (1.0 - damping) * nu[i] + damping * ((alpha + mu_c * nu_hat) / denom)
        if tau_new < 0.0:
            tau_new = 0.0
        dtau = tau_new - tau[i]
        dnu = nu_new - nu[i]
        scale = 1.0 + dtau * s_ii
        if not (scale > 0.0):
            n_skipped += 1
            continue
        change = max(abs(dtau), abs(dnu))
        if change > max_change:
            max_change = change
        tau[i] = tau_new
        nu[i] = nu_new
        c = dtau / scale
        # column i of the symmetric Sigma, read from its (up-to-date) lower triangle
        for j in range(i):
            work[j] = Sigma[i, j]
        for j in range(i, n):
            work[j] = Sigma[j, i]
        # mu' = Sigma' nu' with Sigma' = Sigma - c s s^T, nu' = nu + dnu e_i and s^T nu = mu_i
        coef = dnu * (1.0 - c * s_ii) - c * mu[i]
        for j in range(n):
            mu[j] += coef * work[j]
        # symmetric update: the lower triangle only (half the flops), mirrored after the sweep
        for j in range(n):
            cj = c * work[j]
            for k in range(j + 1):
                Sigma[j, k] -= cj * work[k]
    for j in range(n):
        for k in range(j):
            Sigma[k, j] = Sigma[j, k]
    return max_change, n_skipped


@jit
def probit_cavity_terms(marg_var, marg_mean, tau, nu, y, bias, mu_cav, var_cav, log_z, alpha):
    """Cavity moments and tilted normalisers of every site from the posterior marginals.

    Parameters
    ----------
    marg_var, marg_mean : ndarray of shape (N,)
        Posterior marginal variances and means.
    tau, nu : ndarray of shape (N,)
        Site parameters.
    y : ndarray of shape (N,)
    bias : float
    mu_cav, var_cav, log_z, alpha : ndarray of shape (N,)
        Outputs: cavity mean and variance, log Phi(z_n), and d log Zhat_n / d mu_cav
        (= d log Zhat_n / d bias).  A non-positive cavity precision (round-off) gives
        var_cav = inf and log_z = alpha = 0 for that site; the caller decides what to do.

    Returns
    -------
    n_bad : int
        Number of sites whose cavity precision was not positive.
    """
    n_bad = 0
    for i in range(marg_var.shape[0]):
        tau_c = 1.0 / marg_var[i] - tau[i]
        if not (tau_c > 0.0):
            n_bad += 1
            mu_cav[i] = 0.0
            var_cav[i] = math.inf
            log_z[i] = 0.0
            alpha[i] = 0.0
            continue
        var_cav[i] = 1.0 / tau_c
        mu_cav[i] = (marg_mean[i] / marg_var[i] - nu[i]) / tau_c
        lz, a, _ = probit_tilted(y[i], mu_cav[i], var_cav[i], bias)
        log_z[i] = lz
        alpha[i] = a
    return n_bad
