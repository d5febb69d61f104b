"""Dense references for the multi-class baselines (test use only; imports nothing from sparsegp).

``dense_multiclass_ep(KF, y, ...)``
    Textbook EP for the Kim & Ghahramani likelihood prod_{k != y_i} Theta(f_{i,y_i} - f_ik) with
    independent Gaussian priors f_c ~ N(0, KF[c]) given as explicit N x N matrices (e.g. the FITC
    covariance from :func:`fitc_prior`). Each factor has two 1-D sites; the posterior covariance
    of each class is a dense N x N matrix changed by rank-one updates and recomputed after every
    sweep. Returns a dict with the sites, posterior moments and two evidence values:

    * ``log_evidence``: sum over factors of log Phi(beta) + the 1-D (G(cavity) - G(q)) terms plus
      sum_c [-1/2 log|I + K T| + 1/2 nu^T mu] (notes §7.1);
    * ``log_evidence_identity``: Seeger's identity with full N-dimensional Gaussians,
      sum_f log Z_f + sum_f sum_{c in f} [G(theta_c^{\\f}) - G(theta_c)] + sum_c [G(theta_c) -
      G(prior_c)], G(Lambda, eta) = -1/2 log|Lambda| + 1/2 eta^T Lambda^-1 eta (notes §8.3 item 3).

``fitc_prior(X, Z, variance, noise, lengthscale, jitter, noise_in_Kuu)``
    Explicit FITC covariance K^F = Q + diag(kappa - diag Q) of the multi-class model (notes §1.1).

``svgp_elbo_dense(X, y, m, L, Z, variance, noise, lengthscale, eps, jitter, noise_in_Kuu)``
    The robust-max VI ELBO (notes §7.2) with marginals from explicit inverses, the class
    probability by adaptive quadrature (scipy.integrate.quad) and the KL from slogdet.

``log_marginal_mc(X, y, variance, noise, lengthscale, eps, n_samples, rng)``
    Monte-Carlo log p(y) = log E_{f ~ GP prior}[prod_i p(y_i | f_i)] for the robust-max
    likelihood under the exact joint prior of the noisy latents (small N only).
"""
import numpy as np
from scipy import integrate
from scipy.special import log_ndtr, ndtr


def se_dense(A, B, variance, lengthscale):
    """variance * exp(-1/2 sum_d (a_d - b_d)^2 / l_d^2)."""
    A = np.asarray(A, float) / lengthscale
    B = np.asarray(B, float) / lengthscale
    d2 = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return variance * np.exp(-0.5 * d2)


def kuu_dense(Z, variance, noise, lengthscale, jitter, noise_in_Kuu):
    K = se_dense(Z, Z, variance, lengthscale)
    return K + (jitter * variance + (noise if noise_in_Kuu else 0.0)) * np.eye(len(Z))


def fitc_prior(X, Z, variance, noise, lengthscale, jitter=1e-6, noise_in_Kuu=True):
    """FITC covariance (N, N) of the noisy latent values of one class."""
    K = kuu_dense(Z, variance, noise, lengthscale, jitter, noise_in_Kuu)
    P = se_dense(X, Z, variance, lengthscale)
    Q = P @ np.linalg.solve(K, P.T)
    Q = 0.5 * (Q + Q.T)
    return Q + np.diag(variance + noise - np.diag(Q))


def _posterior(K, tau, nu):
    Kinv = np.linalg.inv(K)
    Sigma = np.linalg.inv(Kinv + np.diag(tau))
    Sigma = 0.5 * (Sigma + Sigma.T)
    return Sigma, Sigma @ nu


def _aggregate(y, tp, np_, tm, nm):
    N, C = tp.shape
    tau = tm.T.copy()
    nu = nm.T.copy()
    tau[y, np.arange(N)] = tp.sum(1)
    nu[y, np.arange(N)] = np_.sum(1)
    return tau, nu


def dense_multiclass_ep(KF, y, tol=1e-12, max_sweeps=2000, damping=1.0):
    """Sequential EP with dense posteriors; ``KF`` (C, N, N), ``y`` (N,) in 0..C-1."""
    KF = np.asarray(KF, float)
    C, N, _ = KF.shape
    tp = np.zeros((N, C)); np_ = np.zeros((N, C)); tm = np.zeros((N, C)); nm = np.zeros((N, C))
    converged = False
    for sweep in range(max_sweeps):
        tau, nu = _aggregate(y, tp, np_, tm, nm)
        Sig = []
        mu = []
        for c in range(C):
            S, m = _posterior(KF[c], tau[c], nu[c])
            Sig.append(S); mu.append(m)
        change = 0.0
        for i in range(N):
            a = y[i]
            for k in range(C):
                if k == a:
                    continue
                vp, mp = Sig[a][i, i], mu[a][i]
                vm, mm = Sig[k][i, i], mu[k][i]
                vcp = 1.0 / (1.0 / vp - tp[i, k]); mcp = vcp * (mp / vp - np_[i, k])
                vcm = 1.0 / (1.0 / vm - tm[i, k]); mcm = vcm * (mm / vm - nm[i, k])
                z = vcp + vcm
                beta = (mcp - mcm) / np.sqrt(z)
                r = np.exp(-0.5 * beta ** 2 - 0.5 * np.log(2 * np.pi) - log_ndtr(beta))
                # tilted moments of each side (two independent Gaussians conditioned on f+ > f-)
                new_mp = mcp + vcp * r / np.sqrt(z)
                new_vp = vcp - vcp ** 2 * r * (r + beta) / z
                new_mm = mcm - vcm * r / np.sqrt(z)
                new_vm = vcm - vcm ** 2 * r * (r + beta) / z
                t_p = 1.0 / new_vp - 1.0 / vcp; n_p = new_mp / new_vp - mcp / vcp
                t_m = 1.0 / new_vm - 1.0 / vcm; n_m = new_mm / new_vm - mcm / vcm
                t_p = damping * t_p + (1 - damping) * tp[i, k]
                n_p = damping * n_p + (1 - damping) * np_[i, k]
                t_m = damping * t_m + (1 - damping) * tm[i, k]
                n_m = damping * n_m + (1 - damping) * nm[i, k]
                change = max(change, abs(t_p - tp[i, k]), abs(n_p - np_[i, k]),
                             abs(t_m - tm[i, k]), abs(n_m - nm[i, k]))
                for c, dt, dn in ((a, t_p - tp[i, k], n_p - np_[i, k]),
                                  (k, t_m - tm[i, k], n_m - nm[i, k])):
                    s = Sig[c][:, i].copy()
                    Sig[c] = Sig[c] - dt / (1.0 + dt * s[i]) * np.outer(s, s)
                    tau[c, i] += dt
                    nu[c, i] += dn
                    mu[c] = Sig[c] @ nu[c]
                tp[i, k], np_[i, k], tm[i, k], nm[i, k] = t_p, n_p, t_m, n_m
        if change < tol:
            converged = True
            break
    out = dict(tp=tp, np_=np_, tm=tm, nm=nm, converged=converged, n_sweeps=sweep + 1)
    out.update(dense_multiclass_evidence(KF, y, tp, np_, tm, nm))
    return out


def _G(Lam, eta):
    sign, logdet = np.linalg.slogdet(Lam)
    assert sign > 0
    return -0.5 * logdet + 0.5 * eta @ np.linalg.solve(Lam, eta)


def dense_multiclass_evidence(KF, y, tp, np_, tm, nm):
    """Both evidence forms (see the module docstring) for given sites."""
    C, N, _ = KF.shape
    tau, nu = _aggregate(y, tp, np_, tm, nm)
    Sig, mu = [], []
    total = 0.0
    for c in range(C):
        S, m = _posterior(KF[c], tau[c], nu[c])
        Sig.append(S); mu.append(m)
        sign, ld = np.linalg.slogdet(np.eye(N) + KF[c] @ np.diag(tau[c]))
        total += -0.5 * ld + 0.5 * nu[c] @ m
    Lam = [np.linalg.inv(KF[c]) + np.diag(tau[c]) for c in range(C)]
    Gq = [_G(Lam[c], nu[c]) for c in range(C)]
    Gp = [_G(np.linalg.inv(KF[c]), np.zeros(N)) for c in range(C)]
    ident = sum(Gq[c] - Gp[c] for c in range(C))
    for i in range(N):
        a = y[i]
        for k in range(C):
            if k == a:
                continue
            sides = ((a, tp[i, k], np_[i, k]), (k, tm[i, k], nm[i, k]))
            cav = []
            for c, t, n in sides:
                v, m = Sig[c][i, i], mu[c][i]
                vc = 1.0 / (1.0 / v - t); mc = vc * (m / v - n)
                cav.append((vc, mc))
                total += 0.5 * np.log(vc) - 0.5 * np.log(v) + 0.5 * mc ** 2 / vc - 0.5 * m ** 2 / v
                # full N-dimensional cavity for the identity form
                L2 = Lam[c].copy(); L2[i, i] -= t
                e2 = nu[c].copy(); e2[i] -= n
                ident += _G(L2, e2) - Gq[c]
            beta = (cav[0][1] - cav[1][1]) / np.sqrt(cav[0][0] + cav[1][0])
            total += log_ndtr(beta)
            ident += log_ndtr(beta)
    return dict(log_evidence=total, log_evidence_identity=ident, tau=tau, nu=nu,
                mean=np.array(mu), cov=np.array(Sig))


# ------------------------------------------------------------------------------------------
# VI baseline
# ------------------------------------------------------------------------------------------
def class_prob_quad(mu, var, c):
    """int N(f | mu_c, var_c) prod_{k != c} Phi((f - mu_k)/s_k) df by adaptive quadrature."""
    s = np.sqrt(var)
    others = [k for k in range(len(mu)) if k != c]

    def integrand(f):
        return np.exp(-0.5 * ((f - mu[c]) / s[c]) ** 2) / (np.sqrt(2 * np.pi) * s[c]) * np.prod(
            [ndtr((f - mu[k]) / s[k]) for k in others])

    lo = mu[c] - 12 * s[c]
    hi = mu[c] + 12 * s[c]
    val, _ = integrate.quad(integrand, lo, hi, epsabs=1e-13, epsrel=1e-12, limit=500,
                            points=[mu[k] for k in others if lo < mu[k] < hi] or None)
    return val


def svgp_marginals_dense(X, m, L, Z, variance, noise, lengthscale, jitter, noise_in_Kuu):
    """(mu, var) of q(f_ic), each (N, C), through explicit inverses (notes §7.2 eqs. 16-17)."""
    C = len(variance)
    N = X.shape[0]
    mu = np.empty((N, C)); var = np.empty((N, C))
    for c in range(C):
        K = kuu_dense(Z[c], variance[c], noise[c], lengthscale[c], jitter, noise_in_Kuu)
        Ki = np.linalg.inv(K)
        P = se_dense(X, Z[c], variance[c], lengthscale[c])
        S = L[c] @ L[c].T
        mu[:, c] = P @ Ki @ m[c]
        var[:, c] = (variance[c] + noise[c] - np.einsum("ij,jk,ik->i", P, Ki, P)
                     + np.einsum("ij,jk,ik->i", P, Ki @ S @ Ki, P))
    return mu, var


def svgp_elbo_dense(X, y, m, L, Z, variance, noise, lengthscale, eps=1e-3, jitter=1e-6,
                    noise_in_Kuu=True):
    """Robust-max ELBO with p(y|f) = (1-eps) 1[y = argmax f] + eps/(C-1) 1[y != argmax f]."""
    C = len(variance)
    mu, var = svgp_marginals_dense(X, m, L, Z, variance, noise, lengthscale, jitter,
                                   noise_in_Kuu)
    data = 0.0
    for i in range(X.shape[0]):
        P = class_prob_quad(mu[i], var[i], y[i])
        data += P * np.log(1 - eps) + (1 - P) * np.log(eps / (C - 1))
    kl = 0.0
    for c in range(C):
        K = kuu_dense(Z[c], variance[c], noise[c], lengthscale[c], jitter, noise_in_Kuu)
        S = L[c] @ L[c].T
        M = K.shape[0]
        _, ldK = np.linalg.slogdet(K)
        _, ldS = np.linalg.slogdet(S)
        kl += 0.5 * (np.trace(np.linalg.solve(K, S)) + m[c] @ np.linalg.solve(K, m[c]) - M
                     + ldK - ldS)
    return data - kl


def log_marginal_mc(X, y, variance, noise, lengthscale, eps=1e-3, n_samples=200000, rng=None):
    """Monte-Carlo log p(y) under the exact GP prior of the noisy latents (robust-max)."""
    rng = np.random.default_rng(0) if rng is None else rng
    N = X.shape[0]
    C = len(variance)
    F = np.empty((n_samples, N, C))
    for c in range(C):
        K = se_dense(X, X, variance[c], lengthscale[c]) + noise[c] * np.eye(N)
        Lc = np.linalg.cholesky(K)
        F[:, :, c] = rng.standard_normal((n_samples, N)) @ Lc.T
    win = np.argmax(F, axis=2) == y[None, :]
    logp = np.where(win, np.log(1 - eps), np.log(eps / (C - 1))).sum(1)
    mx = logp.max()
    return mx + np.log(np.mean(np.exp(logp - mx)))
