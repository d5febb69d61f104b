"""Plots for the stagewise classifier of seed 004: curves over the inner loop, method comparison."""
import numpy as np

from ._mpl import get_ax

__all__ = ["plot_stagewise_curves", "plot_method_comparison", "summarize_runs"]


def _curve(estimator, X, y, metric):
    classes = estimator.classes_
    y = np.asarray(y)
    pos = y == classes[1]
    out = []
    for proba in estimator.staged_predict_proba(X):
        if metric == "error":
            pred_pos = proba[:, 1] > proba[:, 0]
            out.append(np.mean(pred_pos != pos))
        else:
            p_true = np.where(pos, proba[:, 1], proba[:, 0])
            out.append(-np.mean(np.log(np.maximum(p_true, 1e-300))))
    return np.asarray(out)


def plot_stagewise_curves(estimator, X, y, X_test=None, y_test=None, metric="error", ax=None,
                          label=None, **plot_kw):
    """Training (and test) error or NLP after each basis vector is added (seed 004, Fig. 2).

    Uses :meth:`StagewiseGPClassifier.staged_predict_proba`, i.e. the kept model's
    hyper-parameters and sites with the first t = 1..d_max basis vectors.

    Parameters
    ----------
    estimator : fitted StagewiseGPClassifier
    X : array-like of shape (n_samples, n_features)
        Training inputs (solid line).
    y : array-like of shape (n_samples,)
    X_test, y_test : array-like, optional
        Test set (dashed line).
    metric : {"error", "nlp"}
        Error rate, or mean negative log predictive probability (nats).
    ax : matplotlib Axes, optional
    label : str, optional
        Legend prefix.
    **plot_kw
        Passed to ``ax.plot`` (e.g. ``color``).

    Returns
    -------
    ax : matplotlib Axes
    """
    if metric not in ("error", "nlp"):
        raise ValueError(f"metric must be 'error' or 'nlp'; got {metric!r}")
    ax = get_ax(ax)
    prefix = f"{label} " if label else ""
    train = _curve(estimator, X, y, metric)
    t = np.arange(1, train.size + 1)
    line, = ax.plot(t, train, linestyle="-", label=f"{prefix}train", **plot_kw)
    if X_test is not None:
        test = _curve(estimator, X_test, y_test, metric)
        kw = dict(plot_kw)
        kw.setdefault("color", line.get_color())
        ax.plot(t, test, linestyle="--", label=f"{prefix}test", **kw)
    ax.set_xlabel("number of basis vectors")
    ax.set_ylabel("error rate" if metric == "error" else "NLP")
    return ax


def summarize_runs(values):
    """Mean and standard error of per-realisation values.

    Parameters
    ----------
    values : dict
        ``values[method][d_max]`` = list of per-realisation numbers.

    Returns
    -------
    dict
        ``summary[method][d_max] = (mean, standard error, count)``; the standard error is
        std(ddof=1)/sqrt(count), 0 for a single realisation.
    """
    out = {}
    for method, by_d in values.items():
        out[method] = {}
        for d, vals in by_d.items():
            v = np.asarray(vals, dtype=float)
            v = v[np.isfinite(v)]
            se = float(np.std(v, ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
            out[method][d] = (float(np.mean(v)) if v.size else np.nan, se, int(v.size))
    return out


def plot_method_comparison(values, ax=None, methods=None, d_values=None, ylabel=None):
    """Grouped bars of mean +- standard error per d_max and method (seed 004, Fig. 3 right).

    Parameters
    ----------
    values : dict
        ``values[method][d_max]`` = list of per-realisation results (test error or NLP).
    ax : matplotlib Axes, optional
    methods : list of str, optional
        Order of the bars within a group (default: the dict order).
    d_values : list, optional
        Order of the groups (default: sorted d_max keys of the first method).
    ylabel : str, optional

    Returns
    -------
    ax : matplotlib Axes
    """
    ax = get_ax(ax, figsize=(6.0, 3.5))
    summary = summarize_runs(values)
    methods = list(values) if methods is None else list(methods)
    if d_values is None:
        d_values = sorted(values[methods[0]], key=float)
    width = 0.8 / max(len(methods), 1)
    greys = np.linspace(0.15, 0.85, max(len(methods), 1))
    x = np.arange(len(d_values))
    for k, method in enumerate(methods):
        stats = [summary[method].get(d, (np.nan, 0.0, 0)) for d in d_values]
        means = [s[0] for s in stats]
        ses = [s[1] for s in stats]
        ax.bar(x + (k - (len(methods) - 1) / 2) * width, means, width, yerr=ses,
               color=str(greys[k]), edgecolor="black", linewidth=0.5, capsize=2,
               label=method)
    ax.set_xticks(x)
    ax.set_xticklabels([str(d) for d in d_values])
    ax.set_xlabel("d_max")
    if ylabel:
        ax.set_ylabel(ylabel)
    # start the axis near the smallest bar so differences stay visible, as in the paper
    finite = [summary[m][d][0] for m in methods for d in d_values
              if d in summary[m] and np.isfinite(summary[m][d][0])]
    if finite:
        lo, hi = min(finite), max(finite)
        pad = 0.15 * (hi - lo if hi > lo else abs(hi) + 1e-3)
        ax.set_ylim(max(0.0, lo - 2 * pad), hi + 2 * pad)
    return ax
