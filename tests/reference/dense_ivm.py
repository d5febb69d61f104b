"""Dense O(n^3) reference for the informative vector machine (seed 003).

Independent of the compiled core: plain numpy/scipy, n x n matrices, probit moments from
``scipy.special.log_ndtr``. Used by tests/test_ivm*.py on small problems only.
"""
import numpy as np
from scipy.special import log_ndtr


def se_bias_kernel(X, Z, variance, lengthscale, bias_variance=0.0):
    """k(X, Z) = s2 exp(-|(x - z) / l|^2 / 2) + v_b, plain numpy."""
    ls = np.broadcast_to(np.asarray(lengthscale, dtype=float), (X.shape[1],))
    d = (X[:, None, :] - Z[None, :, :]) / ls
    return variance * np.exp(-0.5 * np.sum(d * d, axis=-1)) + bias_variance


def probit_moments(y, mu, var, bias):
    """(log Z, alpha, nu) of Phi(y (f + b)) N(f | mu, var), via log_ndtr."""
    s = np.sqrt(1.0 + var)
    z = y * (mu + bias) / s
    r = np.exp(-0.5 * z * z - 0.5 * np.log(2.0 * np.pi) - log_ndtr(z))
    alpha = y * r / s
    nu = alpha * (alpha + (mu + bias) / (1.0 + var))
    return log_ndtr(z), alpha, nu


def posterior_from_sites(K, p):
    """A = (K^-1 + Pi)^-1 literally (Pi = diag(p) over all n points, zeros allowed)."""
    return np.linalg.inv(np.linalg.inv(K) + np.diag(p))


def posterior_b_form(K, active, p, m):
    """(h, A) via B = I + S K_II S (Woodbury), h = A Pi m; the stable form of the same thing."""
    active = np.asarray(active, dtype=int)
    S = np.sqrt(np.asarray(p, dtype=float))
    B = np.eye(active.size) + S[:, None] * K[np.ix_(active, active)] * S[None, :]
    KfI = K[:, active]
    C = S[:, None] * np.linalg.solve(B, np.diag(S))
    A = K - KfI @ C @ KfI.T
    h = KfI @ (C @ np.asarray(m, dtype=float))
    return h, A


def dense_adf(K, y, bias, order):
    """Sequential ADF inclusion of ``order`` with dense rank-one updates of (h, A).

    Returns (h, A, p, m) with p, m in inclusion order.
    """
    n = K.shape[0]
    A = K.copy()
    h = np.zeros(n)
    ps, ms = [], []
    for i in order:
        _, alpha, nu = probit_moments(y[i], h[i], A[i, i], bias)
        p = nu / (1.0 - A[i, i] * nu)
        m = h[i] + alpha / nu
        col = A[:, i].copy()
        eta = p / (1.0 + p * A[i, i])
        h = h + eta * (m - h[i]) * col
        A = A - eta * np.outer(col, col)
        ps.append(p)
        ms.append(m)
    return h, A, np.array(ps), np.array(ms)


def gaussian_kl(m1, S1, m0, S0):
    """KL(N(m1, S1) || N(m0, S0)) for full covariances."""
    n = m1.size
    S0inv = np.linalg.inv(S0)
    d = m0 - m1
    _, ld0 = np.linalg.slogdet(S0)
    _, ld1 = np.linalg.slogdet(S1)
    return 0.5 * (np.trace(S0inv @ S1) + d @ S0inv @ d - n + ld0 - ld1)


def brute_force_scores(A, h, y, bias, j):
    """(entropy drop, KL(Q_new || Q)) of including j, from the full n-dim posteriors."""
    _, alpha, nu = probit_moments(y[j], h[j], A[j, j], bias)
    p = nu / (1.0 - A[j, j] * nu)
    m = h[j] + alpha / nu
    Ainv = np.linalg.inv(A)
    Ainv[j, j] += p
    A_new = np.linalg.inv(Ainv)
    # h_new = A_new (A^-1 h + p m e_j)
    rhs = np.linalg.solve(A, h)
    rhs[j] += p * m
    h_new = A_new @ rhs
    _, ld = np.linalg.slogdet(A)
    _, ld_new = np.linalg.slogdet(A_new)
    entropy = 0.5 * (ld - ld_new)
    return entropy, gaussian_kl(h_new, A_new, h, A)


def dense_greedy_entropy(K, y, bias, d, first):
    """Full-greedy IVM with the differential-entropy score, dense; ``first`` picks are given.

    Returns the active set in inclusion order.
    """
    n = K.shape[0]
    A = K.copy()
    h = np.zeros(n)
    chosen = []
    for step in range(d):
        if step < len(first):
            i = int(first[step])
        else:
            _, _, nu = probit_moments(y, h, np.diag(A), bias)
            score = -0.5 * np.log1p(-np.diag(A) * nu)
            score[chosen] = -np.inf
            i = int(np.argmax(score))
        _, alpha, nu = probit_moments(y[i], h[i], A[i, i], bias)
        col = A[:, i].copy()
        h = h + alpha * col
        A = A - nu * np.outer(col, col)
        chosen.append(i)
    return np.array(chosen)
