"""Training data: the labels' check, row-sliceable inputs and their minibatches (notes
multiclass_ep.md §5.2).

Minibatch training reads X a minibatch at a time from anything with a ``shape`` and row
slicing (numpy memmap, h5py/zarr datasets), in sorted index order.
"""
import math

import numpy as np

from ..._validation import check_classes


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


def is_lazy_store(X):
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
