"""Greedy selection scores of the IVM (seed 003 eq. 4, notes §2.3), O(1) per candidate.

Every score is computed from a candidate's current marginal (h_j, a_jj), its label y_j and the
bias b through the moment-matched quantities (alpha_j, nu_j) of notes §0.4:

* differential entropy  Delta_j = -1/2 log(1 - a_jj nu_j)             (= H[Q] - H[Q_new])
* information gain      Delta_j = 1/2 (-log(1 - a nu) - a nu + a alpha^2)  (= KL(Q_new || Q))

Larger is better for both. :func:`select_best` picks the argmax, treating NaN as -inf, never
returning a point already in the active set, and breaking ties by a random key supplied by
the caller (drawn from the estimator's Generator; notes §2.3).
"""
import math

import numba
import numpy as np

from ._jit import jit
from .probit import probit_tilted
from .._config import SCORING_PARALLEL_MIN_CANDIDATES as PARALLEL_MIN_CANDIDATES

SCORE_ENTROPY = 0
SCORE_INFOGAIN = 1


@jit
def score_one(kind, y_j, h_j, a_jj, bias):
    """One candidate's score: ``kind`` 0 = differential entropy, 1 = information gain."""
    _, alpha, nu = probit_tilted(y_j, h_j, a_jj, bias)
    anu = a_jj * nu
    # -log(1 - a nu) without cancellation for small a nu
    ent = -math.log1p(-anu)
    if kind == SCORE_ENTROPY:
        return 0.5 * ent
    return 0.5 * (ent - anu + a_jj * alpha * alpha)


@jit(parallel=True)
def _scores_parallel(kind, y, h, diag_A, bias, cols, out):
    for t in numba.prange(cols.shape[0]):
        j = cols[t]
        out[t] = score_one(kind, y[j], h[j], diag_A[j], bias)


@jit
def compute_scores(kind, y, h, diag_A, bias, cols, out):
    """``out[t]`` = score of candidate ``cols[t]``; ``out`` (len(cols),) is returned.

    ``h`` and ``diag_A`` at ``cols`` must be current (catch the columns up first when using
    delayed updates). O(len(cols)), multi-threaded for many candidates.
    """
    if cols.shape[0] >= PARALLEL_MIN_CANDIDATES:
        _scores_parallel(kind, y, h, diag_A, bias, cols, out)
        return out
    for t in range(cols.shape[0]):
        j = cols[t]
        out[t] = score_one(kind, y[j], h[j], diag_A[j], bias)
    return out


@jit
def select_best(scores, cols, is_active, tie_key):
    """Position t in ``cols`` of the best admissible candidate, or -1 if there is none.

    Admissible: ``not is_active[cols[t]]``. NaN scores count as -inf; among equal scores the
    largest ``tie_key[cols[t]]`` wins (``tie_key`` (n,) random, so ties break at random).
    When every admissible score is NaN/-inf a random admissible candidate is still returned.
    """
    best = -1
    best_s = -np.inf
    best_key = -np.inf
    for t in range(cols.shape[0]):
        j = cols[t]
        if is_active[j]:
            continue
        s = scores[t]
        if s != s:
            s = -np.inf
        key = tie_key[j]
        if best < 0 or s > best_s or (s == best_s and key > best_key):
            best = t
            best_s = s
            best_key = key
    return best
