"""Curves over a data set or a sweep: rejection curves (seed 003 Fig. 1) and learning curves
(seed 000 Fig. 1, left)."""
import numpy as np

from ._mpl import get_ax, readable_log_axis

__all__ = ["plot_rejection_curve", "plot_learning_curves"]


def plot_rejection_curve(y, proba, ax=None, label=None, classes=None, max_fraction=None,
                         log_scale=True, **plot_kwargs):
    """Test error against the fraction of rejected (least confident) test points.

    Points are rejected in order of increasing |P(y = classes[1]) - 1/2| (binary) or
    max_k P_k (multi-class), as computed by :func:`sparsegp.metrics.rejection_curve`. For a
    classifier without probabilities (an SVM) pass any increasing map of its discriminant
    into [0, 1] with 0 -> 1/2, e.g. ``1 / (1 + exp(-s))``.

    Parameters
    ----------
    y : array-like of shape (n,)
        True labels.
    proba : array-like of shape (n,) or (n, n_classes)
        P(y = classes[1]) or the full probability matrix (columns ordered as ``classes``).
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is made when None.
    label : str, optional
        Legend label of the curve.
    classes : array-like, optional
        Label of each column of ``proba``; default the sorted unique labels of ``y``.
    max_fraction : float, optional
        Largest rejected fraction shown (seed 003 Fig. 1 stops at 0.2).
    log_scale : bool, default=True
        Logarithmic error axis, as in the paper. Zero error rates are not drawn on it.
    **plot_kwargs
        Passed to ``ax.plot`` (e.g. ``linestyle="--"``).

    Returns
    -------
    ax : matplotlib Axes
    """
    from ..metrics import rejection_curve

    frac, err = rejection_curve(proba, y, classes=classes)
    if max_fraction is not None:
        keep = frac <= max_fraction
        frac, err = frac[keep], err[keep]
    ax = get_ax(ax)
    if log_scale:
        # log axis: zero errors (all remaining points correct) cannot be drawn
        err = np.where(err > 0, err, np.nan)
        ax.set_yscale("log")
        readable_log_axis(ax.yaxis)
    ax.plot(frac, err, label=label, **plot_kwargs)
    ax.set_xlabel("rejected fraction")
    ax.set_ylabel("error rate")
    if label is not None:
        ax.legend()
    return ax


def plot_learning_curves(n_train, curves, ax=None, ylabel="active set size for error < 15%",
                         **plot_kwargs):
    """Mean (and standard error over draws) of a quantity against the training-set size.

    Parameters
    ----------
    n_train : array-like of shape (n_sizes,)
        Training-set sizes N (x axis).
    curves : dict of str -> array-like of shape (n_draws, n_sizes) or (n_sizes,)
        One curve per label; rows are independent draws (NaN entries, e.g. "never reached",
        are left out of that size's mean). Error bars show the standard error of the mean.
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is made when None.
    ylabel : str
        y-axis label.
    **plot_kwargs
        Passed to every ``ax.errorbar`` call.

    Returns
    -------
    ax : matplotlib Axes
    """
    n_train = np.asarray(n_train, dtype=float)
    ax = get_ax(ax)
    markers = "osd^v<>"
    for t, (label, values) in enumerate(curves.items()):
        v = np.atleast_2d(np.asarray(values, dtype=float))
        if v.shape[1] != n_train.size:
            raise ValueError(
                f"curve {label!r} has {v.shape[1]} sizes but n_train has {n_train.size}"
            )
        count = np.sum(np.isfinite(v), axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nansum(v, axis=0) / count
            sq = np.nansum((v - mean) ** 2, axis=0)
            sem = np.where(count > 1, np.sqrt(sq / np.maximum(count - 1, 1) / count), 0.0)
        kw = dict(marker=markers[t % len(markers)], capsize=3)
        kw.update(plot_kwargs)
        ax.errorbar(n_train, mean, yerr=sem, label=label, **kw)
    ax.set_xlabel("number of training points N")
    ax.set_ylabel(ylabel)
    ax.legend()
    return ax
