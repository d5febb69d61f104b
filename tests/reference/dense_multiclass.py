"""Dense reference for multi-class EP with inducing points (notes multiclass_ep.md §1-§3).

Deliberately independent of the library's rank-one bookkeeping: every site is a *full* M x M
Gaussian on one class's inducing values, cavities are explicit matrix subtractions in natural
parameters, the tilted moments come from the textbook probit-on-a-projection formula applied to
the stacked vector u = (u_1, ..., u_C), the schedule is sequential, and log Z_EP comes from
Seeger's identity with explicit Gaussian log-normalisers. Small problems only (N C M^3).
"""
import numpy as np
from scipy import special


def se(X, Z, variance, lengthscale):
    """variance * exp(-0.5 sum_d (x_d - z_d)^2 / l_d^2), shape (len(X), len(Z))."""
    diff = (X[:, None, :] - Z[None, :, :]) / lengthscale
    return variance * np.exp(-0.5 * np.sum(diff * diff, axis=2))


def fitc_terms(X, Z, variance, lengthscale, noise, noise_in_kuu, jitter, kernel=se):
    """K_c, directions V = K_fu K_c^{-1} (N, M) and FITC variances d (N,) of one class.

    ``kernel(A, B, variance, lengthscale)`` is the signal covariance (SE by default); the
    jitter is relative to ``variance``. The prior variance of f_ic is the kernel's own
    k(x_i, x_i) plus the noise (the variance for a stationary kernel; more with a constant).
    """
    K = (kernel(Z, Z, variance, lengthscale)
         + ((noise if noise_in_kuu else 0.0) + jitter * variance) * np.eye(len(Z)))
    Kfu = kernel(X, Z, variance, lengthscale)
    V = np.linalg.solve(K, Kfu.T).T
    kff = np.array([kernel(x[None], x[None], variance, lengthscale)[0, 0] for x in X])
    d = kff + noise - np.sum(Kfu * V, axis=1)
    return K, V, np.maximum(d, 0.0)


def _G(Lam, h):
    """Gaussian log-normaliser 1/2 log|S| + 1/2 m^T S^{-1} m from natural parameters."""
    S = np.linalg.inv(Lam)
    return 0.5 * np.linalg.slogdet(S)[1] + 0.5 * h @ S @ h


def dense_ep(X, y, variance, lengthscale, noise, Z, noise_in_kuu=True, jitter=1e-10,
             tol=1e-12, max_sweeps=500, kernel=se):
    """Sequential EP with full-matrix sites; returns (log Z_EP, means (C, M), covs (C, M, M)).

    Parameters are natural (variance (C,), lengthscale (C, D), noise (C,), Z (C, M, D));
    ``kernel(A, B, variance, lengthscale)`` is the signal covariance (SE by default), or a
    list of C such functions, one per class.
    """
    C, M, _ = Z.shape
    N = X.shape[0]
    Ks, Vs, ds = [], [], []
    for c in range(C):
        kern = kernel[c] if isinstance(kernel, (list, tuple)) else kernel
        K, V, d = fitc_terms(X, Z[c], variance[c], lengthscale[c], noise[c], noise_in_kuu,
                             jitter, kern)
        Ks.append(K)
        Vs.append(V)
        ds.append(d)
    Kinv = [np.linalg.inv(K) for K in Ks]
    factors = [(i, k) for i in range(N) for k in range(C) if k != y[i]]
    # site natural parameters per factor side: (Lambda (M, M), h (M,))
    sites = {(f, side): (np.zeros((M, M)), np.zeros(M)) for f in factors for side in (0, 1)}
    Lam = [Ki.copy() for Ki in Kinv]
    hq = [np.zeros(M) for _ in range(C)]
    for _ in range(max_sweeps):
        change = 0.0
        for f in factors:
            i, k = f
            cls = (y[i], k)
            cav = []
            for side, c in enumerate(cls):
                Ls, hs = sites[(f, side)]
                cav.append((Lam[c] - Ls, hq[c] - hs))
            Scav = [np.linalg.inv(L_) for L_, _ in cav]
            mcav = [S_ @ h_ for S_, (_, h_) in zip(Scav, cav)]
            # probit on the projection a^T u with a = (v_y, -v_k), noise d_y + d_k
            a = [Vs[cls[0]][i], -Vs[cls[1]][i]]
            mean_proj = a[0] @ mcav[0] + a[1] @ mcav[1]
            var_proj = a[0] @ Scav[0] @ a[0] + a[1] @ Scav[1] @ a[1]
            z = ds[cls[0]][i] + ds[cls[1]][i] + var_proj
            beta = mean_proj / np.sqrt(z)
            r = np.exp(-0.5 * beta ** 2 - 0.5 * np.log(2 * np.pi) - special.log_ndtr(beta))
            for side, c in enumerate(cls):
                Sa = Scav[side] @ a[side]
                m_t = mcav[side] + (r / np.sqrt(z)) * Sa
                S_t = Scav[side] - (r * (r + beta) / z) * np.outer(Sa, Sa)
                Lam_t = np.linalg.inv(S_t)
                new = (Lam_t - cav[side][0], Lam_t @ m_t - cav[side][1])
                old = sites[(f, side)]
                change = max(change, np.max(np.abs(new[0] - old[0])), np.max(np.abs(new[1] - old[1])))
                sites[(f, side)] = new
                Lam[c] = cav[side][0] + new[0]
                hq[c] = cav[side][1] + new[1]
        if change < tol:
            break
    # Seeger's identity
    log_z = 0.0
    for f in factors:
        i, k = f
        cls = (y[i], k)
        cav = [(Lam[c] - sites[(f, s)][0], hq[c] - sites[(f, s)][1]) for s, c in enumerate(cls)]
        Scav = [np.linalg.inv(L_) for L_, _ in cav]
        mcav = [S_ @ h_ for S_, (_, h_) in zip(Scav, cav)]
        a = [Vs[cls[0]][i], -Vs[cls[1]][i]]
        mean_proj = a[0] @ mcav[0] + a[1] @ mcav[1]
        z = ds[cls[0]][i] + ds[cls[1]][i] + a[0] @ Scav[0] @ a[0] + a[1] @ Scav[1] @ a[1]
        log_z += special.log_ndtr(mean_proj / np.sqrt(z))
        for s, c in enumerate(cls):
            log_z += _G(*cav[s]) - _G(Lam[c], hq[c])
    for c in range(C):
        log_z += _G(Lam[c], hq[c]) - _G(Kinv[c], np.zeros(M))
    covs = np.array([np.linalg.inv(L_) for L_ in Lam])
    means = np.array([S_ @ h_ for S_, h_ in zip(covs, hq)])
    return float(log_z), means, covs


def brute_force_log_evidence(X, y, variance, lengthscale, noise, Z, noise_in_kuu=True,
                             jitter=1e-10, n_samples=400_000, seed=0, kernel=se):
    """Monte Carlo log E_{p(u)}[prod_{i, k != y_i} phi_ik(u)] and its standard error (in log).

    ``kernel(A, B, variance, lengthscale)`` is the signal covariance (SE by default).
    """
    C, M, _ = Z.shape
    rng = np.random.default_rng(seed)
    log_w = np.zeros(n_samples)
    proj = []
    for c in range(C):
        K, V, d = fitc_terms(X, Z[c], variance[c], lengthscale[c], noise[c], noise_in_kuu,
                             jitter, kernel)
        u = rng.standard_normal((n_samples, M)) @ np.linalg.cholesky(K).T
        proj.append((u @ V.T, d))
    for i in range(X.shape[0]):
        for k in range(C):
            if k == y[i]:
                continue
            fy, dy = proj[y[i]]
            fk, dk = proj[k]
            log_w += special.log_ndtr((fy[:, i] - fk[:, i]) / np.sqrt(dy[i] + dk[i]))
    mx = log_w.max()
    w = np.exp(log_w - mx)
    mean = w.mean()
    se = w.std() / np.sqrt(n_samples) / mean
    return float(mx + np.log(mean)), float(se)
