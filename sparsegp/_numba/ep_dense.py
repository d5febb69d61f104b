"""Compiled pieces of dense (full-GP) EP for the probit-with-bias likelihood.

``ep_dense_sweep`` runs one sequential sweep over the sites with O(N^2) rank-one updates of the
dense posterior covariance (Rasmussen & Williams 2006, Algorithm 3.5 lines 4-8);
``probit_cavity_terms`` computes, for every site at once, the cavity moments and the tilted
log-normaliser and its derivative from given posterior marginals (used by the evidence, the bias
gradient and the convergence bookkeeping).  The refresh of the covariance, the evidence and the
gradients are BLAS work done in numpy by the caller.
"""
from ._jit import jit
from .ep import cavity, probit_site_step
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
        In (0, 1]: new site = (1 - damping) old + damping moment-matched, in natural parameters
        (:mod:`sparsegp._numba.ep`: the target is clamped at tau >= 0 before damping).
    order : ndarray of int64, shape (N,)
        Site visiting order.
    work : ndarray of shape (N,)
        Scratch (receives a copy of the updated column of Sigma).

    Returns
    -------
    max_change : float
        Largest undamped residual (:func:`sparsegp._numba.ep.site_residual`) of the visited
        sites: |target - current| of tau_n or nu_n, which the damped step is ``damping`` times.
    n_skipped : int
        Sites skipped because the cavity, the matched Gaussian or the updated marginal variance
        was not proper (round-off only, for the log-concave probit; notes §1.3 step 2).
    """
    n = Sigma.shape[0]
    max_change = 0.0
    n_skipped = 0
    for idx in range(order.shape[0]):
        i = order[idx]
        ok, change, tau_new, nu_new, c, coef = probit_site_step(y[i], mu[i], Sigma[i, i], tau[i],
                                                                nu[i], bias, damping)
        # the residual counts even if the update is rejected: that site has not converged
        if change > max_change:
            max_change = change
        if not ok:
            n_skipped += 1
            continue
        tau[i] = tau_new
        nu[i] = nu_new
        # column i of the symmetric Sigma, read from its (up-to-date) lower triangle
        for j in range(i):
            work[j] = Sigma[i, j]
        for j in range(i, n):
            work[j] = Sigma[j, i]
        # mu' = mu + coef s and Sigma' = Sigma - c s s^T with s = Sigma[:, i] (ep.marginal_step)
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
        m_c, v_c, ok = cavity(marg_mean[i], marg_var[i], tau[i], nu[i])
        mu_cav[i] = m_c
        var_cav[i] = v_c
        if not ok:
            n_bad += 1
            log_z[i] = 0.0
            alpha[i] = 0.0
            continue
        lz, a, _ = probit_tilted(y[i], m_c, v_c, bias)
        log_z[i] = lz
        alpha[i] = a
    return n_bad
