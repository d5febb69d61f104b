"""The stepping loop of the one training driver: :func:`ascend` and its two steppers.

For an objective that changes under the search (EP-inner training, where the sites move
between steps, and minibatch estimates), one :class:`Adam` or :class:`SignAdaptiveStep` step
per evaluation, maximising. :mod:`sparsegp._optimize` holds the deterministic search
(:func:`~sparsegp._optimize.maximize`) and what the two share: the bounds (an (n, 2) array
from :mod:`sparsegp._params`, every step's point clipped into it here), the failure policy
(:data:`~sparsegp._optimize.NUMERICAL_ERRORS`; here a failed point sends the loop back to
the last point that evaluated with a halved step, and :data:`MAX_FAILURES` in a row stop it
with a ConvergenceWarning) and the stopping rule (batch mode with ``tol``: the best value's
gain over :data:`~sparsegp._optimize.STOP_WINDOW` iterations).
"""
from dataclasses import dataclass

import numpy as np

from ._numba import optimize as _nbopt
from ._optimize import NUMERICAL_ERRORS, STOP_WINDOW
from ._params import bounds_arrays
from ._validation import check_tol
from .exceptions import ConvergenceWarning, warn

__all__ = ["Adam", "SignAdaptiveStep", "AscentResult", "ascend", "MAX_FAILURES"]

#: Failed evaluations in a row after which :func:`ascend` gives up.
MAX_FAILURES = 12


class Adam:
    """ADAM ascent steps (Kingma & Ba 2015), the paper's defaults (multi-class notes §5.2).

    One implementation, compiled (:func:`sparsegp._numba.optimize.adam_ascent_step`):
    minibatch training moves C M D inducing coordinates every step.

    Parameters
    ----------
    size : int
        Length of theta.
    learning_rate : float, default=1e-3
    beta1, beta2, eps : float
    """

    def __init__(self, size, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        self.learning_rate = float(learning_rate)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0

    def step(self, theta, grad, scale=None):
        """The point after one step up ``grad``; theta itself is not modified.

        ``scale`` (shape of theta) takes the step in the coordinates theta / scale, 0
        freezing a coordinate; None steps in theta itself.
        """
        self.t += 1
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        scale = np.ones(theta.size) if scale is None else np.ascontiguousarray(scale, np.float64)
        out = np.empty_like(theta)
        # the bias corrections as Python computes them (the C library's pow)
        c1 = 1.0 - self.beta1 ** self.t
        c2 = 1.0 - self.beta2 ** self.t
        _nbopt.adam_ascent_step(theta, np.ascontiguousarray(grad, dtype=np.float64), scale,
                                self.m, self.v, c1, c2, self.learning_rate, self.beta1,
                                self.beta2, self.eps, out)
        return out

    def shrink(self, factor=0.5):
        """Multiply the learning rate by ``factor`` (after a failed evaluation)."""
        self.learning_rate *= factor


class SignAdaptiveStep:
    """The per-parameter adaptive rate of Villacampa-Calvo & Hernández-Lobato's appendix G.

    Each scalar has its own rate: x1.02 when its gradient keeps its sign, x0.5 when it flips,
    capped at ``max_rate``; the step is ``rate * grad`` (ascent) (multi-class notes §5.1).

    Parameters
    ----------
    size : int
        Number of scalars stepped.
    learning_rate : float
        Every rate's initial value.
    increase, decrease : float
        Factors applied to a rate when its sign test passes or fails.
    max_rate : float
        Cap of every rate.
    pooled : slice or ndarray of int, optional
        Scalars whose sign test compares each one's previous sign with the sign of the *sum*
        of their current gradients, as the authors' R code does for the length-scales
        (``optimize`` in ``sepMGPC_batch.R``). Each still keeps its own rate and its own
        stored sign. None tests every scalar against itself, as the paper's appendix G says.
    """

    def __init__(self, size, learning_rate=1e-2, increase=1.02, decrease=0.5, max_rate=1.0,
                 pooled=None):
        self.rate = np.full(size, float(learning_rate))
        self.increase, self.decrease, self.max_rate = increase, decrease, max_rate
        self.pooled = pooled
        self.prev_sign = None

    def step(self, theta, grad, scale=None):
        """theta + rate * grad after adapting the rates to the sign pattern.

        ``scale`` as in :meth:`Adam.step`.
        """
        if scale is None:
            return self._step(theta, grad)
        free = scale > 0
        safe = np.where(free, scale, 1.0)
        phi = self._step(theta / safe, grad * scale)
        return np.where(free, phi * safe, theta)

    def _step(self, theta, grad):
        sign = np.sign(grad)
        if self.prev_sign is not None:
            same = sign == self.prev_sign
            if self.pooled is not None:
                same[self.pooled] = self.prev_sign[self.pooled] == np.sign(
                    np.sum(grad[self.pooled]))
            self.rate = np.where(same, np.minimum(self.max_rate, self.rate * self.increase),
                                 self.rate * self.decrease)
        self.prev_sign = sign
        return theta + self.rate * grad

    def shrink(self, factor=0.5):
        """Multiply every rate by ``factor`` (the R code does this after a failed update)."""
        self.rate = self.rate * factor


@dataclass
class AscentResult:
    """Outcome of :func:`ascend`.

    Attributes
    ----------
    theta : object
        The point after the last step (whatever type ``advance`` works on).
    history : list of float
        The value of every iteration (batch) or the mean minibatch value of every epoch.
    n_iter : int
        Iterations (batch) or epochs (minibatch) completed.
    n_steps : int
        Successful evaluations (steps taken or, for the last batch iteration, not needed).
    n_failures : int
        Failed evaluations.
    stopped : bool
        True when the loop gave up after ``max_failures`` failures in a row.
    converged : bool
        True when the stopping rule ended the loop before ``max_iter`` (batch mode with
        ``tol``).
    """

    theta: object
    history: list
    n_iter: int
    n_steps: int
    n_failures: int
    stopped: bool
    converged: bool = False


def ascend(evaluate, theta0, stepper, max_iter, *, advance=None, batches=None,
           on_success=None, on_epoch=None, on_failure=None, max_failures=MAX_FAILURES,
           label="ascent", tol=None, window=STOP_WINDOW, bounds=None):
    """Step up a changing objective: evaluate, then one stepper step, ``max_iter`` times.

    In batch mode with ``tol``, the module's stopping rule ends the loop earlier: once the
    best value of the iterations so far has gained at most ``tol`` over the last ``window``
    iterations. The objective moves under the search (EP's sites), so the values are those
    each iteration evaluated, not of one fixed function; their best still stops rising when
    the steps stop helping.

    Parameters
    ----------
    evaluate : callable ``evaluate(theta, batch) -> (value, grad, info)``
        The objective at theta on one minibatch (``batch`` None in batch mode). Failed points
        (module docstring) are not counted.
    theta0 : ndarray of shape (n,) or object
        The starting point (an ndarray, or, without ``bounds``, any object ``advance``
        steps).
    stepper : Adam or SignAdaptiveStep
        Its ``shrink`` is called after a failed evaluation.
    max_iter : int
        Batch mode: iterations (the last one evaluates but does not step). Minibatch mode:
        epochs (every minibatch steps).
    advance : callable ``advance(theta, grad) -> theta``, optional
        One step (default ``stepper.step(theta, grad)``).
    batches : callable ``batches() -> iterable``, optional
        The minibatches of one epoch; None is batch mode.
    on_success : callable ``on_success(k, theta, value, info, history)``, optional
        After every successful evaluation. Batch mode: before the step, at the evaluated
        point, k counting iterations from 1. Minibatch mode: after the step, at the new
        point, k counting steps from 1, ``history`` with this epoch's mean so far appended.
    on_epoch : callable ``on_epoch(n_epochs, history)``, optional
        Minibatch mode: after every epoch.
    on_failure : callable ``on_failure(n_failed)``, optional
        After a failed evaluation, once theta is back at the last good point, so the caller
        can undo its own state (EP sites) and soften its own settings (damping).
    max_failures : int
        Failures in a row after which the loop stops with a ConvergenceWarning.
    label : str
        Named in the warning.
    tol : float or None
        Batch mode: stop once the best value gained at most ``tol`` over the last ``window``
        iterations (the point of that last iteration is the result); reaching ``max_iter``
        first is then a ConvergenceWarning. None: ``max_iter`` iterations, no warning.
        Ignored with minibatches.
    window : int
    bounds : ndarray of shape (n, 2), optional
        Lower and upper bounds on theta, ±inf where unbounded: every step's point is clipped
        into them (theta0 is taken as given). None, or no finite entry: no clipping.

    Returns
    -------
    AscentResult
    """
    tol = check_tol(tol)
    step = advance if advance is not None else stepper.step
    if bounds is not None:
        if not isinstance(theta0, np.ndarray):
            raise ValueError("bounds need theta0 as an ndarray (the packed parameter vector); "
                             f"got {type(theta0).__name__}")
        lo, hi = bounds_arrays(bounds, theta0.size)
        if np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)):
            unclipped = step

            def step(theta, grad):
                return np.clip(unclipped(theta, grad), lo, hi)
    rule = tol is not None and batches is None
    best = []                      # batch mode: the best value after 1, 2, ... iterations
    settled = False
    theta = last_good = theta0
    history = []
    n_steps = n_failures = in_a_row = 0

    def attempt(point, batch):
        try:
            value, grad, info = evaluate(point, batch)
            if np.isfinite(value) and np.all(np.isfinite(grad)):
                return value, grad, info
        except NUMERICAL_ERRORS:
            pass
        return None

    def failed():
        nonlocal theta, n_failures, in_a_row
        n_failures += 1
        in_a_row += 1
        if in_a_row > max_failures:
            warn(f"{label}: {in_a_row} evaluations in a row failed (non-finite objective or a "
                 f"failed factorisation); stopping early. Try a smaller damping or "
                 f"learning_rate, or standardised inputs.", ConvergenceWarning)
            return True
        theta = last_good
        stepper.shrink(0.5)
        if on_failure is not None:
            on_failure(in_a_row)
        return False

    it = 0
    stopped = converged = False
    while it < max_iter and not stopped and not converged:
        values = []
        for batch in ([None] if batches is None else batches()):
            out = attempt(theta, batch)
            if out is None:
                stopped = failed()
                if stopped:
                    break
                continue
            in_a_row = 0
            n_steps += 1
            values.append(out[0])
            if batches is None and on_success is not None:
                on_success(it + 1, theta, out[0], out[2], history + values)
            if rule:
                best.append(max(out[0], best[-1]) if best else out[0])
                settled = len(best) > window and best[-1] - best[-1 - window] <= tol
            # batch mode's last iteration has no step to take: its point is the result
            if rule and settled:
                converged = True
            elif batches is not None or it + 1 < max_iter:
                last_good = theta
                theta = step(theta, out[1])
            if batches is not None and on_success is not None:
                on_success(n_steps, theta, out[0], out[2], history + [float(np.mean(values))])
        if values:
            history.append(float(np.mean(values)))
        elif batches is None:
            continue                   # a failed batch iteration is tried again, not counted
        if stopped:
            break
        it += 1
        if on_epoch is not None:
            on_epoch(it, history)
    if rule and not (converged or stopped):
        warn(f"{label}: stopped at max_iter={max_iter} iterations before its stopping rule "
             f"(a gain under {tol:.3g} in {window} iterations) was met; increase max_iter",
             ConvergenceWarning)
    return AscentResult(theta, history, it, n_steps, n_failures, stopped, converged)
