"""The kernel objects behind :mod:`sparsegp.kernels`: hyper-parameters and their algebra.

:class:`Kernel` is the base: scikit-learn's parameter protocol (nested ``k1__name``), the
log-space view (``theta``, ``bounds``, ``clone_with_theta``) and the algebra (``+`` makes a
:class:`Sum`, a constant times a kernel scales its variance, :func:`_scale`). The stationary
kernels (:class:`SquaredExponential`, :class:`Matern`) compute through
:mod:`sparsegp._covariance`; :class:`ConstantKernel` is the bias. The small helpers at the end
(copying, bounds, printing) serve the classes and :mod:`sparsegp._kernel_spec`.

Users import these names from :mod:`sparsegp.kernels`.
"""
import numbers
from abc import ABC, abstractmethod

import numpy as np

from ._covariance import _as2d, kernel_matrix, log_gradient
from ._numba import covfuncs as _cf
from ._params import DEFAULT_BOX
from ._validation import plain

#: default box of every hyper-parameter, as natural values (the one default box,
#: :data:`sparsegp._params.DEFAULT_BOX`, where its reason is)
DEFAULT_BOUNDS = DEFAULT_BOX
_MATERN_CODES = {0.5: _cf.MATERN12, 1.5: _cf.MATERN32, 2.5: _cf.MATERN52}


class Hyperparameter:
    """One hyper-parameter: ``name``, ``bounds`` (natural, (2,)) or "fixed", ``n_elements``."""

    def __init__(self, name, bounds, n_elements=1):
        self.name = name
        self.fixed = isinstance(bounds, str) and bounds == "fixed"
        self.bounds = None if self.fixed else np.asarray(bounds, dtype=np.float64)
        self.n_elements = int(n_elements)

    def __repr__(self):
        b = "fixed" if self.fixed else tuple(self.bounds.tolist())
        return f"Hyperparameter({self.name!r}, bounds={b}, n_elements={self.n_elements})"


class Kernel(ABC):
    """Base of every kernel: parameters, log-space ``theta``, bounds, algebra.

    Subclasses store their constructor arguments unchanged and define ``hyperparameters``
    (a list of :class:`Hyperparameter`), ``__call__``, ``diag`` and ``gradient``.
    """

    # -- parameters (scikit-learn's protocol, so estimators nest them) ----------------------
    def get_params(self, deep=True):
        """Constructor arguments; with ``deep``, also those of nested kernels as ``k1__name``."""
        import inspect

        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        out = {n: getattr(self, n) for n in names}
        if deep:
            for n, v in list(out.items()):
                if isinstance(v, Kernel):
                    out.update({f"{n}__{k}": w for k, w in v.get_params(True).items()})
        return out

    def set_params(self, **params):
        """Set constructor arguments, nested ones as ``k1__lengthscale``; returns self."""
        valid = self.get_params(deep=False)
        for key, value in params.items():
            head, _, rest = key.partition("__")
            if head not in valid:
                raise ValueError(f"invalid parameter {head!r} for kernel {type(self).__name__}; "
                                 f"valid: {sorted(valid)}")
            if rest:
                getattr(self, head).set_params(**{rest: value})
            else:
                setattr(self, head, value)
        return self

    def clone_with_theta(self, theta):
        """A copy with the free hyper-parameters set from log values ``theta``."""
        k = _clone(self)
        k.theta = theta
        return k

    # -- log-space view --------------------------------------------------------------------
    @property
    @abstractmethod
    def hyperparameters(self):
        """The list of :class:`Hyperparameter` of this kernel, in ``theta`` order."""

    @property
    def n_dims(self):
        """Number of free log hyper-parameters (``theta.size``)."""
        return sum(h.n_elements for h in self.hyperparameters if not h.fixed)

    @property
    def theta(self):
        """Logs of the free hyper-parameters, flattened, shape (n_dims,)."""
        parts = [np.log(np.atleast_1d(np.asarray(self._get(h.name), dtype=np.float64)))
                 for h in self.hyperparameters if not h.fixed]
        return np.concatenate(parts) if parts else np.empty(0)

    @theta.setter
    def theta(self, theta):
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if theta.size != self.n_dims:
            raise ValueError(f"theta must have {self.n_dims} entries for {self!r}; got "
                             f"{theta.size}")
        i = 0
        for h in self.hyperparameters:
            if h.fixed:
                continue
            v = np.exp(theta[i:i + h.n_elements])
            self._set(h.name, float(v[0]) if h.n_elements == 1 and
                      np.ndim(self._get(h.name)) == 0 else v.copy())
            i += h.n_elements

    @property
    def bounds(self):
        """Log bounds of the free hyper-parameters, shape (n_dims, 2)."""
        rows = []
        for h in self.hyperparameters:
            if not h.fixed:
                b = np.log(h.bounds).reshape(-1, 2)
                rows.append(np.repeat(b, h.n_elements, axis=0) if b.shape[0] == 1 else b)
        return np.vstack(rows) if rows else np.empty((0, 2))

    def _get(self, name):
        head, _, rest = name.partition("__")
        return getattr(self, head)._get(rest) if rest else getattr(self, head)

    def _set(self, name, value):
        head, _, rest = name.partition("__")
        if rest:
            getattr(self, head)._set(rest, value)
        else:
            setattr(self, head, value)

    # -- algebra ---------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, numbers.Real):
            other = ConstantKernel(float(other), "fixed")
        if not isinstance(other, Kernel):
            return NotImplemented
        return Sum(self, other)

    def __radd__(self, other):
        return self.__add__(other)

    def __mul__(self, other):
        return _scale(self, other)

    def __rmul__(self, other):
        return _scale(self, other)

    def __eq__(self, other):
        if type(self) is not type(other):
            return False
        a, b = self.get_params(deep=False), other.get_params(deep=False)
        return all(np.array_equal(np.asarray(a[k], dtype=object), np.asarray(b[k], dtype=object))
                   if not isinstance(a[k], Kernel) else a[k] == b[k] for k in a)

    def __hash__(self):
        return id(self)

    def __repr__(self):
        args = ", ".join(f"{k}={_fmt(v)}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    # -- what estimators ask -----------------------------------------------------------------
    def terms(self):
        """The summands: a list of stationary kernels and constants (a Sum is flattened)."""
        return [self]

    @abstractmethod
    def __call__(self, X, Z=None):
        """k(X, Z) as an (N, M) array; ``Z=None`` gives k(X, X)."""

    @abstractmethod
    def diag(self, X):
        """diag k(X, X), shape (N,)."""

    @abstractmethod
    def gradient(self, X, Z, W, *, wrt_X=False):
        """Gradients of L = Σ W ⊙ K(X, Z).

        Parameters
        ----------
        X : ndarray of shape (N, D)
        Z : ndarray of shape (M, D) or None
            None means the symmetric K(X, X); W must then be symmetric and the input gradient
            counts both arguments.
        W : ndarray of shape (N, M)
            The adjoint ∂(objective)/∂K.
        wrt_X : bool
            Also return dL/dX.

        Returns
        -------
        g_theta : ndarray of shape (n_dims,)
            dL/dθ for the free log hyper-parameters.
        g_Z : ndarray of shape (M, D), or None when ``Z`` is None
        g_X : ndarray of shape (N, D)
            Only with ``wrt_X``.
        """

    @abstractmethod
    def diag_gradient(self, X, w):
        """dL/dθ of L = Σ_n w_n k(x_n, x_n), shape (n_dims,)."""


class _Stationary(Kernel):
    """s² g(‖(x − z)/ℓ‖²) for the family code ``_family`` (:mod:`sparsegp._numba.covfuncs`)."""

    _family = _cf.SE

    @property
    def family(self):
        return self._family

    @property
    def hyperparameters(self):
        ls = np.asarray(self.lengthscale, dtype=np.float64)
        return [Hyperparameter("variance", self.variance_bounds),
                Hyperparameter("lengthscale", self.lengthscale_bounds, max(ls.size, 1))]

    @property
    def ard(self):
        """True when ``lengthscale`` holds one value per feature."""
        return np.ndim(self.lengthscale) > 0 and np.size(self.lengthscale) > 1

    def lengthscales(self, n_features):
        """ℓ as a C-contiguous (D,) array (an isotropic value repeated)."""
        ls = np.asarray(self.lengthscale, dtype=np.float64).ravel()
        if ls.size == 1:
            return np.full(n_features, float(ls[0]))
        if ls.size != n_features:
            raise ValueError(f"the kernel has {ls.size} length-scales but X has {n_features} "
                             "features")
        return np.ascontiguousarray(ls)

    def __call__(self, X, Z=None):
        X = _as2d(X)
        Z = X if Z is None else _as2d(Z)
        return kernel_matrix(X, Z, self._family, float(self.variance),
                             self.lengthscales(X.shape[1]))

    def diag(self, X):
        return np.full(np.shape(X)[0], float(self.variance))

    def gradient(self, X, Z, W, *, wrt_X=False):
        X = _as2d(X)
        sym = Z is None
        Zc = X if sym else _as2d(Z)
        out = log_gradient(X, Zc, W, self._family, float(self.variance),
                           self.lengthscales(X.shape[1]), symmetric=sym, wrt_X=wrt_X,
                           free_variance=not _fixed(self.variance_bounds),
                           free_lengthscale=not _fixed(self.lengthscale_bounds), ard=self.ard)
        return (out[0], None if sym else out[1]) + out[2:]

    def diag_gradient(self, X, w):
        parts = []
        if not _fixed(self.variance_bounds):
            parts.append([float(self.variance) * float(np.sum(w))])
        if not _fixed(self.lengthscale_bounds):
            parts.append(np.zeros(np.size(self.lengthscale) if self.ard else 1))
        return np.concatenate(parts) if parts else np.empty(0)


class SquaredExponential(_Stationary):
    """k(x, z) = s² exp(−½ ‖(x − z)/ℓ‖²).

    Parameters
    ----------
    variance : float, default=1.0
        Signal variance s².
    lengthscale : float or array-like of shape (n_features,), default=1.0
        One value (isotropic) or one per feature (ARD).
    variance_bounds, lengthscale_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
        Box for the optimiser (natural values; it searches their logs), or "fixed".
    """

    _family = _cf.SE

    def __init__(self, variance=1.0, lengthscale=1.0, variance_bounds=DEFAULT_BOUNDS,
                 lengthscale_bounds=DEFAULT_BOUNDS):
        self.variance = variance
        self.lengthscale = lengthscale
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds


class Matern(_Stationary):
    """Matérn covariance with ν ∈ {1/2, 3/2, 5/2}; r = ‖(x − z)/ℓ‖.

    ν = 1/2: s² exp(−r); ν = 3/2: s² (1 + √3 r) exp(−√3 r); ν = 5/2:
    s² (1 + √5 r + 5r²/3) exp(−√5 r).

    Parameters
    ----------
    variance : float, default=1.0
    lengthscale : float or array-like of shape (n_features,), default=1.0
    nu : {0.5, 1.5, 2.5}, default=1.5
    variance_bounds, lengthscale_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
    """

    def __init__(self, variance=1.0, lengthscale=1.0, nu=1.5, variance_bounds=DEFAULT_BOUNDS,
                 lengthscale_bounds=DEFAULT_BOUNDS):
        self.variance = variance
        self.lengthscale = lengthscale
        self.nu = nu
        self.variance_bounds = variance_bounds
        self.lengthscale_bounds = lengthscale_bounds

    @property
    def _family(self):
        try:
            return _MATERN_CODES[float(self.nu)]
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"Matern nu must be 0.5, 1.5 or 2.5; got {plain(self.nu)!r}") from None


class ConstantKernel(Kernel):
    """k(x, z) = c: a bias (a constant mean with prior variance c) when added to a kernel.

    Parameters
    ----------
    constant_value : float, default=1.0
    constant_value_bounds : pair of floats or "fixed", default=(1e-5, 1e5)
    """

    def __init__(self, constant_value=1.0, constant_value_bounds=DEFAULT_BOUNDS):
        self.constant_value = constant_value
        self.constant_value_bounds = constant_value_bounds

    @property
    def hyperparameters(self):
        return [Hyperparameter("constant_value", self.constant_value_bounds)]

    def __call__(self, X, Z=None):
        n = np.shape(X)[0]
        m = n if Z is None else np.shape(Z)[0]
        return np.full((n, m), float(self.constant_value))

    def diag(self, X):
        return np.full(np.shape(X)[0], float(self.constant_value))

    def gradient(self, X, Z, W, *, wrt_X=False):
        g = (np.array([float(self.constant_value) * float(np.sum(W))])
             if not _fixed(self.constant_value_bounds) else np.empty(0))
        res = (g, None if Z is None else np.zeros(np.shape(Z)))
        if wrt_X:
            res += (np.zeros(np.shape(X)),)
        return res

    def diag_gradient(self, X, w):
        if _fixed(self.constant_value_bounds):
            return np.empty(0)
        return np.array([float(self.constant_value) * float(np.sum(w))])


class Sum(Kernel):
    """k1 + k2; hyper-parameters ``k1__*`` then ``k2__*``."""

    def __init__(self, k1, k2):
        self.k1 = k1
        self.k2 = k2

    @property
    def hyperparameters(self):
        return ([_prefixed(h, "k1__") for h in self.k1.hyperparameters]
                + [_prefixed(h, "k2__") for h in self.k2.hyperparameters])

    def terms(self):
        return self.k1.terms() + self.k2.terms()

    def __call__(self, X, Z=None):
        return self.k1(X, Z) + self.k2(X, Z)

    def diag(self, X):
        return self.k1.diag(X) + self.k2.diag(X)

    def gradient(self, X, Z, W, *, wrt_X=False):
        a = self.k1.gradient(X, Z, W, wrt_X=wrt_X)
        b = self.k2.gradient(X, Z, W, wrt_X=wrt_X)
        res = (np.concatenate([a[0], b[0]]), None if Z is None else a[1] + b[1])
        if wrt_X:
            res += (a[2] + b[2],)
        return res

    def diag_gradient(self, X, w):
        return np.concatenate([self.k1.diag_gradient(X, w), self.k2.diag_gradient(X, w)])


# ----------------------------------------------------------------------------------------------
# the product with a constant, and helpers

def _scale(a, b):
    """a * b where one factor is a number or a ConstantKernel and the other is stationary."""
    if isinstance(b, (numbers.Real, ConstantKernel)) and not isinstance(a, (numbers.Real,
                                                                           ConstantKernel)):
        a, b = b, a
    if isinstance(a, numbers.Real):
        if not isinstance(b, Kernel):
            return NotImplemented
        if isinstance(b, ConstantKernel):
            return ConstantKernel(float(a) * float(b.constant_value), b.constant_value_bounds)
        if isinstance(b, Sum):
            return Sum(_scale(a, b.k1), _scale(a, b.k2))
        k = _clone(b)
        k.variance = float(a) * float(b.variance)
        return k
    if isinstance(a, ConstantKernel):
        if isinstance(b, ConstantKernel):
            bounds = (b.constant_value_bounds if _fixed(a.constant_value_bounds)
                      else a.constant_value_bounds)
            return ConstantKernel(float(a.constant_value) * float(b.constant_value), bounds)
        if isinstance(b, _Stationary):
            k = _clone(b)
            k.variance = float(a.constant_value) * float(b.variance)
            # the product has one free scale: the constant's, unless it is fixed
            k.variance_bounds = (b.variance_bounds if _fixed(a.constant_value_bounds)
                                 else a.constant_value_bounds)
            return k
    raise ValueError("only a constant times a kernel is supported as a product (a constant "
                     f"scale); got {type(a).__name__} * {type(b).__name__}")


def _clone(k):
    params = {n: (_clone(v) if isinstance(v, Kernel) else _copy(v))
              for n, v in k.get_params(deep=False).items()}
    return type(k)(**params)


def _copy(v):
    return v.copy() if isinstance(v, np.ndarray) else v


def _bounds(b):
    return "fixed" if isinstance(b, str) and b == "fixed" else tuple(np.ravel(b)[:2].tolist())


def _fixed(b):
    return isinstance(b, str) and b == "fixed"


def _prefixed(h, prefix):
    out = Hyperparameter(prefix + h.name, "fixed" if h.fixed else h.bounds, h.n_elements)
    return out


def _fmt(v):
    if isinstance(v, np.ndarray):
        return np.array2string(v, precision=4, separator=", ")
    if isinstance(v, float):
        return f"{v:.4g}"
    return repr(v)
