"""Compiled kernels of EP over the FITC prior (generalized FITC classification, seed 000).

Posterior representation (notes §1.2, whitened variant of §1.5 (c)):

    A = D + P R^T R P^T,     h = nn + P gamma

with ``d`` (N,) the diagonal of D, ``P`` (N, M) C-contiguous (row n is what site n touches),
``R`` (M, M) upper triangular with positive diagonal (the paper's orientation), ``nn`` (N,) and
``gamma`` (M,). One call of :func:`ep_fitc_sweep` visits a whole list of sites; Python owns
the outer loop (refresh, convergence test, warm starts).

Why the factor update is written here rather than calling ``linalg.chol_downdate_rank1``: the
library routine works on a lower factor row by row with a serial rotation recurrence and first
solves ``L^{-1} x``. In a site update that solve is already known (``R^{-T} x = sqrt(c) R p``),
its feasibility ``1 - c p^T R^T R p = (1 + pi d_n) / (1 + pi A_nn)`` is an O(1) number, and on
the upper factor the hyperbolic recurrence of notes §0.6 is a pair of contiguous AXPYs per row
that LLVM vectorises. A downdate that still fails half-way marks the factor as stale; the
caller refreshes the whole posterior from the site vectors (footnote 3), which rebuilds ``R``
from scratch, so an untouched factor is not needed.

This module holds the site kernels: the sequential sweep with its rank-one factor updates,
and the cavities and targets of every site from one posterior (:func:`ep_site_targets`).
The O(N M^2) row passes of the parallel schedule and the refresh are
:mod:`sparsegp._numba.ep_fitc_rows`, those of the evidence gradient
:mod:`sparsegp._numba.ep_fitc_gradient`, and the Anderson step of the parallel map
:mod:`sparsegp._numba.ep_fitc_anderson`.
"""
import math

from ._jit import jit
from .ep import cavity, probit_site_step, site_target
from .probit import probit_tilted

#: Status codes returned by :func:`ep_fitc_sweep`.
SWEEP_DONE = 0
SWEEP_DOWNDATE_FAILED = 1


#: A downdate is refused when a pivot would fall below this fraction of its old value
#: squared: the result would be singular to working precision.
DOWNDATE_MARGIN = 1e-12


@jit
def _upper_times_row(R, P, n, u):
    """u <- R P[n] for upper triangular R (M, M). O(M^2 / 2).

    Four rows at a time: four independent accumulators hide the FMA latency that a single
    dot-product chain is bound by (about 4x faster at M = 100). No array views are taken
    (each would cost a reference-count round trip per call).
    """
    M = R.shape[0]
    i = 0
    while i + 4 <= M:
        s0 = R[i, i] * P[n, i] + R[i, i + 1] * P[n, i + 1] + R[i, i + 2] * P[n, i + 2]
        s1 = R[i + 1, i + 1] * P[n, i + 1] + R[i + 1, i + 2] * P[n, i + 2]
        s2 = R[i + 2, i + 2] * P[n, i + 2]
        s3 = 0.0
        for k in range(i + 3, M):
            pk = P[n, k]
            s0 += R[i, k] * pk
            s1 += R[i + 1, k] * pk
            s2 += R[i + 2, k] * pk
            s3 += R[i + 3, k] * pk
        u[i] = s0
        u[i + 1] = s1
        u[i + 2] = s2
        u[i + 3] = s3
        i += 4
    while i < M:
        s = 0.0
        for k in range(i, M):
            s += R[i, k] * P[n, k]
        u[i] = s
        i += 1


@jit
def _upper_t_times(R, u, w):
    """w <- R^T u for upper triangular R, as contiguous row AXPYs, four rows per pass."""
    M = R.shape[0]
    for j in range(M):
        w[j] = 0.0
    i = 0
    while i + 4 <= M:
        u0, u1, u2, u3 = u[i], u[i + 1], u[i + 2], u[i + 3]
        w[i] += u0 * R[i, i]
        w[i + 1] += u0 * R[i, i + 1] + u1 * R[i + 1, i + 1]
        w[i + 2] += u0 * R[i, i + 2] + u1 * R[i + 1, i + 2] + u2 * R[i + 2, i + 2]
        for j in range(i + 3, M):
            w[j] += u0 * R[i, j] + u1 * R[i + 1, j] + u2 * R[i + 2, j] + u3 * R[i + 3, j]
        i += 4
    while i < M:
        ui = u[i]
        for j in range(i, M):
            w[j] += ui * R[i, j]
        i += 1


@jit
def chol_update_upper(R, x, sign):
    """In place R <- chol(R^T R + sign x x^T) for upper R (notes §0.6), ``x`` (M,) overwritten.

    ``sign`` is +1.0 (update, never fails) or -1.0 (downdate). Returns False as soon as a
    downdate pivot would not be positive; R is then partly modified and must be rebuilt.
    Each row is one contiguous, vectorisable pass.
    """
    M = R.shape[0]
    for k in range(M):
        rkk = R[k, k]
        xk = x[k]
        r2 = rkk * rkk + sign * xk * xk
        if not (r2 > DOWNDATE_MARGIN * rkk * rkk):  # also catches NaN
            return False
        r = math.sqrt(r2)
        c = r / rkk
        s = xk / rkk
        R[k, k] = r
        ss = sign * s
        inv_c = 1.0 / c
        for j in range(k + 1, M):
            v = (R[k, j] + ss * x[j]) * inv_c
            R[k, j] = v
            x[j] = c * x[j] - s * v
    return True


@jit
def ep_fitc_sweep(y, order, start, tau, nu, d, P, R, nn, gamma, bias, damping,
                  u, w, fail_pos):
    """Sequential EP sweep over ``order[start:]`` (notes §1.3), updating everything in place.

    Parameters
    ----------
    y : ndarray of shape (N,)
        Labels in {-1, +1}.
    order : ndarray of shape (K,), int64
        Site indices to visit, in order.
    start : int
        First position of ``order`` to visit (a sweep resumes here after a refresh).
    tau, nu : ndarray of shape (N,)
        Site precisions and precision-adjusted means; changed in place.
    d, P, R, nn, gamma : ndarrays of shapes (N,), (N, M), (M, M), (N,), (M,)
        The posterior representation A = D + P R^T R P^T, h = nn + P gamma; changed in place.
    bias : float
        Probit bias beta: p(y | f) = Phi(y (f + beta)).
    damping : float
        Step in natural parameters, in (0, 1]; 1 is plain EP (:func:`sparsegp._numba.ep.damp_site`).
    u, w : ndarray of shape (M,)
        Scratch.
    fail_pos : int
        Test hook: the first downdate at position >= ``fail_pos`` is reported as failed
        (pass -1 to disable).

    Returns
    -------
    status : int
        ``SWEEP_DONE`` or ``SWEEP_DOWNDATE_FAILED``; in the latter case the site at ``pos``
        holds its new parameters, the representation is stale and must be refreshed before
        the sweep resumes at ``pos + 1``.
    pos : int
        Position in ``order`` where the sweep stopped (``len(order)`` when done).
    max_change : float
        Largest undamped residual |target - current| of tau or nu over the visited sites
        (:func:`sparsegp._numba.ep.site_residual`).
    """
    M = R.shape[0]
    max_change = 0.0
    K = order.shape[0]
    for pos in range(start, K):
        n = order[pos]
        # Marginal A_nn = d_n + ||R p_n||^2, h_n = nn_n + p_n^T gamma (notes §1.2).
        _upper_times_row(R, P, n, u)
        uu = 0.0
        for j in range(M):
            uu += u[j] * u[j]
        a = d[n] + uu
        h = nn[n]
        for j in range(M):
            h += P[n, j] * gamma[j]
        # Cavity (step 2; an improper one is round-off: skip the site), moment match (step 3,
        # notes §0.4), clamp, damp, and with pi = tau_new - tau_n, b = nu_new - nu_n:
        # c = pi / (1 + pi A_nn), g = (b - pi h) / (1 + pi A_nn) (step 5; ep.probit_site_step)
        ok, change, tau_new, nu_new, c, g = probit_site_step(y[n], h, a, tau[n], nu[n], bias,
                                                             damping)
        # the residual counts even if the update is rejected: that site has not converged
        if change > max_change:
            max_change = change
        if not ok:
            continue  # improper cavity or matched Gaussian, or a non-positive new variance
        pi = tau_new - tau[n]
        dn = d[n]
        # w = R^T R p_n; gamma' = gamma + (b - pi h) / (1 + pi d_n) R'^T R' p_n, and
        # R'^T R' p_n = w (1 - c u.u) = w (1 + pi d_n) / (1 + pi A_nn)   (step 5).
        _upper_t_times(R, u, w)
        for j in range(M):
            gamma[j] += g * w[j]
        if c > 0.0:
            # Downdate by sqrt(c) w; feasible iff 1 - c u.u = (1 + pi d_n)/(1 + pi A_nn) > 0.
            rho = (1.0 + pi * dn) / (1.0 + pi * a)
            sc = math.sqrt(c)
            for j in range(M):
                w[j] *= sc
            ok = rho > DOWNDATE_MARGIN and not (0 <= fail_pos <= pos)
            if ok:
                ok = chol_update_upper(R, w, -1.0)
            if not ok:
                tau[n] = tau_new
                nu[n] = nu_new
                return SWEEP_DOWNDATE_FAILED, pos, max_change
        elif c < 0.0:
            # A precision decrease is a rank-one update: cannot fail (footnote 3).
            sc = math.sqrt(-c)
            for j in range(M):
                w[j] *= sc
            chol_update_upper(R, w, 1.0)
        f = 1.0 / (1.0 + pi * dn)
        d[n] = dn * f
        for j in range(M):
            P[n, j] *= f
        nn[n] = d[n] * nu_new
        tau[n] = tau_new
        nu[n] = nu_new
    return SWEEP_DONE, K, max_change


@jit
def ep_site_targets(y, tau, nu, diag_a, h, bias, tau_new, nu_new, log_z, dlog_z, cav_tau,
                    cav_nu):
    """Cavities and moment-matched sites of every site from one posterior (parallel schedule).

    Inputs ``diag_a``, ``h`` (N,) are the posterior marginals. Outputs (all (N,), written in
    place): ``tau_new``, ``nu_new`` the undamped targets of :func:`sparsegp._numba.ep.site_target`
    (the current values where the cavity is improper), ``log_z`` log Phi(z_n), ``dlog_z`` its
    derivative w.r.t. the cavity mean (equal to the one w.r.t. the bias, §1.9 step 6),
    ``cav_tau``, ``cav_nu`` the cavity natural parameters (notes §1.3 steps 2-3; ``cav_tau`` is
    0 where the cavity is improper, and ``log_z``, ``dlog_z`` are 0 there). Also used for the
    evidence (§1.8).
    """
    N = y.shape[0]
    for n in range(N):
        mu_c, var_c, ok = cavity(h[n], diag_a[n], tau[n], nu[n])
        lz = 0.0
        alpha = 0.0
        if ok:
            lz, alpha, nuq = probit_tilted(y[n], mu_c, var_c, bias)
            tau_t, nu_t, ok = site_target(mu_c, var_c, alpha, nuq)
        if not ok:
            # improper cavity or matched Gaussian: the site keeps its value (ep module policy)
            tau_t, nu_t = tau[n], nu[n]
        tau_new[n] = tau_t
        nu_new[n] = nu_t
        log_z[n] = lz
        dlog_z[n] = alpha
        cav_tau[n] = 1.0 / var_c
        cav_nu[n] = mu_c / var_c
