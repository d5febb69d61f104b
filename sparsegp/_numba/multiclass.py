"""Compiled pieces of multi-class EP / SEP with inducing points (seed 002; notes multiclass_ep.md).

Two kernels, both parallel over data points (``numba.prange``) because every point's factors
are refined from the same posterior (parallel EP, notes §2.6) and write only their own rows:

* :func:`factor_pass` -- for every factor (i, k) of a minibatch: the cavity of the two classes it
  touches (notes §2.3, general stored-direction form), the tilted normaliser log Phi(beta)
  (§2.4, eqs. 33-42), the new site parameters (§2.5, eqs. 47-55), the evidence correction Delta
  (§3) and, optionally, the direct-gradient terms of §4 (eq. 10, appendix G).
* :func:`quad_class_probs` -- p(y* = c) = int N(f | mu_c, s_c^2) prod_{j != c} Phi((f - mu_j)/s_j) df
  (notes §6, eq. 11) by a trapezoid rule whose step resolves the narrowest standard deviation.

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


@jit(parallel=True)
def quad_class_probs(mu, sd, only, density, n_sd, max_nodes, out):
    """Class probabilities under independent Gaussian latents (notes §6, eq. 11).

    out[i, c] = int N(f | mu[i, c], sd[i, c]^2) prod_{j != c} Phi((f - mu[i, j]) / sd[i, j]) df

    by the trapezoid rule on mu_c +- n_sd * sd_c with step min(sd_c, min_j sd_j) / density
    (at most ``max_nodes`` intervals). The integrand is entire and decays like a Gaussian, so
    the trapezoid error falls like exp(-c density^2) once the step resolves every sd.

    Parameters
    ----------
    mu, sd : arrays (N, C)
        Latent means and standard deviations (sd > 0).
    only : int64 array (N,)
        -1 to fill the whole row, or the single class c to compute (other entries set to NaN).
    density : float
        Nodes per smallest standard deviation.
    n_sd : float
        Half-width of the integration range in units of sd_c.
    max_nodes : int
    out : array (N, C), overwritten
    """
    N, C = mu.shape
    for i in numba.prange(N):
        smin = sd[i, 0]
        for j in range(1, C):
            if sd[i, j] < smin:
                smin = sd[i, j]
        for c in range(C):
            if only[i] >= 0 and only[i] != c:
                out[i, c] = np.nan
                continue
            sc = sd[i, c]
            h = min(sc, smin) / density
            lo = mu[i, c] - n_sd * sc
            width = 2.0 * n_sd * sc
            n = int(math.ceil(width / h))
            if n > max_nodes:
                n = max_nodes
            if n < 2:
                n = 2
            h = width / n
            total = 0.0
            for t in range(n + 1):
                f = lo + t * h
                x = (f - mu[i, c]) / sc
                lv = -0.5 * x * x - _LOG_SQRT_2PI - math.log(sc)
                for j in range(C):
                    if j != c:
                        lv += log_ndtr((f - mu[i, j]) / sd[i, j])
                wt = 0.5 if (t == 0 or t == n) else 1.0
                total += wt * math.exp(lv)
            out[i, c] = total * h
