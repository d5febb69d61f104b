"""Dense O(N³) reference for the sparse GP regression family (notes §4.1, seed 001 Table 1).

Every sparse method is an exact GP with an effective prior covariance; this module builds that
N×N covariance explicitly with plain numpy (no sparsegp code), and gives the evidence, its
gradient (by the adjoint G = ½(ααᵀ − C⁻¹) contracted with dense derivatives of C) and the
predictive distribution under the method's test conditional.
"""
import numpy as np


def se(A, B, s2, ls):
    """k(A, B) for the SE kernel with per-dimension length-scales ``ls`` (D,)."""
    d = (A[:, None, :] - B[None, :, :]) / ls
    return s2 * np.exp(-0.5 * np.sum(d * d, axis=2))


def _se_derivs(A, B, s2, ls, wrt_B=True):
    """Dense derivatives of k(A, B): list of (name, dK) for s², each ℓ_j and each B[m, j]."""
    K = se(A, B, s2, ls)
    diff = A[:, None, :] - B[None, :, :]
    out = [("variance", K / s2)]
    for j in range(A.shape[1]):
        out.append((("lengthscale", j), K * diff[:, :, j] ** 2 / ls[j] ** 3))
    return K, diff, out


def effective_covariances(method, X, Z, s2, ls, noise, jitter, blocks=None):
    """Training covariance C = K̃ + σ² I of ``method`` and the pieces needed for prediction."""
    N = X.shape[0]
    Kff = se(X, X, s2, ls)
    if method == "exact":
        return Kff + noise * np.eye(N)
    Kuu = se(Z, Z, s2, ls) + jitter * s2 * np.eye(Z.shape[0])
    Kfu = se(X, Z, s2, ls)
    Q = Kfu @ np.linalg.solve(Kuu, Kfu.T)
    return _assemble(method, Q, Kff, noise, blocks)


def _mask(method, N, blocks):
    if method in ("sor", "dtc", "vfe"):
        return np.zeros((N, N))
    if method in ("fitc", "fic"):
        return np.eye(N)
    m = np.zeros((N, N))
    for b in blocks:
        m[np.ix_(b, b)] = 1.0
    return m


def _assemble(method, Q, Kff, noise, blocks):
    N = Q.shape[0]
    mask = _mask(method, N, blocks)
    return Q + mask * (Kff - Q) + noise * np.eye(N)


def log_marginal_likelihood(method, X, y, Z, s2, ls, noise, jitter, blocks=None):
    """log N(y | 0, C) for the effective C; VFE subtracts tr(K_ff − Q_ff)/(2σ²)."""
    C = effective_covariances(method, X, Z, s2, ls, noise, jitter, blocks)
    L = np.linalg.cholesky(C)
    a = np.linalg.solve(C, y)
    lml = -0.5 * y @ a - np.sum(np.log(np.diag(L))) - 0.5 * len(y) * np.log(2 * np.pi)
    if method == "vfe":
        Kuu = se(Z, Z, s2, ls) + jitter * s2 * np.eye(Z.shape[0])
        Kfu = se(X, Z, s2, ls)
        Q = Kfu @ np.linalg.solve(Kuu, Kfu.T)
        lml -= np.trace(se(X, X, s2, ls) - Q) / (2 * noise)
    return lml


def gradient(method, X, y, Z, s2, ls, noise, jitter, blocks=None):
    """Analytic dense gradient: dict with "variance", "lengthscale" (D,), "noise_variance",
    "inducing_points" (M, D) (None for "exact")."""
    N, D = X.shape
    C = effective_covariances(method, X, Z, s2, ls, noise, jitter, blocks)
    Ci = np.linalg.inv(C)
    a = Ci @ y
    G = 0.5 * (np.outer(a, a) - Ci)
    Kff, diff_ff, dKff = _se_derivs(X, X, s2, ls)
    if method == "exact":
        g = {"variance": np.sum(G * dKff[0][1]),
             "lengthscale": np.array([np.sum(G * d) for _, d in dKff[1:]]),
             "noise_variance": np.trace(G), "inducing_points": None}
        return g
    M = Z.shape[0]
    Kuu, diff_uu, dKuu = _se_derivs(Z, Z, s2, ls)
    Kuu = Kuu + jitter * s2 * np.eye(M)
    Kfu, diff_fu, dKfu = _se_derivs(X, Z, s2, ls)
    Kuu_i = np.linalg.inv(Kuu)
    Q = Kfu @ Kuu_i @ Kfu.T
    mask = _mask(method, N, blocks)

    def dQ(dfu, duu):
        P = dfu @ Kuu_i @ Kfu.T
        return P + P.T - Kfu @ Kuu_i @ duu @ Kuu_i @ Kfu.T

    def total(dq, dkff):
        dC = dq + mask * (dkff - dq)
        val = np.sum(G * dC)
        if method == "vfe":
            val -= np.trace(dkff - dq) / (2 * noise)
        return val

    g = {}
    g["variance"] = total(dQ(dKfu[0][1], dKuu[0][1] + jitter * np.eye(M)), dKff[0][1])
    g["lengthscale"] = np.array([
        total(dQ(dKfu[j + 1][1], dKuu[j + 1][1]), dKff[j + 1][1]) for j in range(D)])
    gn = np.trace(G)
    if method == "vfe":
        gn += np.trace(Kff - Q) / (2 * noise ** 2)
    g["noise_variance"] = gn
    gz = np.zeros((M, D))
    for m in range(M):
        for j in range(D):
            dfu = np.zeros((N, M))
            dfu[:, m] = Kfu[:, m] * diff_fu[:, m, j] / ls[j] ** 2
            duu = np.zeros((M, M))
            row = -Kuu[m, :] * diff_uu[m, :, j] / ls[j] ** 2
            row[m] = 0.0
            duu[m, :] = row
            duu[:, m] += row
            gz[m, j] = total(dQ(dfu, duu), np.zeros((N, N)))
    g["inducing_points"] = gz
    return g


def predict(method, X, y, Z, Xs, s2, ls, noise, jitter, blocks=None):
    """Predictive mean and joint covariance of the latent f* under the method's joint prior.

    Cross-covariance Q_*f (K_*f for "exact"); test block Q** (SoR), K** (DTC/VFE/FITC/PITC,
    exact test conditional) or Q** + diag(K** − Q**) (FIC).
    """
    C = effective_covariances(method, X, Z, s2, ls, noise, jitter, blocks)
    Kss = se(Xs, Xs, s2, ls)
    if method == "exact":
        Csf, Css = se(Xs, X, s2, ls), Kss
    else:
        Kuu = se(Z, Z, s2, ls) + jitter * s2 * np.eye(Z.shape[0])
        Ksu = se(Xs, Z, s2, ls)
        Csf = Ksu @ np.linalg.solve(Kuu, se(Z, X, s2, ls))
        Qss = Ksu @ np.linalg.solve(Kuu, Ksu.T)
        if method == "sor":
            Css = Qss
        elif method == "fic":
            Css = Qss + np.diag(np.diag(Kss - Qss))
        else:
            Css = Kss
    mean = Csf @ np.linalg.solve(C, y)
    cov = Css - Csf @ np.linalg.solve(C, Csf.T)
    return mean, cov


def augmented_predict(X, y, Z, Xs, s2, ls, noise, jitter):
    """ASoR by brute force: SoR with inducing set Z ∪ {x*}, one test point at a time."""
    mean = np.empty(len(Xs))
    var = np.empty(len(Xs))
    for t in range(len(Xs)):
        Zt = np.vstack([Z, Xs[t:t + 1]])
        m, c = predict("sor", X, y, Zt, Xs[t:t + 1], s2, ls, noise, jitter)
        mean[t], var[t] = m[0], c[0, 0]
    return mean, var


def bcm_predict(X, y, Xs, s2, ls, noise, jitter, blocks):
    """Posterior of u = f* under the PITC joint prior with inducing inputs = test inputs."""
    T = Xs.shape[0]
    Kuu = se(Xs, Xs, s2, ls) + jitter * s2 * np.eye(T)
    Kfu = se(X, Xs, s2, ls)
    Q = Kfu @ np.linalg.solve(Kuu, Kfu.T)
    Lam = _mask("pitc", X.shape[0], blocks) * (se(X, X, s2, ls) - Q) + noise * np.eye(len(X))
    # joint Gaussian of (u, y): cov(u) = Kuu, cov(u, y) = Kuf, cov(y) = Q + Λ
    Cy = Q + Lam
    mean = Kfu.T @ np.linalg.solve(Cy, y)
    cov = Kuu - Kfu.T @ np.linalg.solve(Cy, Kfu)
    return mean, cov


# ----------------------------------------------------------------------------------------------
# the same from a covariance function: any kernel object, e.g. a stationary kernel plus a
# constant (issue 48), whose k(A, B) computes the sum itself

def kernel_effective_covariance(method, k, X, Z, noise, jitter, blocks=None):
    """C = K̃ + σ² I of ``method`` from a covariance function ``k(A, B)`` (N×N).

    ``jitter`` is absolute here: K_uu = k(Z, Z) + jitter I.
    Returns ``(C, Kff, Q)`` (Q None for "exact").
    """
    N = X.shape[0]
    Kff = k(X, X)
    if method == "exact":
        return Kff + noise * np.eye(N), Kff, None
    Kuu = k(Z, Z) + jitter * np.eye(Z.shape[0])
    Kfu = k(X, Z)
    Q = Kfu @ np.linalg.solve(Kuu, Kfu.T)
    return _assemble(method, Q, Kff, noise, blocks), Kff, Q


def kernel_log_marginal_likelihood(method, k, X, y, Z, noise, jitter, blocks=None):
    """log N(y | 0, C) of :func:`kernel_effective_covariance`; VFE less tr(K_ff − Q_ff)/(2σ²)."""
    C, Kff, Q = kernel_effective_covariance(method, k, X, Z, noise, jitter, blocks)
    _, logdet = np.linalg.slogdet(C)
    lml = -0.5 * (y @ np.linalg.solve(C, y) + logdet + len(y) * np.log(2 * np.pi))
    if method == "vfe":
        lml -= np.trace(Kff - Q) / (2 * noise)
    return lml


def kernel_predict(method, k, X, y, Z, Xs, noise, jitter, blocks=None):
    """Latent predictive mean and joint covariance at Xs from ``k(A, B)``, under the method's
    test conditional (as :func:`predict`): Q_*f (K_*f for "exact"); Q** (SoR), K** (DTC, VFE,
    FITC, PITC) or Q** + diag(K** − Q**) (FIC)."""
    C, _, _ = kernel_effective_covariance(method, k, X, Z, noise, jitter, blocks)
    Kss = k(Xs, Xs)
    if method == "exact":
        Csf, Css = k(Xs, X), Kss
    else:
        Kuu = k(Z, Z) + jitter * np.eye(Z.shape[0])
        Ksu = k(Xs, Z)
        Csf = Ksu @ np.linalg.solve(Kuu, k(Z, X))
        Qss = Ksu @ np.linalg.solve(Kuu, Ksu.T)
        Css = {"sor": Qss, "fic": Qss + np.diag(np.diag(Kss - Qss))}.get(method, Kss)
    mean = Csf @ np.linalg.solve(C, y)
    return mean, Css - Csf @ np.linalg.solve(C, Csf.T)


def kernel_bcm_predict(method, k, X, y, Xs, noise, jitter, blocks=None):
    """Posterior of u = f* with the test inputs as inducing inputs (transduction) under the
    training conditional of ``method`` ("pitc", "fitc"/"fic", else DTC's), from ``k(A, B)``."""
    train = method if method in ("pitc", "fitc", "fic") else "dtc"
    C, _, _ = kernel_effective_covariance(train, k, X, Xs, noise, jitter, blocks)
    Kuu = k(Xs, Xs) + jitter * np.eye(Xs.shape[0])
    Kfu = k(X, Xs)
    return Kfu.T @ np.linalg.solve(C, y), Kuu - Kfu.T @ np.linalg.solve(C, Kfu)
