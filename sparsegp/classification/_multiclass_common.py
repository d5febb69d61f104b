"""Pieces shared by the multi-class GP classifiers of seed 002 (EP/SEP, GFITC, VI baselines).

Everything here is a plain function or a tiny stateful optimiser; the API is kept stable for
the three estimators (``_multiclass.py``, ``_multiclass_gfitc.py``, ``_multiclass_svgp.py``).

Kernel (notes multiclass_ep.md §1.1)
------------------------------------
Each class c has its own stationary ARD kernel (squared exponential by default; any family
code of :mod:`sparsegp._numba.covfuncs` through ``family``) with amplitude ``variance``
(sigma_c, a variance), per-dimension ``lengthscale`` l_{c,d} (a *length*, not its square: the
R code's squared length-scale is l^2) and additive Gaussian ``noise`` (sigma0_c, a variance):

    k_c(x, x') = sigma_c g(sum_d (x_d - x'_d)^2 / l_{c,d}^2)                (signal, K_fu)
    kappa_c    = sigma_c + sigma0_c                                         (prior var of f_ic)
    K_c        = k_c(Z_c, Z_c) + sigma0_c I [if noise_in_kuu] + jitter I    (inducing prior)

with g(q) = exp(-q/2) for SE and the Matérn forms of :mod:`sparsegp._numba.covfuncs` otherwise.
``noise_in_kuu=True`` is the R nugget convention used by the paper; ``False`` gives noise-free
inducing values, under which Z_c = X removes the FITC error (notes §1.1, §8 item 7).

Parameters are handled in log space for sigma, sigma0 and l; Z is unconstrained. The packed
vector used by the optimisers is ``pack_params`` / ``unpack_params``.

Other pieces: label handling, 1-D quadrature for class probabilities (notes §6), median
length-scale heuristic (notes §5.3), ADAM and the sign-based adaptive step (notes §5.1),
minibatch iteration over any row-sliceable array-like (numpy memmap, h5py/zarr datasets).
"""
import math
import warnings

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from scipy import linalg as sla
from scipy.linalg import blas as _blas
from sklearn.base import ClassifierMixin

from .. import kernels as _kernels
from .._numba import covfuncs as _cf
from .._numba import multiclass as _nbmc
from .._inducing_base import InducingPointEstimator, median_lengthscale, take_rows  # noqa: F401
from .._scaling import InputScaling
from .._validation import check_classes, check_int
from ..exceptions import ConvergenceWarning
from .._config import MC_GEMM_MIN_D as GEMM_MIN_D, MC_SMALL_KERNEL as _SMALL_KERNEL

#: Default absolute jitter on K_c's diagonal (the R code's 1e-10 nugget).
DEFAULT_JITTER = 1e-10


# --------------------------------------------------------------------------------------------
# kernel
# --------------------------------------------------------------------------------------------
def kernel_kfu(X, Z, variance, lengthscale, family=_cf.SE):
    """Signal cross-covariance k_c(X, Z) of one class, without noise.

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    variance : float
    lengthscale : ndarray of shape (D,)
    family : int, default=SE
        Stationary family code of :mod:`sparsegp._numba.covfuncs`.

    Returns
    -------
    K : ndarray of shape (N, M)
    """
    return _stationary(X, Z, variance, lengthscale, family)


def kernel_kuu(Z, variance, lengthscale, noise, noise_in_kuu=True, jitter=DEFAULT_JITTER,
               family=_cf.SE):
    """Inducing prior covariance K_c = k_c(Z, Z) [+ noise I] + jitter I, shape (M, M).

    Parameters
    ----------
    Z : ndarray of shape (M, D)
    variance, noise : float
    lengthscale : ndarray of shape (D,)
    noise_in_kuu : bool, default=True
    jitter : float, default=1e-10
    family : int, default=SE
        Stationary family code of :mod:`sparsegp._numba.covfuncs`.

    Returns
    -------
    K : ndarray of shape (M, M)
    K_se : ndarray of shape (M, M)
        The signal part k_c(Z, Z) alone (needed by :func:`kernel_grads`; the name predates
        the other families).
    """
    K_se = _stationary(Z, Z, variance, lengthscale, family)
    K = K_se.copy()
    K[np.diag_indices_from(K)] += (noise if noise_in_kuu else 0.0) + jitter
    return K, K_se


#: A start whose median 0.5 |x - z|^2 / l^2 exceeds this (k/s2 < 1e-9) has vanishing kernel
#: values and gradients; see MultiClassGPClassifier._rescue_degenerate_lengthscale
DEGENERATE_EXPONENT = 20.0
#: The end-of-fit comparison with the class frequencies needs this many iterations and rows
_JUDGED_ITERATIONS = 10
_JUDGED_ROWS = 100
_JUDGED_SAMPLE = 300


def _stationary(X, Z, variance, lengthscale, family):
    """k(X, Z) of one family: SE by the paths below, the others by the compiled loop.

    The other families are never formed from GEMM distances: |a|^2 + |b|^2 - 2 a.b carries an
    absolute rounding error ~1e-16 |a|^2 / l^2, which the square root in the Matérn forms turns
    into ~1e-8 near coincident points (Z drawn from the training rows), where SE's exp(-q/2)
    keeps it at 1e-16.
    """
    if family == _cf.SE:
        return _se(X, Z, variance, lengthscale)
    return _kernels.kernel_matrix(np.ascontiguousarray(X, dtype=np.float64),
                                  np.ascontiguousarray(Z, dtype=np.float64), family,
                                  variance, lengthscale)


def _se(X, Z, variance, lengthscale):
    X = np.asarray(X, dtype=np.float64)
    work = X.shape[0] * Z.shape[0] * X.shape[1]
    if work < _SMALL_KERNEL:
        diff = (X[:, None, :] - Z[None, :, :]) / lengthscale
        return variance * np.exp(-0.5 * np.einsum("nmd,nmd->nm", diff, diff))
    if X.shape[1] >= GEMM_MIN_D:
        # |a - b|^2 = |a|^2 + |b|^2 - 2 a.b: one GEMM; the rounding (~1e-16 |a|^2) is far
        # below what matters in exp(-d2/2)
        Xs, Zs = X / lengthscale, Z / lengthscale
        d2 = (np.einsum("nd,nd->n", Xs, Xs)[:, None] + np.einsum("md,md->m", Zs, Zs)[None, :]
              - 2.0 * (Xs @ Zs.T))
        return variance * np.exp(-0.5 * np.maximum(d2, 0.0))
    return _kernels.se_kernel(X, Z, variance, lengthscale)


def _se_grad_contract(X, Z, K, W, lengthscale, symmetric=False):
    """dL/dl (D,) and dL/dZ (M, D) of L = sum(W * K), K = k(X, Z) (see kernels.se_grad_contract).

    For large problems with many features the sums are matrix products:
    dL/dz_mj = [(G^T X)_mj - (1^T G)_m z_mj] / l_j^2 and
    dL/dl_j = [sum_n (G 1)_n x_nj^2 - 2 sum_m (G^T X)_mj z_mj + sum_m (1^T G)_m z_mj^2] / l_j^3,
    with G = W * K.
    """
    N, D = X.shape
    if N * Z.shape[0] * D < _SMALL_KERNEL or D < GEMM_MIN_D:
        return _kernels.se_grad_contract(X, Z, K, W, lengthscale, symmetric=symmetric)
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


def _grad_contract(X, Z, K, W, lengthscale, family, variance, symmetric=False):
    """dL/dl (D,) and dL/dZ (M, D) of L = sum(W * K), K = k(X, Z) of family ``family``.

    SE keeps its own paths (:func:`_se_grad_contract`, K is its own derivative factor); the
    other families compute their factor s2 G(q) and contract in the compiled loop (exact
    differences, for the reason given in :func:`_stationary`).
    """
    if family == _cf.SE:
        return _se_grad_contract(X, Z, K, W, lengthscale, symmetric=symmetric)
    return _kernels.grad_contract(X, Z, K, W, family, variance, lengthscale,
                                  symmetric=symmetric)


def kernel_kappa(variance, noise):
    """Prior variance kappa_c = sigma_c + sigma0_c of a noisy latent f_ic."""
    return variance + noise


def kernel_grads(X, Z, variance, lengthscale, noise, K_se, Kfu, W_uu, W_fu, w_kappa,
                 noise_in_kuu=True, family=_cf.SE):
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
    W_uu : ndarray of shape (M, M)
        Symmetric weights of K_c.
    W_fu : ndarray of shape (N, M)
        Weights of K_fu (may be None: no K_fu term).
    w_kappa : float or ndarray of shape (N,)
        Weights of kappa (summed).
    noise_in_kuu : bool
    family : int, default=SE
        Stationary family code of :mod:`sparsegp._numba.covfuncs`.

    Returns
    -------
    g_log_variance : float
    g_log_noise : float
    g_log_lengthscale : ndarray of shape (D,)
    g_Z : ndarray of shape (M, D)
    """
    W_uu = 0.5 * (W_uu + W_uu.T)
    wk = float(np.sum(w_kappa))
    g_var = float(np.sum(W_uu * K_se)) + wk * variance
    g_noise = wk * noise
    if noise_in_kuu:
        g_noise += float(np.trace(W_uu)) * noise
    # every family is s2 g(q): d/dlog s2 of sum(W K) is sum(W K) whatever g is
    g_ls, g_Z = _grad_contract(Z, Z, K_se, W_uu, lengthscale, family, variance, symmetric=True)
    if W_fu is not None:
        g_var += float(np.sum(W_fu * Kfu))
        gl2, gZ2 = _grad_contract(np.asarray(X, dtype=np.float64), Z, Kfu, W_fu, lengthscale,
                                  family, variance)
        g_ls = g_ls + gl2
        g_Z = g_Z + gZ2
    return g_var, g_noise, g_ls * lengthscale, g_Z


def pack_params(log_variance, log_noise, log_lengthscale, Z):
    """Concatenate (C,), (C,), (C, D), (C, M, D) arrays into one vector."""
    return np.concatenate([np.ravel(log_variance), np.ravel(log_noise),
                           np.ravel(log_lengthscale), np.ravel(Z)])


def unpack_params(theta, C, M, D):
    """Inverse of :func:`pack_params`: returns (log_variance, log_noise, log_lengthscale, Z)."""
    theta = np.asarray(theta, dtype=np.float64)
    i = 0
    lv = theta[i:i + C].copy(); i += C
    ln = theta[i:i + C].copy(); i += C
    ll = theta[i:i + C * D].reshape(C, D).copy(); i += C * D
    Z = theta[i:i + C * M * D].reshape(C, M, D).copy(); i += C * M * D
    if i != theta.size:
        raise ValueError(f"parameter vector has length {theta.size}; expected {i}")
    return lv, ln, ll, Z


def tie_lengthscales(grad, C, D):
    """``grad`` projected onto equal length-scales within each class (a new array).

    For an isotropic kernel each class's D log length-scales are one parameter stored D
    times; each of their gradient entries becomes the mean of the D, so that every optimiser
    moves them together, and the directional derivative along a step is the true one.
    """
    out = np.array(grad, dtype=np.float64)
    block = out[2 * C:2 * C + C * D].reshape(C, D)
    block[:] = block.mean(axis=1, keepdims=True)
    return out


def chol_jitter(A, jitter0=0.0, max_tries=8):
    """Lower Cholesky factor of A, adding jitter * mean(diag A) (x10 per retry) on failure.

    Returns ``(L, added)``; raises ``numpy.linalg.LinAlgError`` when every try fails.
    """
    scale = float(np.mean(np.diag(A)))
    add = jitter0
    for _ in range(max_tries):
        try:
            if add > 0:
                B = A.copy()
                B[np.diag_indices_from(B)] += add
            else:
                B = A
            return sla.cholesky(B, lower=True, check_finite=False), add
        except (np.linalg.LinAlgError, sla.LinAlgError):
            add = max(add * 10.0, 1e-10 * scale)
    raise np.linalg.LinAlgError("matrix is not positive definite even with added jitter")


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
# labels
# --------------------------------------------------------------------------------------------
def check_multiclass_labels(y):
    """Return ``(classes, y_index)`` for training labels, requiring at least two classes.

    Raises ``ValueError`` for a single class or NaN labels.
    """
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D of shape (n_samples,); got shape {y.shape}")
    if y.dtype.kind in "fc" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or infinite values")
    return check_classes(y, min_classes=2)


class MultiClassGPClassifier(ClassifierMixin, InducingPointEstimator):
    """Base of the three multi-class classifiers: validation, initial state, predictions.

    Subclasses define ``predict_latent(X) -> (mean, var)`` and ``predict_proba(X)``, both of
    shape (n_samples, C) with columns ordered as ``classes_``, on top of ``_latent(X)`` and
    ``_proba(mean, var)``, which take already validated float64 inputs. ``score`` is
    scikit-learn's accuracy; the test NLL is ``sparsegp.metrics.mean_nlp(y,
    est.predict_proba(X), classes=est.classes_)``.

    Training and prediction run in model units (:mod:`sparsegp._scaling`): the inputs centred
    and scaled, per feature for the default ARD kernel. ``_validate_training_data`` and
    ``_validate_predict_data`` return model-unit rows, and ``_scaling`` converts the given
    start in and the reported ``inducing_points_`` and ``lengthscale_`` out, so that a fit
    does not depend on the units or the offset of X.
    """

    _inits = ("random", "kmeans", "subset")
    _auto_inducing = 20

    def _validate_training_data(self, X, y, row_sliceable):
        """Check X and y; return ``(X, N, D, classes, y_index)``.

        With ``row_sliceable`` X may be any 2-D array-like with row slicing (memmap, h5py or
        zarr dataset), which is left unread; otherwise X comes back as a float64 copy.
        """
        if row_sliceable and _is_lazy_store(X):
            # out of core: the rows stay where they are; what can be checked without
            # reading them is checked as the in-memory path checks it
            N, D = check_row_sliceable(X)
            if np.dtype(getattr(X, "dtype", np.float64)).kind not in "iufb":
                raise ValueError(f"X must hold real numbers; got dtype {X.dtype}")
            self._record_features(X)
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                                 "target y is None")
            y = np.asarray(y)
            check_classification_targets(y)
        else:
            # in memory (arrays, DataFrames, lists): one validation for batch and minibatch
            X, y = self._validate_fit_data(X, y, classifier=True)
            N, D = X.shape
        classes, y_index = check_multiclass_labels(y)
        if y_index.shape[0] != N:
            raise ValueError(f"X and y have different lengths: X has {N} rows, y has "
                             f"{y_index.shape[0]}")
        self._scaling = InputScaling.from_rows(X, self._per_feature_scaling(D))
        return self._scaling.rows(X), N, D, classes, y_index

    def _validate_predict_data(self, X):
        """The checks of every estimator, then X in the fit's model units (a new array)."""
        X = super()._validate_predict_data(X)      # "not fitted" comes first
        return self._scaling.transform(X)

    def _per_feature_scaling(self, n_features):
        """Whether the inputs are scaled per feature: for the default ARD kernel or an ARD
        ``kernel`` (:meth:`sparsegp._scaling.InputScaling.wants_per_feature`)."""
        spec = self._kernel_spec(n_features)
        return spec is None or InputScaling.wants_per_feature(spec)

    def _check_iterations_and_callback(self, min_iter):
        """``max_iter`` (>= ``min_iter``) and ``jitter``; ``callback`` must be callable."""
        max_iter = check_int(self.max_iter, "max_iter", minimum=min_iter)
        jitter = self._check_jitter()
        if self.callback is not None and not callable(self.callback):
            raise ValueError(f"callback must be callable; got {self.callback!r}")
        return max_iter, jitter

    def _print_every(self):
        """Iterations between progress lines: ``verbose`` itself, 10 for True, 0 for off."""
        if isinstance(self.verbose, (bool, np.bool_)):
            return 10 if self.verbose else 0
        return int(self.verbose)

    def _initial_parameters(self, X, y_index, n_classes, rng):
        """Initial ``(variance, noise, lengthscale, Z)`` of shapes (C,), (C,), (C, D), (C, M, D).

        Every multi-class estimator draws them in the same order from the same arguments, so
        that the baselines and ``MultiClassEPClassifier`` given one ``random_state`` start
        from the same point, as in the paper's experiments. A ``kernel`` gives every class
        its variance and length-scales (an isotropic value repeated over the D features);
        without one, ``variance`` and ``lengthscale`` do (the median heuristic for None).
        Sets ``_spec`` (:meth:`_kernel_spec`), which the fit and ``kernel_`` read.
        """
        scaling = self._scaling
        spec = self._kernel_spec(X.shape[1])
        if spec is not None:
            # the start and the box in model units; ``fitted`` still builds the user's kernel
            spec = scaling.spec_to_model(spec)
        self._spec = spec
        if spec is None:
            variance = self._check_positive_param("variance", n_classes)
        else:
            variance = np.full(n_classes, spec.variance)
        noise = self._check_positive_param("noise", n_classes)
        if spec is None:
            # None: the median heuristic on the model-unit rows (on standardised inputs, the
            # paper's start); a given value is in the user's units
            lengthscale = self._check_lengthscale(X, rng, n_classes)
            if self.lengthscale is not None:
                lengthscale = scaling.lengthscale_to_model(lengthscale)
        else:
            lengthscale = np.tile(spec.lengthscale, (n_classes, 1))
        Z = self._check_inducing_points(X.shape[0], X.shape[1], n_classes)
        if Z is None:
            Z = self._initial_inducing_points(X, rng, y_index, n_classes)
        else:
            Z = scaling.transform(Z)
        # a kernel's length-scales are given ones too: the same rescue applies to them
        if self.lengthscale is not None or spec is not None:
            lengthscale = self._rescue_degenerate_lengthscale(X, Z, lengthscale, rng)
        return variance, noise, lengthscale, Z

    # -- the covariance given as ``kernel`` ------------------------------------------------

    def _kernel_spec(self, n_features):
        """The :class:`~sparsegp.kernels.StationarySpec` of ``kernel``; None without one.

        Raises
        ------
        ValueError
            When ``kernel`` is given together with a non-default ``lengthscale`` or
            ``variance`` (the covariance must come from one place), or is not a single
            stationary kernel optionally times a constant.
        """
        kernel = getattr(self, "kernel", None)
        if kernel is None:
            return None
        _kernels.check_kernel_conflict(
            kernel, {"lengthscale": (self.lengthscale, None), "variance": (self.variance, 1.0)},
            type(self).__name__)
        return _kernels.stationary_spec(kernel, n_features, type(self).__name__)

    def _kernel_family(self):
        """Stationary family code of the fitted covariance (SE without a ``kernel``)."""
        spec = getattr(self, "_spec", None)
        return _cf.SE if spec is None else spec.family

    def _kernel_settings(self, C, M, D):
        """``(family, isotropic, log_bounds, frozen)`` for a packed vector of C classes.

        ``log_bounds`` is None without a ``kernel`` (the default covariance is unbounded, as
        it always was); otherwise (lo, hi) arrays the size of :func:`pack_params`' vector,
        the kernel's log bounds on log sigma_c and log l_{c,d}, unbounded elsewhere.
        ``frozen`` (boolean, same size) marks the coordinates a "fixed" bound holds.
        """
        n = 2 * C + C * D + C * M * D
        frozen = np.zeros(n, dtype=bool)
        spec = getattr(self, "_spec", None)
        if spec is None:
            return _cf.SE, False, None, frozen
        lo = np.full(n, -np.inf)
        hi = np.full(n, np.inf)
        if spec.free_variance:
            lo[:C], hi[:C] = spec.variance_bounds
        else:
            frozen[:C] = True
        ls = slice(2 * C, 2 * C + C * D)
        if spec.free_lengthscale:
            # model units: one (low, high) row per feature (InputScaling.spec_to_model)
            pairs = np.broadcast_to(
                np.asarray(spec.lengthscale_bounds, dtype=np.float64).reshape(-1, 2), (D, 2))
            lo[ls], hi[ls] = np.tile(pairs[:, 0], C), np.tile(pairs[:, 1], C)
        else:
            frozen[ls] = True
        return spec.family, not spec.ard, (lo, hi), frozen

    @property
    def kernel_(self):
        """The fitted covariances: a list of C kernels, one per class (``classes_`` order).

        Each is a copy of ``kernel`` at that class's fitted ``variance_[c]`` and
        ``lengthscale_[c]`` (a single length-scale when ``kernel`` is isotropic), or, without
        a ``kernel``, ``SquaredExponential(variance_[c], lengthscale_[c])`` with ARD
        length-scales. The additive noise ``noise_`` is not part of them.
        """
        variance = self.variance_          # AttributeError before fit, as for any fitted value
        lengthscale = np.atleast_2d(self.lengthscale_)
        spec = getattr(self, "_spec", None)
        if spec is None:
            return [_kernels.SquaredExponential(float(v), np.array(ls, dtype=np.float64))
                    for v, ls in zip(variance, lengthscale)]
        return [spec.fitted(float(v), ls) for v, ls in zip(variance, lengthscale)]

    def _rescue_degenerate_lengthscale(self, X, Z, lengthscale, rng):
        """Scale given length-scales up when the kernel between the data and Z vanishes.

        With length-scales far below the distances between points (unit length-scales on
        standardised 36-D data: k/s2 ~ exp(-36) between typical points) every kernel value and
        every gradient with respect to the length-scales underflows into rounding noise, and
        gradient ascent cannot leave the start (SEP ended at chance error). Then every class's
        length-scales are multiplied by one factor, keeping their ARD ratios, so that their
        geometric mean is the median heuristic's, and a warning says so.
        """
        # a generator of its own: the check must not shift the estimator's random stream
        pick = np.random.default_rng(0).choice(X.shape[0], size=min(X.shape[0], 500),
                                               replace=False)
        rows = take_rows(X, np.sort(pick))
        exponents = []
        for c in range(Z.shape[0]):
            a = rows / lengthscale[c]
            b = Z[c] / lengthscale[c]
            d2 = np.maximum(np.sum(a * a, 1)[:, None] + np.sum(b * b, 1)[None, :]
                            - 2.0 * a @ b.T, 0.0)
            exponents.append(0.5 * np.median(d2))
        if max(exponents) <= DEGENERATE_EXPONENT:
            return lengthscale
        target = median_lengthscale(X, rng)
        geo = np.exp(np.mean(np.log(lengthscale), axis=1, keepdims=True))
        rescued = lengthscale * (target / geo)
        warnings.warn(
            f"the initial lengthscale makes the kernel between training points and inducing "
            f"inputs vanish (median k/variance = exp(-{max(exponents):.0f})), so no gradient "
            f"could move it; starting instead from length-scales scaled by "
            f"{float(np.mean(target / geo)):.3g} to the median heuristic "
            f"({target:.3g}; lengthscale=None uses it directly). Standardised inputs help.",
            ConvergenceWarning, stacklevel=4)
        return rescued

    def _warn_if_no_better_than_frequencies(self, X, y_index):
        """ConvergenceWarning when the fit classifies the training labels no better than
        always predicting the most frequent class (judged on up to 300 evenly spaced rows:
        enough to tell a fit from the majority vote; the quadrature costs 0.3 ms a row).

        Accuracy rather than NLL: a fit that classifies well but is over-confident on a few
        points (VI's robust-max after few iterations) is not a failed fit. Runs shorter than
        ``_JUDGED_ITERATIONS`` iterations (warm-ups, deliberate partial fits) and sets smaller
        than ``_JUDGED_ROWS`` rows (where the majority baseline is itself noise) are not judged.
        """
        N = X.shape[0]
        if N < _JUDGED_ROWS or getattr(self, "n_iter_", 0) < _JUDGED_ITERATIONS:
            return
        idx = np.unique(np.linspace(0, N - 1, min(N, _JUDGED_SAMPLE)).astype(np.int64))
        # fit's own float64 copy of X: no second validation (nor feature-name warnings)
        P = self._proba(*self._latent(take_rows(X, idx)))
        accuracy = float(np.mean(np.argmax(P, axis=1) == y_index[idx]))
        majority = float(np.max(np.bincount(y_index[idx], minlength=P.shape[1]))) / idx.size
        if accuracy <= majority:
            warnings.warn(
                f"training ended no better than always predicting the most frequent class "
                f"(training accuracy {accuracy:.3f} against {majority:.3f}); try standardised "
                f"inputs, lengthscale=None (the median heuristic), more iterations (max_iter) "
                f"or a larger learning_rate", ConvergenceWarning, stacklevel=3)

    # -- theta_: the free hyper-parameters of log_marginal_likelihood ------------------------

    def _set_theta(self, log_variance, log_noise, log_lengthscale):
        """Set ``theta_`` from the model-unit log hyper-parameters (C,), (C,), (C, D).

        ``theta_`` is ``[log variance (C), log noise (C), log lengthscale (C x D, or C for
        an isotropic kernel)]`` less what the kernel holds fixed, length-scales in the user's
        units, classes in ``classes_`` order. Also keeps the full vector and its mask, for
        :meth:`_hyper_at` and :meth:`_theta_gradient`.
        """
        C, D = np.shape(log_lengthscale)
        spec = getattr(self, "_spec", None)
        mask = np.ones(2 * C + C * D, dtype=bool)
        if spec is not None:
            mask[:C] = spec.free_variance
            mask[2 * C:] = spec.free_lengthscale
            if not spec.ard:
                # one length-scale per class: its first entry stands for all D
                mask[2 * C:] &= np.tile(np.arange(D) == 0, C)
        log_ls_user = np.asarray(log_lengthscale) + np.log(self._scaling.scale)
        self._theta_full = np.concatenate([np.ravel(log_variance), np.ravel(log_noise),
                                           log_ls_user.ravel()])
        self._theta_mask = mask
        self.theta_ = self._theta_full[mask].copy()

    def _hyper_at(self, theta, Z):
        """The model-unit :func:`pack_params` vector at ``theta`` (as ``theta_``) with the
        inducing inputs Z (C, M, D)."""
        C, _, D = np.shape(Z)
        full = self._theta_full.copy()
        full[self._theta_mask] = theta
        log_ls = full[2 * C:].reshape(C, D)
        spec = getattr(self, "_spec", None)
        if spec is not None and not spec.ard:
            log_ls = np.repeat(log_ls[:, :1], D, axis=1)
        return pack_params(full[:C], full[C:2 * C], log_ls - np.log(self._scaling.scale), Z)

    def _theta_gradient(self, grad, C, D):
        """d/d ``theta_`` from a gradient of the :func:`pack_params` vector (log space: the
        units do not change it; an isotropic class's D entries add up)."""
        g = np.array(grad[:2 * C + C * D], dtype=np.float64)
        spec = getattr(self, "_spec", None)
        if spec is not None and not spec.ard:
            gl = g[2 * C:].reshape(C, D)
            gl[:, 0] = gl.sum(axis=1)
        return g[self._theta_mask]

    def _training_rows(self, X, y_index):
        """Keep the model-unit training rows for ``log_marginal_likelihood(theta)``: only
        in-memory ones (a store read lazily, or rows on Dask workers, are not kept)."""
        in_memory = isinstance(X, np.ndarray) and not isinstance(X, np.memmap)
        self._lml_rows = (X, y_index) if in_memory else None

    def _rows_for_lml(self):
        """The kept training rows, or a ValueError saying why there are none."""
        rows = getattr(self, "_lml_rows", None)
        if rows is None:
            raise ValueError(
                f"{type(self).__name__}.log_marginal_likelihood(theta) needs the training "
                "rows, which this fit did not keep (X was read lazily from a store or lives "
                "on Dask workers); refit on an in-memory array, or call it with theta=None")
        return rows

    def decision_function(self, X):
        """Log predictive class probabilities, the scores whose argmax ``predict`` returns.

        Returns
        -------
        scores : ndarray of shape (n_samples, C), or (n_samples,) for two classes
            log p(y = classes_[c] | x) per column; with two classes, scikit-learn's binary
            convention: the log-odds of ``classes_[1]`` (positive predicts it). The latent
            means and variances are :meth:`predict_latent`.
        """
        # the floor keeps a probability that underflowed to 0 finite, as sparsegp.metrics does
        log_p = np.log(np.maximum(self.predict_proba(X), 1e-300))
        return log_p[:, 1] - log_p[:, 0] if log_p.shape[1] == 2 else log_p

    def predict(self, X):
        """Most probable class label for each row of X, shape (n_samples,)."""
        P = self.predict_proba(X)      # checks that the model is fitted
        return self.classes_[np.argmax(P, axis=1)]


def class_counts_factors(y_index, C):
    """n_c = (N - N_c) + N_c (C - 1): number of pairwise factors touching each class (§1.2)."""
    Nc = np.bincount(y_index, minlength=C).astype(np.float64)
    return (Nc.sum() - Nc) + Nc * (C - 1)


# --------------------------------------------------------------------------------------------
# class probabilities by 1-D quadrature (notes §6)
# --------------------------------------------------------------------------------------------
def class_probabilities(mean, var, density=3.0, n_sd=8.5, max_nodes=20000, only=None):
    """p(y = c) = int N(f | mu_c, v_c) prod_{j != c} Phi((f - mu_j) / sqrt(v_j)) df.

    Exact likelihood (1) under independent Gaussian latents (notes §6, eq. 11), by a
    trapezoid rule with ``density`` nodes per smallest standard deviation over mu_c +- n_sd sd_c;
    absolute error below 1e-6 with the defaults (tested against adaptive quadrature). Rows are
    not renormalised: they sum to one within the same error.

    Parameters
    ----------
    mean, var : ndarray of shape (N, C)
        Latent means and variances (variances > 0).
    only : ndarray of shape (N,) of int, optional
        Compute only column ``only[i]`` of row i (others NaN); e.g. the true class for a test NLL.

    Returns
    -------
    P : ndarray of shape (N, C)
    """
    mean = np.ascontiguousarray(mean, dtype=np.float64)
    sd = np.sqrt(np.maximum(np.ascontiguousarray(var, dtype=np.float64), 1e-300))
    if mean.ndim != 2 or mean.shape != sd.shape:
        raise ValueError(f"mean and var must be 2-D of equal shape; got {mean.shape}, {sd.shape}")
    N = mean.shape[0]
    only_arr = (np.full(N, -1, dtype=np.int64) if only is None
                else np.ascontiguousarray(only, dtype=np.int64))
    out = np.empty_like(mean)
    _nbmc.quad_class_probs(mean, sd, only_arr, float(density), float(n_sd), int(max_nodes), out)
    return out


def true_class_probability(mean, var, y_index, **kwargs):
    """p(y_i = y_index[i]) for every row, shape (N,); see :func:`class_probabilities`."""
    y_index = np.asarray(y_index, dtype=np.int64)
    P = class_probabilities(mean, var, only=y_index, **kwargs)
    return P[np.arange(P.shape[0]), y_index]


# --------------------------------------------------------------------------------------------
# minibatches over row-sliceable array-likes
# --------------------------------------------------------------------------------------------
def _is_lazy_store(X):
    """True for row-sliceable data not to be read whole: memmaps and array stores (h5py,
    zarr, ...) rather than in-memory arrays, DataFrames and lists."""
    if isinstance(X, np.memmap):
        return True
    if isinstance(X, (np.ndarray, list, tuple)) or hasattr(X, "iloc"):
        return False
    return hasattr(X, "shape") and hasattr(X, "__getitem__")


def check_row_sliceable(X, name="X"):
    """Check that X is 2-D and indexable by rows without reading it; return (N, D).

    Accepts numpy arrays and memmaps, h5py/zarr datasets and anything with ``shape`` and
    ``__getitem__``. Nothing is loaded.
    """
    shape = getattr(X, "shape", None)
    if shape is None or not hasattr(X, "__getitem__"):
        raise ValueError(
            f"{name} must be an array-like with a shape and row slicing (ndarray, memmap, "
            f"h5py/zarr dataset); got {type(X).__name__}"
        )
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features); got {tuple(shape)}")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column; got {tuple(shape)}")
    return int(shape[0]), int(shape[1])


def iter_minibatches(n_samples, batch_size, rng):
    """Yield sorted index arrays of one random epoch: shuffle, split, visit in random order.

    ``ceil(N / batch_size)`` batches; indices inside a batch are sorted so that h5py/zarr
    datasets can be read with increasing fancy indices (notes §5.2).
    """
    perm = rng.permutation(n_samples)
    n_batches = max(1, int(math.ceil(n_samples / batch_size)))
    for b in rng.permutation(n_batches):
        yield np.sort(perm[b * batch_size:(b + 1) * batch_size])
