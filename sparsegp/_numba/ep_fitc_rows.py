"""The O(N M²) row passes of EP over the FITC prior (generalized FITC classification, seed 000).

Whitening the prior (:func:`whiten_split`), the damped site step with the O(N M) part of the
refresh that follows it (:func:`parallel_apply_split`), the marginals of an implicit refresh
(:func:`marginal_parts_split`) and the fused marginals, cavities and targets of one parallel EP
iteration (:func:`parallel_targets_split`), each over blocks of rows with BLAS-3 on each block
(:mod:`sparsegp._numba.blas`). The caller is :mod:`sparsegp.classification._fitc_ep`; the row
passes of the evidence gradient, which follow the same conventions and share the scratch
helpers :func:`_scratch_rows` and :func:`_vt_rt_block`, are
:mod:`sparsegp._numba.ep_fitc_gradient`.
"""
import math

import numba
import numpy as np

from ._jit import jit
from .blas import add_parts, copy_rows, syrk_rows_upper, thread_ranges, trmm_rows
from .ep import cavity, damp_site, site_residual, site_target
from .probit import probit_tilted_moments


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
def _scratch_rows(lo, hi, block):
    """Rows of a scratch block for rows lo..hi-1: ``block``, or fewer when the range is shorter
    (a large scratch costs a fresh mapping and its page faults on every call)."""
    return max(1, min(block, hi - lo))


@jit(inline="always")
def _vt_rt_block(Cb, Vt, RT, lo, hi):
    """``Cb[:hi - lo] = Vt[lo:hi] Rᵀ`` in a thread's scratch (trmm); returns that view."""
    nb = hi - lo
    copy_rows(Vt, Cb, lo, hi, np.int64(0))
    trmm_rows(Cb, RT, np.int64(0), nb, np.bool_(False))
    return Cb[:nb]


@jit(inline="always")
def marginal_parts(C, Vt, gamma, c2, vg):
    """Row pieces of the marginals of an implicit refresh: c2_n = ‖C[n]‖², vg_n = Vt[n]·γ.

    With ``C = Vt Rᵀ`` (N, M) the marginals are A_nn = d_n + t_n² c2_n and
    h_n = nn_n + t_n vg_n (notes §1.4); the evidence gradient uses c2 and vg themselves
    (:func:`sparsegp._numba.ep_fitc_gradient.evidence_gradient_split`). ``c2``, ``vg`` (N,)
    are written.
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
