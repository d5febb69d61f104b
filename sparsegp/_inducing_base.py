"""The shared base of the inducing-point estimators.

``InducingPointEstimator`` validates the constructor arguments that ``GFITCClassifier``,
``SparseGPRegressor`` and the three multi-class classifiers share — positive scalars such as
the noise variance, jitter, ``random_state``, the inducing inputs or their number — and draws
the initial inducing inputs. Binary and regression models have one set of
M inducing inputs (M, D) and scalar kernel parameters; the multi-class models have one set per
class (C, M, D) and per-class parameters, chosen by passing ``n_classes``.
"""
import math

import numpy as np

from ._base import SparseGPEstimator
from ._validation import (check_array, check_option, check_size, check_positive,
                          check_random_state, plain)
from .inducing import init_inducing, kmeans


class InducingPointEstimator(SparseGPEstimator):
    """Validation and initialisation shared by the estimators with inducing inputs.

    Subclasses have the constructor arguments ``n_inducing``, ``inducing_points``, ``init``,
    ``jitter`` and ``random_state``.
    """

    #: accepted values of ``init``; subclasses narrow or extend it
    _inits = ("random", "kmeans")
    #: what ``n_inducing="auto"`` asks for, capped by the number of training rows
    _auto_inducing = 50

    # -- scalars ---------------------------------------------------------------------------

    def _check_jitter(self, positive=False):
        """``jitter`` as a float: finite and >= 0, or > 0 when ``positive``."""
        jitter = self.jitter
        if (isinstance(jitter, (bool, np.bool_)) or not np.isscalar(jitter)
                or not math.isfinite(float(jitter)) or float(jitter) < 0):
            raise ValueError(f"jitter must be a non-negative finite number; got {plain(jitter)!r}")
        if positive and float(jitter) == 0.0:
            raise ValueError(f"jitter must be positive (K_uu needs it); got {plain(jitter)!r}")
        return float(jitter)

    def _check_random_state(self):
        """A :class:`numpy.random.Generator` seeded by ``random_state``."""
        return check_random_state(self.random_state)

    def _check_positive_param(self, name, n_classes=None):
        """Constructor argument ``name`` as a positive float, or per class as shape (C,)."""
        value = getattr(self, name)
        if n_classes is None:
            return float(check_positive(value, name, allow_array=False))
        arr = _positive_array(value, name)
        if arr.ndim == 0:
            return np.full(n_classes, float(arr))
        if arr.shape != (n_classes,):
            raise ValueError(f"{name} must be a scalar or have shape ({n_classes},); got "
                             f"{arr.shape}")
        return arr.copy()

    # -- inducing inputs -------------------------------------------------------------------

    def _check_inducing_points(self, n_samples, n_features, n_classes=None):
        """Validate ``inducing_points`` / ``n_inducing`` / ``init`` before any work.

        Returns the given inducing inputs as a new float64 array — (M, D), or (C, M, D) with
        ``n_classes`` (a 2-D array is shared by every class) — or None when they are to be
        drawn by :meth:`_initial_inducing_points`.
        """
        if self.inducing_points is not None:
            if n_classes is None:
                Z = check_array(self.inducing_points, "inducing_points")
                if Z.shape[1] != n_features:
                    raise ValueError(f"inducing_points must have {n_features} columns like X; "
                                     f"got shape {Z.shape}")
            else:
                Z = np.array(self.inducing_points, dtype=np.float64)
                if Z.ndim == 2:
                    Z = np.tile(Z[None], (n_classes, 1, 1))
                if Z.ndim != 3 or Z.shape[0] != n_classes or Z.shape[2] != n_features:
                    raise ValueError(
                        f"inducing_points must have shape (M, {n_features}) or ({n_classes}, "
                        f"M, {n_features}); got {np.shape(self.inducing_points)}")
                if not np.all(np.isfinite(Z)):
                    raise ValueError("inducing_points contains NaN or infinite values")
            if Z.shape[-2] > n_samples:
                raise ValueError(f"inducing_points has {Z.shape[-2]} rows, more than the "
                                 f"{n_samples} training points")
            return np.ascontiguousarray(Z)
        self._n_inducing(n_samples)
        check_option(self.init, "init", self._inits)
        return None

    def _n_inducing(self, n_samples):
        """M: ``n_inducing`` as an int, ``"auto"`` meaning ``_auto_inducing`` capped at N."""
        return check_size(self.n_inducing, "n_inducing", self._auto_inducing, n_samples,
                          "the number of training points")

    def _initial_inducing_points(self, X, rng, y_index=None, n_classes=None):
        """Draw the initial inducing inputs named by ``init`` (after the checks above).

        Without ``n_classes``: (M, D) by :func:`sparsegp.inducing.init_inducing`. With
        ``n_classes`` (multi-class, notes §5.3): for each class, M training rows drawn
        independently (``"random"``), k-means centres started from them over a subsample
        (``"kmeans"``), or M rows of that class (``"subset"``); X may be any row-sliceable
        array-like, of which only the chosen rows are read.
        """
        M = self._n_inducing(X.shape[0])
        if n_classes is None:
            return init_inducing(X, M, self.init, rng)
        N, D = X.shape
        if self.init == "subset":
            counts = np.bincount(y_index, minlength=n_classes)
            if M > counts.min():
                raise ValueError(
                    f"n_inducing={M} is larger than the smallest class's training size "
                    f"({int(counts.min())}) with init='subset'; use init='random' or a smaller "
                    f"n_inducing")
        Z = np.empty((n_classes, M, D))
        for c in range(n_classes):
            pool = np.flatnonzero(y_index == c) if self.init == "subset" else None
            idx = (rng.choice(N, size=M, replace=False) if pool is None
                   else rng.choice(pool, size=M, replace=False))
            Z[c] = take_rows(X, np.sort(idx))
            if self.init == "kmeans":
                sub = np.sort(rng.choice(N, size=min(N, 20 * M + 1000), replace=False))
                Z[c] = kmeans(take_rows(X, sub), Z[c])[0]
        return Z


def _positive_array(value, name):
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be positive numbers; got {plain(value)!r}") from None
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {plain(value)!r}")
    return arr


def median_lengthscale(X, rng=None, n_max=1000):
    """sqrt(median pairwise Euclidean distance) of at most ``n_max`` rows of X (notes §5.3).

    The R code sets the *squared* length-scale to the median distance, hence the square root.
    X may be any row-sliceable array-like; only the sampled rows are read.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    N = X.shape[0]
    idx = np.sort(rng.choice(N, size=min(N, n_max), replace=False))
    Xs = take_rows(X, idx)
    n = Xs.shape[0]
    if n < 2:
        return 1.0
    sq = np.sum(Xs * Xs, axis=1)
    # d2 = (|a|^2 + |b|^2) - 2 a.b, rounded as the one-line expression rounds it, but with
    # fewer (n, n) temporaries: at n = 1000 each is 8 MB of fresh pages, and this heuristic
    # was 30-40 ms of a 0.1 s multi-class fit (bench_threads mc_gfitc)
    d2 = (2.0 * Xs) @ Xs.T             # the product of the textbook line (gemm, not syrk)
    np.subtract(np.add.outer(sq, sq), d2, out=d2)
    np.maximum(d2, 0.0, out=d2)
    d2 = d2[np.triu(np.ones((n, n), dtype=bool), k=1)]
    # the median of the distances without taking n^2 / 2 square roots: sqrt is monotone, so
    # the middle order statistics of d2 are the squares of the distances' (bit for bit the
    # np.median of the square roots, the mean of the middle two when their count is even)
    half = d2.size // 2
    if d2.size % 2:
        med = math.sqrt(np.partition(d2, half)[half])
    else:
        med = float(np.mean(np.sqrt(np.partition(d2, (half - 1, half))[half - 1:half + 1])))
    return math.sqrt(med) if med > 0 else 1.0


def take_rows(X, idx, name="X"):
    """Rows ``idx`` (sorted increasing) of a row-sliceable array-like as a new float64 array.

    A contiguous run is read as one slice; otherwise fancy indexing is tried, then zarr's
    ``oindex``, then one slice per row. NaN/inf raise ``ValueError``.
    """
    idx = np.asarray(idx, dtype=np.int64)
    if idx.size and idx[-1] - idx[0] + 1 == idx.size and np.all(np.diff(idx) == 1):
        block = X[int(idx[0]):int(idx[-1]) + 1]
    else:
        try:
            block = X[idx]
        except (TypeError, IndexError, ValueError):
            if hasattr(X, "oindex"):
                block = X.oindex[idx, :]
            else:
                block = np.stack([np.asarray(X[int(j)]) for j in idx])
    out = np.array(block, dtype=np.float64, order="C", copy=True)
    if out.ndim == 1:
        out = out.reshape(1, -1)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} contains NaN or infinite values (in rows {idx[:5].tolist()}...)")
    return out
