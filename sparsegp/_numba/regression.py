"""Compiled passes for the sparse regression evidence and its gradient (notes §4.3).

FITC and SoR/DTC/VFE run as two phases, :func:`fitc_forward` / :func:`dtc_forward` and
:func:`fitc_backward` / :func:`dtc_backward`. Each splits the N rows among the Numba threads;
a thread walks its own rows in blocks of a thousand or so and, while a block is in cache,
takes it through every O(N M²) BLAS-3 call (trmm, syrk, gemm, through
:mod:`sparsegp._numba.blas`) and every O(N M) or O(N M D) loop of that phase, keeping its own
M×M and D×M sums. So two cores do twice the BLAS work of one, and no N×M array makes a round
trip to memory between steps. The row kernels (``*_rows``) are the loops; the covariance
rows themselves come from :func:`sparsegp._numba.covfuncs.stationary_rows`, the one compiled
definition of the kernels, and the contraction also has a ``parallel`` driver of its own for
PITC. Inner loops run over the M inducing points (contiguous), so LLVM vectorises them.
"""
import math

import numba
import numpy as np

from ._jit import jit
from .covfuncs import contract_rows, stationary_rows
from .blas import (copy_rows, gemm_rows, sum_lower_parts, sum_parts, syrk_rows, thread_ranges,
                   trmm_rows)


@jit
def fitc_scale_rows(Vt, y, s2, sn2, lam, U, ys, r, lo, hi):
    """Rows lo..hi-1 of FITC's Λ = s² − diag(Vt Vtᵀ) + σ², ``U = Λ^-½ Vt``, ``ys = Λ^-½ y``.

    Also accumulates ``r += Uᵀ ys`` (= Vtᵀ Λ⁻¹ y, M) while the rows are in cache.
    Vt, U: (N, M); y, lam, ys: (N,). A non-positive Λ_n is written as is (its rows of U
    become NaN); the caller checks ``lam``.
    """
    M = Vt.shape[1]
    for n in range(lo, hi):
        q = 0.0
        for m in range(M):
            q += Vt[n, m] * Vt[n, m]
        ln = s2 - q + sn2
        lam[n] = ln
        sc = 1.0 / math.sqrt(ln) if ln > 0.0 else math.nan
        yn = sc * y[n]
        ys[n] = yn
        for m in range(M):
            u = sc * Vt[n, m]
            U[n, m] = u
            r[m] += u * yn


@jit
def _whiten_rows(Xs, ZsT, family, s2, K, G, want_g, V, Li, vb, lo, hi):
    """Rows lo..hi-1 of K = k(X, Z) (and with ``want_g`` its derivative factor G), then
    ``V = (K + v_b) L_u⁻ᵀ`` (K kept without v_b), with Li = L_u⁻¹ lower triangular.

    K comes from :func:`sparsegp._numba.covfuncs.stationary_rows` while the block is in
    cache, so K_fu costs one pass over N×M memory (its write) instead of a write and a read.
    ``vb`` is the bias variance v_b of a kernel's constant summands (0: none), added to every
    entry of K_fu's copy only: K itself stays the stationary part, which the contraction
    differentiates.
    """
    stationary_rows(Xs, ZsT, family, s2, K, G, want_g, lo, hi)
    copy_rows(K, V, lo, hi, lo)
    if vb != 0.0:
        for n in range(lo, hi):
            for m in range(V.shape[1]):
                V[n, m] += vb
    trmm_rows(V, Li, lo, hi, True)


@jit(parallel=True)
def fitc_forward(Xs, ZsT, family, s2, K, G, want_g, V, Li, vb, y, sn2, lam, ys, n_parts,
                 block):
    """The O(N M²) forward pass of the FITC evidence, rows split among ``n_parts`` threads.

    Each thread walks its rows in blocks of ``block`` and, while a block is in cache, forms
    K (and G with ``want_g``) and ``V = (K + v_b) L_u⁻ᵀ`` (trmm, :func:`_whiten_rows`), Λ,
    ``ys = Λ^-½ y`` and, in a block-sized scratch array, ``U = Λ^-½ V``
    (:func:`fitc_scale_rows`), whose Gram matrix it adds to its own (syrk).

    Xs (N, D), ZsT (D, M): inputs over the length-scales; ``family``, ``s2``: the stationary
    family code and signal variance; K, G, V: (N, M), written (G only with ``want_g``);
    y, lam, ys: (N,); Li (M, M) = L_u⁻¹; ``vb`` the bias variance v_b (0: none), so that
    k(x, x) = s² + v_b in Λ. Returns ``(S, r)``: S (M, M) = Vᵀ Λ⁻¹ V
    (symmetric) and r (M,) = Vᵀ Λ⁻¹ y.
    """
    N, M = K.shape
    edges = thread_ranges(N, n_parts)
    S = np.zeros((n_parts, M, M))
    r = np.zeros((n_parts, M))
    for t in numba.prange(n_parts):
        Ub = np.empty((block, M))
        for lo in range(edges[t], edges[t + 1], block):
            hi = min(lo + block, edges[t + 1])
            nb = hi - lo
            _whiten_rows(Xs, ZsT, family, s2, K, G, want_g, V, Li, vb, lo, hi)
            fitc_scale_rows(V[lo:hi], y[lo:hi], s2 + vb, sn2, lam[lo:hi], Ub, ys[lo:hi], r[t], 0, nb)
            syrk_rows(Ub, 0, nb, S[t])
    return sum_lower_parts(S), sum_parts(r)


@jit
def fitc_adjoint_rows(P, Vt, y, lam, gamma, alpha, R, lo, hi):
    """Rows lo..hi-1 of FITC's K_fu adjoint (in whitened form), in place; returns Σ g_n.

    On entry P = Vt H (H = S⁻¹). With ω = 1/Λ, α = ω (y − Vt γ), h_n = ω_n² (P Vtᵀ)_nn and
    g = ½(α² − ω + h) = diag ∂ℒ/∂(Q + Λ):

    * ``alpha[n] <- α_n``;
    * ``P[n] <- −ω_n P[n] − 2 g_n Vt[n]`` — the adjoint Y of ``sparsegp.regression._base``
      without its rank-one term α γᵀ, which the contraction adds;
    * ``R[n] <- √(α_n² + h_n) Vt[n]``, so that Rᵀ R is Vtᵀ diag(α² + h) Vt (R may be Vt).
    """
    M = Vt.shape[1]
    trg = 0.0
    for n in range(lo, hi):
        om = 1.0 / lam[n]
        vg = 0.0
        ph = 0.0
        for m in range(M):
            vg += Vt[n, m] * gamma[m]
            ph += P[n, m] * Vt[n, m]
        a = om * (y[n] - vg)
        h = om * om * ph
        g = 0.5 * (a * a - om + h)
        alpha[n] = a
        trg += g
        sc = math.sqrt(max(a * a + h, 0.0))
        for m in range(M):
            v = Vt[n, m]
            P[n, m] = -om * P[n, m] - 2.0 * g * v
            R[n, m] = sc * v
    return trg


@jit(parallel=True)
def fitc_backward(Xs, ZsT, K, G, V, H, Li, y, lam, gamma, wt, alpha, want_sum, n_parts,
                  block):
    """The O(N M²) gradient pass of FITC, rows split among ``n_parts`` threads.

    Per block of rows, in cache: ``Y = V H`` (gemm, into block-sized scratch), the adjoint
    (:func:`fitc_adjoint_rows`, which also writes the rescaled V into a second scratch
    block), that block's Gram matrix (syrk), ``W = Y L_u⁻¹`` (trmm, in Y) and the SE
    contraction of ``(W + α wtᵀ) ⊙ K`` (:func:`sparsegp._numba.covfuncs.contract_rows`). V is
    only read: writing the rescaled rows back would cost a pass over N×M memory.

    Xs (N, D), ZsT (D, M): inputs over the length-scales; K, G, V: (N, M), V unchanged;
    H (M, M) = S⁻¹; wt (M,) = L_u⁻ᵀ γ; alpha (N,) is written. Returns
    ``(trg, C, gz, gq, cs, wsum)``: Σ g per row range (n_parts,), C (M, M) = Vᵀ diag(α² + h) V,
    the contraction sums and, with ``want_sum`` (a kernel with a bias variance v_b), the
    column sums 1ᵀW (M,) of W = Y L_u⁻¹ (zeros without it), for d/dv_b.
    """
    N, M = K.shape
    D = Xs.shape[1]
    edges = thread_ranges(N, n_parts)
    trg = np.zeros(n_parts)
    C = np.zeros((n_parts, M, M))
    gz = np.zeros((n_parts, D, M))
    gq = np.zeros((n_parts, D, M))
    cs = np.zeros((n_parts, M))
    wsum = np.zeros((n_parts, M))
    for t in numba.prange(n_parts):
        Yb = np.empty((block, M))
        Rb = np.empty((block, M))
        for lo in range(edges[t], edges[t + 1], block):
            hi = min(lo + block, edges[t + 1])
            nb = hi - lo
            Vb = V[lo:hi]
            gemm_rows(Vb, H, Yb, 0, nb, 0.0)
            trg[t] += fitc_adjoint_rows(Yb, Vb, y[lo:hi], lam[lo:hi], gamma, alpha[lo:hi], Rb,
                                        0, nb)
            syrk_rows(Rb, 0, nb, C[t])
            trmm_rows(Yb, Li, 0, nb, False)
            if want_sum:
                _add_column_sums(Yb, nb, wsum[t])
            contract_rows(Xs[lo:hi], ZsT, K[lo:hi], G[lo:hi], Yb, alpha[lo:hi], wt, gz[t],
                          gq[t], cs[t], 0, nb)
    # the per-range Σ g goes back whole: a full .sum() here becomes a Numba parallel
    # reduction whose order follows the thread count
    return (trg, sum_lower_parts(C), sum_parts(gz), sum_parts(gq), sum_parts(cs),
            sum_parts(wsum))


@jit(parallel=True)
def dtc_forward(Xs, ZsT, family, s2, K, G, want_g, V, Li, vb, y, n_parts, block):
    """The O(N M²) forward pass of SoR/DTC/VFE: K, ``V = (K + v_b) L_u⁻ᵀ`` and its Gram matrix.

    Rows are split among ``n_parts`` threads, each walking its rows in blocks of ``block``
    (K, and G with ``want_g``, written there first, as in :func:`fitc_forward`).
    Xs (N, D), ZsT (D, M); K, G, V: (N, M). Returns ``(S, b)``: S (M, M) = Vᵀ V (symmetric)
    and b (M,) = Vᵀ y.
    """
    N, M = K.shape
    edges = thread_ranges(N, n_parts)
    S = np.zeros((n_parts, M, M))
    b = np.zeros((n_parts, M))
    for t in numba.prange(n_parts):
        for lo in range(edges[t], edges[t + 1], block):
            hi = min(lo + block, edges[t + 1])
            _whiten_rows(Xs, ZsT, family, s2, K, G, want_g, V, Li, vb, lo, hi)
            syrk_rows(V, lo, hi, S[t])
            for n in range(lo, hi):
                for m in range(M):
                    b[t, m] += V[n, m] * y[n]
    return sum_lower_parts(S), sum_parts(b)


@jit
def _add_column_sums(W, nb, out):
    """``out += Σ_n W[n]`` over the first ``nb`` rows of W (., M): 1ᵀW of a block."""
    for n in range(nb):
        for m in range(W.shape[1]):
            out[m] += W[n, m]


@jit
def dtc_alpha_rows(A, y, w, sn2, alpha, lo, hi):
    """Rows lo..hi-1 of ``alpha = (y − A w)/σ²``.

    For SoR/DTC/VFE with A = Vt and w = S⁻¹ Vtᵀ y/σ² this is α = (Q + σ² I)⁻¹ y.
    """
    M = A.shape[1]
    for n in range(lo, hi):
        s = 0.0
        for m in range(M):
            s += A[n, m] * w[m]
        alpha[n] = (y[n] - s) / sn2


@jit(parallel=True)
def dtc_backward(Xs, ZsT, K, G, V, P, y, gamma, sn2, wt, alpha, want_sum, n_parts, block):
    """The O(N M²) gradient pass of SoR/DTC/VFE, rows split among ``n_parts`` threads.

    Per block of rows: α (:func:`dtc_alpha_rows`), ``W = V P`` (gemm, into block-sized
    scratch) and the contraction of ``W + α wtᵀ`` with K and G
    (:func:`sparsegp._numba.covfuncs.contract_rows`).
    Xs (N, D), ZsT (D, M); K, G, V: (N, M); P (M, M); wt (M,); alpha (N,) written. Returns
    the contraction sums ``(gz, gq, cs)`` and, with ``want_sum`` (a kernel with a bias
    variance v_b), the column sums 1ᵀW (M,) of W (zeros without it), for d/dv_b.
    """
    N, M = K.shape
    D = Xs.shape[1]
    edges = thread_ranges(N, n_parts)
    gz = np.zeros((n_parts, D, M))
    gq = np.zeros((n_parts, D, M))
    cs = np.zeros((n_parts, M))
    wsum = np.zeros((n_parts, M))
    for t in numba.prange(n_parts):
        Wb = np.empty((block, M))
        for lo in range(edges[t], edges[t + 1], block):
            hi = min(lo + block, edges[t + 1])
            nb = hi - lo
            dtc_alpha_rows(V, y, gamma, sn2, alpha, lo, hi)
            gemm_rows(V[lo:hi], P, Wb, 0, nb, 0.0)
            if want_sum:
                _add_column_sums(Wb, nb, wsum[t])
            contract_rows(Xs[lo:hi], ZsT, K[lo:hi], G[lo:hi], Wb, alpha[lo:hi], wt, gz[t],
                          gq[t], cs[t], 0, nb)
    return sum_parts(gz), sum_parts(gq), sum_parts(cs), sum_parts(wsum)
