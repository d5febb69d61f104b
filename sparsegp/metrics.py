"""Test-set scores used in the papers' tables: error rate, mean NLP, Brier score, rejection curve.

Probabilities come either as a matrix ``proba`` of shape (n, C) whose columns follow
``classes`` (as ``predict_proba`` returns them, ordered like the estimator's ``classes_``), or,
for binary problems, as a vector of P(y = classes[1]). When ``classes`` is omitted it is the
sorted unique values of ``y_true``; pass it explicitly whenever the test labels might not
contain every class.
"""
import numpy as np

from ._validation import plain

__all__ = ["error_rate", "mean_nlp", "brier_score", "rejection_curve", "class_indices",
           "PROBA_FLOOR", "ROW_SUM_TOL"]

#: Probabilities are floored at this value before the log in :func:`mean_nlp`, so a single
#: confidently wrong prediction costs at most -log(1e-300) ~= 690.8 nats instead of inf.
PROBA_FLOOR = 1e-300

#: Largest accepted |sum_k proba[i, k] - 1| (and distance outside [0, 1]) before a row is
#: called invalid; values within it are clipped to [0, 1].
ROW_SUM_TOL = 1e-6


def error_rate(y_true, y_pred):
    """Fraction of misclassified points.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels (any comparable type).
    y_pred : array_like of shape (n,)
        Predicted labels.

    Returns
    -------
    float
        mean(y_true != y_pred), in [0, 1].

    Examples
    --------
    >>> error_rate([1, -1, 1, 1], [1, 1, 1, -1])
    0.5
    """
    y_true = _as_labels(y_true, "y_true")
    y_pred = _as_labels(y_pred, "y_pred")
    if y_pred.shape != y_true.shape:
        raise ValueError(
            f"y_true and y_pred must have the same length; got {y_true.shape[0]} and "
            f"{y_pred.shape[0]}"
        )
    return float(np.mean(y_true != y_pred))


def mean_nlp(y_true, proba, classes=None):
    """Mean negative log predictive probability of the true labels (natural log, nats).

    nlp = -(1/n) sum_i log max(p_i(y_i), PROBA_FLOOR): the "NLP"/"NLL" of the papers'
    tables. The floor (1e-300) keeps the score finite when a predicted probability underflows
    to zero; it caps one point's contribution at about 690.8 nats.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels; each must be one of ``classes``.
    proba : array_like of shape (n, C) or (n,)
        Predictive probabilities with columns ordered as ``classes``; rows must lie in [0, 1]
        and sum to 1 (within ``ROW_SUM_TOL``). A 1-D array means a binary problem and holds
        P(y = classes[1]).
    classes : array_like of shape (C,), optional
        Label of each column; default: the sorted unique values of ``y_true``.

    Returns
    -------
    float
        Mean NLP in nats (>= 0).

    Examples
    --------
    >>> round(mean_nlp([0, 1], [[0.5, 0.5], [0.2, 0.8]]), 6)   # -(log .5 + log .8) / 2
    0.458145
    """
    P, idx = _check_proba(y_true, proba, classes)
    p_true = P[np.arange(idx.shape[0]), idx]
    # "+ 0.0" turns the -0.0 of perfect predictions into 0.0
    return float(-np.mean(np.log(np.maximum(p_true, PROBA_FLOOR)))) + 0.0


def brier_score(y_true, proba, classes=None):
    """Mean squared distance between predictive probabilities and the observed outcome.

    * ``proba`` of shape (n, C) (any C >= 2, binary included): Brier's original multi-class
      score (1/n) sum_i sum_k (P_ik - [y_i = classes[k]])^2, in [0, 2].
    * ``proba`` of shape (n,) (binary, P(y = classes[1])): the usual binary score
      (1/n) sum_i (p_i - [y_i = classes[1]])^2, in [0, 1]. This is HALF the value of the
      two-column form of the same predictions, because both columns' errors are equal.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels; each must be one of ``classes``.
    proba : array_like of shape (n, C) or (n,)
        As in :func:`mean_nlp`.
    classes : array_like of shape (C,), optional
        Label of each column; default: the sorted unique values of ``y_true``.

    Returns
    -------
    float

    Examples
    --------
    >>> brier_score([0, 1], [[1.0, 0.0], [0.5, 0.5]])   # (0 + 0.25 + 0.25) / 2
    0.25
    >>> brier_score([0, 1], [0.0, 0.5])                 # (0 + 0.25) / 2
    0.125
    """
    P, idx = _check_proba(y_true, proba, classes)
    n = idx.shape[0]
    if np.ndim(proba) == 1:
        return float(np.mean((P[:, 1] - (idx == 1)) ** 2))
    onehot = np.zeros_like(P)
    onehot[np.arange(n), idx] = 1.0
    return float(np.mean(np.sum((P - onehot) ** 2, axis=1)))


def rejection_curve(proba, y_true, classes=None, n_points=None):
    """Error rate on the points kept after rejecting the least confident ones (IVM, Figure 1).

    Points are rejected in order of increasing confidence max_k P_ik, which for a binary
    problem is increasing |P(y = classes[1]) - 1/2| (most uncertain first); ties keep the
    input order (stable sort). The prediction of each point is the argmax of its row (for a
    1-D ``proba``: classes[1] iff p > 1/2), so at rejected fraction 0 the value is the plain
    test error. Rejecting k points leaves n - k; the curve stops at k = n - 1.

    Only the ordering of |p - 1/2| matters, so a classifier without probabilities (the SVM of
    seed 003, Figure 1, rejected by the size of its discriminant |s|) is handled by passing
    ``1 / (1 + exp(-s))`` (or any increasing map of s into [0, 1] with s = 0 -> 1/2).

    Parameters
    ----------
    proba : array_like of shape (n,) or (n, C)
        Predictive probabilities, as in :func:`mean_nlp` (1-D: binary P(y = classes[1])).
    y_true : array_like of shape (n,)
        True labels.
    classes : array_like of shape (C,), optional
        Label of each column; default: the sorted unique values of ``y_true``.
    n_points : int, optional
        Number of points of the returned curve, evenly spaced in k from 0 to n - 1 (rounded,
        duplicates dropped). Default: every k = 0, ..., n - 1.

    Returns
    -------
    rejected_fraction : ndarray of shape (n_points,)
        k / n, increasing from 0.
    error_rate : ndarray of shape (n_points,)
        Error rate on the n - k retained points.
    """
    P, idx = _check_proba(y_true, proba, classes)
    n = idx.shape[0]
    if np.ndim(proba) == 1:
        p = P[:, 1]
        confidence = np.abs(p - 0.5)
        pred = (p > 0.5).astype(np.int64)
    else:
        confidence = P.max(axis=1)
        pred = P.argmax(axis=1)
    order = np.argsort(confidence, kind="stable")
    wrong = (pred != idx)[order].astype(np.float64)
    # errors left after rejecting the first k points of the order, k = 0..n-1
    remaining = wrong.sum() - np.concatenate([[0.0], np.cumsum(wrong)[:-1]])
    k = np.arange(n)
    if n_points is not None:
        if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) \
                or n_points < 2:
            raise ValueError(f"n_points must be an integer >= 2 or None; got {plain(n_points)!r}")
        k = np.unique(np.round(np.linspace(0, n - 1, int(n_points))).astype(np.int64))
    return k / n, remaining[k] / (n - k)


def _as_labels(y, name):
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D of shape (n_samples,); got shape {y.shape}")
    if y.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return y


def _check_proba(y_true, proba, classes):
    """Validate and return ``(P, idx)``: P (n, C) float64 in [0, 1], idx (n,) column of y_i."""
    y_true = _as_labels(y_true, "y_true")
    n = y_true.shape[0]
    try:
        P = np.array(proba, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"proba must be a numeric array; got {type(proba).__name__}: {exc}")
    if P.ndim not in (1, 2):
        raise ValueError(f"proba must have shape (n, C) or (n,); got shape {P.shape}")
    if P.shape[0] != n:
        raise ValueError(f"proba has {P.shape[0]} rows but y_true has {n} labels")
    if not np.all(np.isfinite(P)):
        raise ValueError("proba contains NaN or infinite values")
    n_cols = 2 if P.ndim == 1 else P.shape[1]

    if classes is None:
        classes = np.unique(y_true)
        if classes.shape[0] != n_cols:
            raise ValueError(
                f"proba has {n_cols} class column(s) ({'1-D binary' if P.ndim == 1 else 'C'}) "
                f"but y_true contains {classes.shape[0]} distinct label(s) "
                f"{classes.tolist()[:10]}; pass classes= (e.g. the estimator's classes_) to "
                f"say which label each column belongs to"
            )
    else:
        classes = np.asarray(classes)
        if classes.ndim != 1:
            raise ValueError(f"classes must be 1-D; got shape {classes.shape}")
        if np.unique(classes).shape[0] != classes.shape[0]:
            raise ValueError(f"classes contains duplicates: {classes.tolist()}")
        if classes.shape[0] != n_cols:
            raise ValueError(
                f"classes has {classes.shape[0]} entries but proba has {n_cols} class "
                f"column(s)" + (" (a 1-D proba is binary: 2 classes)" if P.ndim == 1 else "")
            )
    if n_cols < 2:
        raise ValueError(f"proba must have at least 2 class columns; got {n_cols}")

    lo, hi = P.min(), P.max()
    if lo < -ROW_SUM_TOL or hi > 1.0 + ROW_SUM_TOL:
        raise ValueError(
            f"proba must lie in [0, 1]; got values in [{lo:.6g}, {hi:.6g}] (pass "
            f"probabilities, not latent values or log-probabilities)"
        )
    P = np.clip(P, 0.0, 1.0)
    if P.ndim == 1:
        P = np.column_stack([1.0 - P, P])
    else:
        err = np.abs(P.sum(axis=1) - 1.0)
        if err.max() > ROW_SUM_TOL:
            i = int(err.argmax())
            raise ValueError(
                f"rows of proba must sum to 1 (tolerance {ROW_SUM_TOL:g}); row {i} sums to "
                f"{P[i].sum():.8g} ({int(np.sum(err > ROW_SUM_TOL))} bad row(s))"
            )

    return P, class_indices(y_true, classes)


def class_indices(y_true, classes):
    """Column of ``classes`` holding each label of ``y_true``, int64 of shape (n,).

    Raises
    ------
    ValueError
        When a label is not in ``classes`` or cannot be compared with them.
    """
    y_true, classes = np.asarray(y_true), np.asarray(classes)
    sorter = np.argsort(classes, kind="stable")
    try:
        pos = np.searchsorted(classes, y_true, sorter=sorter)
    except TypeError:
        raise ValueError(
            f"y_true (dtype {y_true.dtype}) cannot be compared with classes (dtype "
            f"{classes.dtype}): the labels are not in classes {classes.tolist()[:10]}"
        ) from None
    pos = np.minimum(pos, classes.shape[0] - 1)
    idx = sorter[pos]
    unknown = classes[idx] != y_true
    if np.any(unknown):
        raise ValueError(
            f"y_true has label(s) {np.unique(y_true[unknown]).tolist()[:10]} not in classes "
            f"{classes.tolist()[:10]}"
        )
    return idx.astype(np.int64)
