"""Significance tests of sparsegp.experiments.stats against values worked out by hand and the
constants of Demšar (JMLR 2006), which seed 004 follows."""
import math

import numpy as np
import pytest

from sparsegp.experiments.stats import bonferroni_dunn, friedman, wilcoxon_pairs


def test_wilcoxon_all_partitions_favour_control_gives_the_exact_extreme_p():
    control = np.arange(10) * 0.01
    other = control + 0.1 + np.arange(10) * 0.003          # ten distinct positive gaps
    res = wilcoxon_pairs({"a": control, "b": other, "c": control}, "a")
    # exact null distribution: all 2^10 sign patterns; the observed one is an extreme of two
    assert res["b"]["p_value"] == pytest.approx(2.0 / 2 ** 10, rel=1e-12)
    assert res["b"]["median_difference"] == pytest.approx(-(0.1 + 4.5 * 0.003))
    assert math.isnan(res["c"]["p_value"])                 # identical: no test
    one_sided = wilcoxon_pairs({"a": control, "b": other}, "a", alternative="less")
    assert one_sided["b"]["p_value"] == pytest.approx(1.0 / 2 ** 10, rel=1e-12)
    with pytest.raises(ValueError, match="pair"):
        wilcoxon_pairs({"a": control, "b": other[:5]}, "a")
    with pytest.raises(ValueError, match="control 'z'"):
        wilcoxon_pairs({"a": control}, "z")


def test_friedman_consistent_order_matches_the_closed_form():
    # three data sets, the same order of three methods on each: ranks 1, 2, 3
    table = {"best": [0.1, 0.2, 0.3], "mid": [0.2, 0.3, 0.4], "worst": [0.3, 0.4, 0.5]}
    res = friedman(table)
    # chi2_F = 12 N / (k (k + 1)) sum R_j^2 - 3 N (k + 1) = 3 * 14 - 36 = 6; df 2: p = e^-3
    assert res["statistic"] == pytest.approx(6.0)
    assert res["p_value"] == pytest.approx(math.exp(-3.0), rel=1e-12)
    assert res["average_rank"] == {"best": 1.0, "mid": 2.0, "worst": 3.0}
    with pytest.raises(ValueError, match="at least 3 methods"):
        friedman({"a": [1, 2], "b": [2, 3]})
    with pytest.raises(ValueError, match="NaN"):
        friedman({"a": [1, np.nan], "b": [2, 3], "c": [3, 4]})


def test_bonferroni_dunn_critical_difference_is_demsars():
    # Demšar 2006, Table 5(b): q_0.05 = 2.394 for k = 4; his example has N = 14 data sets
    rng = np.random.default_rng(0)
    table = {m: rng.uniform(size=14) for m in "abcd"}
    res = bonferroni_dunn(table, "a")
    assert res["critical_difference"] == pytest.approx(2.394 * math.sqrt(4 * 5 / (6 * 14)),
                                                       abs=2e-3)
    # a control ranked first everywhere against one ranked last everywhere: the largest gap
    ordered = {"ctl": np.zeros(14), "x": np.ones(14), "y": 2 * np.ones(14), "z": 3 * np.ones(14)}
    res = bonferroni_dunn(ordered, "ctl")
    se = math.sqrt(4 * 5 / (6 * 14))
    assert res["comparisons"]["z"]["rank_difference"] == 3.0
    assert res["comparisons"]["z"]["z"] == pytest.approx(3.0 / se)
    assert res["comparisons"]["z"]["significant"] and not res["comparisons"]["x"]["significant"]
    # one rank apart: z = 1 / se = 2.049, two-sided p 0.0404, times 3 comparisons
    assert res["comparisons"]["x"]["p_value"] == pytest.approx(3 * math.erfc(1 / se / math.sqrt(2)))
    close = bonferroni_dunn({"ctl": [0, 1, 0], "x": [1, 0, 1], "y": [2, 2, 2]}, "ctl")
    assert close["comparisons"]["x"]["p_value"] == 1.0        # capped after the adjustment
    with pytest.raises(ValueError, match="alpha"):
        bonferroni_dunn(ordered, "ctl", alpha=1.5)
