"""Figures for the multi-class classifiers of seed 002 (decision regions, NLL-vs-time traces)."""
import numpy as np

from ._mpl import get_ax, readable_log_axis

__all__ = ["class_regions", "plot_class_regions", "plot_multiclass_boundaries",
           "plot_metric_vs_time", "plot_probability_comparison"]

_COLOURS = ("tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple", "tab:brown",
            "tab:pink", "tab:gray", "tab:olive", "tab:cyan")


def class_regions(estimator, X, resolution=150):
    """The predicted class on a grid over the bounding box of ``X`` (5 % padding).

    Parameters
    ----------
    estimator : fitted multi-class classifier
        Needs ``predict_proba``.
    X : ndarray of shape (n_samples, 2)
        The points the grid is to cover (the training inputs).
    resolution : int, default=150
        Grid points per axis.

    Returns
    -------
    labels : ndarray of int, shape (resolution, resolution)
        Index into ``estimator.classes_`` of the most probable class; row i is the i-th value
        of the second coordinate, column j the j-th of the first, as in :func:`numpy.meshgrid`.
    """
    X = _check_2d(X)
    g0, g1 = _grid(X, resolution)
    proba = estimator.predict_proba(np.c_[g0.ravel(), g1.ravel()])
    return np.argmax(proba, axis=1).reshape(g0.shape)


def plot_class_regions(labels, X, y, classes, inducing_points=None, ax=None, title=None,
                       point_size=6):
    """Training points, decision boundaries and inducing inputs, from precomputed regions.

    The drawing half of :func:`plot_multiclass_boundaries`, for figures redrawn from stored
    results without the fitted estimator.

    Parameters
    ----------
    labels : ndarray of int, shape (resolution, resolution)
        :func:`class_regions` of the estimator over the same ``X``.
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
    classes : ndarray of shape (n_classes,)
        The estimator's ``classes_`` (colours follow their order).
    inducing_points : ndarray of shape (n_classes, M, 2), optional
        Drawn as black-edged markers in each class's colour.
    ax : matplotlib Axes, optional
    title : str, optional
    point_size : float, default=6

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = get_ax(ax)
    X = _check_2d(X)
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[0] != labels.shape[1]:
        raise ValueError(f"labels must be a square grid (resolution, resolution); "
                         f"got shape {labels.shape}")
    classes = np.asarray(classes)
    g0, g1 = _grid(X, labels.shape[0])
    for k, c in enumerate(classes):
        sel = np.asarray(y) == c
        ax.scatter(X[sel, 0], X[sel, 1], s=point_size, color=_COLOURS[k % len(_COLOURS)],
                   alpha=0.5, linewidths=0)
    ax.contour(g0, g1, labels, levels=np.arange(classes.size) + 0.5, colors="k",
               linewidths=1.2)
    if inducing_points is not None:
        Z = np.asarray(inducing_points)
        for k in range(Z.shape[0]):
            ax.scatter(Z[k, :, 0], Z[k, :, 1], s=30, color=_COLOURS[k % len(_COLOURS)],
                       edgecolors="k", linewidths=1.2, zorder=3)
    ax.set_xlim(g0[0, 0], g0[0, -1])
    ax.set_ylim(g1[0, 0], g1[-1, 0])
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_multiclass_boundaries(estimator, X, y, ax=None, show_inducing=True, resolution=150,
                               title=None, point_size=6):
    """Training points, decision boundaries and inducing inputs of a fitted 2-D classifier.

    Parameters
    ----------
    estimator : fitted multi-class classifier
        Needs ``predict_proba``, ``classes_`` and, for ``show_inducing``,
        ``inducing_points_`` of shape (C, M, 2).
    X : ndarray of shape (n_samples, 2)
    y : ndarray of shape (n_samples,)
    ax : matplotlib Axes, optional
    show_inducing : bool, default=True
        Draw every class's inducing inputs as black-edged markers in the class colour.
    resolution : int, default=150
        Grid points per axis for the boundaries (argmax of the predictive class probabilities).
    title : str, optional
    point_size : float, default=6

    Returns
    -------
    ax : matplotlib Axes
    """
    Z = getattr(estimator, "inducing_points_", None) if show_inducing else None
    return plot_class_regions(class_regions(estimator, X, resolution), X, y,
                              estimator.classes_, inducing_points=Z, ax=ax, title=title,
                              point_size=point_size)


def _check_2d(X):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"X must have shape (n_samples, 2); got {X.shape}")
    return X


def _grid(X, resolution):
    pad = 0.05 * (X.max(0) - X.min(0))
    lo, hi = X.min(0) - pad, X.max(0) + pad
    return np.meshgrid(np.linspace(lo[0], hi[0], resolution),
                       np.linspace(lo[1], hi[1], resolution))


def plot_metric_vs_time(traces, ax=None, ylabel="test NLL", logx=True, title=None):
    """Curves of a test metric against training time, one per method.

    Parameters
    ----------
    traces : dict
        ``{name: (times, values)}`` with 1-D arrays of equal length (seconds, metric).
    ax : matplotlib Axes, optional
    ylabel : str, default="test NLL"
    logx : bool, default=True
        Logarithmic time axis, as in the paper's Figures 4-5.
    title : str, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = get_ax(ax)
    for k, (name, (t, v)) in enumerate(traces.items()):
        t = np.asarray(t, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        if t.shape != v.shape:
            raise ValueError(f"trace {name!r}: times {t.shape} and values {v.shape} differ")
        ax.plot(t, v, label=name, color=_COLOURS[k % len(_COLOURS)], lw=1.5)
    if logx:
        ax.set_xscale("log")
        readable_log_axis(ax.xaxis)  # default labels collide on ranges of a decade or two
    ax.set_xlabel("training time (s)")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_probability_comparison(proba_a, proba_b, names=("A", "B"), ax=None, title=None,
                                point_size=4):
    """Predictive class probabilities of two models against each other, one colour per class.

    Points on the diagonal are rows where the two models agree; the legend gives, per class,
    the largest absolute difference.

    Parameters
    ----------
    proba_a, proba_b : array-like of shape (n_samples, C)
        ``predict_proba`` of the two models on the same rows, columns in the same order.
    names : (str, str), default=("A", "B")
        Axis labels.
    ax : matplotlib Axes, optional
    title : str, optional
    point_size : float, default=4

    Returns
    -------
    ax : matplotlib Axes
    """
    Pa = np.asarray(proba_a, dtype=np.float64)
    Pb = np.asarray(proba_b, dtype=np.float64)
    if Pa.ndim != 2 or Pa.shape != Pb.shape:
        raise ValueError(f"proba_a and proba_b must be 2-D of one shape; got {Pa.shape} and "
                         f"{Pb.shape}")
    ax = get_ax(ax)
    ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, zorder=0)
    for k in range(Pa.shape[1]):
        gap = float(np.max(np.abs(Pa[:, k] - Pb[:, k])))
        ax.scatter(Pa[:, k], Pb[:, k], s=point_size, color=_COLOURS[k % len(_COLOURS)],
                   alpha=0.6, linewidths=0, label=f"class {k}: max |diff| {gap:.3f}")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal")
    ax.set_xlabel(f"{names[0]} p(y = c | x)")
    ax.set_ylabel(f"{names[1]} p(y = c | x)")
    ax.legend(fontsize=7, markerscale=3)
    if title:
        ax.set_title(title, fontsize=9)
    return ax
