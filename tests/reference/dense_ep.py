"""Textbook dense EP for GP classification with the probit-with-bias likelihood (test reference).

Slow (O(N^3) per sweep) and deliberately plain: a dense N x N posterior covariance, one site at a
time with a rank-one update, the covariance recomputed from scratch after every sweep.  It imports
nothing from ``sparsegp`` so that it can serve as an independent check of the production code.

Model: f ~ N(0, K) on the training inputs, p(y_n | f_n) = Phi(y_n (f_n + bias)), y_n in {-1, +1}.
The bias enters only the likelihood (latent f never includes it).  Sites are
t_n(f) ∝ exp(-1/2 tau_n f^2 + nu_n f) (notes §0.1; Rasmussen & Williams 2006, Algorithms 3.5/3.6).

Functions
---------
``dense_ep(K, y, bias=0.0, tol=1e-10, max_sweeps=1000, damping=1.0, order=None)``
    Run EP to convergence on the prior covariance ``K`` (N, N) with labels ``y`` (N,) in {-1, +1}.
    Convergence: the largest |change| of tau and nu over a sweep is below ``tol``.  ``order`` is an
    optional permutation of range(N) used for every sweep (default: 0..N-1).  Returns a
    :class:`DenseEPResult` (attribute or key access, ``res.tau`` or ``res["tau"]``) with

    ========================  ==================================================================
    ``tau``, ``nu``           (N,) site natural parameters (``site_mean = nu / tau``)
    ``mean``, ``cov``         (N,), (N, N) posterior mean and covariance of f
    ``var``                   (N,) diagonal of ``cov``
    ``log_evidence``          EP estimate log Z_EP, RW eq. 3.65 with the bias (see below)
    ``cav_mean``, ``cav_var`` (N,) cavity moments of the converged posterior
    ``n_sweeps``, ``converged``, ``max_change``
    ``K``, ``y``, ``bias``    the inputs (copies)
    ========================  ==================================================================

``dense_ep_log_evidence(K, y, bias, tau, nu)``
    log Z_EP for *given* sites (cavities taken from the posterior those sites define), RW eq. 3.65
    rearranged as in RW Algorithm 3.5 so that tau_n = 0 is allowed.
``dense_ep_log_evidence_textbook(K, y, bias, tau, nu)``
    The same quantity as the literal RW eq. 3.65 (needs tau_n > 0):
    sum log Zhat_n - sum log N(mu~_n | mu_-n, s2_-n + 1/tau_n) + log N(mu~ | 0, K + diag(1/tau)).
``dense_ep_predict(res, K_cross, k_test_diag)``
    Latent predictive (mean, var) of f* (RW Algorithm 3.6) and p(y*=+1) =
    Phi((mean + bias) / sqrt(1 + var)).  ``K_cross`` is cov(f, f*) of shape (N, n_test) and
    ``k_test_diag`` the prior variances of f* (n_test,).  Returns (mean, var, p_plus).
``dense_ep_gradient(res, dK)``
    d log Z_EP / d theta = 1/2 tr((a a^T - (K + S~^-1)^-1) dK/dtheta) for a prior parameter theta
    at the EP fixed point, with a = (K + S~^-1)^-1 mu~ (RW eq. 5.27); ``dK`` (N, N).
``dense_ep_bias_gradient(res)``
    d log Z_EP / d bias = sum_n d log Zhat_n / d bias with the cavities held fixed (notes §1.9).
``se_kernel_dense(A, B, variance, lengthscale)``
    variance * exp(-1/2 sum_j (a_j - b_j)^2 / l_j^2); ``lengthscale`` scalar or (D,).
``fitc_covariance(X, Z, variance, lengthscale, jitter=1e-6)``
    The FITC prior covariance Q_ff + diag(K_ff - Q_ff) with Q_ff = K_fu K_uu^-1 K_uf and
    K_uu = k(Z, Z) + jitter * variance * I (notes §0.2).  Returns (N, N).
``fitc_test_covariance(X, Xtest, Z, variance, lengthscale, jitter=1e-6)``
    (Q_f*, k**): the FITC cross-covariance Q(X, Xtest) (N, n_test) and the exact test prior
    variances (n_test,) — the FITC test conditional keeps the exact diagonal (notes §1.7).

Log evidence with the bias (RW eq. 3.65, Algorithm 3.5 lines 13-16; notes §1.8)::

    log Z_EP = sum_n log Phi(z_n) - 1/2 log|B| + 1/2 sum_n log(1 + tau_n / tau_-n)
               + 1/2 nu^T Sigma nu
               + 1/2 sum_n (tau_-n tau_n mu_-n^2 - 2 tau_-n mu_-n nu_n - nu_n^2) / (tau_-n + tau_n)

with B = I + S^1/2 K S^1/2, S = diag(tau), Sigma the posterior covariance and
z_n = y_n (mu_-n + bias) / sqrt(1 + s2_-n).
"""
import numpy as np
from scipy import linalg, stats

__all__ = [
    "DenseEPResult",
    "dense_ep",
    "dense_ep_log_evidence",
    "dense_ep_log_evidence_textbook",
    "dense_ep_predict",
    "dense_ep_gradient",
    "dense_ep_bias_gradient",
    "tilted_moments",
    "se_kernel_dense",
    "fitc_covariance",
    "fitc_test_covariance",
]


class DenseEPResult(dict):
    """Dict whose keys are also attributes (``res.tau`` is ``res["tau"]``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def tilted_moments(y, mu, var, bias):
    """Moments of the tilted distribution Phi(y (f + bias)) N(f | mu, var) (RW eqs. 3.58, 3.82).

    Returns (log_Zhat, mean_hat, var_hat); vectorised over numpy arrays.
    """
    s = np.sqrt(1.0 + var)
    z = y * (mu + bias) / s
    log_z = stats.norm.logcdf(z)
    ratio = np.exp(stats.norm.logpdf(z) - log_z)  # N(z)/Phi(z)
    mean_hat = mu + y * var * ratio / s
    var_hat = var - var**2 * ratio * (z + ratio) / (1.0 + var)
    return log_z, mean_hat, var_hat


def _posterior(K, tau, nu):
    """Posterior (Sigma, mu, L, sqrt_tau) from the sites through B = I + S^1/2 K S^1/2."""
    n = K.shape[0]
    sq = np.sqrt(tau)
    B = np.eye(n) + sq[:, None] * K * sq[None, :]
    L = np.linalg.cholesky(B)
    V = linalg.solve_triangular(L, sq[:, None] * K, lower=True)
    Sigma = K - V.T @ V
    mu = Sigma @ nu
    return Sigma, mu, L, sq


def _cavities(Sigma, mu, tau, nu):
    d = np.diag(Sigma)
    tau_cav = 1.0 / d - tau
    nu_cav = mu / d - nu
    return tau_cav, nu_cav


def dense_ep(K, y, bias=0.0, tol=1e-10, max_sweeps=1000, damping=1.0, order=None):
    """Run textbook sequential EP on prior covariance ``K``; see the module docstring."""
    K = np.array(K, dtype=float, copy=True)
    y = np.array(y, dtype=float, copy=True)
    n = K.shape[0]
    if K.shape != (n, n) or y.shape != (n,):
        raise ValueError("K must be (N, N) and y (N,)")
    if not np.all(np.abs(y) == 1):
        raise ValueError("y must be in {-1, +1}")
    order = np.arange(n) if order is None else np.asarray(order)
    tau = np.zeros(n)
    nu = np.zeros(n)
    Sigma = K.copy()
    mu = np.zeros(n)
    converged = False
    sweeps = 0
    max_change = np.inf
    for sweeps in range(1, max_sweeps + 1):
        max_change = 0.0
        for i in order:
            # cavity from the current marginal (RW eq. 3.56)
            tau_c = 1.0 / Sigma[i, i] - tau[i]
            nu_c = mu[i] / Sigma[i, i] - nu[i]
            if tau_c <= 0:
                continue
            _, m_hat, v_hat = tilted_moments(y[i], nu_c / tau_c, 1.0 / tau_c, bias)
            tau_new = 1.0 / v_hat - tau_c  # RW eq. 3.59
            nu_new = m_hat / v_hat - nu_c
            tau_new = (1 - damping) * tau[i] + damping * tau_new
            nu_new = (1 - damping) * nu[i] + damping * nu_new
            dtau = tau_new - tau[i]
            max_change = max(max_change, abs(dtau), abs(nu_new - nu[i]))
            tau[i] = tau_new
            nu[i] = nu_new
            # rank-one update of Sigma (RW eq. 3.70), then mu = Sigma nu
            s = Sigma[:, i].copy()
            Sigma -= (dtau / (1.0 + dtau * s[i])) * np.outer(s, s)
            mu = Sigma @ nu
        # recompute from scratch to shed round-off (RW Algorithm 3.5 line 10)
        Sigma, mu, _, _ = _posterior(K, tau, nu)
        if max_change < tol:
            converged = True
            break
    Sigma, mu, L, sq = _posterior(K, tau, nu)
    tau_cav, nu_cav = _cavities(Sigma, mu, tau, nu)
    log_z = dense_ep_log_evidence(K, y, bias, tau, nu)
    return DenseEPResult(
        tau=tau, nu=nu, mean=mu, cov=Sigma, var=np.diag(Sigma).copy(),
        log_evidence=log_z, cav_mean=nu_cav / tau_cav, cav_var=1.0 / tau_cav,
        n_sweeps=sweeps, converged=converged, max_change=max_change,
        K=K, y=y, bias=float(bias), L=L, sqrt_tau=sq,
    )


def _site_terms(K, y, bias, tau, nu):
    """Posterior, cavity precision/mean and log Zhat for given sites."""
    Sigma, mu, L, _ = _posterior(np.asarray(K, dtype=float), tau, nu)
    tau_c, nu_c = _cavities(Sigma, mu, tau, nu)
    mu_c = nu_c / tau_c
    log_zhat, _, _ = tilted_moments(np.asarray(y, float), mu_c, 1.0 / tau_c, bias)
    return Sigma, L, tau_c, mu_c, log_zhat


def dense_ep_log_evidence(K, y, bias, tau, nu):
    """log Z_EP for the given sites (RW Algorithm 3.5 form of eq. 3.65, with the bias)."""
    tau = np.asarray(tau, dtype=float)
    nu = np.asarray(nu, dtype=float)
    Sigma, L, tau_c, mu_c, log_zhat = _site_terms(K, y, bias, tau, nu)
    return float(
        np.sum(log_zhat)
        - np.sum(np.log(np.diag(L)))
        + 0.5 * np.sum(np.log1p(tau / tau_c))
        + 0.5 * nu @ Sigma @ nu
        + 0.5 * np.sum((tau_c * tau * mu_c**2 - 2 * tau_c * mu_c * nu - nu**2) / (tau_c + tau))
    )


def dense_ep_log_evidence_textbook(K, y, bias, tau, nu):
    """log Z_EP as literally written in RW eq. 3.65 (requires every tau_n > 0)."""
    K = np.asarray(K, dtype=float)
    tau = np.asarray(tau, dtype=float)
    nu = np.asarray(nu, dtype=float)
    _, _, tau_c, mu_c, log_zhat = _site_terms(K, y, bias, tau, nu)
    s2_c = 1.0 / tau_c
    mu_site = nu / tau
    term_sites = stats.norm.logpdf(mu_site, loc=mu_c, scale=np.sqrt(s2_c + 1.0 / tau))
    term_prior = stats.multivariate_normal.logpdf(
        mu_site, mean=np.zeros(K.shape[0]), cov=K + np.diag(1.0 / tau)
    )
    return float(np.sum(log_zhat) - np.sum(term_sites) + term_prior)


def dense_ep_predict(res, K_cross, k_test_diag):
    """Latent predictive mean/variance and p(y*=+1) (RW Algorithm 3.6 with the bias)."""
    K, nu, L, sq = res.K, res.nu, res.L, res.sqrt_tau
    K_cross = np.asarray(K_cross, dtype=float)
    z = sq * linalg.solve_triangular(
        L.T, linalg.solve_triangular(L, sq * (K @ nu), lower=True), lower=False
    )
    mean = K_cross.T @ (nu - z)
    v = linalg.solve_triangular(L, sq[:, None] * K_cross, lower=True)
    var = np.asarray(k_test_diag, dtype=float) - np.sum(v * v, axis=0)
    p_plus = stats.norm.cdf((mean + res.bias) / np.sqrt(1.0 + var))
    return mean, var, p_plus


def dense_ep_gradient(res, dK):
    """Derivative of log Z_EP w.r.t. a prior parameter with dK = dK/dtheta (RW eq. 5.27).

    At an EP fixed point the sites may be held fixed (notes §1.9 step 0), so this is the
    gradient of log N(mu~ | 0, K + S~^-1), written without 1/tau via B (RW Algorithm 5.2).
    """
    K, nu, L, sq = res.K, res.nu, res.L, res.sqrt_tau
    Binv_sq = linalg.cho_solve((L, True), np.diag(sq))
    R = sq[:, None] * Binv_sq  # (K + S^-1)^-1 = S^1/2 B^-1 S^1/2
    b = nu - R @ (K @ nu)
    return 0.5 * float(np.sum((np.outer(b, b) - R) * dK))


def dense_ep_bias_gradient(res):
    """d log Z_EP / d bias = sum_n y_n N(z_n) / (Phi(z_n) sqrt(1 + s2_-n)) (cavities fixed)."""
    s = np.sqrt(1.0 + res.cav_var)
    z = res.y * (res.cav_mean + res.bias) / s
    ratio = np.exp(stats.norm.logpdf(z) - stats.norm.logcdf(z))
    return float(np.sum(res.y * ratio / s))


def se_kernel_dense(A, B, variance, lengthscale):
    """Squared-exponential covariance matrix k(A, B), shape (len(A), len(B))."""
    A = np.atleast_2d(np.asarray(A, dtype=float))
    B = np.atleast_2d(np.asarray(B, dtype=float))
    ls = np.broadcast_to(np.asarray(lengthscale, dtype=float), (A.shape[1],))
    diff = (A[:, None, :] - B[None, :, :]) / ls
    return variance * np.exp(-0.5 * np.sum(diff * diff, axis=-1))


def fitc_covariance(X, Z, variance, lengthscale, jitter=1e-6):
    """FITC prior covariance Q_ff + diag(K_ff - Q_ff), K_uu jittered by jitter*variance."""
    Kuu = se_kernel_dense(Z, Z, variance, lengthscale) + jitter * variance * np.eye(len(Z))
    Kuf = se_kernel_dense(Z, X, variance, lengthscale)
    Lu = np.linalg.cholesky(Kuu)
    V = linalg.solve_triangular(Lu, Kuf, lower=True)
    Q = V.T @ V
    Kt = Q.copy()
    Kt[np.diag_indices_from(Kt)] = variance  # diag of the exact SE prior is the variance
    return Kt


def fitc_test_covariance(X, Xtest, Z, variance, lengthscale, jitter=1e-6):
    """(Q(X, Xtest), k(Xtest, Xtest) diagonal) for FITC predictions."""
    Kuu = se_kernel_dense(Z, Z, variance, lengthscale) + jitter * variance * np.eye(len(Z))
    Lu = np.linalg.cholesky(Kuu)
    V = linalg.solve_triangular(Lu, se_kernel_dense(Z, X, variance, lengthscale), lower=True)
    Vs = linalg.solve_triangular(Lu, se_kernel_dense(Z, Xtest, variance, lengthscale), lower=True)
    return V.T @ Vs, np.full(len(np.atleast_2d(Xtest)), float(variance))
