"""One parameter vector: the named blocks every hyper-parameter search packs into one theta.

A search (:func:`sparsegp._optimize.maximize` or :func:`sparsegp._ascend.ascend`) moves one
flat vector theta. What theta holds is a :class:`Packing`: an ordered list of named
:class:`Block` s, each with its shape, its coordinates (the log of a positive parameter, or the
value itself), its bounds in those coordinates, and whether the search moves it. The usual
order is the kernel's blocks (:func:`kernel_blocks`: log s², then log ℓ, with the kernel's
bounds and "fixed" flags), then a bias, a noise, the inducing inputs, or a per-class stack of
all of these (the multi-class models).

The packing gives, for every estimator alike:

* :meth:`Packing.pack` / :meth:`Packing.unpack` (and :meth:`Packing.pack_natural` /
  :meth:`Packing.natural` from and to positive values): values by name to theta and back; a
  held block keeps its given value and takes no entry of theta; a *shared* block (an
  isotropic kernel's one length-scale standing for D) takes one entry, repeated on unpacking;
* :meth:`Packing.gradient`: the chain rule from the derivatives by the natural values to
  d/d theta (p · d/dp on log blocks, summed over a shared block);
* :meth:`Packing.bounds` (n, 2) for :func:`~sparsegp._optimize.maximize` and
  :func:`~sparsegp._ascend.ascend`, and :meth:`Packing.clip`.

Boxes
    :data:`DEFAULT_BOX` is the one default box of a positive hyper-parameter in natural units.
    :data:`BOX_OVERRIDES` names, in this one place, the estimators whose committed fits were
    made inside another box, each with its reason. They are kept because a box is active in
    the search even when no fit ends on it: restarts are drawn uniformly inside it, and
    L-BFGS-B's projected steps depend on its sides, so a change would move committed numbers.
"""
import math

import numpy as np

__all__ = ["Block", "Packing", "kernel_blocks", "bias_variance_blocks", "kernel_log_bounds",
           "class_stack_bounds",
           "unbounded",
           "bounds_arrays", "cached_packing", "spec_key", "DEFAULT_BOX", "BOX_OVERRIDES",
           "UNBOUNDED", "log_box"]

#: The default box of every positive hyper-parameter (natural units): a kernel object's bounds
#: when the user gives none (``SquaredExponential()``), the same as scikit-learn's kernels'
#: default. Five decades either side of one, in the standardised units the estimators work
#: in, hold every usable variance and length-scale while keeping the factorisations away from
#: the overflow and round-off at the extremes.
DEFAULT_BOX = (1e-5, 1e5)

#: Natural-value box shown on the default SE kernel of estimators that search it without
#: bounds (:data:`sparsegp.kernels.UNBOUNDED`): at log ±690.8 it is wider than any usable
#: value, so passing a fitted ``kernel_`` back in as ``kernel`` searches the same way, restarts
#: included (drawn a factor of ten about the start on its sides, as on infinite ones:
#: :data:`sparsegp._optimize.OPEN_SIDE`).
UNBOUNDED = (1e-300, 1e300)

#: The estimators whose search keeps its own box instead of :data:`DEFAULT_BOX`, and why.
#: Each entry is a natural-value pair; :func:`log_box` gives its log bounds.
BOX_OVERRIDES = {
    # the binary classifiers (EP, GFITC, IVM) and the multi-class models search their default
    # kernel without bounds, as they always have (kernels.kernel_spec, default_bounds=None)
    "default_kernel_unbounded": UNBOUNDED,
    # SparseGPRegressor: σ² and the default kernel in model units; the noise box is a floor
    # for the factorisations (regression._search), and its restarts are drawn inside it
    "regression": (1e-6, 1e6),
    # StagewiseGPClassifier's default covariance, in model units (standardised inputs). With
    # the sites fixed, eq. 4 can keep improving along s2 -> inf (the kernel tends to a
    # polynomial interpolant of the site means): unbounded, the first CG run ended at
    # s2 ~ e^21 on a 60-point set, predictions lost their digits to s2 - |V|^2, and the next
    # inner loop's choices, hence the fit, changed under a relative 1e-9 change of X
    "stagewise": (1e-3, 1e3),
    # IVMClassifier's probit noise variance s_n^2 in a refit with learn_noise (relative to the
    # unit noise the sites were made with). On nearly separable data the approximate
    # likelihood takes it to the lower end, the noise-free probit, whose predictions
    # Phi(mu / sigma) do not depend on the latent scale (ringnorm splits 0-2: the same test
    # NLP to 1e-3 with 1e-2, 1e-4 and 1e-6 here)
    "ivm_noise": (1e-4, 1e4),
    # IVMClassifier's guard of its evidence search for the default SE kernel (notes §2.6): the
    # approximate likelihood's degenerate limits l -> 0 and s2 -> 0 lie outside it. The
    # variance's box, and the length-scale's as factors of the data-scaled start
    "ivm_guard_variance": (1e-2, 1e4),
    "ivm_guard_lengthscale_factor": (0.1, 100.0),
    # the multi-class baselines' L-BFGS-B searches (GFITC, batch VI): every log parameter in
    # [-10, 10], the box of the authors' R code (notes multiclass_ep.md §7.2)
    "multiclass_lbfgs": (math.exp(-10.0), math.exp(10.0)),
}


# how natural() maps each block back (Packing._plan)
_HELD, _SCALAR_LIBM, _SHARED, _LOG, _LOG_LIBM, _IDENTITY = range(6)


def _case(b):
    if not b.free:
        return _HELD
    if b.shared:
        return _SHARED
    if b.log and b.libm:
        return _SCALAR_LIBM if b.size == 1 else _LOG_LIBM
    return _LOG if b.log else _IDENTITY


def _flat(v):
    """``v`` as a flat float64 array (a view when it already is one)."""
    if type(v) is np.ndarray and v.dtype == np.float64:
        return v.reshape(-1)
    return np.asarray(v, dtype=np.float64).reshape(-1)


def _first(v):
    """The first value of a number or an array."""
    if isinstance(v, (float, int, np.floating)):
        return v
    return _flat(v)[0]


def log_box(name):
    """Log bounds ``(low, high)`` of box ``name`` ("default" or a key of
    :data:`BOX_OVERRIDES`); exact where the box is written as logs (multiclass ±10)."""
    if name == "multiclass_lbfgs":
        return -10.0, 10.0
    lo, hi = DEFAULT_BOX if name == "default" else BOX_OVERRIDES[name]
    return math.log(lo), math.log(hi)


def bounds_arrays(bounds, n):
    """(lo, hi) arrays of length n from bounds (n, 2), or (-inf, inf) everywhere for None."""
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    b = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)
    if b.shape[0] != n:
        raise ValueError(f"bounds must have one row per entry of theta ({n}); got {b.shape[0]}")
    return b[:, 0].copy(), b[:, 1].copy()


def unbounded(n):
    """Bounds of ``n`` unbounded coordinates, shape (n, 2) of (-inf, inf) rows."""
    return np.tile([-np.inf, np.inf], (int(n), 1))


class Block:
    """One named block of the parameter vector.

    Parameters
    ----------
    name : str
    shape : int or tuple of int
        Shape of the block's values (what :meth:`Packing.unpack` returns).
    log : bool, default=False
        The vector holds log p of a positive p (the chain rule multiplies by p).
    bounds : None, pair or ndarray of shape (size, 2)
        Bounds in the vector's coordinates (log bounds for a log block); None: unbounded.
    free : bool, default=True
        False: the block is held at ``value`` and takes no entry of theta.
    shared : bool, default=False
        One entry of theta stands for every value of the block (an isotropic kernel's one
        length-scale for D features); its bounds are the first row's.
    value : array-like, optional
        The values in the vector's coordinates, used when held (``free=False``).
    natural_value : array-like, optional
        A held log block's positive values as given, returned by :meth:`Packing.natural`
        as they are (exp of their log may differ in the last bit).
    libm : bool, default=False
        A log block whose logs and exps are the C library's (``math.log``, ``math.exp``),
        one value at a time, rather than NumPy's: the two differ in the last bit for about
        one value in twenty, and the regressor's committed fits took its scalars (s², σ²)
        that way.
    """

    def __init__(self, name, shape, log=False, bounds=None, free=True, shared=False,
                 value=None, natural_value=None, libm=False):
        # only stored here: a packing is built at every evaluation of some searches, so the
        # arrays are formed when asked for (rows, held_value)
        self.name = name
        self.shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(
            int(s) for s in shape)
        self.size = math.prod(self.shape)
        self.log = log
        self.free = free
        self.shared = shared
        self.libm = libm
        self._bounds = bounds
        self.value = value
        self.natural_value = natural_value
        if not free and value is None and natural_value is None:
            raise ValueError(f"block {name!r} is held but has no value")

    def rows(self):
        """Bounds (size, 2) in the vector's coordinates, ±inf where unbounded."""
        if self._bounds is None:
            return unbounded(self.size)
        return np.array(np.broadcast_to(
            np.asarray(self._bounds, dtype=np.float64).reshape(-1, 2), (self.size, 2)))

    def held_value(self, natural=False):
        """A held block's values (shape), in the vector's coordinates or, with ``natural``,
        as positive values (its ``natural_value`` when given, else exp of ``value``)."""
        if natural and self.log and self.natural_value is not None:
            v = self.natural_value
        elif self.value is None:
            v = np.log(np.asarray(self.natural_value, dtype=np.float64))
        else:
            v = self.value
        if isinstance(v, np.ndarray) and v.shape == self.shape and v.dtype == np.float64:
            v = v.copy()
        else:
            v = np.array(np.broadcast_to(np.asarray(v, dtype=np.float64), self.shape))
        if natural and self.log and self.natural_value is None:
            v = np.exp(v)
        return v

    @property
    def n_packed(self):
        """Entries of theta the block takes: 0 held, 1 shared, else its size."""
        if not self.free:
            return 0
        return 1 if self.shared else self.size

    def __repr__(self):
        kind = "log" if self.log else "identity"
        state = "held" if not self.free else ("shared" if self.shared else "free")
        return f"Block({self.name!r}, shape={self.shape}, {kind}, {state})"


class Packing:
    """An ordered list of :class:`Block` s and the one vector theta they pack into.

    Parameters
    ----------
    blocks : sequence of Block
        In the order theta holds them; names must be unique.
    """

    def __init__(self, blocks):
        self.blocks = list(blocks)
        names = [b.name for b in self.blocks]
        if len(set(names)) != len(names):
            raise ValueError(f"block names must be unique; got {names}")
        self.slices = {}
        i = 0
        for b in self.blocks:
            self.slices[b.name] = slice(i, i + b.n_packed)
            i += b.n_packed
        self.size = i
        # the blocks that take entries of theta (written by pack_natural and gradient)
        self._free = [b for b in self.blocks if b.n_packed]
        self._plan = [(b, _case(b), self.slices[b.name].start, self.slices[b.name].stop)
                      for b in self.blocks]

    def __getitem__(self, name):
        for b in self.blocks:
            if b.name == name:
                return b
        raise KeyError(name)

    def pack(self, values):
        """theta (size,) from ``values`` {name: array of the block's shape} in the vector's
        coordinates (logs for log blocks); held blocks are left out, a shared block packs its
        first value."""
        parts = []
        for b in self.blocks:
            if not b.free:
                continue
            v = np.ravel(values[b.name])
            parts.append(v[:1] if b.shared else v)
        return np.concatenate(parts) if parts else np.empty(0)

    def pack_natural(self, values):
        """theta from natural values {name: array or number} (log blocks take the log here).

        Written for speed (searches call it at every evaluation): one output array, filled
        block by block.
        """
        out = np.empty(self.size)
        for b in self._free:
            sl = self.slices[b.name]
            v = values[b.name]
            if b.shared or b.size == 1:
                x = _first(v)
                out[sl] = (math.log(x) if b.libm else np.log(x)) if b.log else x
            else:
                v = _flat(v)
                out[sl] = np.log(v) if b.log else v
        return out

    def unpack(self, theta):
        """{name: array of the block's shape} in the vector's coordinates (new arrays)."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.size,):
            raise ValueError(f"theta must have shape ({self.size},); got {theta.shape}")
        out = {}
        for b in self.blocks:
            if not b.free:
                out[b.name] = b.held_value()
            elif b.shared:
                out[b.name] = np.full(b.shape, theta[self.slices[b.name]][0])
            else:
                out[b.name] = theta[self.slices[b.name]].reshape(b.shape).copy()
        return out

    def natural(self, theta):
        """:meth:`unpack` with log blocks mapped back to their positive values (exp).

        Written for speed (searches call it at every evaluation): each block's case is
        decided once, in the constructor (:attr:`_plan`).
        """
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.size,):
            raise ValueError(f"theta must have shape ({self.size},); got {theta.shape}")
        out = {}
        for b, case, i, j in self._plan:
            if case == _HELD:
                out[b.name] = b.held_value(natural=True)
            elif case == _SCALAR_LIBM:
                out[b.name] = np.array([math.exp(theta[i])])
            elif case == _SHARED:
                x = theta[i]
                out[b.name] = np.full(b.shape, np.exp(x) if b.log else x)
            elif case == _LOG:
                out[b.name] = np.exp(theta[i:j].reshape(b.shape))
            elif case == _LOG_LIBM:
                out[b.name] = np.array([math.exp(x) for x in theta[i:j]]).reshape(b.shape)
            else:
                out[b.name] = theta[i:j].reshape(b.shape).copy()
        return out

    def gradient(self, grads, natural, scale_then_sum=False):
        """d value / d theta from the derivatives by the natural values (the chain rule).

        Parameters
        ----------
        grads : dict {name: array of the block's shape}
            d value / d p for every free block (by the value itself for identity blocks).
        natural : dict {name: array of the block's shape}
            The natural values p (:meth:`natural`), for the log blocks' factor p.
        scale_then_sum : bool, default=False
            For a shared log block: sum_d (p_d · d/dp_d), the regressor's order of the same
            sum, instead of p · sum_d d/dp_d. The two agree to round-off; each estimator
            keeps the order its committed fits were made with.

        Returns
        -------
        ndarray of shape (size,)
            p · d/dp on log blocks, d/dp elsewhere; summed over a shared block.
        """
        out = np.empty(self.size)
        for b in self._free:
            sl = self.slices[b.name]
            g = grads[b.name]
            if not b.log:
                out[sl] = _flat(g).sum() if b.shared else _flat(g)
            elif b.shared and not scale_then_sum:
                # one parameter p standing for every entry: d/dlog p = p · sum_d d/dp_d
                out[sl] = _flat(g).sum() * _first(natural[b.name])
            elif b.shared:
                out[sl] = (_flat(g) * _flat(natural[b.name])).sum()
            else:
                out[sl] = _flat(g) * _flat(natural[b.name])
        return out

    def bounds(self):
        """Bounds (size, 2) of theta, ±inf where unbounded (a shared block: its first row)."""
        rows = []
        for b in self.blocks:
            if not b.free:
                continue
            rows.append(b.rows()[:b.n_packed])
        return np.vstack(rows) if rows else np.empty((0, 2))

    def clip(self, theta):
        """theta clipped into :meth:`bounds` (a new array)."""
        b = self.bounds()
        return np.clip(np.asarray(theta, dtype=np.float64), b[:, 0], b[:, 1])

    def free_mask(self):
        """Which entries of the full vector theta holds: the vector in which every block takes
        its entries, held ones too (one for a shared block), True where the block is free.
        For a search that keeps the held values in place (the stagewise eq. 4's full vector),
        so that this module alone says which entries train."""
        return np.concatenate([np.full(1 if b.shared else b.size, b.free)
                               for b in self.blocks]) if self.blocks else np.empty(0, bool)

    def names(self):
        """One label per entry of theta: the block's name, indexed when it has several."""
        out = []
        for b in self.blocks:
            n = b.n_packed
            out += [b.name] if n == 1 else [f"{b.name}[{j}]" for j in range(n)]
        return out


#: Packings built for a key (:func:`cached_packing`); cleared when it grows past this size.
_CACHE_SIZE = 64
_cache = {}


def spec_key(spec):
    """What a kernel spec's blocks depend on, cheap to compare: its free flags, ARD, variance
    and the identities of its arrays (a block holds them by reference, so a change in place
    is seen; a new array is a new key). None for no spec."""
    if spec is None:
        return None
    term = getattr(spec, "bias_term", None)
    bias = None if term is None else (float(term.constant_value),
                                      str(term.constant_value_bounds))
    return (id(spec), spec.free_variance, spec.free_lengthscale, spec.ard, spec.variance,
            id(spec.lengthscale), id(spec.variance_bounds), id(spec.lengthscale_bounds), bias)


def cached_packing(key, build):
    """The :class:`Packing` ``build()`` makes for ``key``, built once: some searches pack and
    unpack at every evaluation, where building it anew cost more than their sums. ``key``
    must name everything the packing depends on (:func:`spec_key` for a kernel spec); a
    cached packing is never changed."""
    packing = _cache.get(key)
    if packing is None:
        if len(_cache) >= _CACHE_SIZE:
            _cache.clear()
        packing = _cache[key] = build()
    return packing


def kernel_log_bounds(spec, n_features):
    """Free mask and log bounds of a kernel's ``[log s2, log l (1 value, or D with ARD)]``.

    Parameters
    ----------
    spec : sparsegp.kernels.StationarySpec
    n_features : int

    Returns
    -------
    free : ndarray of shape (n,), bool
        True where the kernel does not hold the parameter fixed; n = 1 + (D if ARD else 1).
    bounds : ndarray of shape (n, 2)
        Rows (low, high) of log bounds; ±inf where unbounded or fixed (take ``bounds[free]``
        for the entries a packed theta holds). ``spec.lengthscale_bounds`` may be one pair or
        one row per feature.
    """
    n_ls = n_features if spec.ard else 1
    free = np.array([spec.free_variance] + [spec.free_lengthscale] * n_ls, dtype=bool)
    # one (low, high) pair for every length-scale, or one row per feature when the spec is in
    # model units (sparsegp._scaling.InputScaling.spec_to_model)
    pairs = np.asarray(spec.lengthscale_bounds, dtype=np.float64).reshape(-1, 2)
    rows = pairs[np.minimum(np.arange(n_ls), pairs.shape[0] - 1)]
    bounds = np.vstack([np.reshape(np.asarray(spec.variance_bounds, dtype=np.float64), (1, 2)),
                        rows])
    return free, bounds


def kernel_blocks(spec, n_features, prefix="", libm=False, held=None, bounds=None):
    """The kernel's two blocks, ``log_variance`` (1,) and ``log_lengthscale`` (D,), from
    its spec: log coordinates, the kernel's log bounds, held where the kernel says "fixed"
    (at its values), and the length-scale shared unless the kernel is ARD.

    Parameters
    ----------
    spec : sparsegp.kernels.StationarySpec
    n_features : int
    prefix : str
        Prepended to the block names (per-class stacks).
    libm : bool
        The variance's log and exp by the C library (:class:`Block`).
    held : pair (variance, lengthscale (D,)), optional
        The natural values a fixed block holds, kept as their logs, so that they come back
        through exp (which may differ from them in the last bit): the IVM's searches, which
        hold them at the round's values and whose committed fits were made so. Default: the
        spec's values, returned as given.
    bounds : pair (variance (2,), lengthscale (1 or D, 2)), optional
        Log bounds in place of the kernel's: a search's own box around the data (the IVM's
        guard, :data:`BOX_OVERRIDES`).

    Returns
    -------
    list of Block
    """
    D = int(n_features)
    if held is None:
        v_held = dict(natural_value=spec.variance)
        l_held = dict(natural_value=spec.lengthscale)
    else:
        v_held, l_held = dict(value=np.log(held[0])), dict(value=np.log(held[1]))
    # the spec's log bounds: one (low, high) pair, or one row per feature in model units
    # (sparsegp._scaling.InputScaling.spec_to_model); a shared block reads the first row
    v_box, l_box = (spec.variance_bounds, spec.lengthscale_bounds) if bounds is None else bounds
    return [Block(prefix + "log_variance", 1, log=True, bounds=v_box,
                  free=spec.free_variance, libm=libm, **v_held),
            Block(prefix + "log_lengthscale", D, log=True, bounds=l_box,
                  free=spec.free_lengthscale, shared=not spec.ard, **l_held)]


def bias_variance_blocks(spec, prefix="", held=None):
    """The block of the bias variance v_b, the constant a kernel's ``ConstantKernel`` summands
    add to every covariance entry (``spec.bias_term``): ``log_bias_variance`` (1,), its log
    bounds those of the constant, held at its value when they are "fixed" or v_b = 0 (whose
    log the search cannot move). No block (an empty list) for a kernel without a constant.

    Parameters
    ----------
    spec : sparsegp.kernels.StationarySpec
    prefix : str
        Prepended to the block name (per-class stacks).
    held : float, optional
        The v_b a held block holds, kept as its log (log 0 = -inf for v_b = 0), as
        :func:`kernel_blocks`' ``held``. Default: the constant's value, returned as given.

    Returns
    -------
    list of Block
    """
    term = spec.bias_term
    if term is None:
        return []
    vb = float(term.constant_value)
    bounds = term.constant_value_bounds
    fixed = isinstance(bounds, str) and bounds == "fixed"
    free = not fixed and vb > 0.0
    if held is None:
        value = dict(natural_value=vb)
    else:
        with np.errstate(divide="ignore"):
            value = dict(value=np.log(held))
    return [Block(prefix + "log_bias_variance", 1, log=True,
                  bounds=np.log(np.asarray(bounds, dtype=np.float64)) if free else None,
                  free=free, **value)]


def class_stack_bounds(specs, shape, noise_fixed=False, noise_box=None):
    """Log bounds and held mask of the multi-class models' per-class stack.

    The stack is ``[log s²_c (C), log σ0_c (C), log ℓ_cd (C × D), Z (C × M × D)]``, then
    ``log v_b,c (C)`` when the kernels have a constant summand (``spec.bias_term``). Each
    class's entries take the bounds and "fixed" flags of its kernel's blocks
    (:func:`kernel_blocks`, :func:`bias_variance_blocks`), the latent noise those given for
    it; Z is unbounded.

    Parameters
    ----------
    specs : list of StationarySpec or None
        One per class, in model units; None for the default covariance.
    shape : tuple (C, M, D)
    noise_fixed : bool
        The latent noise is held.
    noise_box : pair of floats or None
        Log bounds of the latent noise.

    Returns
    -------
    log_bounds : tuple of two ndarrays of shape (n,), or None
        (lo, hi), ±inf where unbounded or held; None when nothing is bounded (the default
        covariance without ``noise_box``, searched without bounds as it always was).
    frozen : ndarray of shape (n,), bool
        The entries a "fixed" bound holds.
    """
    C, M, D = shape
    bias = specs is not None and specs[0].bias_term is not None
    n = 2 * C + C * D + C * M * D
    frozen = np.zeros(n + (C if bias else 0), dtype=bool)
    frozen[C:2 * C] = noise_fixed
    if specs is None and noise_box is None:
        return None, frozen
    lo = np.full(frozen.size, -np.inf)
    hi = np.full(frozen.size, np.inf)
    if noise_box is not None:
        lo[C:2 * C], hi[C:2 * C] = noise_box
    for c, spec in enumerate(specs or ()):
        blocks = kernel_blocks(spec, D) + bias_variance_blocks(spec)
        # the variance, the length-scales, v_b: where each class's entries sit in the stack
        places = [slice(c, c + 1), slice(2 * C + c * D, 2 * C + (c + 1) * D),
                  slice(n + c, n + c + 1)]
        for block, at in zip(blocks, places):
            if block.free:
                rows = block.rows()
                lo[at], hi[at] = rows[:, 0], rows[:, 1]
            else:
                frozen[at] = True
    return (lo, hi), frozen
