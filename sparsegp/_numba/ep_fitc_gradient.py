"""The row passes of the evidence gradient of EP over the FITC prior (notes §1.9, whitened).

One serial kernel over a row range (:func:`evidence_gradient_rows`) and its ``parallel=True``
wrapper (:func:`evidence_gradient_split`), under the conventions of the other row passes
(:mod:`sparsegp._numba.ep_fitc_rows`, whose scratch helpers they share): the adjoint of K_fu,
formed a block of rows at a time, contracted at once with the kernel's derivatives
(:func:`sparsegp._numba.covfuncs.stationary_grad`), and the rows' Gram for the adjoint of
K_uu. The caller is :mod:`sparsegp.classification._fitc_ep`.
"""
import numba
import numpy as np

from ._jit import jit
from .blas import add_parts, syrk_rows_upper, thread_ranges, trmm_rows
from .covfuncs import stationary_grad, variance_gradient_rows
from .ep_fitc_rows import _scratch_rows, _vt_rt_block


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
        The rows' Σ dL/dK_fu ⊙ K_fu (the variance derivative's share, times s2), block by
        block (:func:`sparsegp._numba.covfuncs.variance_gradient_rows`).
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
        wk += variance_gradient_rows(Hb[:nb], K[b_lo:b_hi])
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
