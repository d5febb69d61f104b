"""The covariance operations the estimators' engines call, over plain arrays (issue 48).

The kernel objects of :mod:`sparsegp.kernels` are the front door; an engine that has reduced
one to its family code, variance and length-scales (:class:`sparsegp.kernels.StationarySpec`)
computes through these functions and the compiled forms of :mod:`sparsegp._numba.covfuncs`,
and forms no distance and no gradient contraction of its own (``tests/test_kernel_layer.py``
checks it). They are:

* the cross covariance k(X, Z) in each form the engines need: pairwise
  (:func:`kernel_matrix`), chosen by the problem's size (:func:`cross_by_size`: explicit
  differences, one GEMM, or the compiled loop), stacked per class (:func:`stacked_cross`), and
  from unscaled squared distances formed once (:func:`sqdist`, :func:`from_iso_sqdist`);
  the row-block and column forms of the fused compiled passes are in
  :mod:`sparsegp._numba.covfuncs` (``stationary_rows``, ``gram_column``, ``pair_value``);
* the gradient contraction of L = Σ W ⊙ K(X, Z): natural-parameter (:func:`grad_contract`,
  :func:`grad_by_size`) and in log space with the variance term (:func:`log_gradient`);
  the variance term alone is :func:`variance_gradient`, the one place it is written.

The squared-exponential names (``se_kernel``, ``kuu``, ``se_grad_contract``) are the forms the
engines called before the other families came.
"""
import numba
import numpy as np
from scipy.spatial.distance import cdist

from ._numba import covfuncs as _cf
from ._numba import multiclass as _nbmc
from ._config import MC_GEMM_MIN_D as GEMM_MIN_D, MC_SMALL_KERNEL as SMALL_KERNEL
from ._config import MC_PARALLEL_GEMM as PARALLEL_GEMM


def _as2d(X):
    return np.ascontiguousarray(X, dtype=np.float64)


# ----------------------------------------------------------------------------------------------
# function forms for the engines (plain arrays in, no objects)

def kernel_matrix(X, Z, family, variance, lengthscale, out=None, deriv=False):
    """k(X, Z) as a C-contiguous (N, M) array for a stationary family code, or with ``deriv``
    its derivative factor s2 G(r²) (:mod:`sparsegp._numba.covfuncs`).

    X (N, D) and Z (M, D) C-contiguous float64; lengthscale (D,). Filled by the parallel
    :func:`~sparsegp._numba.covfuncs.stationary_cross`, or, when it would run on one thread
    anyway (one Numba thread, as in every fit under ``PARALLEL_MIN_ROWS`` rows, or a single
    block of rows), by the serial pass its threads call, over all rows: the same values, and
    a small fit never compiles the parallel version.
    """
    if out is None:
        out = np.empty((X.shape[0], Z.shape[0]))
    args = (int(family), float(variance), np.ascontiguousarray(lengthscale, dtype=np.float64),
            bool(deriv), out)
    N = X.shape[0]
    if N <= _cf.CROSS_BLOCK_ROWS or numba.get_num_threads() == 1:
        _cf.stationary_cross_rows(X, np.ascontiguousarray(Z.T), *args, 0, N)
    else:
        _cf.stationary_cross(X, Z, *args)
    return out


def grad_contract(X, Z, K, W, family, variance, lengthscale, symmetric=False, wrt_X=False):
    """Natural-parameter gradients of Σ W ⊙ K with K = k(X, Z) of a stationary family.

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    K : ndarray of shape (N, M)
        k(X, Z) without jitter (SE uses it as its own derivative factor).
    W : ndarray of shape (N, M)
        Weights; for ``symmetric=True`` it must be symmetric and X is Z.
    family : int
        Family code of :mod:`sparsegp._numba.covfuncs`.
    variance : float
    lengthscale : ndarray of shape (D,)
    symmetric : bool
        K is k(Z, Z): the Z gradient counts both arguments.
    wrt_X : bool
        Also return dL/dX (not with ``symmetric``).

    Returns
    -------
    grad_ls : ndarray of shape (D,)
        Per-dimension length-scale derivative (sum it for an isotropic kernel).
    grad_Z : ndarray of shape (M, D)
    grad_X : ndarray of shape (N, D)
        Only with ``wrt_X``.

    The variance derivative is Σ W ⊙ K / s² and needs no pass.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    W = np.ascontiguousarray(W, dtype=np.float64)
    ls = np.ascontiguousarray(lengthscale, dtype=np.float64)
    if int(family) == _cf.SE:
        G = np.ascontiguousarray(K, dtype=np.float64)
    else:
        G = np.empty_like(W)
        kernel_matrix(X, Z, family, variance, ls, out=G, deriv=True)
    grad_ls = np.zeros(X.shape[1])
    grad_Z = np.zeros_like(Z)
    grad_X = np.zeros_like(X) if wrt_X else np.zeros((1, 1))
    _cf.stationary_grad(X, Z, G, W, ls, grad_ls, grad_Z, grad_X, bool(wrt_X and not symmetric))
    if symmetric:
        grad_Z *= 2.0
    return (grad_ls, grad_Z, grad_X) if wrt_X and not symmetric else (grad_ls, grad_Z)


# ----------------------------------------------------------------------------------------------
# the squared-exponential forms the engines have always called (family SE)

def se_kernel(X, Z=None, variance=1.0, lengthscale=1.0):
    """SE k(X, Z) as a new (N, M) array; ``Z=None`` gives the symmetric k(X, X)."""
    X = _as2d(X)
    Z = X if Z is None else _as2d(Z)
    return kernel_matrix(X, Z, _cf.SE, variance, _as_lengthscale(lengthscale, X.shape[1]))


def se_kernel_diag(X, variance=1.0):
    """diag k(X, X) = s2 for every row, shape (N,)."""
    return np.full(np.shape(X)[0], float(variance))


def kuu(Z, variance, lengthscale, jitter):
    """K_uu = k(Z, Z) + jitter * s2 * I (notes §0.2: jitter proportional to the variance)."""
    K = se_kernel(Z, None, variance, lengthscale)
    K[np.diag_indices_from(K)] += jitter * variance
    return K


def se_grad_contract(X, Z, K, W, lengthscale, symmetric=False):
    """:func:`grad_contract` for the SE family: ``(grad_ls (D,), grad_Z (M, D))``."""
    ls = _as_lengthscale(lengthscale, np.shape(X)[1])
    return grad_contract(X, Z, K, W, _cf.SE, 1.0, ls, symmetric=symmetric)


def _as_lengthscale(lengthscale, D):
    ls = np.asarray(lengthscale, dtype=np.float64)
    if ls.ndim == 0:
        return np.full(D, float(ls))
    return np.ascontiguousarray(ls)


# ----------------------------------------------------------------------------------------------
# the derivative factor s² G(r²) of the family table, which the contractions take

def deriv_is_value(family):
    """True when the family's derivative factor s² G(r²) is its covariance itself (SE:
    G = g), so a caller holding K needs no second pass and no second array for it."""
    return family == _cf.SE


def deriv_factor(X, Z, K, family, variance, lengthscale):
    """s² G(r²) of K = k(X, Z) (N, M): ``K`` itself when :func:`deriv_is_value`, else a new
    array from the pairwise form (:func:`kernel_matrix` with ``deriv``)."""
    if deriv_is_value(family):
        return K
    G = np.empty_like(K)
    kernel_matrix(X, Z, family, variance, lengthscale, out=G, deriv=True)
    return G


# ----------------------------------------------------------------------------------------------
# the variance term, written once

def variance_gradient(W, K, order="pairwise"):
    """d/dlog s² of L = Σ W ⊙ K for K = k(X, Z) (N, M) and its adjoint W (N, M).

    Every family is s² g(·), so the derivative by log s² is L itself, whatever g is, and needs
    no pass over the inputs. An engine that wants d/ds² divides by s² (its chain rule, not a
    second formula). Returns a Python float.

    ``order`` is how the sum is rounded: "pairwise", NumPy's sum of W ⊙ K (the engines'), or
    "dot", BLAS's dot product of the flattened arrays (``np.vdot``, no temporary), which the
    stagewise eq. 4's committed fits were made with (the pairwise sum there moved its seeded
    fit of ``benchmarks/compare_fits.py`` by 8e-7 in the bias). The compiled row passes'
    order is :func:`sparsegp._numba.covfuncs.variance_gradient_rows`.
    """
    if order == "dot":
        return float(np.vdot(W, K))
    return float(np.sum(W * K))


# ----------------------------------------------------------------------------------------------
# the one gradient contraction in log space (what the kernel objects' gradient returns)

def log_gradient(X, Z, W, family, variance, lengthscale, *, K=None, symmetric=False,
                 wrt_X=False, free_variance=True, free_lengthscale=True, ard=True):
    """dL/dθ, dL/dZ and dL/dX of L = Σ W ⊙ K, K = k(X, Z), θ = (log s², log ℓ).

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
        X itself with ``symmetric``.
    W : ndarray of shape (N, M)
        The adjoint ∂(objective)/∂K; symmetric with ``symmetric``.
    family : int
    variance : float
    lengthscale : ndarray of shape (D,)
    K : ndarray of shape (N, M), optional
        k(X, Z) when the caller has it; formed otherwise.
    symmetric : bool
        K is k(X, X): the input gradient counts both arguments.
    wrt_X : bool
        Also return dL/dX (with ``symmetric`` that is the doubled dL/dZ).
    free_variance, free_lengthscale : bool
        Which entries θ holds (a fixed parameter has none).
    ard : bool
        One log length-scale per feature; otherwise one, the sum over features.

    Returns
    -------
    g_theta : ndarray of shape (n_free,)
        [d/dlog s² (= Σ W ⊙ K: every family is s² g), d/dlog ℓ (D or 1)], free ones only.
    g_Z : ndarray of shape (M, D)
    g_X : ndarray of shape (N, D)
        Only with ``wrt_X``.
    """
    s2 = float(variance)
    ls = np.ascontiguousarray(lengthscale, dtype=np.float64)
    if K is None:
        K = kernel_matrix(X, Z, family, s2, ls)
    W = np.ascontiguousarray(W, dtype=np.float64)
    out = grad_contract(X, Z, K, W, family, s2, ls, symmetric=symmetric, wrt_X=wrt_X)
    g_ls, g_Z = out[0], out[1]
    parts = []
    if free_variance:
        parts.append([variance_gradient(W, K)])
    if free_lengthscale:
        gl = g_ls * ls                                          # chain rule to log ℓ
        parts.append(gl if ard else [float(np.sum(gl))])
    g_theta = np.concatenate(parts) if parts else np.empty(0)
    if not wrt_X:
        return g_theta, g_Z
    return g_theta, g_Z, (g_Z if symmetric else out[2])


# ----------------------------------------------------------------------------------------------
# forms chosen by the problem's size (the multi-class engines: many features, many classes)

def cross_by_size(X, Z, family, variance, lengthscale):
    """k(X, Z) (N, M), the form chosen by N M D: explicit differences by NumPy when small,
    one GEMM when D >= :data:`GEMM_MIN_D`, else the compiled pairwise loop.

    The GEMM form |a|^2 + |b|^2 - 2 a.b is for SE only: it carries an absolute rounding error
    ~1e-16 |a|^2 / l^2, which the square root in the Matérn forms turns into ~1e-8 near
    coincident points (Z drawn from the training rows), where SE's exp(-q/2) keeps it at
    1e-16. The other families always take the compiled loop (exact differences).
    """
    if family == _cf.SE:
        return _se_by_size(X, Z, variance, lengthscale)
    return kernel_matrix(np.ascontiguousarray(X, dtype=np.float64),
                         np.ascontiguousarray(Z, dtype=np.float64), family, variance,
                         lengthscale)


def _se_by_size(X, Z, variance, lengthscale):
    """SE k(X, Z) (N, M) from squared distances formed by NumPy (small problems: explicit
    differences; many features: one GEMM), turned into covariances by the compiled g."""
    X = np.asarray(X, dtype=np.float64)
    work = X.shape[0] * Z.shape[0] * X.shape[1]
    if work < SMALL_KERNEL:
        diff = (X[:, None, :] - Z[None, :, :]) / lengthscale
        d2 = np.einsum("nmd,nmd->nm", diff, diff)
    elif X.shape[1] >= GEMM_MIN_D:
        # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b: one GEMM; the rounding (~1e-16 |a|^2) is far
        # below what matters in exp(-d2/2)
        Xs, Zs = X / lengthscale, Z / lengthscale
        d2 = (np.einsum("nd,nd->n", Xs, Xs)[:, None] + np.einsum("md,md->m", Zs, Zs)[None, :]
              - 2.0 * (Xs @ Zs.T))
    else:
        return se_kernel(X, Z, variance, lengthscale)
    # in place on the flat view (a copy, were d2 ever not C-ordered: return what was written)
    flat = d2.reshape(-1)
    return _cf.stationary_from_sqdist(flat, _cf.SE, float(variance), flat).reshape(d2.shape)


def grad_by_size(X, Z, K, W, family, variance, lengthscale, symmetric=False):
    """dL/dl (D,) and dL/dZ (M, D) of L = sum(W * K), K = k(X, Z), the form chosen by size.

    SE, large and with D >= :data:`GEMM_MIN_D`, contracts by matrix products (K is its own
    derivative factor): with G = W * K,
    dL/dz_mj = [(G^T X)_mj - (1^T G)_m z_mj] / l_j^2 and
    dL/dl_j = [sum_n (G 1)_n x_nj^2 - 2 sum_m (G^T X)_mj z_mj + sum_m (1^T G)_m z_mj^2] / l_j^3.
    Everything else takes :func:`grad_contract` (exact differences, as in
    :func:`cross_by_size`).
    """
    if family != _cf.SE:
        return grad_contract(X, Z, K, W, family, variance, lengthscale, symmetric=symmetric)
    N, D = X.shape
    if N * Z.shape[0] * D < SMALL_KERNEL or D < GEMM_MIN_D:
        return se_grad_contract(X, Z, K, W, lengthscale, symmetric=symmetric)
    G = W * K
    GtX = G.T @ X
    col = G.sum(axis=0)
    row = G.sum(axis=1)
    inv_l2 = 1.0 / (lengthscale * lengthscale)
    g_Z = (GtX - col[:, None] * Z) * inv_l2
    g_ls = ((row @ (X * X) - 2.0 * np.einsum("md,md->d", GtX, Z) + col @ (Z * Z))
            * inv_l2 / lengthscale)
    if symmetric:
        g_Z *= 2.0
    return g_ls, g_Z


def stacked_cross(X, Z, family, variance, lengthscale, n_parts):
    """k_c(X, Z_c) for every class c at once: (C, N, M) C-contiguous.

    X (N, D); Z (C, M, D); variance (C,); lengthscale (C, D). For SE with at least
    :data:`PARALLEL_GEMM` multiply-adds and D >= :data:`GEMM_MIN_D`, one stacked GEMM over the
    scaled inputs of every class (|a - b|^2 = |a|^2 + |b|^2 - 2 a.b) on ``n_parts`` row
    blocks per class; otherwise :func:`cross_by_size` class by class.
    """
    C, M, D = Z.shape
    B = X.shape[0]
    if B * M * D * C >= PARALLEL_GEMM and D >= GEMM_MIN_D and family == _cf.SE:
        Xs = X[None, :, :] / lengthscale[:, None, :]
        Zs = Z / lengthscale[:, None, :]
        K = np.empty((C, B, M))
        _nbmc.stacked_gemm(np.ascontiguousarray(Xs),
                           np.ascontiguousarray(np.swapaxes(Zs, 1, 2)), K, n_parts)
        _cf.se_stacked_from_cross(K, np.einsum("cnd,cnd->cn", Xs, Xs),
                                  np.einsum("cmd,cmd->cm", Zs, Zs), variance)
        return K
    K = np.empty((C, B, M))
    for c in range(C):
        K[c] = cross_by_size(X, Z[c], family, variance[c], lengthscale[c])
    return K


# ----------------------------------------------------------------------------------------------
# isotropic kernels evaluated many times on the same pairs (the stagewise eq. 4)

def sqdist(A, B):
    """Unscaled squared distances |a - b|^2 (N, M) summed from exact differences (cdist), so
    the Matérn square roots see no cancellation; for :func:`from_iso_sqdist`."""
    return cdist(A, B, "sqeuclidean")


def from_iso_sqdist(d2, family, variance, lengthscale, want_g):
    """(K, F) over unscaled squared distances d2: K = s2 g(d2 / l^2), F its derivative factor
    s2 G (K itself for SE; None without ``want_g``). ``lengthscale`` one float."""
    K = np.empty_like(d2)
    F = None
    want_f = want_g and family != _cf.SE
    if want_f:
        F = np.empty_like(d2)
    # without want_f the G slot is never written; K fills it so the signature stays typed
    _cf.stationary_from_iso_sqdist(d2.reshape(-1), 1.0 / (lengthscale * lengthscale), family,
                                   variance, K.reshape(-1), (F if want_f else K).reshape(-1),
                                   want_f)
    if want_g and family == _cf.SE:
        F = K
    return K, F


def iso_contract(W, F, d2):
    """Σ W ⊙ F ⊙ d2: the isotropic length-scale term of Σ W ⊙ K before its 1 / l^3
    (F = s2 G(d2 / l^2), the derivative factor of :func:`from_iso_sqdist`: dK/dl =
    F d2 / l^3). W, F, d2 of one shape."""
    return np.einsum("ij,ij,ij->", W, F, d2)
