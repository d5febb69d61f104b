"""sparsegp.metrics against hand-computed values and brute-force recomputation."""
import math

import numpy as np
import pytest

from sparsegp.metrics import (
    PROBA_FLOOR,
    brier_score,
    error_rate,
    mean_nlp,
    rejection_curve,
)


def test_error_rate_by_hand():
    assert error_rate([1, -1, 1, 1], [1, 1, 1, -1]) == 0.5
    assert error_rate(np.array(["a", "b", "c"]), ["a", "b", "b"]) == pytest.approx(1 / 3)
    assert error_rate([0, 1, 2], [0, 1, 2]) == 0.0
    assert error_rate(np.array([[1], [2]]), [2, 2]) == 0.5     # column vector accepted


@pytest.mark.parametrize("y, p, match", [
    ([1, 2], [1, 2, 3], "same length"),
    ([[1, 2], [3, 4]], [1, 2], "1-D"),
    ([], [], "empty"),
    ([1.0, np.nan], [1.0, 1.0], "NaN"),
])
def test_error_rate_errors(y, p, match):
    with pytest.raises(ValueError, match=match):
        error_rate(y, p)


def test_mean_nlp_by_hand_multiclass_and_binary():
    y = [2, 0, 1]
    P = [[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [0.3, 0.6, 0.1]]
    expected = -(math.log(0.7) + math.log(0.5) + math.log(0.6)) / 3
    assert mean_nlp(y, P) == pytest.approx(expected, rel=1e-14)
    # Columns follow `classes`: permuting both changes nothing.
    perm = [2, 0, 1]
    assert mean_nlp(y, np.asarray(P)[:, perm], classes=np.array([0, 1, 2])[perm]) == \
        pytest.approx(expected, rel=1e-14)
    # Binary: a 1-D P(y = classes[1]) equals the two-column form; labels of any type.
    yb = np.array([-1, 1, 1, -1])
    p = np.array([0.2, 0.9, 0.4, 0.5])
    expected = -(math.log(0.8) + math.log(0.9) + math.log(0.4) + math.log(0.5)) / 4
    assert mean_nlp(yb, p) == pytest.approx(expected, rel=1e-14)
    assert mean_nlp(yb, np.column_stack([1 - p, p])) == pytest.approx(expected, rel=1e-14)
    assert mean_nlp(np.where(yb > 0, "pos", "neg"), p) == pytest.approx(expected, rel=1e-14)
    # natural log, not log2: one point at p = 1/e costs exactly one nat
    assert mean_nlp([0, 1], [[1 / math.e, 1 - 1 / math.e], [0.0, 1.0]]) == pytest.approx(0.5)


def test_mean_nlp_floor_keeps_it_finite():
    val = mean_nlp([0, 1], [[0.0, 1.0], [0.0, 1.0]])
    assert val == pytest.approx(-math.log(PROBA_FLOOR) / 2)
    assert np.isfinite(val)
    assert mean_nlp([0, 1], [[1.0, 0.0], [0.0, 1.0]]) == 0.0


def test_brier_score_by_hand():
    y = [2, 0, 1]
    P = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [0.3, 0.6, 0.1]])
    by_hand = ((0.01 + 0.04 + 0.09) + (0.25 + 0.0625 + 0.0625) + (0.09 + 0.16 + 0.01)) / 3
    assert brier_score(y, P) == pytest.approx(by_hand, rel=1e-14)
    assert brier_score(y, np.eye(3)[[2, 0, 1]]) == 0.0
    assert brier_score(y, np.eye(3)[[0, 1, 2]]) == 2.0
    yb = [0, 1, 1]
    p = np.array([0.2, 0.9, 0.4])
    assert brier_score(yb, p) == pytest.approx((0.04 + 0.01 + 0.36) / 3, rel=1e-14)
    # the two-column form counts each binary error twice (documented)
    assert brier_score(yb, np.column_stack([1 - p, p])) == pytest.approx(2 * (0.41 / 3))


def test_classes_argument_when_test_labels_miss_a_class():
    P = np.array([[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]])
    with pytest.raises(ValueError, match="pass classes="):
        mean_nlp([0, 1], P)
    assert mean_nlp([0, 1], P, classes=[0, 1, 2]) == pytest.approx(
        -(math.log(0.2) + math.log(0.3)) / 2)
    assert brier_score(["b"], [[0.25, 0.75]], classes=["a", "b"]) == pytest.approx(0.125)


@pytest.mark.parametrize("func", [mean_nlp, brier_score,
                                  lambda y, p, classes=None: rejection_curve(p, y, classes)])
@pytest.mark.parametrize("y, P, classes, match", [
    ([0, 1], [[0.5, 0.5]], None, "1 rows but y_true has 2"),
    ([0, 1], [[1.2, -0.2], [0.5, 0.5]], None, r"lie in \[0, 1\]"),
    ([0, 1], [1.5, 0.5], None, r"lie in \[0, 1\]"),
    ([0, 1], [[0.5, 0.6], [0.5, 0.5]], None, "sum to 1"),
    ([0, 1], [[np.nan, 0.5], [0.5, 0.5]], None, "NaN"),
    ([0, 3], [[0.5, 0.5], [0.5, 0.5]], [0, 1], r"label\(s\) \[3\] not in classes"),
    ([0, 1], [[0.5, 0.5], [0.5, 0.5]], [0, 1, 2], "classes has 3 entries"),
    ([0, 1], [[0.5, 0.5], [0.5, 0.5]], [1, 1], "duplicates"),
    ([0, 1], [0.5, 0.5], [0, 1, 2], "1-D proba is binary"),
    ([0, 1, 2], [0.5, 0.5, 0.2], None, "1-D binary"),
    ([0, 1], [[[0.5, 0.5]], [[0.5, 0.5]]], None, r"shape \(n, C\) or \(n,\)"),
    ([1, 2], [[0.5, 0.5], [0.5, 0.5]], ["a", "b"], "not in classes"),
])
def test_probability_input_errors(func, y, P, classes, match):
    with pytest.raises(ValueError, match=match):
        func(y, P, classes=classes)


def test_small_rounding_is_tolerated():
    P = np.array([[0.3, 0.7 + 1e-9], [1.0 + 1e-9, -1e-9]])
    assert np.isfinite(mean_nlp([1, 0], P))


def test_rejection_curve_by_hand():
    p = [0.9, 0.6, 0.4, 0.1]
    y = [1, -1, 1, -1]
    # predictions +1, +1, -1, -1: points 1 and 2 are wrong; |p - 1/2| = .4, .1, .1, .4, so
    # the stable order rejects point 1, then 2, then 0.
    frac, err = rejection_curve(p, y)
    np.testing.assert_allclose(frac, [0.0, 0.25, 0.5, 0.75])
    np.testing.assert_allclose(err, [0.5, 1 / 3, 0.0, 0.0])
    frac2, err2 = rejection_curve(np.column_stack([1 - np.array(p), p]), y)
    np.testing.assert_allclose(frac2, frac)
    np.testing.assert_allclose(err2, err)


def test_rejection_curve_against_brute_force(rng):
    n = 57
    p = rng.uniform(size=n)
    y = np.where(rng.uniform(size=n) < p, 1, -1)
    y[0], y[1] = 1, -1                                # both classes present
    frac, err = rejection_curve(p, y)
    pred = np.where(p > 0.5, 1, -1)
    assert err[0] == error_rate(y, pred)              # fraction 0 = plain error
    for k in range(n):
        keep = np.argsort(np.abs(p - 0.5), kind="stable")[k:]
        assert frac[k] == k / n
        assert err[k] == pytest.approx(np.mean(pred[keep] != y[keep]), abs=1e-15)
    # Confident points of a calibrated model are right more often: the curve ends lower.
    assert err[-n // 4:].mean() < err[0]
    fs, es = rejection_curve(p, y, n_points=5)
    np.testing.assert_allclose(fs, frac[[0, 14, 28, 42, 56]])
    np.testing.assert_allclose(es, err[[0, 14, 28, 42, 56]])
    with pytest.raises(ValueError, match="n_points"):
        rejection_curve(p, y, n_points=1)


def test_rejection_curve_multiclass_uses_max_probability(rng):
    P = rng.dirichlet(np.ones(3), size=40)
    y = rng.integers(0, 3, 40)
    y[:3] = [0, 1, 2]
    frac, err = rejection_curve(P, y)
    conf = P.max(axis=1)
    wrong = P.argmax(axis=1) != y
    for k in (0, 10, 39):
        keep = np.argsort(conf, kind="stable")[k:]
        assert err[k] == pytest.approx(wrong[keep].mean())
