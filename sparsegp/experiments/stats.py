"""Significance tests for comparing methods over partitions and data sets.

Seed 004 (§5) compares its basis-vector selection methods with a Wilcoxon signed-rank test on
the partitions of each data set, then, over data sets, Friedman's test on the per-data-set means
followed by the Bonferroni-Dunn post-hoc comparison of one control method with the others
(Demšar, JMLR 2006). The tests themselves are scipy's; this module arranges the results and
adds the post-hoc step, which scipy does not have.
"""
import numpy as np
from scipy import stats

__all__ = ["wilcoxon_pairs", "friedman", "bonferroni_dunn"]


def wilcoxon_pairs(scores, control, alternative="two-sided"):
    """Wilcoxon signed-rank test of ``control`` against every other method, one data set.

    Parameters
    ----------
    scores : dict of str -> array-like of shape (n_partitions,)
        A loss per partition (lower is better); the partitions must be the same, in the same
        order, for every method.
    control : str
        The method every other one is compared with.
    alternative : {"two-sided", "less", "greater"}, default="two-sided"
        "less": the control's loss is smaller.

    Returns
    -------
    dict of str -> dict
        Per other method: ``p_value``, ``median_difference`` (control - other) and ``n``
        (partitions). ``p_value`` is NaN when fewer than two partitions differ: no test exists.
    """
    if control not in scores:
        raise ValueError(f"control {control!r} is not one of the methods {sorted(scores)}")
    base = np.asarray(scores[control], dtype=np.float64)
    out = {}
    for name, values in scores.items():
        if name == control:
            continue
        other = np.asarray(values, dtype=np.float64)
        if other.shape != base.shape:
            raise ValueError(f"method {name!r} has {other.size} partitions, {control!r} has "
                             f"{base.size}: the tests pair them")
        diff = base - other
        p = np.nan
        if np.count_nonzero(diff) >= 2:
            p = float(stats.wilcoxon(base, other, alternative=alternative).pvalue)
        out[name] = dict(p_value=p, median_difference=float(np.median(diff)), n=int(diff.size))
    return out


def _matrix(table):
    methods = list(table)
    values = np.column_stack([np.asarray(table[m], dtype=np.float64) for m in methods])
    if values.ndim != 2 or values.shape[1] < 3:
        raise ValueError(f"Friedman's test needs at least 3 methods; got {len(methods)}")
    if values.shape[0] < 2:
        raise ValueError(f"Friedman's test needs at least 2 data sets; got {values.shape[0]}")
    if not np.all(np.isfinite(values)):
        raise ValueError("the table has NaN or infinite entries: every method needs a mean "
                         "on every data set")
    return methods, values


def friedman(table):
    """Friedman's test over data sets and the methods' average ranks (1 = lowest loss).

    Parameters
    ----------
    table : dict of str -> array-like of shape (n_datasets,)
        Per method its mean loss on each data set, data sets in the same order.

    Returns
    -------
    dict
        ``statistic``, ``p_value`` (scipy's chi-square form), ``average_rank`` (method -> mean
        rank, ties shared) and ``n_datasets``.
    """
    methods, values = _matrix(table)
    res = stats.friedmanchisquare(*values.T)
    ranks = np.apply_along_axis(stats.rankdata, 1, values).mean(axis=0)
    return dict(statistic=float(res.statistic), p_value=float(res.pvalue),
                average_rank=dict(zip(methods, ranks.tolist())), n_datasets=values.shape[0])


def bonferroni_dunn(table, control, alpha=0.05):
    """Bonferroni-Dunn comparison of ``control`` with every other method (Demšar 2006, §3.2.2).

    The average ranks R_j over N data sets and k methods give z = (R_j - R_control) / se with
    se = sqrt(k (k + 1) / (6 N)); the two-sided normal p-value is multiplied by k - 1 for the
    k - 1 comparisons. Two methods differ significantly when their ranks differ by more than
    the critical difference CD = q se, q = Phi^-1(1 - alpha / (2 (k - 1))).

    Parameters
    ----------
    table : dict of str -> array-like of shape (n_datasets,)
        As for :func:`friedman`.
    control : str
    alpha : float, default=0.05

    Returns
    -------
    dict
        ``critical_difference``, ``average_rank`` and ``comparisons``: per other method its
        ``rank_difference`` (other - control; positive = control ranked better), ``z``,
        ``p_value`` (Bonferroni-adjusted, at most 1) and ``significant`` at ``alpha``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1); got {alpha!r}")
    methods, values = _matrix(table)
    if control not in methods:
        raise ValueError(f"control {control!r} is not one of the methods {methods}")
    N, k = values.shape
    ranks = dict(zip(methods, np.apply_along_axis(stats.rankdata, 1, values).mean(axis=0)))
    se = np.sqrt(k * (k + 1) / (6.0 * N))
    cd = float(stats.norm.ppf(1.0 - alpha / (2.0 * (k - 1))) * se)
    comparisons = {}
    for name in methods:
        if name == control:
            continue
        diff = float(ranks[name] - ranks[control])
        z = diff / se
        p = min(1.0, float(2.0 * stats.norm.sf(abs(z)) * (k - 1)))
        comparisons[name] = dict(rank_difference=diff, z=float(z), p_value=p,
                                 significant=bool(abs(diff) > cd))
    return dict(critical_difference=cd, average_rank={m: float(r) for m, r in ranks.items()},
                comparisons=comparisons)
