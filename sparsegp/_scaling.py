"""Defaults that follow the data: the inputs' centre and spread, and the starts built on them.

Every estimator learns in *model units*, ``(X - centre) / scale``, and reports in the user's
units (issue 23 item 1). :class:`InputScaling` holds the centre and scale of the training
inputs and converts between the two: inputs and inducing inputs (affine map), length-scales
and their gradients (divide or multiply by the scale), and a kernel's
:class:`~sparsegp.kernels.StationarySpec` (length-scale and log bounds). The default starts
are then constants in model units:

* length-scale ``LENGTHSCALE_START`` (:func:`start_lengthscale`: grown as
  ``sqrt(D / FLAT_START_FEATURES)`` beyond 21 features, where l = 1 leaves the kernel flat),
  i.e. per feature ``l0 * sd_j`` with ARD and ``l0 * rms_j(sd_j)`` isotropic, in the user's
  units; the multi-class models keep their median heuristic, taken in model units
  (:func:`sparsegp._inducing_base.median_lengthscale`), which on standardised inputs is the
  paper's start unchanged;
* inducing inputs by k-means (or a random subset) on the model-unit rows, i.e. on
  standardised inputs, mapped back to the user's units only for reporting.

Centring comes first, before any kernel arithmetic: ``|a|^2 + |b|^2 - 2 a.b`` on X + 1e9
loses every digit (and overflows in the IVM's ADF), while the centred rows keep them.

Which scale: one per feature for an ARD kernel, so that ``X diag(a) + b`` gives the same
model-unit rows and therefore the same fit (a kernel's box becomes one per feature in model
units); one common scale (the root mean square of the features' standard deviations) for an
isotropic kernel the user gave (kernel or length-scale), whose one length-scale a per-feature
scale would turn into an ARD kernel with fixed ratios.

The *default* covariance may be scaled per feature even when isotropic
(:meth:`InputScaling.wants_per_feature` with ``default=True``): it is then an isotropic kernel
on standardised inputs, the model a ``StandardScaler`` pipeline fits, and the only isotropic
model whose fit does not depend on each column's units (issue 23: per-column scales from 1e-4
to 1e4). Its box is then a box in model units, kept as it is (``spec_to_model(...,
keep_bounds=True)``), and its one length-scale has no single value in the user's units: the
fitted covariance in the user's units (:meth:`InputScaling.kernel_to_user`) has one
length-scale per feature, ``l * scale_j``, with ratios the fit held fixed; its reported
length-scale stays the one model-unit value (:meth:`InputScaling.lengthscale_unit`).
Estimators opt in: the regressor, and the binary classifiers through
``sparsegp.classification._binary._BinaryGPClassifierMixin._input_scaling``.
"""
import copy
import math

import numpy as np

#: The default length-scale start in model units (standardised inputs): the value the
#: binary classifiers always started from, so that on the papers' standardised benchmark sets
#: (spread 1) their start, and therefore their table results, do not change.
LENGTHSCALE_START = 1.0
#: Widest input at which the default start stays :data:`LENGTHSCALE_START`; beyond it the
#: start grows as ``sqrt(D / FLAT_START_FEATURES)``. Two standardised rows are 2 D apart in
#: mean squared distance, so from l = 1 a typical pair's prior correlation is exp(-D): the
#: papers' sets up to 21 features (waveform; ringnorm, twonorm 20) are fitted well from there,
#: but on USPS (256) and MNIST (784) the evidence is flat at the start and GFITC, EP and
#: Stagewise stopped within 3-9 iterations at a constant predictor (MNIST 3 vs 5, 2 000 rows:
#: accuracy 0.538, the majority rate; from the grown start 0.949 / 0.934; USPS 4 vs rest:
#: 0.909 -> 0.989). The grown start keeps a typical pair at waveform's exp(-21).
FLAT_START_FEATURES = 21

#: Rows read to estimate the centre and scale of a row-sliceable store that is not in memory.
MAX_SCALING_ROWS = 10_000


class InputScaling:
    """Centre and scale of the training inputs; conversions between model and user units.

    Model units are ``(X - centre) / scale``. Build it with :meth:`from_data` (or
    :meth:`identity`); it holds plain arrays, so estimators that keep it pickle as before.

    Parameters
    ----------
    centre : ndarray of shape (n_features,)
    scale : ndarray of shape (n_features,)
        Positive; equal entries for a common scale.
    per_feature : bool
        Whether ``scale`` is one value per feature (else one value repeated).

    Attributes
    ----------
    centre, scale : ndarray of shape (n_features,)
    per_feature : bool
    """

    def __init__(self, centre, scale, per_feature):
        self.centre = np.ascontiguousarray(centre, dtype=np.float64)
        self.scale = np.ascontiguousarray(scale, dtype=np.float64)
        self.per_feature = bool(per_feature)

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_data(cls, X, per_feature):
        """Centre and scale from training inputs.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        per_feature : bool
            One scale per feature (its standard deviation), or one common scale, the root
            mean square of the standard deviations. A constant feature gets scale 1 (its
            centred values are all zero whatever the scale); all-constant inputs scale 1.

        Returns
        -------
        InputScaling
        """
        X = np.asarray(X, dtype=np.float64)
        centre = X.mean(axis=0)
        # the spread of the centred rows: X + 1e9 gives the same spread as X
        sd = np.sqrt(np.mean((X - centre) ** 2, axis=0))
        return cls(centre, _scale_from_sd(sd, per_feature), per_feature)

    @classmethod
    def from_rows(cls, X, per_feature, rng=None, n_max=MAX_SCALING_ROWS):
        """:meth:`from_data` on at most ``n_max`` rows of a row-sliceable array-like.

        Only the rows drawn (uniformly without replacement with ``rng``, a private
        ``default_rng(0)`` when None, so the estimator's stream is not shifted) are read;
        all rows when there are no more than ``n_max``.
        """
        from ._inducing_base import take_rows

        N = X.shape[0]
        if N <= n_max:
            rows = take_rows(X, np.arange(N))
        else:
            rng = np.random.default_rng(0) if rng is None else rng
            rows = take_rows(X, np.sort(rng.choice(N, size=n_max, replace=False)))
        return cls.from_data(rows, per_feature)

    @classmethod
    def from_moments(cls, centre, sd, per_feature):
        """From the features' means and standard deviations (e.g. computed by Dask), (D,)."""
        sd = np.asarray(sd, dtype=np.float64)
        return cls(centre, _scale_from_sd(sd, per_feature), per_feature)

    @classmethod
    def identity(cls, n_features):
        """Model units equal to the user's (centre 0, scale 1)."""
        return cls(np.zeros(n_features), np.ones(n_features), False)

    @staticmethod
    def wants_per_feature(spec, default=False):
        """Whether the inputs of a model with covariance ``spec`` are scaled per feature.

        Parameters
        ----------
        spec : StationarySpec
            The covariance (see the module docstring for the rule).
        default : bool
            The covariance is the estimator's default (the user gave neither a kernel nor a
            length-scale) and the estimator standardises its inputs for it.

        Returns
        -------
        bool
            True for an ARD kernel or with ``default``.
        """
        return bool(spec.ard) or bool(default)

    @property
    def n_features(self):
        return self.centre.shape[0]

    # -- inputs ----------------------------------------------------------------------------

    def transform(self, X):
        """Model-unit rows ``(X - centre) / scale``: a new C-contiguous float64 array, (..., D)."""
        return np.ascontiguousarray((np.asarray(X, dtype=np.float64) - self.centre)
                                    / self.scale)

    def centred(self, X):
        """``X - centre`` (translation only, which no stationary kernel sees), a new array."""
        return np.ascontiguousarray(np.asarray(X, dtype=np.float64) - self.centre)

    def inverse_transform(self, Z):
        """User-unit rows ``Z * scale + centre`` of model-unit rows Z, (..., D), a new array."""
        return np.asarray(Z, dtype=np.float64) * self.scale + self.centre

    def rows(self, X):
        """Model units of X: the transformed array for an ndarray, else a lazy view.

        A store that is not in memory (memmap, h5py, zarr) is wrapped in
        :class:`ScaledRows`, which transforms only the rows that are read.
        """
        if isinstance(X, np.ndarray) and not isinstance(X, np.memmap):
            return self.transform(X)
        return ScaledRows(X, self)

    # -- length-scales and gradients -------------------------------------------------------

    def lengthscale_to_model(self, lengthscale):
        """Length-scales (..., D) in model units: divided by the scale."""
        return np.asarray(lengthscale, dtype=np.float64) / self.scale

    def lengthscale_to_user(self, lengthscale):
        """Model-unit length-scales (..., D) in the user's units: times the scale."""
        return np.asarray(lengthscale, dtype=np.float64) * self.scale

    def gradient_to_user(self, gradient):
        """d/d(user-unit length-scale or inducing input) from the model-unit one, (..., D).

        Both are model-unit quantities times the scale, so the chain rule divides by it.
        """
        return np.asarray(gradient, dtype=np.float64) / self.scale

    def start_lengthscale(self, n_classes=None):
        """The default start in model units: :data:`LENGTHSCALE_START`, grown as
        ``sqrt(D / FLAT_START_FEATURES)`` on inputs wider than :data:`FLAT_START_FEATURES`.

        Returns
        -------
        lengthscale : ndarray of shape (D,), or (n_classes, D)
        """
        shape = (self.n_features,) if n_classes is None else (n_classes, self.n_features)
        return np.full(shape, start_lengthscale(self.n_features))

    def lengthscale_unit(self, ard):
        """The units a fitted length-scale is reported in (``lengthscale_``, ``theta_``).

        The user's units (the scale), except for an isotropic kernel on inputs scaled per
        feature (the default covariance, :meth:`wants_per_feature`): its one length-scale
        has no single value in the user's units and is reported in model units, i.e. in
        standard deviations of each feature.

        Parameters
        ----------
        ard : bool
            The kernel's.

        Returns
        -------
        unit : ndarray of shape (D,)
            Reported length-scale = model-unit length-scale * unit; a gradient by it is the
            model-unit gradient / unit.
        """
        if self.per_feature and not ard:
            return np.ones(self.n_features)
        return self.scale.copy()

    def reported_lengthscale(self, spec, lengthscale):
        """Model-unit length-scales in :meth:`lengthscale_unit`, as ``lengthscale_`` reports.

        Parameters
        ----------
        spec : StationarySpec
            As :meth:`spec_to_model` returned it: a length-scale the kernel holds fixed is
            reported as the user gave it (``user_lengthscale``).
        lengthscale : ndarray of shape (D,) or (1,)
            Model units; one value for an isotropic kernel may be given once.

        Returns
        -------
        lengthscale : ndarray of shape (D,)
        """
        if not spec.free_lengthscale and hasattr(spec, "user_lengthscale"):
            return np.array(spec.user_lengthscale, dtype=np.float64)
        ls = np.broadcast_to(np.asarray(lengthscale, dtype=np.float64), (self.n_features,))
        return ls * self.lengthscale_unit(spec.ard)

    def spec_to_model(self, spec, keep_bounds=None):
        """A copy of ``spec`` with its length-scales (and their log bounds) in model units.

        The copy shares ``spec.kernel``, so ``fitted`` still builds the user's kind of kernel;
        call it with user-unit values. Finite log bounds move by ``-log scale`` and become one
        (low, high) row per feature, shape (D, 2) (equal rows for a common scale); with
        ``keep_bounds`` (a default covariance, whose box is meant for model units) they stay
        as they are. None: kept exactly for an isotropic kernel on inputs scaled per feature,
        which only the default covariance is (a per-feature box would not fit its one
        length-scale). The copy keeps the user-unit values as ``user_lengthscale`` (D,), so
        that length-scales the kernel holds fixed are reported as given, not round-tripped
        through the scale (0.7 / s * s = 0.6999999999999998).
        """
        if keep_bounds is None:
            keep_bounds = self.per_feature and not spec.ard
        out = copy.copy(spec)
        out.user_lengthscale = np.array(spec.lengthscale, dtype=np.float64)
        out.lengthscale = self.lengthscale_to_model(spec.lengthscale)
        if (not keep_bounds and spec.free_lengthscale
                and np.any(np.isfinite(spec.lengthscale_bounds))):
            pair = np.asarray(spec.lengthscale_bounds, dtype=np.float64).reshape(2)
            out.lengthscale_bounds = pair[None, :] - np.log(self.scale)[:, None]
        return out

    def kernel_to_user(self, spec, variance, lengthscale):
        """The fitted covariance in the user's units from model-unit length-scales.

        Parameters
        ----------
        spec : StationarySpec
            The covariance fitted, as :meth:`spec_to_model` returned it (its kernel, ARD,
            and the given values of length-scales it holds fixed are read).
        variance : float
        lengthscale : ndarray of shape (D,)
            Model units.

        Returns
        -------
        Kernel
            ``spec.fitted`` at the user-unit length-scales; an isotropic kernel fitted on
            inputs scaled per feature comes back with one length-scale per feature (its
            one model-unit value times each feature's scale), unless those are all equal.
        """
        if spec.free_lengthscale or not hasattr(spec, "user_lengthscale"):
            ls = self.lengthscale_to_user(np.broadcast_to(lengthscale, (self.n_features,)))
        else:
            ls = spec.user_lengthscale
        kernel = spec.fitted(variance, ls)
        if not spec.ard and np.any(ls != ls[0]):
            kernel.lengthscale = ls.copy()
        return kernel


class ScaledRows:
    """Row-sliceable model-unit view of a store that is not in memory (read lazily).

    Indexing with an int, a slice or an index array reads those rows from the store and
    returns them transformed; ``shape``, ``ndim``, ``dtype`` and ``len`` are the store's.

    Parameters
    ----------
    store : array-like of shape (n_samples, n_features)
        Row-sliceable (numpy memmap, h5py or zarr dataset, ...).
    scaling : InputScaling
    """

    def __init__(self, store, scaling):
        self.store = store
        self.scaling = scaling
        self.shape = tuple(store.shape)
        self.ndim = 2
        self.dtype = np.dtype(np.float64)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        from ._inducing_base import take_rows

        if isinstance(key, (int, np.integer)):
            return self.scaling.transform(np.asarray(self.store[int(key)]))
        if isinstance(key, slice):
            return self.scaling.transform(np.asarray(self.store[key]))
        # an index array: take_rows knows the stores' ways of fancy indexing, which want
        # increasing indices; the rows come back in the order asked for
        key = np.asarray(key, dtype=np.int64)
        order = np.argsort(key, kind="stable")
        out = np.empty((key.size, self.shape[1]))
        out[order] = take_rows(self.store, key[order])
        return self.scaling.transform(out)


def start_lengthscale(n_features):
    """The default length-scale start in model units for ``n_features`` input dimensions."""
    return LENGTHSCALE_START * max(1.0, math.sqrt(n_features / FLAT_START_FEATURES))


def data_lengthscale(X, ard):
    """The IVM's data-scaled start: ``sqrt(D)`` times the spread (one or per feature).

    Isotropic: l0 = sqrt(sum_j var(x_j)) (sqrt(D) on standardised inputs), so that the mean
    squared scaled distance between two training rows is about 2 and the prior correlation
    of a typical pair is about exp(-1): neither white noise (l -> 0) nor a constant (l -> inf).
    ARD: l0_j = sqrt(D) sd_j, the same kernel on standardised inputs; constant features get
    sqrt(D) (their length-scale does not matter).

    Parameters
    ----------
    X : ndarray of shape (n, D)
    ard : bool

    Returns
    -------
    lengthscale : ndarray of shape (D,)
    """
    scaling = InputScaling.from_data(X, per_feature=bool(ard))
    return math.sqrt(X.shape[1]) * scaling.scale


def _scale_from_sd(sd, per_feature):
    if per_feature:
        return np.where(sd > 0, sd, 1.0)
    common = float(np.sqrt(np.mean(sd * sd)))
    return np.full(sd.shape, common if common > 0 else 1.0)


def scaling_for(X, spec, default_lengthscale, standardise_default=False):
    """The :class:`InputScaling` of training inputs X for covariance ``spec``.

    With ``default_lengthscale`` (the user gave neither a kernel nor a length-scale) the
    spec's start is set, in the user's units, to :meth:`InputScaling.start_lengthscale`;
    otherwise the user's values stand as given.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    spec : StationarySpec
        Changed in place when ``default_lengthscale``.
    default_lengthscale : bool
    standardise_default : bool
        Scale per feature for the default covariance even when it is isotropic
        (:meth:`InputScaling.wants_per_feature`).

    Returns
    -------
    InputScaling
    """
    per_feature = InputScaling.wants_per_feature(spec, default_lengthscale and standardise_default)
    scaling = InputScaling.from_data(X, per_feature)
    if default_lengthscale:
        spec.lengthscale = scaling.lengthscale_to_user(scaling.start_lengthscale())
    return scaling
