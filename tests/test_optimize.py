"""The training driver (sparsegp._optimize): restarts, failures, the cap, ADAM, fixed fits."""
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

from sparsegp import EPClassifier, GFITCClassifier, SparseGPRegressor
from sparsegp._ascend import Adam, SignAdaptiveStep, ascend
from sparsegp import _optimize
from sparsegp._optimize import (
    FAILED_OBJECTIVE,
    OPEN_SIDE,
    RESTART_HALF_WIDTH,
    STOP_RISES,
    maximize,
    restart_points,
)
from sparsegp.datasets import make_regression_1d, make_xor
from sparsegp.exceptions import ConvergenceWarning
from sparsegp.kernels import UNBOUNDED, SquaredExponential


def _quadratic(centre, curvature=1.0):
    """value -c/2 |theta - centre|^2, its gradient, and an evaluation counter as state."""

    def evaluate(theta, state):
        d = theta - centre
        return -0.5 * curvature * d @ d, -curvature * d, (state or 0) + 1

    return evaluate


def test_sparsegp_convergence_warning_is_sklearns():
    assert issubclass(ConvergenceWarning, SklearnConvergenceWarning)


def test_restarts_are_drawn_inside_the_bounds():
    rng = np.random.default_rng(0)
    theta0 = np.array([0.0, 1.0, 5.0, -2.0])
    bounds = np.array([[-3.0, 2.0], [0.5, 1.5], [-np.inf, np.inf], [-np.inf, 4.0]])
    starts = restart_points(theta0, bounds, 200, rng)
    assert np.array_equal(starts[0], theta0)
    S = np.array(starts[1:])
    assert np.all(S[:, 0] >= -3.0) and np.all(S[:, 0] <= 2.0)
    assert np.all(S[:, 1] >= 0.5) and np.all(S[:, 1] <= 1.5)
    # an infinite side is theta0 -/+ a factor of ten
    assert np.all(np.abs(S[:, 2] - 5.0) <= RESTART_HALF_WIDTH)
    assert np.all(S[:, 3] >= -2.0 - RESTART_HALF_WIDTH) and np.all(S[:, 3] <= 4.0)
    # the draws fill the finite box, not a neighbourhood of theta0
    assert S[:, 0].min() < -2.5 and S[:, 0].max() > 1.5


def test_restarts_on_unbounded_sides_are_drawn_as_on_infinite_ones():
    # UNBOUNDED's log box, shifted as a model-unit spec shifts it (minus the log of an input
    # scale, here 1e3 and 1e-3), is drawn as the open box: same generator, same starts
    theta0 = np.array([0.0, -1.5, 2.0])
    log_box = np.log(UNBOUNDED)
    shifted = np.vstack([log_box, log_box - np.log(1e3), log_box - np.log(1e-3)])
    assert np.all(np.abs(shifted - theta0[:, None]) > OPEN_SIDE)
    open_box = np.tile([-np.inf, np.inf], (3, 1))
    a = restart_points(theta0, shifted, 50, np.random.default_rng(3))
    b = restart_points(theta0, open_box, 50, np.random.default_rng(3))
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert np.all(np.abs(np.array(a) - theta0) <= RESTART_HALF_WIDTH)
    # a side within reach still bounds the draws: an upper side 1e50 above the start
    near = np.array([[-np.inf, np.log(1e50)]] * 3)
    S = np.array(restart_points(np.zeros(3), near, 400, np.random.default_rng(4))[1:])
    assert S.max() > 100.0 and S.min() >= -RESTART_HALF_WIDTH


def test_restart_mask_and_hook():
    theta0 = np.array([0.0, 7.0, 7.0])
    mask = np.array([True, False, False])

    def hook(theta, rng):
        theta[2] = -1.0
        return theta

    starts = restart_points(theta0, None, 3, np.random.default_rng(1), mask, hook)
    assert all(s[1] == 7.0 and s[2] == -1.0 for s in starts[1:])
    assert starts[0][2] == 7.0


@pytest.mark.parametrize("method", ["lbfgs", "cg"])
def test_restarts_reproducible_with_random_state(method):
    centre = np.array([1.0, -2.0])

    def run(random_state):
        seen = []

        def evaluate(theta, state):
            seen.append(theta.copy())
            return _quadratic(centre)(theta, state)

        res = maximize(evaluate, np.zeros(2), method=method,
                       bounds=np.array([[-5.0, 5.0], [-5.0, 5.0]]), max_iter=50, n_restarts=3,
                       random_state=random_state)
        return res, np.array(seen)

    a, seen_a = run(4)
    b, seen_b = run(np.random.default_rng(4))
    _, seen_c = run(5)
    np.testing.assert_array_equal(seen_a, seen_b)
    np.testing.assert_array_equal(a.theta, b.theta)
    assert seen_a.shape != seen_c.shape or not np.array_equal(seen_a, seen_c)
    np.testing.assert_allclose(a.theta, centre, atol=1e-5)
    assert a.converged and len(a.start_values) == 4


@pytest.mark.parametrize("method", ["lbfgs", "cg"])
def test_bounds_hold_for_both_methods(method):
    # the optimum (3) lies outside the box: both end on its face, CG by clipping
    res = maximize(_quadratic(np.array([3.0])), np.array([0.0]), method=method,
                   bounds=np.array([[-1.0, 1.0]]), max_iter=50, warn_at_cap=False)
    assert res.theta[0] == pytest.approx(1.0)
    assert -1.0 <= res.theta[0] <= 1.0


@pytest.mark.parametrize("method", ["lbfgs", "cg"])
@pytest.mark.parametrize("failure", ["raise", "nan"])
def test_failed_points_are_backed_away_from(method, failure):
    """One policy: a raising or non-finite evaluation is a failed point; the result is the
    best point that evaluated, never a failed one."""
    centre = np.array([3.0, -1.0])
    seen = []

    def evaluate(theta, state):
        seen.append(theta.copy())
        if theta[0] > 2.0:
            if failure == "raise":
                raise np.linalg.LinAlgError("not positive definite")
            return np.nan, np.zeros(2), None
        d = theta - centre
        return -np.sum(d ** 2), -2.0 * d, None

    res = maximize(evaluate, np.zeros(2), method=method, max_iter=40, warn_at_cap=False)
    assert np.isfinite(res.value) and res.theta[0] <= 2.0
    assert any(t[0] > 2.0 for t in seen)              # it did meet failed points
    assert res.value == pytest.approx(-np.sum((res.theta - centre) ** 2))


@pytest.mark.parametrize("method", ["lbfgs", "cg"])
def test_warm_run_reuses_the_start_only_when_asked(method):
    # the state counts the evaluations of the warm chain; scipy's first call is at the start
    calls = {}

    def run(reuse):
        seen = []

        def evaluate(theta, state):
            seen.append(theta.copy())
            return _quadratic(np.array([1.0, -2.0]))(theta, state)

        res = maximize(evaluate, np.zeros(2), method=method, max_iter=10, warm=True,
                       reuse_start=reuse, warn_at_cap=False)
        calls[reuse] = seen
        return res

    plain, reused = run(False), run(True)
    assert np.array_equal(calls[False][0], calls[False][1])      # the start, twice
    assert not np.array_equal(calls[True][0], calls[True][1])
    assert len(calls[True]) == len(calls[False]) - 1
    assert reused.n_evals == plain.n_evals - 1
    assert reused.state == plain.state - 1
    np.testing.assert_allclose(reused.theta, plain.theta, rtol=0, atol=1e-12)


def test_every_point_failing_gives_minus_inf():
    def evaluate(theta, state):
        raise FloatingPointError("overflow")

    res = maximize(evaluate, np.zeros(2), method="lbfgs", max_iter=5, warn_at_cap=False)
    assert res.value == -np.inf and not res.converged
    assert FAILED_OBJECTIVE > 1e299


def test_ascend_backs_off_after_a_failure():
    """The stepping loop returns to the last good point and halves the step."""
    calls = []

    def evaluate(theta, batch):
        calls.append(theta.copy())
        if len(calls) == 3:
            raise np.linalg.LinAlgError("one bad point")
        return -float(theta @ theta), -2.0 * theta, None

    adam = Adam(2, learning_rate=0.1)
    failures = []
    res = ascend(evaluate, np.array([1.0, -1.0]), adam, 5,
                 on_failure=lambda n: failures.append(n))
    assert res.n_failures == 1 and failures == [1] and not res.stopped
    np.testing.assert_array_equal(calls[3], calls[1])   # back at the last good point
    assert adam.learning_rate == pytest.approx(0.05)
    assert res.n_iter == 5 and len(res.history) == 5


def test_ascend_gives_up_with_a_warning():
    def evaluate(theta, batch):
        return np.nan, theta, None

    with pytest.warns(ConvergenceWarning, match="in a row failed"):
        res = ascend(evaluate, np.zeros(1), Adam(1), 10, max_failures=3, label="test")
    assert res.stopped and res.n_failures == 4


def test_warning_at_the_cap_names_estimator_cap_and_advice():
    X, y = make_xor(60, random_state=0)
    with pytest.warns(ConvergenceWarning,
                      match=r"EPClassifier: the CG optimiser stopped at max_iter=2 .*"
                            r"increase max_iter"):
        EPClassifier(optimizer="cg", max_iter=2, random_state=0).fit(X, y)


def test_no_warning_when_the_optimiser_converges():
    res = maximize(_quadratic(np.array([0.5, 0.5])), np.zeros(2), method="lbfgs",
                   max_iter=100)
    assert res.converged and res.n_iter < 100


def test_optimizer_none_leaves_theta_unchanged():
    X, y = make_regression_1d(80, random_state=0)
    kw = dict(n_inducing=6, kernel=SquaredExponential(1.3, 0.7), noise_variance=0.2,
              random_state=0)
    fixed = SparseGPRegressor("fitc", optimizer=None, **kw).fit(X, y)
    off = SparseGPRegressor("fitc", max_iter=0, **kw).fit(X, y)
    assert fixed.n_iter_ == 0
    assert fixed.lengthscale_ == 0.7 and fixed.variance_ == pytest.approx(1.3 * y.var())
    assert fixed.log_marginal_likelihood_ == off.log_marginal_likelihood_
    np.testing.assert_array_equal(fixed.inducing_points_, off.inducing_points_)

    Xc, yc = make_xor(60, random_state=1)
    for cls, extra in ((EPClassifier, {}), (GFITCClassifier, dict(n_inducing=4))):
        a = cls(optimizer=None, kernel=SquaredExponential(1.5, 0.8), bias=0.1, random_state=0,
                **extra).fit(Xc, yc)
        b = cls(max_iter=0, kernel=SquaredExponential(1.5, 0.8), bias=0.1, random_state=0,
                **extra).fit(Xc, yc)
        assert (a.lengthscale_, a.variance_, a.bias_, a.n_iter_) == (0.8, 1.5, 0.1, 0)
        assert a.log_evidence_ == b.log_evidence_


def test_adam_ascends_a_quadratic():
    centre = np.array([2.0, -3.0, 0.5])
    theta = np.zeros(3)
    adam = Adam(3, learning_rate=0.05)
    for _ in range(2000):
        theta = adam.step(theta, -(theta - centre))
    np.testing.assert_allclose(theta, centre, atol=1e-3)


def test_adam_matches_the_textbook_update_and_freezes_scale_zero():
    rng = np.random.default_rng(3)
    theta = rng.normal(size=4)
    grads = rng.normal(size=(5, 4))
    scale = np.array([1.0, 0.5, 0.0, 2.0])
    adam = Adam(4, learning_rate=0.01)
    m = np.zeros(4)
    v = np.zeros(4)
    ref = theta.copy()
    out = theta.copy()
    for t, g in enumerate(grads, start=1):
        out = adam.step(out, g, scale)
        gs = g * scale
        m = 0.9 * m + 0.1 * gs
        v = 0.999 * v + 0.001 * gs * gs
        phi = np.where(scale > 0, ref / np.where(scale > 0, scale, 1.0), 0.0)
        phi = phi + 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        ref = np.where(scale > 0, phi * scale, ref)
    np.testing.assert_allclose(out, ref, rtol=1e-13, atol=1e-15)
    assert out[2] == theta[2]


def _sign_rule_by_hand(theta, grads, pooled):
    """Appendix G's rates written out scalar by scalar; ``pooled`` scalars test their previous
    sign against the sign of the pooled scalars' summed gradient (the R code's length-scales)."""
    rate = np.full(theta.size, 0.01)
    prev = None
    for g in grads:
        if prev is not None:
            for j in range(theta.size):
                now = np.sign(g[pooled].sum()) if j in pooled else np.sign(g[j])
                rate[j] = min(1.0, rate[j] * 1.02) if prev[j] == now else rate[j] * 0.5
        prev = np.sign(g)
        theta = theta + rate * g
    return theta, rate


@pytest.mark.parametrize("pooled", [None, [1, 2, 3]])
def test_sign_adaptive_step_matches_the_rule_by_hand(pooled):
    rng = np.random.default_rng(7)
    theta = rng.normal(size=5)
    # the pooled scalars disagree in sign, so the pooled and per-scalar tests differ
    grads = rng.normal(size=(12, 5)) + np.array([0.0, 0.3, -0.2, 0.1, 0.0])
    step = SignAdaptiveStep(5, 0.01, pooled=None if pooled is None else np.array(pooled))
    out = theta.copy()
    for g in grads:
        out = step.step(out, g)
    ref, rate = _sign_rule_by_hand(theta, grads, [] if pooled is None else pooled)
    # the hand rule does the same floating-point operations in the same order: equal bit for bit
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(step.rate, rate)


def test_pooled_sign_test_differs_from_per_parameter():
    """The pooled test is a different rule: a length-scale whose own sign persists against the
    others' net direction has its rate halved."""
    grads = np.array([[1.0, -1.0, -1.0], [1.0, -1.0, -1.0]])
    per, pooled = SignAdaptiveStep(3, 0.01), SignAdaptiveStep(3, 0.01, pooled=slice(0, 3))
    for g in grads:
        per.step(np.zeros(3), g)
        pooled.step(np.zeros(3), g)
    np.testing.assert_allclose(per.rate, 0.0102)
    np.testing.assert_allclose(pooled.rate, [0.005, 0.0102, 0.0102])


# ----------------------------------------------------------------------------------------------
# the stopping rule (issue 45)


def _slow_climb():
    """Minus Rosenbrock's function in 4-D: from (-1.2, 1, -1.2, 1) both optimisers follow its
    curved valley for dozens of iterations, gaining less and less on the way."""

    def evaluate(theta, state):
        a, b = theta[:-1], theta[1:]
        value = -float(np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2))
        grad = np.zeros_like(theta)
        grad[:-1] += 400.0 * a * (b - a * a) + 2.0 * (1.0 - a)
        grad[1:] -= 200.0 * (b - a * a)
        return value, grad, None

    return evaluate


START = np.array([-1.2, 1.0, -1.2, 1.0])


def _rises(thetas):
    """After each point, how many iterations in a row the largest |gradient| component of
    :func:`_slow_climb` has grown (unbounded, so the projected gradient is the gradient)."""
    sizes = [np.max(np.abs(_slow_climb()(t, None)[1])) for t in thetas]
    run, out = 0, [0]
    for a, b in zip(sizes, sizes[1:]):
        run = run + 1 if b > a else 0
        out.append(run)
    return np.array(out)


def _recorder():
    """Lists of the values and points (from START) a maximize callback sees, and that callback."""
    values, thetas = [], [START]

    def record(k, theta, value, state):
        values.append(value)
        thetas.append(theta)

    return values, thetas, record


@pytest.mark.parametrize("method", ["lbfgs", "cg"])
def test_rule_stops_at_the_first_window_whose_gain_is_below_tol(method):
    values, thetas, record = _recorder()
    tol, window = 1e-3, 5
    res = maximize(_slow_climb(), START, method=method, max_iter=500, tol=tol,
                   window=window, callback=record)
    assert res.converged and "gained at most" in res.message
    assert res.n_iter == len(values) > 2 * window
    best = np.maximum.accumulate(np.r_[_slow_climb()(START, None)[0], values])
    gains = best[window:] - best[:-window]          # gains[k - window] ends at iteration k
    climbing = _rises(thetas)[window:] >= STOP_RISES
    assert gains[-1] <= tol and not climbing[-1]     # it stopped on the rule ...
    assert np.all((gains[:-1] > tol) | climbing[:-1])   # ... at the first window that met it


def test_rule_does_not_stop_while_the_gradient_grows(monkeypatch):
    # CG on the valley: at iteration 41 the best value has gained under 1e-3 over five
    # iterations, but the gradient has grown at each of the last two, and the climb goes on
    # to a best value 14 times closer to the top (0)
    values, thetas, record = _recorder()
    res = maximize(_slow_climb(), START, method="cg", max_iter=500, tol=1e-3, callback=record)
    best = np.maximum.accumulate(np.r_[_slow_climb()(START, None)[0], values])
    held = [k for k in range(5, res.n_iter)
            if best[k] - best[k - 5] <= 1e-3 and _rises(thetas)[k] >= STOP_RISES]
    assert held                                      # the guard kept it going at least once
    monkeypatch.setattr(_optimize, "STOP_RISES", np.inf)    # the gain alone
    gain_only = maximize(_slow_climb(), START, method="cg", max_iter=500, tol=1e-3)
    assert gain_only.n_iter == held[0] < res.n_iter
    assert res.value > 10 * gain_only.value


def test_rule_is_off_without_tol_and_the_schedule_runs_to_max_iter():
    # a fixed schedule (the papers' 20 CG steps) runs every step: no gain-based stop
    res = maximize(_slow_climb(), START, method="cg", max_iter=7, warn_at_cap=False)
    assert res.n_iter == 7 and not res.converged


def test_rule_reports_converged_before_the_cap_and_does_not_warn():
    # the suite turns warnings into errors: a converged default fit must not warn
    res = maximize(_slow_climb(), START, method="lbfgs", max_iter=1000, tol=1e-6)
    assert res.converged and res.n_iter < 1000


def test_rule_rejects_a_bad_tol():
    with pytest.raises(ValueError, match="tol"):
        maximize(_quadratic(np.zeros(1)), np.ones(1), tol=-1.0)
    for est in (GFITCClassifier(tol=-1e-4), EPClassifier(tol="small"),
                SparseGPRegressor(tol=np.nan)):
        X, y = make_xor(20, random_state=0)
        with pytest.raises(ValueError, match="tol must be None or a finite number >= 0"):
            est.fit(X, y)


def test_stopping_gain_counts_at_least_tol_min_rows():
    from sparsegp._config import TOL_MIN_ROWS
    from sparsegp._optimize import stopping_gain

    assert stopping_gain(None, 10) is None
    assert stopping_gain(3e-4, 400) == 3e-4 * TOL_MIN_ROWS
    assert stopping_gain(3e-4, 10 * TOL_MIN_ROWS) == 3e-4 * (10 * TOL_MIN_ROWS)


def test_fixed_schedule_runs_max_iter_steps_without_a_warning():
    X, y = make_xor(200, random_state=3)
    clf = GFITCClassifier(n_inducing=4, optimizer="cg", max_iter=6, tol=None,
                          random_state=0).fit(X, y)
    assert clf.n_iter_ == 6 and not clf.converged_


def test_warnings_name_the_callers_line():
    # the cap warning is raised three calls deep in the library; it must point here
    X, y = make_xor(60, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter=2") as rec:
        EPClassifier(max_iter=2, random_state=0).fit(X, y)
    assert {w.filename for w in rec} == {__file__}


def test_default_fits_converge_on_their_rule():
    X, y = make_xor(400, random_state=0)
    for est in (GFITCClassifier(random_state=0), EPClassifier(random_state=0)):
        est.fit(X, y)
        assert est.converged_ and 0 < est.n_iter_ < est.max_iter
    Xr, yr = make_regression_1d(300, random_state=0)
    reg = SparseGPRegressor(random_state=0).fit(Xr, yr)
    assert reg.converged_ and 0 < reg.n_iter_ < reg.max_iter


def _rising(gains):
    """A batch objective whose k-th evaluation is the sum of the first k gains (theta unused),
    as EP-inner training sees a log Z that moves with the sites."""
    values = np.cumsum(gains)
    calls = [0]

    def evaluate(theta, batch):
        calls[0] += 1
        return float(values[min(calls[0], len(values)) - 1]), np.ones_like(theta), None

    return evaluate


def test_ascend_rule_stops_when_the_best_value_stops_rising():
    # gains 1, 1/2, 1/4, ...: the best value gains under 0.05 over five iterations from
    # the ninth on (1/2^4 + ... + 1/2^8 = 0.1211 at the eighth, 0.0605 at the ninth, ...)
    gains = 0.5 ** np.arange(40)
    res = ascend(_rising(gains), np.zeros(1), Adam(1), 100, tol=0.05)
    best = np.cumsum(gains)
    k = next(i + 1 for i in range(5, 40) if best[i] - best[i - 5] <= 0.05)
    assert res.converged and not res.stopped and res.n_iter == k
    assert res.history == pytest.approx(list(best[:k]))


def test_ascend_rule_warns_at_the_cap_and_is_off_without_tol():
    gains = np.ones(50)                      # never settles
    with pytest.warns(ConvergenceWarning, match="max_iter=10 .* stopping rule"):
        res = ascend(_rising(gains), np.zeros(1), Adam(1), 10, tol=0.5)
    assert res.n_iter == 10 and not res.converged
    res = ascend(_rising(gains), np.zeros(1), Adam(1), 10)          # a budget: silent
    assert res.n_iter == 10 and not res.converged


def test_table_cells_keep_the_schedule_and_defaults_of_their_day():
    from sparsegp.experiments.grid import constructor_arguments
    kw = constructor_arguments("spgpc", {"optimizer": "cg", "max_iter": 20, "n_restarts": 2}, 2)
    assert kw == {"optimizer": "cg", "max_iter": 20, "n_restarts": 2, "tol": None,
                  "ep_search_rtol": 0.0}
    assert constructor_arguments("gpc", {"optimizer": "cg", "max_iter": 20}, 2)["tol"] is None
    assert constructor_arguments("ep", {"max_iter": 250}, 2)["tol"] is None
    # multi-class GFITC's cells solve EP exactly inside the search, as they ran (issue 49)
    assert constructor_arguments("gfitc", {"max_iter": 250}, 2) == {
        "max_iter": 250, "tol": None, "ep_search_rtol": 0.0}
    # a cell that chooses its tolerance keeps it
    assert constructor_arguments("spgpc", {"max_iter": 20, "tol": 1e-3}, 2)["tol"] == 1e-3
