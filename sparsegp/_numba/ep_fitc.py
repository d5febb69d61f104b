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
"""
import math

import numba
import numpy as np

from ._jit import jit
from .blas import add_parts, copy_rows, syrk_rows_upper, thread_ranges, trmm_rows
from .covfuncs import stationary_grad
from .ep import TAU_MIN, cavity, damp_site, marginal_step, site_residual, site_target
from .probit import probit_tilted, probit_tilted_moments

#: Status codes returned by :func:`ep_fitc_sweep`.
SWEEP_DONE = 0
SWEEP_DOWNDATE_FAILED = 1


#: A downdate is refused when a pivot would fall below this fraction of its old value
#: squared: the result would be singular to working precision.
DOWNDATE_MARGIN = 1e-12

@jit(inline="always")
def _scratch_rows(lo, hi, block):
    """Rows of a scratch block for rows lo..hi-1: ``block``, or fewer when the range is shorter
    (a large scratch costs a fresh mapping and its page faults on every call)."""
    return max(1, min(block, hi - lo))


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
        # Cavity (step 2); an improper one is round-off: skip the site (ep.cavity).
        mu_c, var_c, ok = cavity(h, a, tau[n], nu[n])
        if not ok:
            continue
        # Moment match (step 3, notes §0.4), clamp, damp.
        _, alpha, nuq = probit_tilted(y[n], mu_c, var_c, bias)
        tau_t, nu_t, ok = site_target(mu_c, var_c, alpha, nuq)
        if not ok:
            continue
        # the residual counts even if the update is rejected below: that site has not converged
        change = site_residual(tau[n], nu[n], tau_t, nu_t)
        if change > max_change:
            max_change = change
        tau_new, nu_new = damp_site(tau[n], nu[n], tau_t, nu_t, damping)
        pi = tau_new - tau[n]
        b = nu_new - nu[n]
        # c = pi / (1 + pi A_nn), g = (b - pi h) / (1 + pi A_nn) (step 5)
        c, g, ok = marginal_step(pi, b, h, a)
        if not ok:
            continue  # the new marginal variance would not be positive: reject
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


@jit(inline="always")
def marginal_parts(C, Vt, gamma, c2, vg):
    """Row pieces of the marginals of an implicit refresh: c2_n = ‖C[n]‖², vg_n = Vt[n]·γ.

    With ``C = Vt Rᵀ`` (N, M) the marginals are A_nn = d_n + t_n² c2_n and
    h_n = nn_n + t_n vg_n (notes §1.4); the evidence gradient uses c2 and vg themselves
    (:func:`evidence_gradient_split`). ``c2``, ``vg`` (N,) are written.
    """
    N, M = Vt.shape
    for n in range(N):
        s = 0.0
        v = 0.0
        for m in range(M):
            s += C[n, m] * C[n, m]
            v += Vt[n, m] * gamma[m]
        c2[n] = s
        vg[n] = v


@jit(inline="always")
def parallel_targets(C, Vt, t, d, nn, gamma, y, tau, nu, bias, tau_target, nu_target):
    """Marginals, cavities and undamped site targets of one parallel EP iteration, fused.

    The posterior is the implicit one of a refresh: P = diag(t) Vt, so with ``C = Vt Rᵀ``
    (N, M) the marginals are A_nn = d_n + t_n² ‖C[n]‖² and h_n = nn_n + t_n Vt[n]·γ
    (notes §1.4). Each site's cavity is moment-matched as in :func:`ep_site_targets`; the
    targets go to ``tau_target``, ``nu_target`` (N,) (the current site where the cavity is
    improper). Returns the largest undamped residual |target − current|, the residual of the
    fixed-point map. One read of C and Vt; no log Z is computed.
    """
    N = Vt.shape[0]
    # First the marginals (A_nn into tau_target, h_n into nu_target, as scratch), then the
    # per-site scalar work in a loop of its own: two simple loops run about 1.4x faster than
    # one that interleaves the row reductions with the divisions and erfc of the moments.
    marginal_parts(C, Vt, gamma, tau_target, nu_target)
    for n in range(N):
        tau_target[n] = d[n] + t[n] * t[n] * tau_target[n]
        nu_target[n] = nn[n] + t[n] * nu_target[n]
    change = 0.0
    for n in range(N):
        mu_c, var_c, ok = cavity(nu_target[n], tau_target[n], tau[n], nu[n])
        if ok:
            alpha, nuq = probit_tilted_moments(y[n], mu_c, var_c, bias)
            tau_t, nu_t, ok = site_target(mu_c, var_c, alpha, nuq)
        if not ok:
            tau_t, nu_t = tau[n], nu[n]
        tau_target[n] = tau_t
        nu_target[n] = nu_t
        r = site_residual(tau[n], nu[n], tau_t, nu_t)
        if r > change:
            change = r
    return change


@jit(inline="always")
def refresh_rows(Vt, d0, tau, nu, t, omega, btil, d, nn, Ws, b):
    """The O(N M) part of a refresh from the site vectors (notes §1.4, whitened), in place.

    t = 1/(1 + d0 τ), ω = τ t, b̃ = ν t, d = d0 t, nn = d ν, ``Ws[n] = √ω_n Vt[n]`` (so that
    S − I = Wsᵀ Ws) and ``b = Vtᵀ b̃`` (M,). ``Vt`` (N, M); every other array (N,) or as named.
    """
    N, M = Vt.shape
    for m in range(M):
        b[m] = 0.0
    for n in range(N):
        tn_ = tau[n]
        nu_n = nu[n]
        tt = 1.0 / (1.0 + d0[n] * tn_)
        t[n] = tt
        om = tn_ * tt
        omega[n] = om
        bt = nu_n * tt
        btil[n] = bt
        dn = d0[n] * tt
        d[n] = dn
        nn[n] = dn * nu_n
        so = math.sqrt(om)
        for m in range(M):
            v = Vt[n, m]
            Ws[n, m] = so * v
            b[m] += bt * v


# -- the O(N M²) row passes ----------------------------------------------------------------
# Each pass is one serial kernel over a row range lo..hi-1, walked in blocks of ``block`` rows
# (``*_rows``), and a ``parallel=True`` wrapper that splits the rows into ``n_parts`` ranges,
# one per thread, and adds up the ranges' results (``*_split``). Outputs that sum over rows
# are added into arrays the caller zeroes; Grams fill the upper triangle only (the faster
# syrk), mirrored by the caller (``_fitc_ep._mirror_upper``). With one thread the caller
# runs the serial kernel over all rows (``sparsegp.classification._fitc_ep._row_pass``): the
# same blocks and sums, bit for bit, without compiling the parallel wrapper, which is most of
# a small fit's first-run compile time.
# Constant flags and offsets go to the shared kernels (trmm_rows, stationary_grad, copy_rows)
# as np.bool_(...) and np.int64(...): a bare True or 0 is a literal type to Numba, and each
# literal value compiles a specialisation of its own (a quarter to half a second each, cold).
# The helpers the passes call per block (_scratch_rows, _vt_rt_block, parallel_targets,
# marginal_parts, refresh_rows) are jitted with inline="always": Numba then types them inside
# each pass instead of compiling each as a module that every caller links in and optimises
# again (the cold demo compiled 5.3 s instead of 6.0; same code, same bits).


@jit(inline="always")
def _vt_rt_block(Cb, Vt, RT, lo, hi):
    """``Cb[:hi - lo] = Vt[lo:hi] Rᵀ`` in a thread's scratch (trmm); returns that view."""
    nb = hi - lo
    copy_rows(Vt, Cb, lo, hi, np.int64(0))
    trmm_rows(Cb, RT, np.int64(0), nb, np.bool_(False))
    return Cb[:nb]


@jit
def parallel_targets_rows(Vt, RT, t, d, nn, gamma, y, tau, nu, bias, tau_target, nu_target,
                          lo, hi, block):
    """:func:`parallel_targets` of rows lo..hi-1, ``C = Vt Rᵀ`` formed ``block`` rows at a time.

    ``RT`` (M, M) is Rᵀ, lower triangular, C-contiguous; each block of C is formed in scratch
    (trmm) and used while it is in cache. Arguments otherwise as :func:`parallel_targets`;
    returns the largest undamped residual of the rows.
    """
    Cb = np.empty((_scratch_rows(lo, hi, block), Vt.shape[1]))
    change = 0.0
    for b_lo in range(lo, hi, block):
        b_hi = min(b_lo + block, hi)
        c = parallel_targets(_vt_rt_block(Cb, Vt, RT, b_lo, b_hi), Vt[b_lo:b_hi], t[b_lo:b_hi],
                             d[b_lo:b_hi], nn[b_lo:b_hi], gamma, y[b_lo:b_hi], tau[b_lo:b_hi],
                             nu[b_lo:b_hi], bias, tau_target[b_lo:b_hi], nu_target[b_lo:b_hi])
        change = max(change, c)
    return change


@jit(parallel=True)
def parallel_targets_split(Vt, RT, t, d, nn, gamma, y, tau, nu, bias, tau_target, nu_target,
                           n_parts, block):
    """:func:`parallel_targets_rows` of every row, the rows split among ``n_parts`` threads."""
    edges = thread_ranges(Vt.shape[0], n_parts)
    change = np.zeros(n_parts)
    for p in numba.prange(n_parts):
        change[p] = parallel_targets_rows(Vt, RT, t, d, nn, gamma, y, tau, nu, bias, tau_target,
                                          nu_target, edges[p], edges[p + 1], block)
    largest = 0.0
    for p in range(n_parts):
        largest = max(largest, change[p])
    return largest


@jit
def parallel_apply_rows(Vt, d0, tau, nu, tau_target, nu_target, delta, t, omega, btil, d, nn,
                        G, b, lo, hi, block):
    """Damped site update of rows lo..hi-1, then the O(N M) part of the refresh that follows
    it, ``block`` rows at a time, Ws never stored.

    ``(tau, nu)`` move a fraction ``delta`` of the way to the targets
    (:func:`sparsegp._numba.ep.damp_site`); with ``delta`` < 0 they are left as they are (no
    step: a plain refresh). The refresh arrays are then written by :func:`refresh_rows`, each
    block's ``Ws = diag(ω)^½ Vt`` to scratch, and its Gram is added to the upper triangle of
    ``G`` (M, M) (syrk: the faster kernel, :func:`sparsegp._numba.blas.syrk_rows_upper`) and
    its ``Vtᵀ b̃`` to ``b`` (M,). Over all rows, from zeros, the mirrored G is S − I = Wsᵀ Ws.
    All arrays are written in place.
    """
    M = Vt.shape[1]
    Wb = np.empty((_scratch_rows(lo, hi, block), M))
    bb = np.empty(M)
    for b_lo in range(lo, hi, block):
        b_hi = min(b_lo + block, hi)
        nb = b_hi - b_lo
        if delta >= 0.0:
            for n in range(b_lo, b_hi):
                tau[n], nu[n] = damp_site(tau[n], nu[n], tau_target[n], nu_target[n], delta)
        refresh_rows(Vt[b_lo:b_hi], d0[b_lo:b_hi], tau[b_lo:b_hi], nu[b_lo:b_hi], t[b_lo:b_hi],
                     omega[b_lo:b_hi], btil[b_lo:b_hi], d[b_lo:b_hi], nn[b_lo:b_hi], Wb[:nb], bb)
        for m in range(M):
            b[m] += bb[m]
        syrk_rows_upper(Wb, 0, nb, G)


@jit(parallel=True)
def parallel_apply_split(Vt, d0, tau, nu, tau_target, nu_target, delta, t, omega, btil, d, nn,
                         G, b, n_parts, block):
    """:func:`parallel_apply_rows` of every row, the rows split among ``n_parts`` threads,
    each adding into a G and b of its own; their sums are added to ``G`` and ``b``."""
    N, M = Vt.shape
    edges = thread_ranges(N, n_parts)
    G_parts = np.zeros((n_parts, M, M))
    b_parts = np.zeros((n_parts, M))
    for p in numba.prange(n_parts):
        parallel_apply_rows(Vt, d0, tau, nu, tau_target, nu_target, delta, t, omega, btil, d,
                            nn, G_parts[p], b_parts[p], edges[p], edges[p + 1], block)
    add_parts(G_parts, G)
    add_parts(b_parts, b)


@jit
def marginal_parts_rows(Vt, RT, gamma, c2, vg, lo, hi, block):
    """:func:`marginal_parts` of rows lo..hi-1, ``C = Vt Rᵀ`` formed ``block`` rows at a time.

    ``RT`` (M, M) is Rᵀ, lower triangular, C-contiguous; ``c2``, ``vg`` (N,) are written.
    """
    Cb = np.empty((_scratch_rows(lo, hi, block), Vt.shape[1]))
    for b_lo in range(lo, hi, block):
        b_hi = min(b_lo + block, hi)
        marginal_parts(_vt_rt_block(Cb, Vt, RT, b_lo, b_hi), Vt[b_lo:b_hi], gamma,
                       c2[b_lo:b_hi], vg[b_lo:b_hi])


@jit(parallel=True)
def marginal_parts_split(Vt, RT, gamma, c2, vg, n_parts, block):
    """:func:`marginal_parts_rows` of every row, the rows split among ``n_parts`` threads
    (OpenBLAS held to one thread by the caller)."""
    edges = thread_ranges(Vt.shape[0], n_parts)
    for p in numba.prange(n_parts):
        marginal_parts_rows(Vt, RT, gamma, c2, vg, edges[p], edges[p + 1], block)


@jit
def whiten_rows(K, Linv, variance, Vt, d0, lo, hi, block):
    """Rows lo..hi-1 of the whitened FITC prior: ``Vt = K L⁻ᵀ`` (N, M) and
    d0 = max(s2 − ‖Vt[n]‖², 0) (N,).

    ``K`` (N, M) is k(X, Z), ``Linv`` (M, M) the lower triangular inverse of the Cholesky
    factor of K_uu (C-contiguous); ``Vt`` and ``d0`` are written, ``block`` rows at a time.
    Round-off can push K_nn − Q_nn a hair below zero; the FITC diagonal is >= 0, hence the
    clip.
    """
    M = K.shape[1]
    for b_lo in range(lo, hi, block):
        b_hi = min(b_lo + block, hi)
        copy_rows(K, Vt, b_lo, b_hi, b_lo)
        trmm_rows(Vt, Linv, b_lo, b_hi, np.bool_(True))
        for n in range(b_lo, b_hi):
            s = 0.0
            for m in range(M):
                s += Vt[n, m] * Vt[n, m]
            d0[n] = max(variance - s, 0.0)


@jit(parallel=True)
def whiten_split(K, Linv, variance, Vt, d0, n_parts, block):
    """:func:`whiten_rows` of every row, the rows split among ``n_parts`` threads."""
    edges = thread_ranges(K.shape[0], n_parts)
    for p in numba.prange(n_parts):
        whiten_rows(K, Linv, variance, Vt, d0, edges[p], edges[p + 1], block)


@jit
def evidence_gradient_rows(Vt, RT, Linv, alpha, omega, g, wg, a, K, Gd, X, Z, lengthscale,
                           grad_ls, grad_Z, gram, lo, hi, block):
    """Rows lo..hi-1 of the row passes of the evidence gradient (notes §1.9, whitened; see
    ``_fitc_ep``).

    With S⁻¹ = RᵀR, the adjoint of K_fu is dL/dK_fu = Hᵀ L⁻¹ (N, M) with
    Hᵀ = α aᵀ − diag(ω) Vt S⁻¹ − 2 diag(g) Vt, formed ``block`` rows at a time (two TRMMs
    by Rᵀ and R, one by L⁻¹) and contracted at once with the kernel's derivatives.

    Parameters
    ----------
    Vt : ndarray of shape (N, M)
    RT, Linv : ndarray of shape (M, M)
        Rᵀ and L⁻¹, lower triangular, C-contiguous.
    alpha, omega, g : ndarray of shape (N,)
        (K̃ + S̃)⁻¹ μ̃, the refresh's ω and g = ½ (α² − diag (K̃ + S̃)⁻¹).
    wg : ndarray of shape (N,)
        Row weights of the Gram, ≥ 0 (the caller's split of Vᵀ diag(g) V into Grams that a
        symmetric rank-k update can form: half the work of a general product).
    a : ndarray of shape (M,)
        Vtᵀ α.
    K, Gd : ndarray of shape (N, M)
        k(X, Z) and its derivative factor s2 G(r²) (:mod:`sparsegp._numba.covfuncs`; K itself
        for SE).
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    lengthscale : ndarray of shape (D,)
    grad_ls : ndarray of shape (D,)
    grad_Z : ndarray of shape (M, D)
        The rows' K_fu contraction of :func:`sparsegp._numba.covfuncs.stationary_grad`,
        added in.
    gram : ndarray of shape (M, M)
        The rows' share of Vtᵀ diag(wg²) Vt, for the adjoint of K_uu, added into the upper
        triangle.
    lo, hi, block : int

    Returns
    -------
    sum_wk : float
        The rows' Σ dL/dK_fu ⊙ K_fu (the variance derivative's share, times s2).
    """
    M = Vt.shape[1]
    Hb = np.empty((_scratch_rows(lo, hi, block), M))
    Ub = np.empty((_scratch_rows(lo, hi, block), M))
    no_x = np.zeros((1, 1))
    wk = 0.0
    for b_lo in range(lo, hi, block):
        b_hi = min(b_lo + block, hi)
        nb = b_hi - b_lo
        trmm_rows(_vt_rt_block(Hb, Vt, RT, b_lo, b_hi), RT, np.int64(0), nb,
                  np.bool_(True))                            # Vt Rᵀ R = Vt S⁻¹
        for i in range(nb):
            n = b_lo + i
            an, om, gn, wn = alpha[n], omega[n], g[n], wg[n]
            for m in range(M):
                v = Vt[n, m]
                Ub[i, m] = wn * v
                Hb[i, m] = an * a[m] - om * Hb[i, m] - 2.0 * gn * v
        syrk_rows_upper(Ub, 0, nb, gram)
        trmm_rows(Hb, Linv, np.int64(0), nb, np.bool_(False))      # Hᵀ L⁻¹ = dL/dK_fu
        s = 0.0
        for i in range(nb):
            for m in range(M):
                s += Hb[i, m] * K[b_lo + i, m]
        wk += s
        stationary_grad(X[b_lo:b_hi], Z, Gd[b_lo:b_hi], Hb[:nb], lengthscale, grad_ls, grad_Z,
                        no_x, np.bool_(False))
    return wk


@jit(parallel=True)
def evidence_gradient_split(Vt, RT, Linv, alpha, omega, g, wg, a, K, Gd, X, Z, lengthscale,
                            grad_ls, grad_Z, gram, n_parts, block):
    """:func:`evidence_gradient_rows` of every row, the rows split among ``n_parts`` threads,
    each adding into arrays of its own; their sums are added to ``grad_ls``, ``grad_Z`` and
    ``gram``, and the sum of theirs returned."""
    N, M = Vt.shape
    D = X.shape[1]
    edges = thread_ranges(N, n_parts)
    wk = np.zeros(n_parts)
    gl = np.zeros((n_parts, D))
    gz = np.zeros((n_parts, M, D))
    gram_parts = np.zeros((n_parts, M, M))
    for p in numba.prange(n_parts):
        wk[p] = evidence_gradient_rows(Vt, RT, Linv, alpha, omega, g, wg, a, K, Gd, X, Z,
                                       lengthscale, gl[p], gz[p], gram_parts[p], edges[p],
                                       edges[p + 1], block)
    add_parts(gl, grad_ls)
    add_parts(gz, grad_Z)
    add_parts(gram_parts, gram)
    total = 0.0
    for p in range(n_parts):
        total += wk[p]
    return total


#: Ridge of the Anderson normal equations, relative to the largest squared residual change.
ANDERSON_RIDGE = 1e-12


@jit
def _anderson_record(cur, target, off, dX, dF, x, f, slot):
    """Residuals of one half of x (tau or nu, at offset ``off``) and their differences."""
    for i in range(cur.shape[0]):
        j = off + i
        xi = cur[i]
        fi = target[i] - xi
        if slot >= 0:
            dX[slot, j] = xi - x[j]
            dF[slot, j] = fi - f[j]
        x[j] = xi
        f[j] = fi


@jit
def _anderson_point(out, off, c, delta, dX, dF, x, f, floor):
    """One half of the proposal x + delta f - (dX + delta dF) c, clipped below at ``floor``."""
    k = c.shape[0]
    for i in range(out.shape[0]):
        j = off + i
        v = x[j] + delta * f[j]
        for q in range(k):
            v -= c[q] * (dX[q, j] + delta * dF[q, j])
        out[i] = max(v, floor)


@jit
def anderson_propose(tau, nu, tau_target, nu_target, delta, dX, dF, x, f, slot, k):
    """One Anderson (type II) step of the parallel EP map on x = (tau, nu) (2N,), in place.

    With f = (tau_target, nu_target) - x the undamped residual and the columns of ΔX, ΔF the
    stored differences of iterates and residuals, the proposal is

        x + delta f - (ΔX + delta ΔF) c,   c = argmin ‖f - ΔF c‖₂

    (normal equations with a tiny ridge, :data:`ANDERSON_RIDGE`), precisions clipped at
    TAU_MIN; it overwrites ``tau_target`` and ``nu_target`` (N,). ``dX``, ``dF``
    (memory, 2N) hold the differences in any row order; when ``slot`` >= 0 the difference
    from the previous iterate ``x``, residual ``f`` (2N,) is written to that row first, and
    ``x``, ``f`` become the current ones. ``k`` is the number of valid rows afterwards (0: the
    plain damped step). O(N k).
    """
    N = tau.shape[0]
    _anderson_record(tau, tau_target, 0, dX, dF, x, f, slot)
    _anderson_record(nu, nu_target, N, dX, dF, x, f, slot)
    c = np.zeros(k)
    if k > 0:
        A = np.zeros((k, k))
        r = np.zeros(k)
        for j in range(k):
            for i in range(2 * N):
                r[j] += dF[j, i] * f[i]
            for q in range(j + 1):
                s = 0.0
                for i in range(2 * N):
                    s += dF[j, i] * dF[q, i]
                A[j, q] = s
        top = 0.0
        for j in range(k):
            top = max(top, A[j, j])
        if top > 0.0:
            # Cholesky of the k x k normal matrix (lower triangle), then two substitutions
            for j in range(k):
                A[j, j] += ANDERSON_RIDGE * top
                for q in range(j + 1):
                    s = A[j, q]
                    for l in range(q):
                        s -= A[j, l] * A[q, l]
                    A[j, q] = math.sqrt(s) if q == j else s / A[q, q]
            for j in range(k):
                s = r[j]
                for l in range(j):
                    s -= A[j, l] * c[l]
                c[j] = s / A[j, j]
            for j in range(k - 1, -1, -1):
                s = c[j]
                for l in range(j + 1, k):
                    s -= A[l, j] * c[l]
                c[j] = s / A[j, j]
    _anderson_point(tau_target, 0, c, delta, dX, dF, x, f, TAU_MIN)
    _anderson_point(nu_target, N, c, delta, dX, dF, x, f, -math.inf)
