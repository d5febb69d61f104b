"""What an estimator takes from its ``kernel`` argument: a kernel of ours, and its spec.

:func:`as_kernel` turns a scikit-learn kernel built from ``ConstantKernel``, ``RBF`` and
``Matern`` into ours (:mod:`sparsegp._kernel_objects`). An engine with one compiled
stationary kernel reads it as a :class:`StationarySpec` (plain values, log bounds):
:func:`stationary_spec` checks and unpacks a kernel, :func:`kernel_spec` also supplies the
estimators' default kernel and, for the estimators that add one, keeps a kernel's constant
summands as a bias variance (:func:`split_bias_variance`).

Users import these names from :mod:`sparsegp.kernels`.
"""
import numpy as np

from ._kernel_objects import (
    _MATERN_CODES,
    ConstantKernel,
    Kernel,
    Matern,
    SquaredExponential,
    Sum,
    _bounds,
    _clone,
    _copy,
    _fixed,
    _scale,
    _Stationary,
)
from ._params import UNBOUNDED
from ._validation import plain


def as_kernel(kernel):
    """Our kernel for ``kernel``: one of ours (returned as is) or a scikit-learn kernel.

    scikit-learn kernels built from ``ConstantKernel``, ``RBF`` and ``Matern`` (ν = 0.5, 1.5,
    2.5) with ``+`` and ``*`` (a constant times one of the others) are translated with their
    values and bounds; anything else is a ValueError naming what is supported.
    """
    if isinstance(kernel, Kernel):
        return kernel
    try:
        from sklearn.gaussian_process import kernels as sk
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        sk = None
    if sk is not None and isinstance(kernel, sk.Kernel):
        return _from_sklearn(kernel, sk)
    raise ValueError(f"kernel must be a sparsegp.kernels.Kernel or a scikit-learn kernel built "
                     f"from ConstantKernel, RBF and Matern; got {type(kernel).__name__}")


def _from_sklearn(k, sk):
    if isinstance(k, sk.Matern):                              # before RBF: Matern subclasses it
        if float(k.nu) not in _MATERN_CODES:
            raise ValueError(f"Matern kernels with nu = 0.5, 1.5 or 2.5 are supported; got "
                             f"nu={k.nu!r}")
        return Matern(1.0, _copy(k.length_scale), float(k.nu), "fixed",
                      _bounds(k.length_scale_bounds))
    if type(k) is sk.RBF:
        return SquaredExponential(1.0, _copy(k.length_scale), "fixed",
                                  _bounds(k.length_scale_bounds))
    if isinstance(k, sk.ConstantKernel):
        return ConstantKernel(float(k.constant_value), _bounds(k.constant_value_bounds))
    if isinstance(k, sk.Sum):
        return Sum(_from_sklearn(k.k1, sk), _from_sklearn(k.k2, sk))
    if isinstance(k, sk.Product):
        return _scale(_from_sklearn(k.k1, sk), _from_sklearn(k.k2, sk))
    raise ValueError(f"scikit-learn kernel {type(k).__name__} is not supported; use "
                     "ConstantKernel, RBF and Matern (nu 0.5, 1.5, 2.5) with + and * (the "
                     "regressor's noise is its own parameter, so no WhiteKernel)")


# ----------------------------------------------------------------------------------------------
# what an engine with one compiled stationary kernel needs from a kernel object

class StationarySpec:
    """A single (scaled) stationary kernel unpacked for an engine: plain values, log bounds.

    Attributes
    ----------
    kernel : _Stationary
        The kernel it came from (a copy; never the user's object).
    family : int
    variance : float
    lengthscale : ndarray of shape (D,)
    ard : bool
        One length-scale per feature.
    free_variance, free_lengthscale : bool
    variance_bounds : ndarray of shape (2,)
        Log bounds (−inf/inf when fixed: unused then).
    lengthscale_bounds : ndarray of shape (2,)
    bias_term : ConstantKernel or None
        The kernel's constant summands as one ``ConstantKernel(v_b, bounds)``, the bias
        variance v_b added to every covariance entry (:func:`split_bias_variance`); None for a
        kernel without them. Only :func:`kernel_spec` with ``bias=True`` sets it.
    """

    bias_term = None

    def __init__(self, kernel, n_features):
        self.kernel = kernel
        self.family = kernel.family
        self.variance = float(kernel.variance)
        self.lengthscale = kernel.lengthscales(n_features)
        self.ard = kernel.ard
        self.free_variance = not _fixed(kernel.variance_bounds)
        self.free_lengthscale = not _fixed(kernel.lengthscale_bounds)
        self.variance_bounds = (np.log(np.asarray(kernel.variance_bounds, dtype=np.float64))
                                if self.free_variance else np.array([-np.inf, np.inf]))
        self.lengthscale_bounds = (np.log(np.asarray(kernel.lengthscale_bounds,
                                                     dtype=np.float64).ravel()[:2])
                                   if self.free_lengthscale else np.array([-np.inf, np.inf]))

    def fitted(self, variance, lengthscale):
        """A copy of the kernel at fitted values (ℓ as one value unless ARD)."""
        k = _clone(self.kernel)
        k.variance = float(variance)
        ls = np.asarray(lengthscale, dtype=np.float64)
        k.lengthscale = ls.copy() if self.ard else float(ls.ravel()[0])
        return k


def stationary_spec(kernel, n_features, owner):
    """:class:`StationarySpec` of ``kernel`` (ours or scikit-learn's) for estimator ``owner``.

    Raises
    ------
    ValueError
        When the kernel is not one stationary kernel (optionally scaled by a constant), naming
        what ``owner`` supports, or its parameters are not positive and finite.
    """
    k = as_kernel(kernel)
    if not isinstance(k, _Stationary):
        raise ValueError(f"{owner} supports one stationary kernel, optionally times a constant "
                         "(SquaredExponential, Matern(nu=0.5|1.5|2.5), or scikit-learn's "
                         f"ConstantKernel * RBF / Matern); got {k!r}")
    k = _clone(k)
    _ = k.family                                              # a bad nu raises here
    for name in ("variance", "lengthscale"):
        v = np.asarray(getattr(k, name), dtype=np.float64)
        if v.size == 0 or not np.all(np.isfinite(v)) or not np.all(v > 0):
            raise ValueError(f"kernel {name} must be positive and finite; got "
                             f"{getattr(k, name)!r}")
    for name in ("variance_bounds", "lengthscale_bounds"):
        b = getattr(k, name)
        if not _fixed(b):
            arr = np.asarray(b, dtype=np.float64).ravel()
            if arr.size != 2 or not (0 < arr[0] <= arr[1] < np.inf):
                raise ValueError(f"kernel {name} must be 'fixed' or (low, high) with "
                                 f"0 < low <= high < inf; got {b!r}")
    return StationarySpec(k, n_features)


# UNBOUNDED (imported above from sparsegp._params, where its reason is): with a start of
# one's own, ``SquaredExponential(1.0, l0, UNBOUNDED, UNBOUNDED)`` is an isotropic kernel in
# the units of X (one common input scale) searched as the default is.


def split_bias_variance(kernel, owner):
    """``(stationary kernel, bias term)`` of an estimator's ``kernel``: its one stationary
    summand, and ``ConstantKernel(v_b, bounds)`` of its ``ConstantKernel`` summands (None when
    it has none; ``(None, None)`` for ``kernel=None``).

    v_b, the bias variance added to every covariance entry, is the constants' sum, "fixed"
    if any of them is, otherwise bounded by the sums of their bounds.

    Raises
    ------
    ValueError
        When the kernel has not exactly one stationary summand, naming what ``owner``
        supports, or the constants do not sum to a finite number >= 0.
    """
    if kernel is None:
        return None, None
    k = as_kernel(kernel)
    terms = k.terms()
    constants = [t for t in terms if isinstance(t, ConstantKernel)]
    stationary = [t for t in terms if not isinstance(t, ConstantKernel)]
    if len(stationary) != 1:
        raise ValueError(f"{owner} supports one stationary kernel, optionally times a "
                         "constant, plus ConstantKernel summands (the bias variance v_b); "
                         f"got {k!r}")
    if not constants:
        return stationary[0], None
    vb = float(sum(float(c.constant_value) for c in constants))
    if not (np.isfinite(vb) and vb >= 0.0):
        raise ValueError(f"the ConstantKernel summands (the bias variance v_b) must sum to a "
                         f"finite number >= 0; got {plain(vb)!r}")
    hypers = [c.hyperparameters[0] for c in constants]
    bounds = ("fixed" if any(h.fixed for h in hypers) else
              tuple(float(sum(np.ravel(h.bounds)[j] for h in hypers)) for j in (0, 1)))
    return stationary[0], ConstantKernel(vb, bounds)


def kernel_spec(kernel, n_features, owner, default_bounds=None, bias=False):
    """The :class:`StationarySpec` of an estimator's ``kernel`` argument.

    Parameters
    ----------
    kernel : None or kernel
        One stationary kernel, ours or scikit-learn's, optionally times a constant; None is
        the estimator's default, the isotropic squared exponential with variance 1 and
        length-scale 1 (the estimator then replaces the length-scale by its data-following
        start).
    n_features : int
    owner : str
        Estimator name for messages.
    default_bounds : pair of floats, optional
        Natural bounds of the default kernel's search; None searches it without bounds (the
        spec's log bounds are ±inf), as the classifiers always did.
    bias : bool, default=False
        The estimator adds a bias variance: ``kernel`` may also hold ``ConstantKernel``
        summands, kept as the spec's ``bias_term`` (:func:`split_bias_variance`).

    Returns
    -------
    StationarySpec
        Never the user's object.
    """
    if bias:
        kernel, bias_term = split_bias_variance(kernel, owner)
        spec = kernel_spec(kernel, n_features, owner, default_bounds)
        spec.bias_term = bias_term
        return spec
    if kernel is not None:
        return stationary_spec(kernel, n_features, owner)
    bounds = UNBOUNDED if default_bounds is None else tuple(default_bounds)
    spec = stationary_spec(SquaredExponential(1.0, 1.0, bounds, bounds), n_features, owner)
    if default_bounds is None:
        spec.variance_bounds = np.array([-np.inf, np.inf])
        spec.lengthscale_bounds = np.array([-np.inf, np.inf])
    return spec
