"""Per-class covariances of the multi-class GP classifiers (notes multiclass_ep.md §1.1).

Each class c has its own stationary ARD kernel (squared exponential by default; any family
code of :mod:`sparsegp._numba.covfuncs` through ``family``) with amplitude ``variance``
(sigma_c, a variance), per-dimension ``lengthscale`` l_{c,d} (a *length*, not its square: the
R code's squared length-scale is l^2) and additive Gaussian latent noise
``latent_noise_variance`` (sigma0_c), the estimators' argument:

    k_c(x, x') = sigma_c g(sum_d (x_d - x'_d)^2 / l_{c,d}^2) [+ v_c]        (signal, K_fu)
    kappa_c    = sigma_c + sigma0_c [+ v_c]                                 (prior var of f_ic)
    K_c        = k_c(Z_c, Z_c) + sigma0_c I [if noise_in_kuu] + jitter sigma_c I
                                                                  (inducing prior)

with g(q) = exp(-q/2) for SE and the Matérn forms of :mod:`sparsegp._numba.covfuncs` otherwise.
v_c is the bias variance of a kernel with ``ConstantKernel`` summands
(:func:`sparsegp.kernels.split_bias_variance`), added to every covariance entry of class c;
each class has its own, as it has its own sigma_c: the constant is the prior variance of
an offset of f_c, and the classes' offsets are no more alike than their amplitudes (a class
more frequent everywhere wants a larger one). A kernel without one has no v_c at all (no
term, no entry in the packed vector). The jitter stays relative to sigma_c alone: it is
there for the stationary part, whose nearly equal rows (close inducing inputs) make K_c
singular at the scale sigma_c; v_c 1 1^T adds one direction and no such rows, and a jitter
grown with v_c would blur the stationary part the more, the larger the offset (the binary
classifiers do the same).
``noise_in_kuu=True`` is the R nugget convention used by the paper; ``False`` gives noise-free
inducing values, under which Z_c = X removes the FITC error (notes §1.1, §8 item 7).

Parameters are handled in log space for sigma, sigma0 and l; Z is unconstrained. The packed
vector used by the optimisers is :class:`ClassParams` (:func:`pack_params` /
:func:`unpack_params`, the packing of :mod:`sparsegp._params`). Also here: the
triangular solve, and :func:`chol_kuu`, which the three engines factor K_c with (the
library's one jitter ladder, :func:`sparsegp._linalg.cholesky_jitter`).
"""
import functools

import numpy as np
from scipy.linalg import blas as _blas

from ... import _covariance as _cov
from ..._linalg import cholesky_jitter
from ..._params import Block, Packing, log_box
from ..._numba import covfuncs as _cf

#: Default jitter on K_c's diagonal, relative to the class's signal variance sigma_c as in
#: every estimator of the library (notes §0.2); at sigma_c = 1 it is the R code's 1e-10 nugget.
DEFAULT_JITTER = 1e-10
#: The box of the baselines' L-BFGS-B searches (GFITC, batch VI), named in sparsegp._params
LBFGS_BOX = "multiclass_lbfgs"


# --------------------------------------------------------------------------------------------
# kernel
# --------------------------------------------------------------------------------------------
def kernel_kfu(X, Z, variance, lengthscale, family=_cf.SE, bias=None):
    """Signal cross-covariance k_c(X, Z) of one class, without noise.

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    variance : float
    lengthscale : ndarray of shape (D,)
    family : int, default=SE
        Stationary family code of :mod:`sparsegp._numba.covfuncs`.
    bias : float or None
        The class's bias variance v_c, added to every entry; None: no constant.

    Returns
    -------
    K : ndarray of shape (N, M)
    """
    K = _cov.cross_by_size(X, Z, family, variance, lengthscale)
    if bias is not None:
        K += bias
    return K


def kernel_kuu(Z, variance, lengthscale, noise, noise_in_kuu=True, jitter=DEFAULT_JITTER,
               family=_cf.SE, bias=None):
    """Inducing prior covariance K_c = k_c(Z, Z) [+ noise I] + jitter variance I, shape (M, M).

    Parameters
    ----------
    Z : ndarray of shape (M, D)
    variance, noise : float
    lengthscale : ndarray of shape (D,)
    noise_in_kuu : bool, default=True
    jitter : float, default=1e-10
        Relative to ``variance``: ``jitter * variance`` is added to the diagonal.
    family : int, default=SE
        Stationary family code of :mod:`sparsegp._numba.covfuncs`.
    bias : float or None
        The class's bias variance v_c, added to every entry of K (not of ``K_se``); None:
        no constant.

    Returns
    -------
    K : ndarray of shape (M, M)
    K_se : ndarray of shape (M, M)
        The stationary part k_c(Z, Z) alone, without v_c (needed by :func:`kernel_grads`;
        the name predates the other families).
    """
    K_se = _cov.cross_by_size(Z, Z, family, variance, lengthscale)
    K = K_se.copy() if bias is None else K_se + bias
    K[np.diag_indices_from(K)] += (noise if noise_in_kuu else 0.0) + jitter * variance
    return K, K_se


def kernel_kappa(variance, noise, bias=None):
    """Prior variance kappa_c = sigma_c + sigma0_c [+ v_c] of a noisy latent f_ic."""
    return variance + noise if bias is None else variance + noise + bias


def kernel_grads(X, Z, variance, lengthscale, noise, K_se, Kfu, W_uu, W_fu, w_kappa,
                 noise_in_kuu, jitter, family=_cf.SE, bias=None):
    """Gradient of <W_uu, K_c> + <W_fu, K_fu> + sum(w_kappa) * kappa_c for one class.

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    variance, noise : float
    lengthscale : ndarray of shape (D,)
    K_se : ndarray of shape (M, M)
        Signal part of K_c, from :func:`kernel_kuu`.
    Kfu : ndarray of shape (N, M)
        K_fu as the engines hold it, v_c included (:func:`kernel_kfu`).
    W_uu : ndarray of shape (M, M)
        Symmetric weights of K_c.
    W_fu : ndarray of shape (N, M)
        Weights of K_fu (may be None: no K_fu term).
    w_kappa : float or ndarray of shape (N,)
        Weights of kappa (summed).
    noise_in_kuu : bool
    jitter : float
        The relative jitter of :func:`kernel_kuu`: its ``jitter * variance`` on K_c's diagonal
        moves with the variance.
    family : int, default=SE
        Stationary family code of :mod:`sparsegp._numba.covfuncs`.
    bias : float or None
        The class's bias variance v_c (None: none).

    Returns
    -------
    g_log_variance : float
    g_log_noise : float
    g_log_lengthscale : ndarray of shape (D,)
    g_Z : ndarray of shape (M, D)
    g_log_bias : float
        d/dlog v_c = v_c (sum W_uu + sum W_fu + sum w_kappa), v_c 1 1^T being in all three;
        0.0 without a constant.
    """
    W_uu = 0.5 * (W_uu + W_uu.T)
    wk = float(np.sum(w_kappa))
    # the variance term of the library's one formula (every family is s2 g: d/dlog s2 of
    # <W, K> is <W, K>), then kappa's and the relative jitter's share of s2
    g_var = (_cov.variance_gradient(W_uu, K_se) + wk * variance
             + float(np.trace(W_uu)) * jitter * variance)
    g_noise = wk * noise
    if noise_in_kuu:
        g_noise += float(np.trace(W_uu)) * noise
    g_ls, g_Z = _cov.grad_by_size(Z, Z, K_se, W_uu, family, variance, lengthscale,
                                  symmetric=True)
    g_bias = 0.0
    if bias is not None:
        g_bias = float(np.sum(W_uu)) + wk
    if W_fu is not None:
        if bias is not None:
            # the stationary part K_fu - v_c, which the variance term and SE's derivative
            # factor take: the subtraction is exact to eps (sigma_c + v_c) an entry (a
            # second pass over the inputs would cost a kernel evaluation per class)
            g_bias += float(np.sum(W_fu))
            Kfu = Kfu - bias
        g_var += _cov.variance_gradient(W_fu, Kfu)
        gl2, gZ2 = _cov.grad_by_size(np.asarray(X, dtype=np.float64), Z, Kfu, W_fu, family,
                                     variance, lengthscale)
        g_ls = g_ls + gl2
        g_Z = g_Z + gZ2
    return g_var, g_noise, g_ls * lengthscale, g_Z, (g_bias * bias if bias is not None else 0.0)


#: The blocks of the packed vector, in order; the last only for a kernel with a constant
_BLOCKS = ("log_variance", "log_noise", "log_lengthscale", "Z", "log_bias_variance")


def _blocks(C, M, D, bias, bounds=None):
    """The blocks of C classes' stack: the per-class values of each parameter together, so
    that an offset into the vector does not depend on whether v_c follows Z."""
    shapes = (C, C, (C, D), (C, M, D), C)[:5 if bias else 4]
    rows = [None] * len(shapes) if bounds is None else bounds
    return [Block(name, shape, log=name != "Z", bounds=b)
            for name, shape, b in zip(_BLOCKS, shapes, rows)]


@functools.lru_cache(maxsize=32)
def _layout(C, M, D, bias=False):
    """The unbounded :class:`sparsegp._params.Packing` of C classes (shared, never changed)."""
    return Packing(_blocks(C, M, D, bias))


def pack_params(log_variance, log_noise, log_lengthscale, Z, log_bias=None):
    """One vector from (C,), (C,), (C, D), (C, M, D) arrays, in that order, then the (C,)
    log bias variances when given (a :class:`ClassParams`' packing)."""
    C, M, D = np.shape(Z)
    values = dict(zip(_BLOCKS, (log_variance, log_noise, log_lengthscale, Z, log_bias)))
    return _layout(C, M, D, log_bias is not None).pack(values)


def unpack_params(theta, C, M, D, bias=False):
    """Inverse of :func:`pack_params`: returns (log_variance, log_noise, log_lengthscale, Z,
    log_bias), ``log_bias`` None unless ``bias``."""
    v = _layout(C, M, D, bool(bias)).unpack(theta)
    return tuple(v.get(name) for name in _BLOCKS)


def tie_lengthscales(grad, C, D):
    """``grad`` projected onto equal length-scales within each class (a new array).

    For an isotropic kernel each class's D log length-scales are one parameter stored D
    times; each of their gradient entries becomes the mean of the D, so that every optimiser
    moves them together, and the directional derivative along a step is the true one.
    """
    out = np.array(grad, dtype=np.float64)
    block = out[2 * C:2 * C + C * D].reshape(C, D)      # v_c, if any, comes after Z
    block[:] = block.mean(axis=1, keepdims=True)
    return out


def chol_kuu(K, name="K_c"):
    """Lower Cholesky factor of an inducing prior K_c through the library's one jitter ladder.

    The first try factors K_c as given (it already holds the ``jitter * variance`` of
    :func:`kernel_kuu`); on failure :func:`sparsegp._linalg.cholesky_jitter` grows a jitter
    relative to the mean of K_c's diagonal (sigma_c [+ sigma0_c]) from 1e-10 tenfold, and that
    jitter is then added to ``K`` in place, so that K and its factor agree. Silent, as during
    an optimiser's search a grown jitter is routine.

    Parameters
    ----------
    K : ndarray of shape (M, M)
        K_c; its diagonal gains the jitter when one had to be added.
    name : str
        What K is, for the error message.

    Returns
    -------
    L : ndarray of shape (M, M)
        Fortran-ordered, as SciPy's factor was: SciPy's triangular solves take a C-ordered
        factor through its transpose, a different LAPACK path whose rounding moved a committed
        VI fit (vehicle, M = 152) by 5e-4 in test NLP.

    Raises
    ------
    numpy.linalg.LinAlgError
        When no jitter up to :data:`sparsegp._config.MAX_JITTER` x the diagonal is enough.
    """
    scale = float(np.mean(np.diag(K)))
    L, used = cholesky_jitter(K, scale, 0.0, name=name, warn=False)
    if used:
        K[np.diag_indices_from(K)] += used * scale
    return np.asfortranarray(L)


def tri_solve(L, B, trans=False):
    """Solve L X = B (or L^T X = B when ``trans``) for lower-triangular L; B (M,) or (M, K).

    Uses BLAS ``dtrsm`` directly: with the bundled multi-threaded OpenBLAS on a loaded machine,
    ``scipy.linalg.solve_triangular`` (LAPACK ``dtrtrs``) was measured at 10-50 ms per call even
    for 3 x 3 systems (any threaded BLAS call suffers there; ``OPENBLAS_NUM_THREADS=1`` cures it).
    """
    B = np.asarray(B, dtype=np.float64)
    vec = B.ndim == 1
    out = _blas.dtrsm(1.0, L, B.reshape(-1, 1) if vec else B, lower=1, trans_a=int(trans))
    return out.ravel() if vec else out


# --------------------------------------------------------------------------------------------
# the baselines' hyper-parameters and per-class covariance blocks (GFITC and VI)
# --------------------------------------------------------------------------------------------
class ClassParams:
    """The per-class stack of hyper-parameters in log space and inducing inputs: the one
    parameter vector of the three multi-class models (EP/SEP, GFITC and VI).

    Attributes
    ----------
    log_variance : ndarray of shape (C,)       log signal variance sigma_c
    log_noise : ndarray of shape (C,)          log additive latent noise variance sigma0_c
    log_lengthscale : ndarray of shape (C, D)  log length-scales l_cd (not squared)
    Z : ndarray of shape (C, M, D)             inducing inputs
    log_bias : ndarray of shape (C,) or None   log bias variance v_c of a kernel with a
                                               constant summand (-inf: v_c = 0), else None
    family : int                               stationary family code (covfuncs), SE default;
                                               every kernel evaluation and gradient made from
                                               this object uses it (so do Dask workers)
    isotropic : bool                           each class's D length-scales are one parameter
    log_bounds : tuple of two ndarrays or None (lo, hi) of the packed vector from a kernel
    mean_lengthscale : bool                    store each class's mean log length-scale when
                                               isotropic (the L-BFGS-B searches of GFITC and VI)

    Notes
    -----
    The vector is :func:`pack_params`' (the packing of :mod:`sparsegp._params`, every block
    stored whole). An isotropic class's D log length-scales are one parameter stored D times;
    the searches give them the projected gradient :func:`tie_lengthscales`, so that they move
    together. With ``mean_lengthscale`` they are, besides, replaced by their mean on
    construction, so that a point of GFITC's and VI's search is a function of the shared value
    alone (as the baselines always did); EP's stepping loop never averaged, and does not.
    """

    #: no constant: also what a ClassParams pickled before v_c existed reads
    log_bias = None

    def __init__(self, log_variance, log_noise, log_lengthscale, Z, family=_cf.SE,
                 isotropic=False, log_bounds=None, mean_lengthscale=False, log_bias=None):
        self.log_variance = np.array(log_variance, dtype=np.float64)
        self.log_noise = np.array(log_noise, dtype=np.float64)
        self.log_lengthscale = np.array(log_lengthscale, dtype=np.float64)
        self.Z = np.array(Z, dtype=np.float64, order="C")
        self.log_bias = None if log_bias is None else np.array(log_bias, dtype=np.float64)
        self.family = int(family)
        self.isotropic = bool(isotropic)
        self.log_bounds = log_bounds
        self.mean_lengthscale = bool(mean_lengthscale)
        if self.isotropic and self.mean_lengthscale:
            self.log_lengthscale[:] = self.log_lengthscale.mean(axis=1, keepdims=True)

    @property
    def shape(self):
        """(C, M, D)."""
        return self.Z.shape

    @property
    def bias(self):
        """v_c (C,), or None without a constant summand."""
        return None if self.log_bias is None else np.exp(self.log_bias)

    def settings(self):
        """``(family, isotropic, log_bounds, mean_lengthscale, has_bias)``: what
        :meth:`like` keeps."""
        return (self.family, self.isotropic, self.log_bounds, self.mean_lengthscale,
                self.log_bias is not None)

    def pack(self):
        return pack_params(self.log_variance, self.log_noise, self.log_lengthscale, self.Z,
                           self.log_bias)

    @classmethod
    def unpack(cls, theta, C, M, D, family=_cf.SE, isotropic=False, log_bounds=None,
               mean_lengthscale=False, has_bias=False):
        """The ClassParams at packed values ``theta`` with settings (:meth:`settings`)."""
        lv, ln, ll, Z, lb = unpack_params(theta, C, M, D, has_bias)
        return cls(lv, ln, ll, Z, family, isotropic, log_bounds, mean_lengthscale, lb)

    def like(self, theta):
        """A ClassParams at packed values ``theta`` with this one's settings."""
        return ClassParams.unpack(theta, *self.shape, *self.settings())

    @classmethod
    def zeros(cls, C, M, D, bias=False):
        """All zeros: a holder for a gradient packed the same way (with v_c's entries when
        ``bias``)."""
        return cls(np.zeros(C), np.zeros(C), np.zeros((C, D)), np.zeros((C, M, D)),
                   log_bias=np.zeros(C) if bias else None)

    def packing(self, box=None):
        """The :class:`sparsegp._params.Packing` of this vector with its bounds: the kernel's
        and the noise's log bounds (``log_bounds``), narrowed to the named ``box`` of
        :data:`sparsegp._params.BOX_OVERRIDES` on every log parameter when one is given; Z
        unbounded. v_c's entries, when the kernel has a constant, are log parameters too."""
        C, M, D = self.shape
        n_log = 2 * C + C * D
        # the log entries: those before Z, then v_c's after it
        at = np.r_[0:n_log, (n_log + C * M * D + np.arange(C)) if self.log_bias is not None
                   else np.arange(0)].astype(np.intp)
        if self.log_bounds is None:
            lo, hi = np.full(at.size, -np.inf), np.full(at.size, np.inf)
        else:
            lo = np.asarray(self.log_bounds[0], dtype=np.float64)[at]
            hi = np.asarray(self.log_bounds[1], dtype=np.float64)[at]
        if box is not None:
            b_lo, b_hi = log_box(box)
            lo, hi = np.clip(lo, b_lo, b_hi), np.clip(hi, b_lo, b_hi)
        rows = np.column_stack([lo, hi])
        return Packing(_blocks(C, M, D, self.log_bias is not None,
                               [rows[:C], rows[C:2 * C], rows[2 * C:n_log], None,
                                rows[n_log:]]))

    def bounds(self, box=None):
        """Bounds (n, 2) of the packed vector for the training driver (:meth:`packing`)."""
        return self.packing(box).bounds()

    def tied(self, grad):
        """``grad`` of the packed vector with an isotropic kernel's length-scales tied
        (:func:`tie_lengthscales`); ``grad`` itself otherwise."""
        if not self.isotropic:
            return grad
        C, _, D = self.shape
        return tie_lengthscales(grad, C, D)

    def copy(self):
        return ClassParams(self.log_variance, self.log_noise, self.log_lengthscale, self.Z,
                           *self.settings()[:4], log_bias=self.log_bias)


class ClassKernel:
    """Covariance blocks of class c: K_se, K (with noise/jitter), its Cholesky LK, K_fu, kappa
    (K, K_fu and kappa with the class's bias variance ``bias``, when the kernel has one)."""

    #: no constant: also what a ClassKernel pickled before v_c existed (a fitted GFITC's
    #: state) reads
    bias = None

    def __init__(self, X, hyp, c, jitter, noise_in_kuu):
        self.variance = float(np.exp(hyp.log_variance[c]))
        self.noise = float(np.exp(hyp.log_noise[c]))
        self.lengthscale = np.exp(hyp.log_lengthscale[c])
        self.bias = None if hyp.log_bias is None else float(np.exp(hyp.log_bias[c]))
        self.Z = hyp.Z[c]
        self.family = hyp.family
        self.noise_in_kuu = noise_in_kuu
        self.jitter = jitter
        self.K, self.K_se = kernel_kuu(self.Z, self.variance, self.lengthscale, self.noise,
                                       noise_in_kuu, jitter, self.family, self.bias)
        self.LK = chol_kuu(self.K, f"K_c of class {c}")
        self.P = None if X is None else self.kfu(X)
        self.kappa = kernel_kappa(self.variance, self.noise, self.bias)

    def kfu(self, X):
        """K_fu of rows X (N, M), v_c included (:func:`kernel_kfu`)."""
        return kernel_kfu(X, self.Z, self.variance, self.lengthscale, self.family, self.bias)

    def grads(self, X, W_uu, W_fu, w_kappa):
        """(g_log_variance, g_log_noise, g_log_lengthscale (D,), g_Z (M, D), g_log_bias) of
        <W_uu, K> + <W_fu, K_fu> + sum(w_kappa) kappa (:func:`kernel_grads`)."""
        return kernel_grads(X, self.Z, self.variance, self.lengthscale, self.noise,
                            self.K_se, self.P, W_uu, W_fu, w_kappa, self.noise_in_kuu,
                            self.jitter, self.family, self.bias)
