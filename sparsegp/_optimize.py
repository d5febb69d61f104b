"""The one training driver: every estimator's hyper-parameter search runs through here.

Two searches, both *maximising* an objective (an evidence, EP's log Z, an ELBO, minus an NLP)
over a packed vector theta whose kernel entries are logs, as a kernel's ``theta``:

:func:`maximize`
    A deterministic objective and its gradient, by scipy's ``L-BFGS-B`` or nonlinear ``CG``,
    with random restarts; GPflow's ``optimizers/scipy.py`` shape (one closure, one method).
:func:`ascend` (:func:`sparsegp._ascend.ascend`, in its own module)
    A stepping loop for an objective that changes under the search (EP-inner training, where
    the sites move between steps, and minibatch estimates): one ADAM or sign-adaptive step
    per evaluation. It follows this module's bounds, failure policy and stopping rule.

Bounds
    An (n, 2) array of lower/upper bounds on theta, ±inf where a coordinate is unbounded,
    from the parameter vector's packing (:mod:`sparsegp._params`). ``L-BFGS-B`` keeps to
    them. ``CG`` has no constraints, so the objective is evaluated at the point clipped into
    the box (flat outside it: zero gradient in a clipped coordinate) and the result is
    clipped: the same search inside the box, and never an answer outside it.
    :func:`ascend` clips every step's point into them.

Restarts
    Start 0 is theta0; every further start draws the coordinates in ``restart_mask``
    uniformly inside their bounds (scikit-learn's ``_gpr.py``), an open side (infinite, or
    farther than :data:`OPEN_SIDE` from theta0, as :data:`sparsegp.kernels.UNBOUNDED`'s are)
    replaced by theta0 ∓ :data:`RESTART_HALF_WIDTH` (a factor of ten in natural units), then
    hands the point to ``restart(theta, rng)`` when given (re-drawn inducing inputs). The
    draws come from the ``random_state`` Generator, all before the first evaluation.

Failure policy (one, everywhere)
    An evaluation that raises one of :data:`NUMERICAL_ERRORS` (a failed Cholesky, a
    floating-point error, an :class:`EvaluationFailure`) or returns a non-finite value or
    gradient is a *failed point*, and the search backs off from it. :func:`maximize` runs
    evaluations under ``np.errstate`` raising on overflow, invalid values and division by
    zero, as the binary classifiers' driver always did; :func:`ascend` does not (the
    multi-class EP-inner objectives were written for NumPy's default state), so there such a
    point fails through its non-finite value.
    :func:`maximize` answers scipy with the huge finite objective :data:`FAILED_OBJECTIVE`
    and a zero gradient, so that its line search shortens the step; the result is the best
    point that evaluated, never a failed one (value ``-inf`` only if every point failed).
    :func:`ascend` returns to the last point that evaluated, halves the stepper's step
    (``stepper.shrink(0.5)``; ``on_failure`` undoes the caller's own state) and evaluates
    again (the next minibatch); after ``max_failures`` failures in a row it stops with a
    :class:`~sparsegp.exceptions.ConvergenceWarning`.

Progress
    ``progress=True`` shows one ``tqdm.auto`` bar per start (a widget in Jupyter, text on
    stderr elsewhere) with the current value as its postfix, and prints each start's theta
    and best value.

Stopping rule
    A start of :func:`maximize` has converged when scipy's own test is met (a small projected
    gradient, or a relative change of the objective at round-off) or, with ``tol`` given, when
    its best value has gained less than ``tol`` over the last ``window`` iterations. Estimators
    state ``tol`` per training point (nats / N, as scikit-learn's ``tol``) and pass
    :func:`stopping_gain`, ``tol * N`` counted on at least ``TOL_MIN_ROWS`` rows: an evidence
    is a sum over the data, so a gain that no longer matters grows with N. The gain
    is that of the best value, which never falls, over a window rather than one step: CG and
    L-BFGS take the odd tiny step (a short line search) in the middle of a long climb.
    A small gain alone can also mean the search is crossing a plateau on its way up: near a
    top a quasi-Newton search shrinks the gradient, while one leaving a flat region sees it
    grow. So the rule also asks that the largest component of the projected gradient has not
    grown at each of the last :data:`STOP_RISES` iterations (read from the evaluation at the
    accepted point; where a ``warm`` run has none, that iteration counts as no growth). On
    raw diabetes the subset of records (SoD) gains 1e-3 nats over iterations 3-7 while that
    component grows 0.041, 0.044, 0.098, 0.224; the plateau ends at iteration 8 and the
    search climbs 2 more nats (benchmarks/DEFAULTS.md, "A plateau the rule takes for the
    top").
    ``tol=None`` turns the rule off and runs the fixed schedule of ``max_iter`` steps (the
    papers' 20 CG steps), exactly as before the rule existed.

Iteration cap
    ``max_iter`` is then a safety cap. When the best start of :func:`maximize` stopped there
    without converging, one ConvergenceWarning names the estimator, the cap and what to try.
    :func:`ascend` runs a fixed budget of steps with no convergence test, so it has no cap to
    warn about. Every warning is attributed to the user's line
    (:func:`sparsegp.exceptions.warn`).

Bounds reached
    When a coordinate of the best point of :func:`maximize` lies on a finite bound (within
    :data:`AT_BOUND_TOL` in log space), one ConvergenceWarning names it (``names``, else its
    index) and its value: the objective wanted a value outside the box, so the answer is the
    box's, not the data's. Searches that are rounds of a larger scheme (``warn_at_cap=False``
    by default) report neither this nor the cap.
"""
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg as sla
from scipy import optimize

from ._config import TOL_MIN_ROWS
from ._params import bounds_arrays
from ._validation import check_random_state, check_tol
from .exceptions import ConvergenceWarning, warn

__all__ = ["METHODS", "OptimizeResult", "EvaluationFailure", "NUMERICAL_ERRORS", "maximize",
           "restart_points", "stopping_gain", "warn_at_bounds"]

#: Accepted ``optimizer`` names and the scipy method each maps to.
METHODS = {"lbfgs": "L-BFGS-B", "l-bfgs-b": "L-BFGS-B", "cg": "CG"}

#: Half-width in log space of the restart box along an unbounded side: a factor of ten.
RESTART_HALF_WIDTH = math.log(10.0)

#: Distance in log space (a factor of 1e100) beyond which a side of the box counts as open for
#: the restart draws. The one box that wide is :data:`sparsegp.kernels.UNBOUNDED`, (1e-300,
#: 1e300): the box ``kernel_`` shows for a default searched without bounds, and the way to ask
#: for that search with a kernel of one's own. Drawn log-uniformly across it (in model units,
#: shifted by the log of the input scale) nearly every start is a length-scale or variance
#: 1e100 or more times any usable value, where the kernel is constant or white to the last
#: digit: a wasted start, and one that moves with the units of X (the shift). Its sides are
#: therefore drawn as infinite ones are, a factor of ten about the start; the optimiser
#: still receives the box as given. A real box reaches nowhere near (the kernels' default,
#: 1e-5 to 1e5, spans 23 in log space).
OPEN_SIDE = math.log(1e100)

#: What scipy sees at a failed point: huge but finite, so line searches backtrack cleanly.
FAILED_OBJECTIVE = 1e300

#: Iterations over which :func:`maximize`'s stopping rule measures the gain (module docstring).
STOP_WINDOW = 5

#: Consecutive rises of the largest projected-gradient component that keep a start going
#: when its gain is below ``tol`` (module docstring). Two: one rise is the ordinary overshoot
#: of a line search near a top; of 41 window stops logged (the fits of compare_fits, raw and
#: standardised diabetes for every approximation, GFITC and EP on breast cancer) two or three
#: in a row came only where the search was still climbing (2026-11-29).
STOP_RISES = 2

#: Distance (in theta's units: log space for kernel parameters, so a relative 1e-3) within
#: which a coordinate counts as on its bound. L-BFGS-B projects onto the box and CG's points
#: are clipped into it, so a coordinate held by its bound sits on it; but where the objective
#: flattens towards the bound (the length-scale of a fit gone constant) the search stops a
#: little short (the exact GP of raw diabetes targets: 1.4e-6 below log 1e6).
AT_BOUND_TOL = 1e-3


class EvaluationFailure(ArithmeticError):
    """Raised by an objective whose parameters are numerically unusable (improper cavity, ...)."""


#: Exceptions that make a point a failed point rather than an error of the caller.
NUMERICAL_ERRORS = (np.linalg.LinAlgError, sla.LinAlgError, FloatingPointError,
                    ZeroDivisionError, OverflowError, EvaluationFailure)


# ----------------------------------------------------------------------------------------------
# bounds


def restart_points(theta0, bounds, n_restarts, rng, restart_mask=None, restart=None):
    """The starts of :func:`maximize`: theta0, then ``n_restarts`` draws inside the bounds.

    Parameters
    ----------
    theta0 : ndarray of shape (n,)
    bounds : ndarray of shape (n, 2) or None
    n_restarts : int
    rng : numpy.random.Generator
    restart_mask : ndarray of shape (n,), bool, optional
        Coordinates to draw (default all); the others keep theta0's values.
    restart : callable ``restart(theta, rng) -> theta``, optional
        Called on every drawn start (e.g. to re-draw inducing inputs).

    Returns
    -------
    starts : list of ndarray
        Each coordinate in the mask is uniform on [lo, hi], an open side (infinite, or
        farther than :data:`OPEN_SIDE` from theta0) replaced by theta0 ∓
        :data:`RESTART_HALF_WIDTH`.
    """
    theta0 = np.asarray(theta0, dtype=np.float64)
    lo, hi = bounds_arrays(bounds, theta0.size)
    mask = np.ones(theta0.size, dtype=bool) if restart_mask is None else np.asarray(restart_mask)
    # an infinite side fails the test too (inf <= OPEN_SIDE is false)
    low = np.where(theta0 - lo <= OPEN_SIDE, lo, theta0 - RESTART_HALF_WIDTH)[mask]
    high = np.where(hi - theta0 <= OPEN_SIDE, hi, theta0 + RESTART_HALF_WIDTH)[mask]
    starts = [theta0.copy()]
    for _ in range(int(n_restarts)):
        start = theta0.copy()
        start[mask] = rng.uniform(low, high)
        if restart is not None:
            start = np.asarray(restart(start, rng), dtype=np.float64)
        starts.append(start)
    return starts


# ----------------------------------------------------------------------------------------------
# deterministic objectives: scipy's L-BFGS-B and CG


@dataclass
class OptimizeResult:
    """Outcome of :func:`maximize`.

    Attributes
    ----------
    theta : ndarray
        The best point evaluated over all starts (inside the bounds).
    value : float
        The objective there (``-inf`` if every evaluation failed).
    state : object
        What the objective returned as state at ``theta`` (EP sites, a fitted posterior).
    n_iter : int
        Optimiser iterations of the start that produced ``theta``.
    n_evals : int
        Objective evaluations over all starts.
    converged : bool
        Whether that start met scipy's tolerance or the stopping rule (False at the iteration
        cap or after a line search failure).
    message : str
        scipy's message for that start, or the stopping rule's.
    start_values : list of float
        Best value of each start (the first is theta0's run).
    """

    theta: np.ndarray
    value: float
    state: object
    n_iter: int
    n_evals: int
    converged: bool
    message: str
    start_values: list = field(default_factory=list)


class _Run:
    """The objective of one start as scipy sees it: failures, clipping, warm state, best point.

    ``warm``: every evaluation receives the state of the previous successful one (EP warm
    starts) and nothing is reused, except that with ``reuse_next`` set (:func:`maximize`'s
    ``reuse_start``) the next call, if at the point just evaluated, is answered from memory;
    otherwise the objective gets None and a repeated point (the one scipy's callback and final
    step ask about again) is answered from memory.
    """

    def __init__(self, evaluate, lo, hi, clip, warm):
        self.evaluate = evaluate
        self.lo, self.hi, self.clip, self.warm = lo, hi, clip, warm
        self.reuse_next = False         # a warm run may answer its next call from memory
        self.state = None
        self.best_value = -np.inf
        self.best_theta = None
        self.best_state = None
        self.n_evals = 0
        self.last = None          # (key, value, grad, state) of the latest evaluation

    def gradient_size(self, theta):
        """Largest component of the projected gradient at ``theta``, nan if unknown.

        Known when the latest evaluation was at ``theta`` (always so after :meth:`value_of`
        in a cold run). A coordinate on a bound counts only if the gradient points inside.
        """
        if self.last is None or self.last[0] != _key(theta) or self.last[2] is None:
            return np.nan
        grad, x = self.last[2], np.asarray(theta, dtype=np.float64)
        inside = ~(((x <= self.lo) & (grad < 0)) | ((x >= self.hi) & (grad > 0)))
        return float(np.max(np.abs(grad[inside]), initial=0.0))

    def value_of(self, theta):
        """(value, state) at ``theta``, an accepted point scipy reports to its callback.

        Normally the latest evaluation. Otherwise a warm run answers (nan, None) rather than
        evaluate out of turn (which would change the warm chain); a cold one evaluates.
        """
        if self.last is None or self.last[0] != _key(theta):
            if self.warm:
                return np.nan, None
            self.fun(theta)
        return self.last[1], self.last[3]

    def fun(self, theta):
        theta = np.array(theta, dtype=np.float64)
        key = _key(theta)
        reuse, self.reuse_next = not self.warm or self.reuse_next, False
        if reuse and self.last is not None and self.last[0] == key:
            value, grad = self.last[1], self.last[2]
            return (FAILED_OBJECTIVE, np.zeros_like(theta)) if grad is None else (-value, -grad)
        point = np.clip(theta, self.lo, self.hi) if self.clip else theta
        self.n_evals += 1
        try:
            with np.errstate(over="raise", invalid="raise", divide="raise"):
                value, grad, state = self.evaluate(point, self.state if self.warm else None)
            value = float(value)
            grad = np.array(grad, dtype=np.float64)
            ok = np.isfinite(value) and np.all(np.isfinite(grad))
        except NUMERICAL_ERRORS:
            ok = False
        if self.best_theta is None:
            self.best_theta = point.copy()
        if not ok:
            self.last = (key, -np.inf, None, None)
            return FAILED_OBJECTIVE, np.zeros_like(theta)
        if self.clip:
            # flat outside the box: a clipped coordinate does not move the objective
            grad[point != theta] = 0.0
        self.state = state
        self.last = (key, value, grad, state)
        if value > self.best_value:
            self.best_value, self.best_theta, self.best_state = value, point.copy(), state
        return -value, -grad


def stopping_gain(tol, n_rows):
    """The ``tol`` of :func:`maximize` for an estimator's per-row tolerance.

    Parameters
    ----------
    tol : float or None
        Nats per training row, or None for a fixed schedule.
    n_rows : int
        Training rows the objective sums over.

    Returns
    -------
    float or None
        ``tol * max(n_rows, TOL_MIN_ROWS)`` (:data:`sparsegp._config.TOL_MIN_ROWS`: a gain is
        never judged finer than on that many rows), or None.
    """
    return None if tol is None else float(tol) * max(int(n_rows), TOL_MIN_ROWS)


def _key(theta):
    return np.asarray(theta, dtype=np.float64).tobytes()


def maximize(evaluate, theta0, *, method="lbfgs", bounds=None, max_iter=100, n_restarts=0,
             random_state=None, restart_mask=None, restart=None, warm=False, initial=None,
             callback=None, progress=False, label="objective", value_name="objective",
             warn_at_cap=True, advice="", names=None, warn_at_bound=None, reuse_start=False,
             tol=None, window=STOP_WINDOW):
    """Maximise ``evaluate`` over theta from theta0 and random restarts; keep the best point.

    Parameters
    ----------
    evaluate : callable ``evaluate(theta, warm_state) -> (value, grad, state)``
        The objective, its gradient d value / d theta (shape of theta) and anything the
        caller wants back at the best point (``state``); ``warm_state`` is the state of the
        previous successful evaluation of the same start when ``warm``, else None. Failed
        points follow the module's failure policy.
    theta0 : ndarray of shape (n,)
    method : {"lbfgs", "cg"}
        scipy's ``L-BFGS-B`` or ``CG`` (see :data:`METHODS`).
    bounds : ndarray of shape (n, 2), optional
        Lower and upper bounds, ±inf where unbounded (see the module docstring for CG).
    max_iter : int
        Optimiser iterations per start: a safety cap with ``tol``, the schedule without.
    n_restarts : int
        Extra starts (:func:`restart_points`).
    random_state : None, int or numpy.random.Generator
        Source of the restart draws.
    restart_mask, restart
        See :func:`restart_points`.
    warm : bool
        Thread each evaluation's state into the next (EP warm starts).
    reuse_start : bool
        With ``warm``: answer scipy's first call, at the start just evaluated, from that
        evaluation instead of evaluating it again from its own state (one evaluation fewer per
        start; the warm chain then differs from the default one by that extra EP run).
    initial : tuple, optional
        ``(value, grad, state)`` already computed at theta0 (saves evaluating it twice).
    callback : callable ``callback(n_iter, theta, value, state)``, optional
        After every optimiser iteration, at the accepted point (value nan and state None if
        it is not the latest evaluation).
    progress : bool
        One progress bar per start (``tqdm.auto``) and a line per start.
    label : str
        The estimator (or search) named in progress lines and in the warning.
    value_name : str
        The objective's name in progress lines ("log evidence", "ELBO").
    warn_at_cap : bool
        Warn when the best start stopped at ``max_iter``; False for searches that are rounds
        of a larger scheme, where a cap per round is the design.
    advice : str
        What else to try, appended to the warning after "increase max_iter".
    names : sequence of str or None, optional
        Names of theta's first ``len(names)`` coordinates, for the bound warning; a None
        entry leaves that coordinate out of the check (a floor kept for numerical safety,
        whose reaching says nothing the user should change).
    warn_at_bound : bool, optional
        Warn when the best point lies on a finite bound (module docstring); default
        ``warn_at_cap``.
    tol : float or None, optional
        Stop a start once its best value has gained less than ``tol`` (the objective's units)
        over the last ``window`` iterations, unless its gradient is growing (module
        docstring); None: scipy's tests only.
    window : int
        Iterations the gain is measured over.

    Returns
    -------
    OptimizeResult
    """
    tol = check_tol(tol)
    scipy_method = METHODS[method]
    theta0 = np.array(theta0, dtype=np.float64)
    lo, hi = bounds_arrays(bounds, theta0.size)
    rng = check_random_state(random_state) if n_restarts else None
    starts = restart_points(theta0, bounds, n_restarts, rng, restart_mask, restart)
    starts = [np.clip(s, lo, hi) for s in starts]
    bounded = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
    # scipy gets no bounds when nothing is bounded, so such a search runs as it always did
    scipy_bounds = (optimize.Bounds(lo, hi) if bounded and scipy_method == "L-BFGS-B"
                    else None)
    clip = bounded and scipy_method == "CG"
    if progress:
        # imported here: tqdm is only needed when someone watches
        from tqdm.auto import tqdm

    best = None
    n_evals = 0
    start_values = []
    for k, start in enumerate(starts):
        run = _Run(evaluate, lo, hi, clip, warm)
        bar = None
        if progress:
            print(f"[{label}] start {k}: theta = {np.array2string(start, precision=4)}",
                  flush=True)
            bar = tqdm(total=max_iter, desc=f"[{label}] start {k}", unit="iter", leave=True)
        if k == 0 and initial is not None and np.array_equal(start, theta0):
            value, grad, state = initial
            run.best_theta, run.state = start.copy(), state
            if np.isfinite(value):
                run.best_value, run.best_state = float(value), state
            run.last = (_key(start), float(value),
                        None if not np.isfinite(value) else np.asarray(grad, np.float64), state)
        else:
            run.fun(start)  # the first evaluation also gives the start's value
        run.reuse_next = reuse_start    # scipy's first call is at the start
        it = [0]
        climb = [run.best_value]        # the best value after 0, 1, 2, ... iterations
        settled = [False]
        # the largest projected-gradient component at the last point and how many
        # iterations in a row it has grown (the rule's plateau guard)
        slope = [run.gradient_size(start), 0]

        def on_iteration(xk, *args, run=run, it=it, bar=bar, climb=climb, settled=settled,
                         slope=slope):
            it[0] += 1
            value, state = run.value_of(xk)
            size = run.gradient_size(xk)
            slope[1] = slope[1] + 1 if size > slope[0] else 0   # nan compares False
            slope[0] = size
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(f"{value_name} {value:.4f}")
            if callback is not None:
                callback(it[0], np.array(xk), value, state)
            climb.append(run.best_value)
            # -inf - -inf is nan and inf - -inf is inf: a start that has not yet evaluated
            # anywhere never counts as settled
            if (tol is not None and it[0] >= window and climb[-1] - climb[-1 - window] <= tol
                    and slope[1] < STOP_RISES):
                settled[0] = True
                raise StopIteration

        try:
            with warnings.catch_warnings():
                # the line search may probe failed points; scipy warns about them
                warnings.simplefilter("ignore", RuntimeWarning)
                res = optimize.minimize(run.fun, start, jac=True, method=scipy_method,
                                        bounds=scipy_bounds, callback=on_iteration,
                                        options={"maxiter": max_iter})
            n_iter, status, message = int(res.nit), int(res.status), str(res.message)
        except NUMERICAL_ERRORS + (ValueError,):
            n_iter, status, message = it[0], -1, "the optimiser stopped on a numerical error"
        if settled[0]:
            n_iter, status = it[0], 0
            message = f"gained at most {tol:.3g} over the last {window} iterations"
        n_evals += run.n_evals
        start_values.append(run.best_value)
        if bar is not None:
            bar.close()
            print(f"[{label}] start {k} done: best {value_name} {run.best_value:.6f} after "
                  f"{n_iter} iterations", flush=True)
        if best is None or run.best_value > best.value:
            # a zero gradient at a failed start is no optimum, whatever scipy concludes
            best = OptimizeResult(run.best_theta, run.best_value, run.best_state, n_iter, 0,
                                  status == 0 and np.isfinite(run.best_value), message)
            capped = status != 0 and n_iter >= max_iter
    best.n_evals = n_evals
    best.start_values = start_values
    if warn_at_cap and capped:
        warn(f"{label}: the {scipy_method} optimiser stopped at max_iter={max_iter} iterations "
             f"before converging; increase max_iter{advice}", ConvergenceWarning)
    if (warn_at_cap if warn_at_bound is None else warn_at_bound) and np.isfinite(best.value):
        warn_at_bounds(best.theta, lo, hi, names, label)
    return best


def at_bounds(theta, lo, hi):
    """Mask (n,) of the coordinates of theta within :data:`AT_BOUND_TOL` of a finite bound."""
    theta = np.asarray(theta, dtype=np.float64)
    return ((np.isfinite(lo) & (theta - lo <= AT_BOUND_TOL))
            | (np.isfinite(hi) & (hi - theta <= AT_BOUND_TOL)))


#: What :func:`warn_at_bounds` suggests unless its caller knows better.
BOUND_ADVICE = ("check the units of X and y (standardise them, or keep the defaults that do), "
                "widen the kernel's bounds, hold the parameter fixed, or try n_restarts > 0")


def warn_at_bounds(theta, lo, hi, names, label, advice=BOUND_ADVICE):
    """The ConvergenceWarning for coordinates of a result on a bound (module docstring).

    The one message for every search that ends on its box: :func:`maximize` at its best
    point, and schemes that run it in rounds (the stagewise classifier's outer loop) at the
    point they keep.

    Parameters
    ----------
    theta, lo, hi : ndarray of shape (n,)
        The result and its bounds (±inf where unbounded).
    names : sequence of str or None
        Names of theta's first coordinates; a None entry is not checked.
    label : str
        The estimator named in the message.
    advice : str
        What to try, after "the box's, not the data's: ".
    """
    names = list(names or [])
    idx = [i for i in np.flatnonzero(at_bounds(theta, lo, hi))
           if i >= len(names) or names[i] is not None]
    if not idx:
        return
    parts = []
    for i in idx:
        name = names[i] if i < len(names) else f"theta[{i}]"
        side = "lower" if theta[i] - lo[i] <= AT_BOUND_TOL else "upper"
        parts.append(f"{name} at its {side} bound (log value {theta[i]:.4g}, i.e. "
                     f"{math.exp(min(theta[i], 700.0)):.3g})")
    warn(f"{label}: the fit ended with {'; '.join(parts)}. The objective wanted a value outside "
         f"the search box, so this value is the box's, not the data's: {advice}",
         ConvergenceWarning)
