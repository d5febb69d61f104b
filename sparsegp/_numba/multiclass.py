"""Compiled pieces of multi-class EP / SEP with inducing points (seed 002; notes multiclass_ep.md).

Two kernels, both parallel over data points (``numba.prange``) because every point's factors
are refined from the same posterior (parallel EP, notes §2.6) and write only their own rows:

* :func:`factor_pass` -- for every factor (i, k) of a minibatch: the cavity of the two classes it
  touches (notes §2.3, general stored-direction form), the tilted normaliser log Phi(beta)
  (§2.4, eqs. 33-42), the new site parameters (§2.5, eqs. 47-55), the evidence correction Delta
  (§3) and, optionally, the direct-gradient terms of §4 (eq. 10, appendix G).
* :func:`quad_class_probs` -- p(y* = c) = int N(f | mu_c, s_c^2) prod_{j != c} Phi((f - mu_j)/s_j) df
  (notes §6, eq. 11) by Gauss-Legendre panels cut at each factor's transition, with a cost
  bounded whatever the ratios of the standard deviations.

Array conventions: classes are 0..C-1; per-class arrays lead with the class axis, per-point
arrays with the point axis.  The four site arrays ``tau_p, eta_p, tau_m, eta_m`` have shape
(B, C): entry (i, k) belongs to factor (i, k) -- winner side on class y_i (``_p``) and loser side
on class k (``_m``); the entry k = y_i is unused and left at zero.
"""
import math

import numba
import numpy as np

from ._jit import jit
from .blas import gemm_rows, gemm_tn_rows, thread_ranges
from .ep import damp_site, site_delta, site_residual, site_target
from .probit import log_ndtr, pairwise_tilted

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)

#: ``status`` codes returned per point by :func:`factor_pass`.
STATUS_OK = 0
STATUS_IMPROPER_CAVITY = 1
STATUS_NEGATIVE_VARIANCE = 2


def _factor_pass_body(y, V, Vo, SV, SO, Kfu, d, m, tau_p, eta_p, tau_m, eta_m,
                      new_tau_p, new_eta_p, new_tau_m, new_eta_m,
                      log_z, delta, GV, wsum, status, same_dirs, compute_grad):
    """Cavities, tilted moments, new sites and gradient terms for all factors of a minibatch.

    Parameters
    ----------
    y : int64 array (B,)
        Class index of each point.
    V : array (C, B, M)
        Current FITC directions v_ic = K_c^{-1} k_ic (notes §1.1).
    Vo : array (C, B, M)
        The directions the current sites were fitted with (v°; notes §2.1). Ignored when
        ``same_dirs`` is true (then v° = v).
    SV, SO : arrays (C, B, M)
        S_c v_ic and S_c v°_ic for the Gaussian the sites are removed from (S symmetric):
        the products V_c S_c and Vo_c S_c, which the caller forms with BLAS (SO is ignored when
        ``same_dirs``).
    Kfu : array (C, B, M)
        k_ic = k_c(Z_c, x_i), used only when ``compute_grad``.
    d : array (B, C)
        FITC conditional variances d_ic = kappa_c - k_ic^T v_ic (>= 0).
    m : array (C, M)
        Mean of the Gaussian the sites are removed from: the EP posterior q(u_c), or for SEP
        the class cavity together with zero site arrays.
    tau_p, eta_p, tau_m, eta_m : arrays (B, C)
        Current site parameters (see module docstring).
    new_tau_p, new_eta_p, new_tau_m, new_eta_m : arrays (B, C), overwritten
        Undamped EP site parameters fitted along the current directions (eqs. 47-55).
    log_z : array (B,), overwritten
        sum_{k != y_i} log Phi(beta_ik).
    delta : array (B,), overwritten
        sum_{k != y_i} [Delta^+ + Delta^-] of notes §3 (0 for zero sites).
    GV : array (C, B, M), overwritten when ``compute_grad``
        d/dv_ic of sum of log Z_ik over the factors of point i touching class c (k held fixed).
    wsum : array (B, C), overwritten when ``compute_grad``
        sum of w = d log Z_ik / d z over those factors; d/dk_ic = -wsum v_ic and
        d/dkappa_c = wsum (notes §4).
    status : int64 array (B,), overwritten
        0 ok, 1 improper cavity (1 - tau v°^T S v° <= 0), 2 non-positive total variance.
    same_dirs, compute_grad : bool

    Notes
    -----
    O(C M) per point once the O(B C M^2) products SV, SO are formed (by BLAS, outside).
    """
    B = y.shape[0]
    C = SV.shape[0]
    M = SV.shape[2]
    for i in numba.prange(B):
        yi = y[i]
        avv = np.empty(C)
        aov = np.empty(C)
        aoo = np.empty(C)
        muv = np.empty(C)
        muo = np.empty(C)
        for c in range(C):
            t_vv = 0.0
            t_ov = 0.0
            t_oo = 0.0
            t_mv = 0.0
            t_mo = 0.0
            for a in range(M):
                va = V[c, i, a]
                sva = SV[c, i, a]
                t_vv += va * sva
                t_mv += va * m[c, a]
                if not same_dirs:
                    oa = Vo[c, i, a]
                    t_ov += oa * sva
                    t_oo += oa * SO[c, i, a]
                    t_mo += oa * m[c, a]
            if same_dirs:
                t_ov = t_vv
                t_oo = t_vv
                t_mo = t_mv
            avv[c] = t_vv
            aov[c] = t_ov
            aoo[c] = t_oo
            muv[c] = t_mv
            muo[c] = t_mo
        # coefficients of GV rows as combinations of m_c, S v, S v° and k (notes §4)
        c_m = np.zeros(C)
        c_sv = np.zeros(C)
        c_so = np.zeros(C)
        c_k = np.zeros(C)
        lz = 0.0
        dl = 0.0
        st = 0
        for k in range(C):
            if k == yi:
                new_tau_p[i, k] = 0.0
                new_eta_p[i, k] = 0.0
                new_tau_m[i, k] = 0.0
                new_eta_m[i, k] = 0.0
                continue
            tp = tau_p[i, k]
            ep = eta_p[i, k]
            tm = tau_m[i, k]
            em = eta_m[i, k]
            # cavity projections (notes §2.3, Sherman-Morrison with stored direction v°)
            rho_p = 1.0 - tp * aoo[yi]
            rho_m = 1.0 - tm * aoo[k]
            if rho_p <= 0.0 or rho_m <= 0.0:
                st = 1
                break
            s_p = avv[yi] + tp * aov[yi] * aov[yi] / rho_p
            a_p = muv[yi] + aov[yi] * (tp * muo[yi] - ep) / rho_p
            s_m = avv[k] + tm * aov[k] * aov[k] / rho_m
            a_m = muv[k] + aov[k] * (tm * muo[k] - em) / rho_m
            lzk, g, nu, w, z = pairwise_tilted(a_p, s_p, d[i, yi], a_m, s_m, d[i, k])
            if not z > 0.0:
                st = 2
                break
            # eqs. 47-55: dividing the matched Gaussian by the cavity, d log Z / d a = +-g
            ntp, nep, ok_p = site_target(a_p, s_p, g, nu)
            ntm, nem, ok_m = site_target(a_m, s_m, -g, nu)
            if not (ok_p and ok_m):
                st = 2
                break
            lz += lzk
            dl += site_delta(tp, ep, aoo[yi], muo[yi]) + site_delta(tm, em, aoo[k], muo[k])
            new_tau_p[i, k] = ntp
            new_eta_p[i, k] = nep
            new_tau_m[i, k] = ntm
            new_eta_m[i, k] = nem
            if compute_grad:
                # winner side: G^V = g m_cav + w (2 S_cav v - k), S_cav v and m_cav from §2.3
                c_m[yi] += g
                c_so[yi] += g * (tp * muo[yi] - ep) / rho_p + 2.0 * w * tp * aov[yi] / rho_p
                c_sv[yi] += 2.0 * w
                c_k[yi] -= w
                # loser side: sign of g flips
                c_m[k] -= g
                c_so[k] += -g * (tm * muo[k] - em) / rho_m + 2.0 * w * tm * aov[k] / rho_m
                c_sv[k] += 2.0 * w
                c_k[k] -= w
        status[i] = st
        log_z[i] = lz
        delta[i] = dl
        if compute_grad:
            for c in range(C):
                wsum[i, c] = -c_k[c]
                if same_dirs:
                    for a in range(M):
                        GV[c, i, a] = (c_m[c] * m[c, a] + (c_sv[c] + c_so[c]) * SV[c, i, a]
                                       + c_k[c] * Kfu[c, i, a])
                else:
                    for a in range(M):
                        GV[c, i, a] = (c_m[c] * m[c, a] + c_sv[c] * SV[c, i, a]
                                       + c_so[c] * SO[c, i, a] + c_k[c] * Kfu[c, i, a])


#: Parallel over points (minibatches and batch sweeps of any size).
factor_pass_projected = jit(parallel=True)(_factor_pass_body)
#: The same body compiled serially: tiny problems, where waking threads costs more than the work.
factor_pass_projected_serial = jit(_factor_pass_body)


@jit
def factor_pass_serial(y, V, Vo, Kfu, d, S, m, tau_p, eta_p, tau_m, eta_m,
                       new_tau_p, new_eta_p, new_tau_m, new_eta_m,
                       log_z, delta, GV, wsum, status, same_dirs, compute_grad):
    """:func:`factor_pass_projected_serial` from the covariances S (C, M, M) themselves.

    Forms S_c v and S_c v° here; the estimators form them with BLAS and call the projected
    kernels directly.
    """
    C, B, M = V.shape
    SV = np.empty((C, B, M))
    SO = np.empty((C, B, M))
    for c in range(C):
        SV[c] = np.dot(np.ascontiguousarray(V[c]), np.ascontiguousarray(S[c]))
        if not same_dirs:
            SO[c] = np.dot(np.ascontiguousarray(Vo[c]), np.ascontiguousarray(S[c]))
    factor_pass_projected_serial(y, V, Vo, SV, SO, Kfu, d, m, tau_p, eta_p, tau_m, eta_m,
                                 new_tau_p, new_eta_p, new_tau_m, new_eta_m, log_z, delta, GV,
                                 wsum, status, same_dirs, compute_grad)


@jit
def damp_factor_sites(tau, eta, tau_target, eta_target, damping, tau_out, eta_out):
    """Damped sites of one side of every factor and their undamped residual (notes §2.6).

    ``tau, eta`` (B, C) are the current sites, ``tau_target, eta_target`` (B, C) the undamped
    ones of :func:`factor_pass_projected`; ``tau_out, eta_out`` (B, C) receive
    :func:`sparsegp._numba.ep.damp_site` of each pair. Returns the largest
    :func:`sparsegp._numba.ep.site_residual`, the convergence measure of every EP engine.
    """
    B, C = tau.shape
    residual = 0.0
    for i in range(B):
        for k in range(C):
            t, e = damp_site(tau[i, k], eta[i, k], tau_target[i, k], eta_target[i, k], damping)
            tau_out[i, k] = t
            eta_out[i, k] = e
            r = site_residual(tau[i, k], eta[i, k], tau_target[i, k], eta_target[i, k])
            if r > residual:
                residual = r
    return residual


@jit(parallel=True)
def stacked_gemm(A, B, out, n_parts):
    """``out[c] = A[c] @ B[c]`` for every class: (C, N, K) @ (C, K, M) -> (C, N, M).

    The C x ``n_parts`` row blocks are independent BLAS calls shared among Numba's threads
    (BLAS itself should run one thread meanwhile: :func:`sparsegp._threads.thread_policy`).
    All arrays C-contiguous float64.
    """
    C = A.shape[0]
    edges = thread_ranges(A.shape[1], n_parts)
    for t in numba.prange(C * n_parts):
        c = t // n_parts
        p = t - c * n_parts
        gemm_rows(A[c], B[c], out[c], edges[p], edges[p + 1], 0.0)


@jit(parallel=True)
def stacked_gemm_tn(A, B, out, n_parts):
    """``out[c] = A[c]ᵀ @ B[c]`` for every class: (C, N, M), (C, N, K) -> (C, M, K).

    Each of the C x ``n_parts`` row blocks forms its own (M, K) product on one of Numba's
    threads; the blocks of a class are then added.
    """
    C = A.shape[0]
    M = A.shape[2]
    K = B.shape[2]
    edges = thread_ranges(A.shape[1], n_parts)
    parts = np.empty((C * n_parts, M, K))
    for t in numba.prange(C * n_parts):
        c = t // n_parts
        p = t - c * n_parts
        gemm_tn_rows(A[c], B[c], parts[t], edges[p], edges[p + 1], 0.0)
    for c in range(C):
        out[c] = parts[c * n_parts]
        for p in range(1, n_parts):
            out[c] += parts[c * n_parts + p]


@jit
def _class_integral(mu, sd, c, n_sd, panel, nodes, weights, t, w, ends, act):
    """p(y = c) for one row by composite Gauss-Legendre quadrature in the row's own variable.

    In t = (f - mu_c) / sd_c the integral (notes §6, eq. 11) reads

        P_c = int phi(t) prod_{j != c} Phi((t - t_j) / w_j) dt,
        t_j = (mu_j - mu_c) / sd_c,   w_j = sd_j / sd_c.

    Factor j changes only in its window |t - t_j| <= z w_j (z = ``n_sd``): left of it it is
    below Phi(-z), right of it above Phi(z). So the integral is taken over [lo, hi] with
    hi = z and lo = max(-z, max_j (t_j - z w_j)). A narrow factor (w_j < 1: a class whose
    s.d. is below sd_c; w_j << 1 is a near-step) is kept only on the part of [lo, hi] its
    window covers, and the range is cut at its window's ends; a wide one (w_j >= 1) is as
    smooth as phi and is kept throughout. On each piece between cuts the kept factors are
    fixed, and the piece is split into equal panels of length at most ``panel`` * lam,
    lam = min(1, min of the kept w_j), each integrated by n-point Gauss-Legendre. A narrow
    factor thus costs panels only inside its own window, about 2 z / ``panel`` of them,
    instead of setting the step of a grid over the whole range: a piece lies inside the
    window of its narrowest kept factor (length <= 2 z lam) or inside [-z, z], so it never
    takes more than ceil(2 z / panel) panels, and a class costs at most
    (2C - 1) ceil(2 z / panel) n nodes whatever the s.d. ratios.

    Error bound. Truncation: below lo the integrand is at most Phi(-z) phi(t) (lo is a
    window's left end or -z), above hi it is at most phi(t), and each dropped factor lies in
    [Phi(z), 1] where it is dropped; together at most (C + 1) Phi(-z) (5.7e-17 for C = 5,
    z = 8.5). Quadrature: map a panel of length H <= panel * lam onto [-1, 1]. On the
    Bernstein ellipse E_rho (rho > 1, half minor axis beta = (rho - 1/rho) / 2) |Im t| <=
    Y lam with Y = panel * beta / 2, so |phi(t)| <= e^{Y^2/2} phi(0) (lam <= 1), and every
    kept factor, whose argument has |Im| <= Y lam / w_j <= Y, obeys
    |Phi(u + iv)| = |Phi(u) + i int_0^v phi(u + is) ds| <= 1 + |v| e^{v^2/2} phi(0) <= K,
    K = 1 + Y e^{Y^2/2} phi(0); so |integrand| <= M = phi(0) e^{Y^2/2} K^m there, m <= C - 1
    the most factors kept on one piece. The Chebyshev coefficients of the panel's integrand
    obey |a_k| <= 2 M rho^{-k}; n-point Gauss-Legendre integrates T_k exactly for k <= 2n - 1
    and odd k, and errs on an even T_k by at most 2 + 2 / (k^2 - 1) <= 32/15, hence by at most
    (64/15) M rho^{2-2n} / (rho^2 - 1) on [-1, 1] (Trefethen, Approximation Theory and
    Approximation Practice, Thm 19.3, whose n + 1 points are our n). Scaling by H / 2 and
    summing over panels (sum H <= 2 z):

        |error| <= (64/15) z phi(0) e^{Y^2/2} K^m rho^{2-2n} / (rho^2 - 1)   for every rho > 1.

    The caller picks n from this bound, minimised over rho
    (:func:`sparsegp.classification.multiclass.likelihood.gauss_legendre_order`). Round-off,
    which it leaves out, is of order 1e-16 per class.

    Parameters
    ----------
    mu, sd : arrays (C,)
        The row's latent means and standard deviations (finite, sd > 0).
    c : int
    n_sd, panel : float
        z, and the panel length in units of lam.
    nodes, weights : arrays (n,)
        Gauss-Legendre rule on [-1, 1].
    t, w : arrays (C,), scratch
    ends : array (2 C,), scratch
    act : int64 array (C,), scratch

    Returns
    -------
    float
    """
    C = mu.shape[0]
    z = n_sd
    sc = sd[c]
    lo = -z
    hi = z
    for j in range(C):
        t[j] = (mu[j] - mu[c]) / sc
        w[j] = sd[j] / sc
        if j != c and t[j] - z * w[j] > lo:
            lo = t[j] - z * w[j]
    if not lo < hi:
        # some class's mean lies more than z of its own s.d.s above all of [-z, z]
        return 0.0
    # cut points: lo, hi and every window end strictly between them, sorted
    n_ends = 0
    ends[n_ends] = lo
    n_ends += 1
    for j in range(C):
        if j == c or w[j] >= 1.0:
            continue
        for e in (t[j] - z * w[j], t[j] + z * w[j]):
            if lo < e < hi:
                ends[n_ends] = e
                n_ends += 1
    ends[n_ends] = hi
    n_ends += 1
    for a in range(1, n_ends):
        e = ends[a]
        b = a - 1
        while b >= 0 and ends[b] > e:
            ends[b + 1] = ends[b]
            b -= 1
        ends[b + 1] = e
    # a piece lies inside the window of its narrowest kept factor, or inside [-z, z]: never
    # more panels than this (the cap only absorbs rounding, and bounds the cost outright)
    max_panels = float(math.ceil(2.0 * z / panel))
    total = 0.0
    for g in range(n_ends - 1):
        a = ends[g]
        b = ends[g + 1]
        if not b > a:
            continue
        mid = 0.5 * (a + b)
        lam = 1.0
        n_act = 0
        for j in range(C):
            if j != c and (w[j] >= 1.0 or abs(mid - t[j]) < z * w[j]):
                act[n_act] = j
                n_act += 1
                if w[j] < lam:
                    lam = w[j]
        # capped as a float, before the conversion: a NaN or inf count must not reach int
        kf = (b - a) / (panel * lam)
        if not kf <= max_panels:
            kf = max_panels
        k = max(math.ceil(kf), 1)
        half = 0.5 * (b - a) / k
        for p in range(k):
            centre = a + (2 * p + 1) * half
            for q in range(nodes.shape[0]):
                x = centre + half * nodes[q]
                lv = -0.5 * x * x - _LOG_SQRT_2PI
                for r in range(n_act):
                    j = act[r]
                    lv += log_ndtr((x - t[j]) / w[j])
                total += half * weights[q] * math.exp(lv)
    return total


@jit(parallel=True)
def quad_class_probs(mu, sd, only, n_sd, panel, nodes, weights, out):
    """Class probabilities under independent Gaussian latents (notes §6, eq. 11).

    out[i, c] = int N(f | mu[i, c], sd[i, c]^2) prod_{j != c} Phi((f - mu[i, j]) / sd[i, j]) df

    by composite Gauss-Legendre quadrature cut at the windows where each Phi factor changes
    (:func:`_class_integral`, which states the error bound). The cost per entry is bounded
    independently of the ratios of the standard deviations.

    Parameters
    ----------
    mu, sd : arrays (N, C)
        Latent means and standard deviations (sd > 0). A row with a non-finite entry or an
        sd <= 0 gets NaN throughout.
    only : int64 array (N,)
        -1 to fill the whole row, or the single class c to compute (other entries set to NaN).
    n_sd : float
        Half-width of the integration range in units of sd_c, and of each factor's window in
        units of its own sd.
    panel : float
        Panel length in units of the narrowest standard deviation in play (relative to sd_c,
        and at most 1).
    nodes, weights : arrays (n,)
        Gauss-Legendre nodes and weights on [-1, 1].
    out : array (N, C), overwritten
    """
    N, C = mu.shape
    for i in numba.prange(N):
        t = np.empty(C)
        w = np.empty(C)
        ends = np.empty(2 * C)
        act = np.empty(C, dtype=np.int64)
        ok = True
        for j in range(C):
            if not (math.isfinite(mu[i, j]) and math.isfinite(sd[i, j]) and sd[i, j] > 0.0):
                ok = False
        for c in range(C):
            if only[i] >= 0 and only[i] != c:
                out[i, c] = np.nan
            elif not ok:
                out[i, c] = np.nan
            else:
                out[i, c] = _class_integral(mu[i], sd[i], c, n_sd, panel, nodes, weights,
                                            t, w, ends, act)
