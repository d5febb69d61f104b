"""Input checks shared by every estimator; each raises ``ValueError`` naming the argument."""
import numbers
import warnings

import numpy as np


def check_array(X, name="X", ndim=2, allow_empty=False):
    """Return ``X`` as a new C-contiguous float64 array after checking shape and finiteness.

    A copy is always made so that no estimator can modify what the user passed in.
    """
    try:
        arr = np.array(X, dtype=np.float64, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric array-like; got {type(X).__name__}: {exc}")
    if ndim == 2 and arr.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D of shape (n_samples, n_features); got a 1-D array of shape "
            f"{arr.shape}. Reshape with X.reshape(-1, 1) for a single feature."
        )
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; got shape {arr.shape}")
    if not allow_empty and arr.shape[0] == 0:
        raise ValueError(f"{name} has no rows; at least one sample is required")
    if ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"{name} has no columns; at least one feature is required")
    if not np.all(np.isfinite(arr)):
        bad = int(np.sum(~np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); remove or impute them")
    return arr


def check_binary_labels(y):
    """Map two arbitrary labels to -1/+1. Returns ``(classes, y_pm)``; ``classes[1]`` is +1."""
    classes, _ = check_classes(y)
    if classes.size > 2:
        raise ValueError(
            f"Only binary classification is supported: this classifier needs exactly 2 "
            f"classes; got {classes.size}: {classes.tolist()[:10]} (the multi-class "
            f"classifiers are MultiClassEPClassifier, MultiClassGFITCClassifier, "
            f"MultiClassSVGPClassifier and IVMClassifier)"
        )
    y_pm = np.where(y == classes[1], 1.0, -1.0)
    return classes, y_pm


def check_classes(y, min_classes=2):
    """Return ``(classes, y_index)`` for labels of any type, with ``y_index`` in 0..C-1."""
    classes, y_index = np.unique(y, return_inverse=True)
    if classes.size < min_classes:
        raise ValueError(
            f"classification requires at least {min_classes} classes in y; got "
            f"{classes.size} class{'' if classes.size == 1 else 'es'} ({classes.tolist()})"
        )
    return classes, y_index.astype(np.int64)


def check_positive(value, name, allow_array=True):
    """A positive finite scalar (or array of them) as float64."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim > 1 or (arr.ndim == 1 and not allow_array):
        raise ValueError(f"{name} must be a positive scalar; got shape {arr.shape}")
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {plain(value)!r}")
    return arr.copy() if arr.ndim else float(arr)


def check_int(value, name, minimum=None, maximum=None):
    """An integer within ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {plain(value)!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}; got {value}")
    return value


def check_tol(value, name="tol"):
    """A stopping tolerance: None (a fixed schedule) or a finite number >= 0, as float."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) \
            or not np.isfinite(float(value)) or float(value) < 0.0:
        raise ValueError(f"{name} must be None or a finite number >= 0; got {value!r}")
    return float(value)


def check_size(value, name, auto, largest, why):
    """A size in ``[1, largest]``; ``"auto"`` is ``auto`` capped at ``largest``.

    Parameters
    ----------
    value : int or "auto"
    name : str
        The argument's name, for the message.
    auto : int
        What ``"auto"`` asks for on a large data set.
    largest : int
        The largest size this data allows.
    why : str
        What ``largest`` is, for the message (e.g. "the number of training points").
    """
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"{name} must be a positive integer or 'auto'; got {plain(value)!r}")
        return max(1, min(int(auto), int(largest)))
    value = check_int(value, name, minimum=1)
    if value > largest:
        raise ValueError(f"{name} must be <= {why} ({largest}); got {value}")
    return value


def check_option(value, name, options):
    """``value`` must be one of ``options``."""
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}; got {plain(value)!r}")
    return value


#: The one vocabulary of ``optimizer`` (issue 48): each name is one method wherever it is
#: accepted, and None holds every hyper-parameter and inducing input at its start. Which
#: names each estimator takes, and its default, is README's table "optimizer and max_iter".
OPTIMIZERS = {
    "lbfgs": "scipy's L-BFGS-B within the kernel's bounds",
    "cg": "scipy's nonlinear conjugate gradients (the objective clipped into the bounds)",
    "sign": "the sign-adaptive step of the multi-class EP/SEP in batch mode",
    "adam": "ADAM steps over minibatches",
    "grid": "a grid about the start scored by held-out NLP (the IVM's seed 003 search)",
    "auto": "the estimator's own choice by its mode or by its kernel",
}


def check_optimizer(value, valid, renamed=None):
    """``optimizer`` as a name of :data:`OPTIMIZERS` that the estimator takes, or None.

    Parameters
    ----------
    value : str or None
        The estimator's ``optimizer`` argument.
    valid : tuple of str
        The names the estimator takes (None is always taken).
    renamed : dict of str to str, optional
        Old spellings the estimator took before the vocabulary was one, each mapped to its
        name now; accepted for one release with a ``FutureWarning``.

    Returns
    -------
    str or None
        The name in the vocabulary.

    Raises
    ------
    ValueError
        Naming the argument and the names this estimator takes.
    """
    if value is None:
        return None
    if isinstance(value, str) and renamed and value in renamed:
        new = renamed[value]
        warnings.warn(f"optimizer={value!r} is now spelt optimizer={new!r}; the old spelling "
                      f"is accepted in this release only", FutureWarning, stacklevel=3)
        return new
    if not isinstance(value, str) or value not in valid:
        names = ", ".join(repr(v) for v in valid)
        raise ValueError(f"optimizer must be one of {names} or None; got {plain(value)!r}")
    return value


def check_random_state(random_state):
    """A ``numpy.random.Generator`` from None, an int, or a Generator."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise ValueError(f"random_state must be None, an int or a numpy Generator; got {random_state!r}")


def plain(value):
    """``value`` as a plain Python object for a message: a NumPy scalar becomes its Python
    equivalent, so that ``f"{plain(c)!r}"`` reads ``1`` and not ``np.int64(1)`` (NumPy 2's
    repr); anything else is returned as is."""
    return value.item() if isinstance(value, np.generic) else value
