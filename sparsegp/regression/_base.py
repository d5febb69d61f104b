"""The sparse GP regression family's evidence and its gradient, by Woodbury algebra (notes §4).

Every sparse method is exact GP regression with an effective prior covariance ``Q_ff + Λ``
(notes §4.1, seed 001 Table 1), Q_ff = K_fu K_uu⁻¹ K_uf:

=========  =====================================  ==========================================
method     Λ (noise included)                     test conditional
=========  =====================================  ==========================================
sor        σ² I                                   deterministic (Q**)
dtc, vfe   σ² I                                   exact (K**)
fitc       diag(K_ff − Q_ff) + σ² I               exact (K**)
fic        as FITC                                diag(K** − Q**)
pitc       blockdiag(K_ff − Q_ff) + σ² I          exact (K**)
=========  =====================================  ==========================================

The evidence and its gradient are computed from K_fu (N×M, C-contiguous) and small M×M
matrices, with L_u⁻¹ formed explicitly (an M×M triangular inverse) so that every N×M×M
product is a BLAS ``trmm``, ``syrk`` or ``gemm`` — OpenBLAS's triangular *solve* with many
right-hand sides runs at half their speed. Time is O(N M²) (PITC: O(N (M² + M B + B²)) for
block size B) and memory O(N M): no N×N matrix is ever formed, except by :func:`exact_lml`
(the reference GP). For FITC and SoR/DTC/VFE the N×M work is two compiled phases in which
every Numba thread takes its own rows through all the BLAS calls and loops
(:mod:`sparsegp._numba.regression`), with OpenBLAS held to one thread meanwhile
(:mod:`sparsegp._threads`).

Gradient derivation (notes §4.3, restated in the form used here). With Vt = K_fu L_u⁻ᵀ,
S = I + Vtᵀ Λ⁻¹ Vt, G = ∂ℒ/∂(Q_ff + Λ) = ½(ααᵀ − (Q + Λ)⁻¹), α = (Q + Λ)⁻¹ y, H = S⁻¹,
U = Λ⁻¹ Vt and p = Vtᵀ α, each method splits G into an adjoint Ĝ of Q_ff (``Ĝ = G − D`` with
D diagonal or block-diagonal) and an adjoint of the diagonal (or blocks) of K_ff. Because
(Q + Λ)⁻¹ K_fu = Λ⁻¹ K_fu Σ_u K_uu with Σ_u = (K_uu + K_uf Λ⁻¹ K_fu)⁻¹,

    ∂ℒ/∂K_fu = 2 Ĝ K_fu K_uu⁻¹ = Y L_u⁻¹,      Y = α pᵀ − U H − 2 D Vt,
    ∂ℒ/∂K_uu = −½ K_uu⁻¹ K_uf (∂ℒ/∂K_fu) = −½ L_u⁻ᵀ (p pᵀ − I + H − 2 Vtᵀ D Vt) L_u⁻¹.

The rank-one part α pᵀ L_u⁻¹ is never formed: the compiled contraction adds it on the fly.
And p needs no pass over the rows: with r = Vtᵀ Λ⁻¹ y and γ = S⁻¹ r,
p = Vtᵀ Λ⁻¹ (y − Vt γ) = r − (S − I) γ = γ, known once the forward phase is done.

Per call, the N×M×M work is (a unit being one ``syrk`` (N×M)ᵀ(N×M)):

* SoR/DTC/VFE (Λ = σ² I): Vt (trmm, 1); S (syrk, 1); ∂ℒ/∂K_fu = α wᵀ − Vt P for an M×M
  matrix P (gemm, 2);
* FITC/FIC: Vt (trmm, 1) for diag(Q_ff); S (syrk, 1); Vt H (gemm, 2); Vtᵀ D Vt (syrk, 1);
  Y L_u⁻¹ (trmm, 1).

FITC's six units look like a floor for any exact formulation: diag(Q_ff), S and
diag((Q + Λ)⁻¹) each need a pass of M² work per row, one after the other (Λ needs the
first, the third needs S⁻¹); ∂ℒ/∂K_fu mixes two different M×M maps of each row with
row-dependent weights (two units); and Vtᵀ D Vt has weights known only after the third pass.
Reordering (e.g. E = Vt L_S⁻ᵀ gives diag((Q + Λ)⁻¹) in one unit) moves units between these
steps without removing any.
So what is left to win is the cores: the row split runs the six units on every core at once
(measured on 2 cores at N = 100 000, D = 5, M = 100: 0.13 s with two threads, 0.23 s with
one, against 0.037 s for one ``A.T @ A``).

Besides these, K_fu is computed (O(N M D) and N M exponentials) and ∂ℒ/∂K_fu is contracted
with the kernel's derivatives (O(N M D)), both inside the two phases while the rows are in
cache (``sparsegp._numba.regression``, which takes the covariance rows from
:func:`sparsegp._numba.covfuncs.stationary_rows`). So an evaluation sweeps N×M memory four
times: K_fu and Vt written by the forward phase, both read by the gradient phase (for the
Matérn families the forward phase also writes the derivative factor G of K_fu, which the
gradient phase reads; PITC computes K_fu in a pass of its own). Every function takes the
stationary ``family`` code of :mod:`sparsegp._numba.covfuncs` (default SE); for SE the
derivative factor G of the contraction is K_fu itself.

A kernel with constant summands adds its bias variance v_b to every entry of K_ff, K_fu and
K_uu (``bias_variance``): the passes whiten K_fu + v_b but keep K_fu for the contraction,
and ∂ℒ/∂v_b sums every entry of the adjoints of K_fu, K_uu and diag K_ff (PITC: its blocks).

What a fit does with these lives beside them: the predictions from the factors this
module returns (:class:`Posterior`, or the exact GP's) in
:mod:`sparsegp.regression._predict`; where the inducing inputs start in
:mod:`sparsegp.regression._inducing`; the PITC partitions, made or given, in
:mod:`sparsegp.inducing`, and in padded form, with their block covariances, in
:mod:`sparsegp.regression._blocks`.
"""
import math
import warnings

import numpy as np
from scipy.linalg import blas as _blas
from scipy.linalg import lapack as _lapack
from scipy.linalg import cho_solve, solve_triangular

from .. import _covariance as _cov
from .._linalg import cholesky_jitter
from .._numba import covfuncs as _cf
from .._numba.covfuncs import SE
from .._numba import regression as _nr
from .._threads import single_threaded_blas
from ..exceptions import JitterWarning
from .._config import REGRESSION_PARALLEL_SIZE as _PARALLEL_SIZE, ROW_BLOCK, ROW_PARTS
from ._blocks import block_cov, n_chunks, pack_blocks

SPARSE_METHODS = ("sor", "dtc", "fitc", "fic", "pitc", "vfe")
APPROXIMATIONS = ("sod",) + SPARSE_METHODS + ("exact",)
_LOG_2PI = math.log(2.0 * math.pi)


class Posterior:
    """What prediction needs from a fitted sparse model (plain arrays, picklable).

    Attributes
    ----------
    method : str
    Lu : ndarray of shape (M, M)
        Lower Cholesky factor of K_uu (jitter included).
    LS : ndarray of shape (M, M)
        Lower Cholesky factor of S = I + Vtᵀ Λ⁻¹ Vt.
    w : ndarray of shape (M,)
        Weights of the predictive mean, μ* = k*ᵀ w (notes §4.4).
    jitter : float
        The jitter multiple actually used on K_uu.
    trace_gap : float or None
        SoR/DTC/VFE: tr(K_ff − Q_ff), the prior variance the inducing inputs leave
        unexplained at the training inputs (what separates DTC's evidence from the VFE
        bound); None for the other methods.
    fitted_mean : ndarray of shape (N,) or None
        K_fu w, the predictive mean at the training inputs, when :func:`sparse_lml` was asked
        for it (``fitted_mean=True``); not needed for prediction.
    """

    def __init__(self, method, Lu, LS, w, jitter, trace_gap=None):
        self.method = method
        self.Lu = Lu
        self.LS = LS
        self.w = w
        self.jitter = jitter
        self.trace_gap = trace_gap
        self.fitted_mean = None


class Workspace:
    """Reusable N×M buffers for repeated evidence evaluations on one data set.

    An optimiser evaluates the evidence and its gradient dozens of times at the same N and M;
    handing each evaluation the same buffers saves the page faults of fresh 80 MB arrays
    (about a third of an N×M×M product each, at N = 100 000, M = 100). Buffers never leave
    :func:`sparse_lml`: nothing it returns aliases them. Not safe to share between threads.
    """

    def __init__(self):
        self._arrays = {}

    def array(self, name, shape):
        """An uninitialised C-contiguous float64 array of ``shape``, reused across calls."""
        a = self._arrays.get(name)
        if a is None or a.shape != shape:
            a = np.empty(shape)
            self._arrays[name] = a
        return a


def cross_cov(X, Z, variance, lengthscale, out=None, family=SE, g_out=None):
    """k(X, Z) as a C-contiguous (N, M) array through the compiled row pass
    (:func:`sparsegp._numba.covfuncs.stationary_rows`).

    With ``g_out`` (N, M) the derivative factor s² G(r²) is written there too (for SE a copy
    of K). Small blocks (PITC blocks, K_uu) use a single-threaded pass: starting threads
    costs more than the work there, badly so on a loaded machine.
    """
    N, D = X.shape
    if out is None:
        out = np.empty((N, Z.shape[0]))
    Xs, ZsT = _scaled_inputs(X, Z, lengthscale)
    want_g = g_out is not None and not _cov.deriv_is_value(family)
    G = g_out if want_g else out
    if out.size * D >= _PARALLEL_SIZE:
        _cf.stationary_rows_parallel(Xs, ZsT, family, float(variance), out, G, want_g,
                                     n_chunks())
    else:
        _cf.stationary_rows(Xs, ZsT, family, float(variance), out, G, want_g, 0, N)
    if g_out is not None and not want_g:
        np.copyto(g_out, out)
    return out


def _n_parts():
    """How many row ranges the passes that *sum* over rows split into.

    A fixed number, not one per thread: every range keeps its own partial sums, added in
    range order, so the evidence, its gradient and so the whole fit are the same bit for
    bit whatever the thread count (with one range per thread, 1 and 2 threads moved a FITC
    fit's predictions by up to 0.28 s.d. of y through the optimiser's path). Numba's threads
    share the ranges out; ``ROW_PARTS`` is more than any thread count this library meets
    on a workstation.
    """
    return ROW_PARTS


def chol_jitter(K, variance, jitter, name="K_uu"):
    """Lower Cholesky factor of ``K + j s² I``: the library's one ladder
    (:func:`sparsegp._linalg.cholesky_jitter`), with the jitter relative to s².

    Returns ``(L, used)``; a grown jitter warns, a failure raises ``LinAlgError``.
    """
    return cholesky_jitter(K, variance, jitter, name=name)


def tri_inv(L):
    """Inverse of a lower-triangular, nonsingular (M, M) factor (LAPACK ``trtri``), C-ordered.

    C order matters: the compiled passes hand it to BLAS as a raw pointer.
    """
    Li, info = _lapack.dtrtri(L, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular factor is singular (trtri info {info})")
    return np.ascontiguousarray(Li)


def _times_lt(Li, A):
    """``A Liᵀ`` for C-contiguous A (N, M) and lower Li, in place of A (BLAS trmm)."""
    # Aᵀ is Fortran-ordered (M, N): Li Aᵀ computed in place is the transpose of A Liᵀ, C-ordered.
    return _blas.dtrmm(1.0, Li, A.T, side=0, lower=1, trans_a=0, overwrite_b=1).T


def _times_l(Li, A):
    """``A Li`` for C-contiguous A (N, M) and lower Li, in place of A (BLAS trmm)."""
    return _blas.dtrmm(1.0, Li, A.T, side=0, lower=1, trans_a=1, overwrite_b=1).T


def _whiten(A, Li, ws, vb=0.0):
    """Vt = (K_fu + v_b) L_u⁻ᵀ in the workspace's ``"Vt"`` buffer (K_fu itself is kept)."""
    Vt = ws.array("Vt", A.shape)
    np.copyto(Vt, A)
    if vb != 0.0:
        Vt += vb
    return _times_lt(Li, Vt)


def _k_uu_adjoint(Li, p, H, VdV):
    """∂ℒ/∂K_uu = −½ L_u⁻ᵀ (p pᵀ − I + H − 2 Vtᵀ D Vt) L_u⁻¹, symmetrised (module docstring)."""
    inner = np.outer(p, p) + H - 2.0 * VdV
    inner[np.diag_indices_from(inner)] -= 1.0
    Wu = -0.5 * (Li.T @ inner @ Li)
    return 0.5 * (Wu + Wu.T)


#: methods whose evidence runs BLAS on each Numba thread's rows (the FITC/DTC phases)
ROW_SPLIT_METHODS = ("sor", "dtc", "vfe", "fitc", "fic")


def blas_pin(method):
    """Context holding OpenBLAS to one thread for the row-split methods, else doing nothing.

    The phases call BLAS on every Numba thread at once; OpenBLAS's own threads would only
    oversubscribe the cores (:mod:`sparsegp._threads`). Switching OpenBLAS's thread count
    costs time of its own (a few ms per switch at N = 10 000, M = 100, measured on 2 cores), so
    a caller that evaluates the evidence many times, like an optimiser, should hold this
    around the whole loop: the pin is re-entrant, and inner evaluations then switch nothing.
    """
    return single_threaded_blas(method in ROW_SPLIT_METHODS)


def sparse_lml(X, y, Z, variance, lengthscale, noise_variance, method, blocks=None,
               jitter=1e-6, eval_gradient=True, workspace=None, family=SE, fitted_mean=False,
               bias_variance=None):
    """Log marginal likelihood (VFE: the bound) of a sparse method and its gradient.

    Parameters
    ----------
    X : ndarray of shape (N, D), C-contiguous float64
    y : ndarray of shape (N,)
    Z : ndarray of shape (M, D), C-contiguous float64
    variance, noise_variance : float
        Signal variance s² and noise variance σ² (natural parameters).
    lengthscale : ndarray of shape (D,)
    method : {"sor", "dtc", "fitc", "fic", "pitc", "vfe"}
        SoR/DTC share the evidence, as do FITC/FIC.
    blocks : list of int ndarrays, optional
        PITC partition of 0..N-1 (already validated).
    jitter : float
        K_uu jitter as a multiple of ``variance`` (grown with a warning if needed).
    eval_gradient : bool
    workspace : Workspace, optional
        Buffers to reuse between calls (an optimiser's loop); fresh arrays when omitted.
    family : int, default SE
        Stationary family code (:mod:`sparsegp._numba.covfuncs`).
    fitted_mean : bool, default False
        Also set ``post.fitted_mean`` = K_fu w, the mean at the training inputs: one
        N×M product with the K_fu this evaluation formed, where predicting at X would
        compute K_fu again.
    bias_variance : float or None, default None
        The bias variance v_b of a kernel's constant summands: the covariance is
        k(x, z) + v_b in every entry of K_ff, K_fu and K_uu, so Q_ff is built from the Sum
        kernel (:func:`bias_covariance`). None: no constant summand.

    Returns
    -------
    lml : float
    grad : dict or None
        ``"variance"`` (float), ``"lengthscale"`` (D,) per-dimension, ``"noise_variance"``
        (float), ``"inducing_points"`` (M, D), and ``"bias_variance"`` (float) with a
        ``bias_variance``; derivatives with respect to the natural parameters.
    post : Posterior

    Notes
    -----
    Cost O(N M²) time, O(N M) memory (a handful of N×M arrays); PITC adds O(N B²).
    """
    s2 = float(variance)
    sn2 = float(noise_variance)
    # v_b, or None for a kernel without constant summands (then no d/dv_b is formed)
    vb = None if bias_variance is None else float(bias_variance)
    # Kzz stays the stationary part, which the contraction differentiates; K_uu + v_b 11ᵀ is
    # what is factorised (jitter relative to s², as without the constant)
    Kzz = cross_cov(Z, Z, s2, lengthscale, family=family)
    Lu, used = chol_jitter(bias_covariance(Kzz, bias_variance), s2, jitter)
    Li = tri_inv(Lu)
    ws = Workspace() if workspace is None else workspace
    shape = (X.shape[0], Z.shape[0])
    A = ws.array("K_fu", shape)
    # the derivative factor G of K_fu: K_fu itself for SE, needed only with a gradient
    G = ws.array("G_fu", shape) if eval_gradient and not _cov.deriv_is_value(family) else A
    if method == "pitc":
        cross_cov(X, Z, s2, lengthscale, out=A, family=family, g_out=None if G is A else G)
        lml, grad, post = _pitc_lml(X, y, Z, s2, lengthscale, sn2, Lu, Li, used, Kzz, A,
                                    eval_gradient, blocks, G, family, vb)
    else:
        with blas_pin(method):
            # the forward pass writes K_fu (and G) itself, block by block while it is in cache
            args = (X, y, Z, s2, lengthscale, sn2, Lu, Li, used, Kzz, A, eval_gradient, method,
                    ws, G, family, vb)
            lml, grad, post = (_fitc_lml if method in ("fitc", "fic") else _dtc_lml)(*args)
    if fitted_mean:
        post.fitted_mean = A @ post.w
        if vb is not None:
            post.fitted_mean += vb * np.sum(post.w)
    return lml, grad, post


def bias_covariance(K, bias_variance):
    """K + v_b in every entry (a new array), or K itself when ``bias_variance`` is None.

    The covariance of a kernel with constant summands, k(x, z) + v_b, from its stationary
    part K (:func:`sparsegp.kernels.split_bias_variance`).
    """
    return K if bias_variance is None else K + float(bias_variance)


def _bias_gradient(wsum, alpha, wt, Wu, diag_term):
    """∂ℒ/∂v_b: every entry of the adjoints of K_fu (W + α wtᵀ, from W's column sums
    ``wsum``) and K_uu (Wu), plus ``diag_term``, the adjoint of K_ff's diagonal (or PITC
    blocks) summed: v_b adds 1 to each of these entries."""
    return float(np.sum(wsum) + np.sum(alpha) * np.sum(wt) + np.sum(Wu) + diag_term)


def _dtc_lml(X, y, Z, s2, lengthscale, sn2, Lu, Li, used, Kzz, A, eval_gradient, method, ws,
             G, family, vb):
    """SoR/DTC/VFE (Λ = σ² I) in the whitened basis Vt = K_fu L_u⁻ᵀ.

    Forming S from K_ufK_fu instead would skip the trmm, but squares the conditioning of K_uu:
    with nearly coincident inducing inputs it lost five digits of the evidence.
    """
    N = X.shape[0]
    M = Z.shape[0]
    eye = np.eye(M)
    Vt = ws.array("Vt", A.shape)
    Xs, ZsT = _scaled_inputs(X, Z, lengthscale)
    Sm, b = _nr.dtc_forward(Xs, ZsT, family, s2, A, G, G is not A, Vt, Li, vb or 0.0, y,
                            _n_parts(), ROW_BLOCK)           # Vtᵀ Vt, Vtᵀ y
    S = Sm / sn2 + eye
    LS, logdet_S, rSr, gamma = _solve_s(S, b / sn2)
    lml = -0.5 * (N * math.log(sn2) + logdet_S + (y @ y) / sn2 - rSr + N * _LOG_2PI)
    trace_gap = N * (s2 + (vb or 0.0)) - np.trace(Sm)        # tr(K_ff − Q_ff)
    if method == "vfe":
        lml -= trace_gap / (2.0 * sn2)                       # §4.8
    wt = Li.T @ gamma
    post = Posterior(method, Lu, LS, wt, used, trace_gap=float(trace_gap))
    if not eval_gradient:
        return lml, None, post

    LSi = tri_inv(LS)
    H = LSi.T @ LSi                                          # S⁻¹
    dconst = -0.5 / sn2 if method == "vfe" else 0.0          # D = dconst I (notes §4.3)
    # ∂ℒ/∂K_fu = α (L_u⁻ᵀ p)ᵀ − Vt (H/σ² + 2 dconst I) L_u⁻¹, with p = Vtᵀ α = γ
    P = -((H / sn2 + 2.0 * dconst * eye) @ Li)
    alpha = np.empty(N)                                      # (Q + σ² I)⁻¹ y = (y − Vt γ)/σ²
    gz, gq, cs, wsum = _nr.dtc_backward(Xs, ZsT, A, G, Vt, P, y, gamma, sn2, wt, alpha,
                                        vb is not None, _n_parts(), ROW_BLOCK)
    # tr (Q + σ² I)⁻¹ = (N − tr(Vtᵀ Vt H)/σ²)/σ² = (N − M + tr H)/σ², since (S − I) H = I − H
    trG = 0.5 * (alpha @ alpha - (N - M + np.trace(H)) / sn2)
    grad_noise = trG + (trace_gap / (2.0 * sn2 * sn2) if method == "vfe" else 0.0)
    Wu = _k_uu_adjoint(Li, gamma, H, dconst * Sm)            # Vtᵀ D Vt = dconst Vtᵀ Vt
    grad = _finish_contraction(Z, gz, gq, cs, Kzz, Wu, s2, used, lengthscale, family)
    grad["variance"] += N * dconst                           # ∂ℒ/∂diag K_ff = dconst
    grad["noise_variance"] = float(grad_noise)
    if vb is not None:
        grad["bias_variance"] = _bias_gradient(wsum, alpha, wt, Wu, N * dconst)
    return lml, grad, post


def _fitc_lml(X, y, Z, s2, lengthscale, sn2, Lu, Li, used, Kzz, A, eval_gradient, method, ws,
              G, family, vb):
    """FITC/FIC: Λ = diag(K_ff − Q_ff) + σ² I, in the whitened basis Vt = K_fu L_u⁻ᵀ."""
    N = X.shape[0]
    M = Z.shape[0]
    eye = np.eye(M)
    Vt = ws.array("Vt", A.shape)
    Lam = np.empty(N)
    ys = np.empty(N)                                         # Λ^-½ y
    Xs, ZsT = _scaled_inputs(X, Z, lengthscale)
    S, r = _nr.fitc_forward(Xs, ZsT, family, s2, A, G, G is not A, Vt, Li, vb or 0.0, y, sn2, Lam,
                            ys, _n_parts(), ROW_BLOCK)
    if not np.all(Lam > 0):
        raise np.linalg.LinAlgError("FITC diagonal Λ is not positive")
    S[np.diag_indices(M)] += 1.0                             # I + Vtᵀ Λ⁻¹ Vt
    LS, logdet_S, rSr, gamma = _solve_s(S, r)
    lml = -0.5 * (np.sum(np.log(Lam)) + logdet_S + ys @ ys - rSr + N * _LOG_2PI)
    wt = Li.T @ gamma
    post = Posterior(method, Lu, LS, wt, used)
    if not eval_gradient:
        return lml, None, post

    LSi = tri_inv(LS)
    H = LSi.T @ LSi                                          # S⁻¹
    alpha = np.empty(N)
    trg, C, gz, gq, cs, wsum = _nr.fitc_backward(Xs, ZsT, A, G, Vt, H, Li, y, Lam, gamma, wt,
                                                 alpha, vb is not None, _n_parts(), ROW_BLOCK)
    trG = float(np.sum(trg))                                 # in range order, any thread count
    # Vtᵀ diag(g) Vt = ½(Vtᵀ diag(α² + h) Vt − Vtᵀ Λ⁻¹ Vt)
    VdV = 0.5 * (C - (S - eye))
    Wu = _k_uu_adjoint(Li, gamma, H, VdV)                    # p = Vtᵀ α = γ
    grad = _finish_contraction(Z, gz, gq, cs, Kzz, Wu, s2, used, lengthscale, family)
    grad["variance"] += trG                                  # ∂ℒ/∂diag K_ff = g, ∂K_nn/∂s² = 1
    grad["noise_variance"] = float(trG)
    if vb is not None:
        grad["bias_variance"] = _bias_gradient(wsum, alpha, wt, Wu, trG)
    return lml, grad, post


def _solve_s(S, r):
    """Factor S = I + Vtᵀ Λ⁻¹ Vt (M, M) and solve it against r = Vtᵀ Λ⁻¹ y (M,).

    Returns ``(L_S, log|S|, rᵀ S⁻¹ r, γ = S⁻¹ r)``, the pieces of every sparse evidence.
    """
    LS = np.linalg.cholesky(S)
    c = solve_triangular(LS, r, lower=True, check_finite=False)
    gamma = solve_triangular(LS, c, lower=True, trans=1, check_finite=False)
    return LS, 2.0 * np.sum(np.log(np.diag(LS))), c @ c, gamma


def _scaled_inputs(X, Z, lengthscale):
    """X/ℓ (N, D) and (Z/ℓ)ᵀ (D, M), C-contiguous, as the compiled row passes take them."""
    return (np.ascontiguousarray(X / lengthscale),
            np.ascontiguousarray((Z / lengthscale).T))


def _contract(X, Z, A, G, W, alpha, wt, Kzz, Wu, s2, used, lengthscale, family):
    """Push ∂ℒ/∂K_fu = W + α wtᵀ and ∂ℒ/∂K_uu = Wu through the kernel's derivatives
    (notes §0.3); G is the derivative factor of K_fu (A itself for SE)."""
    N, D = X.shape
    M = Z.shape[0]
    Xs, ZsT = _scaled_inputs(X, Z, lengthscale)
    if A.size * D >= _PARALLEL_SIZE:
        gz, gq, cs = _cf.contract_parallel(Xs, ZsT, A, G, W, alpha, wt, _n_parts())
    else:
        gz, gq, cs = np.zeros((D, M)), np.zeros((D, M)), np.zeros(M)
        _cf.contract_rows(Xs, ZsT, A, G, W, alpha, wt, gz, gq, cs, 0, N)
    return _finish_contraction(Z, gz, gq, cs, Kzz, Wu, s2, used, lengthscale, family)


def _finish_contraction(Z, gz, gq, cs, Kzz, Wu, s2, used, lengthscale, family):
    """Gradient dict from the K_fu contraction sums (:func:`sparsegp._numba.covfuncs.contract_rows`)
    and Wu."""
    grad_ls = gq.sum(axis=1) / lengthscale
    grad_Z = (gz / lengthscale[:, None]).T.copy()
    gZ_u = np.zeros_like(Z)
    _cf.stationary_grad(Z, Z, _cov.deriv_factor(Z, Z, Kzz, family, s2, lengthscale), Wu,
                        lengthscale, grad_ls, gZ_u, gZ_u, False)
    grad_Z += 2.0 * gZ_u
    # K_fu and K_uu (jitter included, notes §0.2) are proportional to s²
    gvar = (np.sum(cs) + _cov.variance_gradient(Wu, Kzz) + used * s2 * np.trace(Wu)) / s2
    return {"variance": float(gvar), "lengthscale": grad_ls, "inducing_points": grad_Z}


def _pitc_lml(X, y, Z, s2, lengthscale, sn2, Lu, Li, used, Kzz, A, eval_gradient, blocks, G,
              family, vb):
    """PITC: Λ = blockdiag(K_ff − Q_ff) + σ² I, all blocks factorised in one batched call.

    O(N (M² + M B + B²)) time for blocks of at most B points, O(N (M + B)) memory
    (notes §4.2, §4.3, §4.5).
    """
    N, D = X.shape
    M = Z.shape[0]
    Vt = _whiten(A, Li, Workspace(), vb or 0.0)
    idx, sizes, mask = pack_blocks(blocks, N)
    nb, B = idx.shape
    rows = idx[mask]                                          # block order -> training row
    maskf = mask.astype(np.float64)
    Kbb = block_cov(X, idx, sizes, family, s2, lengthscale, False)
    Vb = Vt[idx] * maskf[:, :, None]                          # (nb, B, M), zero padding
    Lam = Kbb - Vb @ Vb.transpose(0, 2, 1)
    if vb is not None:                                        # K_bb + v_b, not on the padding
        Lam += vb * (maskf[:, :, None] * maskf[:, None, :])
    diag = np.arange(B)
    Lam[:, diag, diag] += np.where(mask, sn2, 1.0)            # identity on the padding
    Lb = np.linalg.cholesky(Lam)
    logdet = 2.0 * np.sum(np.log(Lb[:, diag, diag]))
    # numpy's batched inverse: one gufunc call (scipy's batched triangular solve loops in
    # Python, ~50x slower for 1000 blocks); Λ_b ⪰ σ² I keeps L_b well conditioned
    Lbinv = np.linalg.inv(Lb)
    Lami = Lbinv.transpose(0, 2, 1) @ Lbinv                   # Λ_b⁻¹ (identity on padding)
    del Lam, Lb, Lbinv
    yb = y[idx] * maskf
    U = np.empty_like(Vt)                                     # Λ⁻¹ Vt
    U[rows] = (Lami @ Vb)[mask]
    oy = np.empty(N)                                          # Λ⁻¹ y
    oy[rows] = np.einsum("bij,bj->bi", Lami, yb)[mask]
    S = Vt.T @ U
    S[np.diag_indices(M)] += 1.0
    LS, logdet_S, rSr, gamma = _solve_s(S, U.T @ y)
    lml = -0.5 * (logdet + logdet_S + y @ oy - rSr + N * _LOG_2PI)
    post = Posterior("pitc", Lu, LS, Li.T @ gamma, used)
    if not eval_gradient:
        return lml, None, post

    alpha = oy - U @ gamma
    p = Vt.T @ alpha
    LSi = tri_inv(LS)
    H = LSi.T @ LSi
    UH = U @ H
    # G_bb = ½(α_b α_bᵀ − Λ_b⁻¹ + (U H)_b U_bᵀ), zero on the padding   (notes §4.3)
    ab = alpha[idx] * maskf
    Gb = ab[:, :, None] * ab[:, None, :] - Lami
    Gb += (UH[idx] * maskf[:, :, None]) @ (U[idx] * maskf[:, :, None]).transpose(0, 2, 1)
    Gb = 0.25 * (Gb + Gb.transpose(0, 2, 1))
    Gb *= maskf[:, :, None] * maskf[:, None, :]
    del Lami
    GVb = Gb @ Vb                                             # blockdiag(G) Vt, per block
    VdV = Vb.reshape(-1, M).T @ GVb.reshape(-1, M)            # Vtᵀ blockdiag(G) Vt
    # K_bb's own derivatives: s² and ℓ only (K_ff does not depend on Z)
    grad_var_blocks = _cov.variance_gradient(Gb, Kbb) / s2
    grad_noise = np.einsum("bii->", Gb)
    gls = np.zeros(D)
    Gbb = (Kbb if _cov.deriv_is_value(family)
           else block_cov(X, idx, sizes, family, s2, lengthscale, True))
    _cf.blocks_grad_ls(X, idx, sizes, Gbb, Gb, 1.0 / (lengthscale * lengthscale), gls)
    Y = UH
    np.negative(Y, out=Y)                                     # −U H
    Y[rows] -= 2.0 * GVb[mask]                                # − 2 blockdiag(G) Vt
    W = _times_l(Li, Y)                                       # ∂ℒ/∂K_fu less α (L_u⁻ᵀ p)ᵀ
    Wu = _k_uu_adjoint(Li, p, H, VdV)
    wt = Li.T @ p
    grad = _contract(X, Z, A, G, W, alpha, wt, Kzz, Wu, s2, used, lengthscale, family)
    grad["lengthscale"] += gls / lengthscale
    grad["variance"] += grad_var_blocks
    grad["noise_variance"] = float(grad_noise)
    if vb is not None:
        grad["bias_variance"] = _bias_gradient(W.sum(axis=0), alpha, wt, Wu, np.sum(Gb))
    return lml, grad, post


def exact_lml(X, y, variance, lengthscale, noise_variance, eval_gradient=True, family=SE,
              bias_variance=None):
    """Full GP evidence log N(y | 0, K + σ² I) and its gradient: O(N³) time, O(N²) memory.

    Returns ``(lml, grad, (L, alpha))`` with L the lower factor of K + σ² I and
    alpha = (K + σ² I)⁻¹ y; ``grad`` has keys ``"variance"``, ``"lengthscale"`` (D,),
    ``"noise_variance"`` and ``"inducing_points"`` (None: the exact GP has none), and
    ``"bias_variance"`` with a ``bias_variance`` v_b (K is then k(X, X) + v_b).
    """
    N = X.shape[0]
    s2 = float(variance)
    K = cross_cov(X, X, s2, lengthscale, family=family)
    C = K.copy() if bias_variance is None else bias_covariance(K, bias_variance)
    C[np.diag_indices(N)] += noise_variance
    L = np.linalg.cholesky(C)
    alpha = cho_solve((L, True), y, check_finite=False)
    lml = -0.5 * (y @ alpha) - np.sum(np.log(np.diag(L))) - 0.5 * N * _LOG_2PI
    if not eval_gradient:
        return lml, None, (L, alpha)
    Ci = _inverse_from_factor(L)
    G = 0.5 * (np.outer(alpha, alpha) - Ci)
    grad_ls = np.zeros(X.shape[1])
    gX = np.zeros_like(X)
    _cf.stationary_grad(X, X, _cov.deriv_factor(X, X, K, family, s2, lengthscale), G,
                        lengthscale, grad_ls, gX, gX, False)
    grad = {"variance": float(_cov.variance_gradient(G, K) / s2), "lengthscale": grad_ls,
            "noise_variance": float(np.trace(G)), "inducing_points": None}
    if bias_variance is not None:
        grad["bias_variance"] = float(np.sum(G))             # dK/dv_b = 11ᵀ
    return lml, grad, (L, alpha)


def _inverse_from_factor(L):
    """(L Lᵀ)⁻¹ (N, N) from its lower Cholesky factor L (LAPACK ``potri``).

    A third of the flops of two triangular solves against the identity (⅔ N³ against 2 N³),
    which set the time of an exact evidence gradient: at N = 1 500 they were two thirds of it.
    """
    # C-ordered lower L is Fortran-ordered upper Lᵀ: potri reads it in place, no copy
    Ci, info = _lapack.dpotri(L.T, lower=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky factor is singular (potri info {info})")
    # potri writes one triangle, Fortran's upper = C's lower; mirror it
    Ci = np.tril(Ci.T)
    Ci += np.tril(Ci, -1).T
    return Ci
