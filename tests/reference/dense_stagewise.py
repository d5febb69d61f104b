"""Dense O(n^3) reference for the stagewise (additive-model) sparse GP classifier (seed 004).

Everything here recomputes the ADF posterior from scratch, N(f | h, A) with
A = (K^-1 + Pi)^-1 and h = A Pi m, written in the stable B-form
A = K - K_.u C K_u.,  h = K_.u C m_u,  C = S (I + S K_uu S)^-1 S,  S = Pi_u^(1/2)
(Woodbury; the same matrices as notes §2.2 and §3.7), so it needs no inverse of K.
The probit quantities use scipy.special, independently of the compiled kernels.
"""
import numpy as np
from scipy.special import log_ndtr


def se_dense(X, Z, variance, lengthscale):
    """k(X, Z) for the squared-exponential kernel, plain numpy."""
    ls = np.broadcast_to(np.asarray(lengthscale, dtype=float), (X.shape[1],))
    d = (X[:, None, :] - Z[None, :, :]) / ls
    return variance * np.exp(-0.5 * np.sum(d * d, axis=-1))


def dense_posterior(K, active, p, m):
    """Mean h (n,) and covariance A (n, n) of the ADF posterior with sites (p, m) on ``active``."""
    active = np.asarray(active, dtype=int)
    n = K.shape[0]
    if active.size == 0:
        return np.zeros(n), K.copy()
    S = np.sqrt(np.asarray(p, dtype=float))
    Kuu = K[np.ix_(active, active)]
    B = np.eye(active.size) + S[:, None] * Kuu * S[None, :]
    C = S[:, None] * np.linalg.solve(B, np.diag(S))
    Kfu = K[:, active]
    A = K - Kfu @ C @ Kfu.T
    h = Kfu @ (C @ np.asarray(m, dtype=float))
    return h, A


def posterior_extended(Kuu, Kcu, kdiag, p, m):
    """Mean h (c,) and variance diag A (c,) at c points from the B-form, in extended precision.

    Near the variance box (s2 = 1e5) the B-form's A_ii = k_ii - k_iu C k_ui is a difference
    of numbers about s2 in size taken through a B of condition about 3e5, and float64 loses
    eps cond(B) s2, some 1e-8 of an NLP near 0.36: more than the code under test does. Every
    step here is in ``np.longdouble``, an 80-bit float on x86-64 (eps 1.1e-19), with a
    Cholesky factor written out, as LAPACK takes float64 only.

    Parameters
    ----------
    Kuu : ndarray of shape (d, d)
        Prior covariance of the active points.
    Kcu : ndarray of shape (c, d)
        Prior covariance of the c points with the active ones.
    kdiag : ndarray of shape (c,)
        Prior variances of the c points.
    p, m : ndarray of shape (d,)
        Site precisions and means of the active points.

    Returns
    -------
    h, diagA : ndarray of shape (c,), float64
    """
    ld = np.longdouble
    S = np.sqrt(np.asarray(p, dtype=ld))
    B = np.eye(S.size, dtype=ld) + S[:, None] * np.asarray(Kuu, dtype=ld) * S[None, :]
    L = np.zeros_like(B)
    for j in range(S.size):
        L[j, j] = np.sqrt(B[j, j] - L[j, :j] @ L[j, :j])
        L[j + 1:, j] = (B[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    # R = L^-1 S [K_uc, m], so that k_iu C k_ui = |R_:i|^2 and k_iu C m = R_:i . R_:c
    R = S[:, None] * np.column_stack([np.asarray(Kcu, dtype=ld).T, np.asarray(m, dtype=ld)])
    for j in range(S.size):
        R[j] = (R[j] - L[j, :j] @ R[:j]) / L[j, j]
    h = R[:, :-1].T @ R[:, -1]
    diagA = np.asarray(kdiag, dtype=ld) - np.sum(R[:, :-1] ** 2, axis=0)
    return h.astype(float), diagA.astype(float)


def inv_mills(z):
    """N(z)/Phi(z) through logs (ample accuracy for the moderate z of the tests)."""
    return np.exp(-0.5 * z * z - 0.5 * np.log(2 * np.pi) - log_ndtr(z))


def moment_match(y_j, h_j, a_jj, bias):
    """ADF site (p, m) and (alpha, nu) for including point j (seed 004 eq. 2)."""
    s = np.sqrt(1.0 + a_jj)
    z = y_j * (h_j + bias) / s
    r = inv_mills(z)
    alpha = y_j * r / s
    nu = alpha * (alpha + (h_j + bias) / (1.0 + a_jj))
    p = nu / (1.0 - a_jj * nu)
    m = h_j + alpha / nu
    return p, m, alpha, nu


def nlp_points(y, h, diagA, bias, mask=None):
    """-mean log Phi(y (h + b) / sqrt(1 + diag A)) over ``mask`` (all points if None)."""
    z = y * (h + bias) / np.sqrt(1.0 + diagA)
    lp = log_ndtr(z)
    if mask is not None:
        lp = lp[mask]
    return -np.mean(lp)


def lookahead_bruteforce(K, y, active, p, m, bias, j, p_j=None, m_j=None, rule="all"):
    """NLP after including j, by recomputing the dense posterior with u + [j].

    ``rule="all"`` gives NLP_a of eq. 5 (all n points); ``rule="validation"`` gives eq. 4
    over the non-active set after the inclusion (u + [j])^c. The site of j is moment matched
    (eq. 2) from the posterior before the inclusion unless (p_j, m_j) are given.
    Returns (nlp, p_j, m_j, h_new, diagA_new).
    """
    h, A = dense_posterior(K, active, p, m)
    if p_j is None:
        p_j, m_j, _, _ = moment_match(y[j], h[j], A[j, j], bias)
    act = list(active) + [j]
    h2, A2 = dense_posterior(K, act, list(p) + [p_j], list(m) + [m_j])
    d2 = np.diag(A2).copy()
    if rule == "all":
        return nlp_points(y, h2, d2, bias), p_j, m_j, h2, d2
    mask = np.ones(len(y), dtype=bool)
    mask[act] = False
    return nlp_points(y, h2, d2, bias, mask), p_j, m_j, h2, d2


def adf_sequence(K, y, order, bias):
    """Include ``order`` one by one with moment matching; returns (p, m, h, A)."""
    p, m = [], []
    for j in order:
        h, A = dense_posterior(K, order[:len(p)], p, m)
        pj, mj, _, _ = moment_match(y[j], h[j], A[j, j], bias)
        p.append(pj)
        m.append(mj)
    h, A = dense_posterior(K, order, p, m)
    return np.array(p), np.array(m), h, A


def nlp_eq4(X, y, active, p, m, variance, lengthscale, bias, K=None):
    """NLP of eq. 4 (non-active points only) at the given hyper-parameters, sites fixed.

    ``K`` (n, n), when given, is the prior covariance to use instead of the SE kernel of
    ``variance`` and ``lengthscale`` (which are then ignored)."""
    if K is None:
        K = se_dense(X, X, variance, lengthscale)
    h, A = dense_posterior(K, active, p, m)
    mask = np.ones(len(y), dtype=bool)
    mask[np.asarray(active, dtype=int)] = False
    return nlp_points(y, h, np.diag(A), bias, mask)


def site_objective(y, h, diagA, ktilde, bias, alpha_t, tau, a_jj):
    """NLP_a (eq. 5) after including a point with column ktilde = A_.j and sites given by
    alpha_tilde and tau = log p (eq. 7: eta = p / (1 + p A_jj))."""
    p = np.exp(tau)
    eta = p / (1.0 + p * a_jj)
    return nlp_points(y, h + alpha_t * ktilde, diagA - eta * ktilde ** 2, bias)
