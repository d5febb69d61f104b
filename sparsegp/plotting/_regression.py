"""1-D regression plots: predictive mean ± 2σ with the data and the inducing inputs."""
import numpy as np

from ._mpl import get_ax

__all__ = ["plot_regression_1d"]


def plot_regression_1d(estimator, X, y, ax=None, X_plot=None, n_points=300, augment=False,
                       include_noise=False, show_inducing=True, title=None):
    """Plot a fitted 1-D regressor: mean ± 2 standard deviations, training data, inducing inputs.

    Parameters
    ----------
    estimator : SparseGPRegressor
        Fitted on one input dimension.
    X : array-like of shape (N, 1)
        Training inputs (dots).
    y : array-like of shape (N,)
        Training targets.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when None.
    X_plot : array-like of shape (T, 1), optional
        Where to evaluate the prediction; default ``n_points`` points spanning the data range
        plus 10% on each side.
    n_points : int, default=300
    augment : bool, default=False
        Passed to ``estimator.predict`` (ASoR/ADTC for ``"sor"``, ``"dtc"``, ``"vfe"``).
    include_noise : bool, default=False
        Band for noisy targets y* (adds ``noise_variance_``) instead of the latent f*.
    show_inducing : bool, default=True
        Crosses at the inducing inputs: at the target of the training point they coincide
        with (seed 001, Figure 5), otherwise along the bottom of the axes.
    title : str, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    X = np.asarray(X, dtype=np.float64).reshape(len(X), -1)
    y = np.asarray(y, dtype=np.float64).ravel()
    if X.shape[1] != 1:
        raise ValueError(f"plot_regression_1d needs one input dimension; got X of shape {X.shape}")
    if X_plot is None:
        lo, hi = float(X.min()), float(X.max())
        pad = 0.1 * (hi - lo if hi > lo else 1.0)
        X_plot = np.linspace(lo - pad, hi + pad, int(n_points))[:, None]
    X_plot = np.asarray(X_plot, dtype=np.float64).reshape(-1, 1)
    mean, std = estimator.predict(X_plot, return_std=True, augment=augment)
    if include_noise:
        std = np.sqrt(std ** 2 + estimator.noise_variance_)
    ax = get_ax(ax)
    xs = X_plot[:, 0]
    ax.plot(X[:, 0], y, ".", color="0.55", ms=4, label="data", zorder=1)
    ax.plot(xs, mean, "-", color="C0", lw=1.6, label="mean", zorder=3)
    ax.plot(xs, mean + 2 * std, ":", color="C0", lw=1.3, label="± 2σ", zorder=3)
    ax.plot(xs, mean - 2 * std, ":", color="C0", lw=1.3, zorder=3)
    Z = getattr(estimator, "inducing_points_", None)
    if show_inducing and Z is not None:
        z = np.asarray(Z)[:, 0]
        match = np.abs(X[:, 0][None, :] - z[:, None]) <= 1e-12 * max(1.0, np.abs(z).max())
        on_data = match.any(axis=1)
        if np.any(on_data):
            ax.plot(z[on_data], y[np.argmax(match[on_data], axis=1)], "x", color="C3", ms=8,
                    mew=2, label="inducing", zorder=4)
        if np.any(~on_data):
            ax.plot(z[~on_data], np.full((~on_data).sum(), 0.0), "x", color="C3", ms=8, mew=2,
                    transform=ax.get_xaxis_transform(),
                    label=None if np.any(on_data) else "inducing", zorder=4, clip_on=False)
    if title is not None:
        ax.set_title(title)
    return ax
