"""Decision contours of fitted 2-D classifiers (seed 000, Figure 1 right)."""
import numpy as np

from ._mpl import get_ax

__all__ = ["plot_decision_contours"]


def plot_decision_contours(estimator, X, y, ax=None, show_inducing=True, initial_inducing=None,
                           levels=(0.1, 0.25, 0.5, 0.75, 0.9), grid_size=150, margin=0.5):
    """Posterior class-probability contours, the data and the pseudo-inputs of a 2-D classifier.

    Works for any fitted binary classifier with ``predict_proba`` and ``classes_``; pseudo-inputs
    are taken from ``inducing_points_`` (GFITC) or, failing that, the rows of X indexed by
    ``active_set_`` (IVM-type models).

    Parameters
    ----------
    estimator : fitted classifier
        ``predict_proba(X)`` returns (n, 2) with columns ordered as ``classes_``.
    X : array-like of shape (n_samples, 2)
        Points to scatter (usually the training inputs); they also set the plotted range.
    y : array-like of shape (n_samples,)
        Their labels (values of ``estimator.classes_``).
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is made when None.
    show_inducing : bool, default=True
        Mark the fitted pseudo-inputs (black dots) or active set (black squares).
    initial_inducing : array-like of shape (M, 2), optional
        Initial pseudo-input locations, drawn as open circles joined to the final ones by thin
        lines when both have M rows.
    levels : sequence of float, default=(0.1, 0.25, 0.5, 0.75, 0.9)
        Probabilities p(y = classes_[1] | x) at which contours are drawn; the 0.5 contour
        (decision boundary) is drawn thicker.
    grid_size : int, default=150
        Points per axis of the evaluation grid.
    margin : float, default=0.5
        Extra space around the data, in units of the larger standard deviation of X.

    Returns
    -------
    ax : matplotlib Axes
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"plot_decision_contours needs 2-D inputs X of shape (n, 2); got "
                         f"shape {X.shape}")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X and y have different lengths: {X.shape[0]} and {y.shape[0]}")
    if not hasattr(estimator, "classes_"):
        raise ValueError("the estimator is not fitted: call fit before plotting")
    classes = estimator.classes_
    if len(classes) != 2:
        raise ValueError(f"plot_decision_contours draws binary classifiers; got "
                         f"{len(classes)} classes")
    ax = get_ax(ax)
    pad = margin * float(np.max(np.std(X, axis=0)))
    lo = X.min(axis=0) - pad
    hi = X.max(axis=0) + pad
    g0 = np.linspace(lo[0], hi[0], grid_size)
    g1 = np.linspace(lo[1], hi[1], grid_size)
    G0, G1 = np.meshgrid(g0, g1)
    grid = np.column_stack([G0.ravel(), G1.ravel()])
    p = estimator.predict_proba(grid)[:, 1].reshape(G0.shape)

    levels = np.sort(np.asarray(levels, dtype=np.float64))
    ax.contourf(G0, G1, p, levels=np.linspace(0.0, 1.0, 21), cmap="RdBu_r", alpha=0.35)
    widths = [2.2 if np.isclose(v, 0.5) else 0.9 for v in levels]
    cs = ax.contour(G0, G1, p, levels=levels, colors="k", linewidths=widths)
    ax.clabel(cs, fmt="%.2g", fontsize=7)

    markers = ("o", "^")
    colours = ("tab:blue", "tab:red")
    for label, m, c in zip(classes, markers, colours):
        sel = y == label
        ax.scatter(X[sel, 0], X[sel, 1], s=10, marker=m, c=c, alpha=0.6, linewidths=0,
                   label=f"class {label}")

    final = None
    if show_inducing:
        if getattr(estimator, "inducing_points_", None) is not None:
            final = np.asarray(estimator.inducing_points_, dtype=np.float64)
            ax.scatter(final[:, 0], final[:, 1], s=45, c="k", marker="o", zorder=5,
                       label="pseudo-inputs")
        elif getattr(estimator, "active_set_", None) is not None:
            # the IVM's are (n_tasks, n_active), one row per one-vs-rest task
            act = X[np.unique(np.asarray(estimator.active_set_, dtype=np.int64))]
            ax.scatter(act[:, 0], act[:, 1], s=45, c="k", marker="s", zorder=5,
                       label="active set")
    if initial_inducing is not None:
        init = np.asarray(initial_inducing, dtype=np.float64).reshape(-1, 2)
        ax.scatter(init[:, 0], init[:, 1], s=45, facecolors="none", edgecolors="k",
                   marker="o", zorder=5, label="initial pseudo-inputs")
        if final is not None and final.shape == init.shape:
            for a, b in zip(init, final):
                ax.plot([a[0], b[0]], [a[1], b[1]], color="k", lw=0.6, ls=":", zorder=4)
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal", adjustable="box")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    return ax
