"""The IVM's active-set selection: greedy forward ADF inclusions (seed 003 §3, notes §2.1-2.4).

Each inclusion is one ADF step with the probit-with-bias likelihood (seed 003 eq. 2), done in
O(n d) by the in-place core of :mod:`sparsegp._numba.adf` (eq. 3); candidates are scored in
O(1) each from their marginals (eq. 4 and the information gain of notes §2.3) by
:mod:`sparsegp._numba.scoring`. Used by the search and the estimator
(:mod:`sparsegp.classification._ivm_search`, :mod:`sparsegp.classification._ivm`), which asks
:func:`_fit_parallel_rows` how many rows these passes split among threads.

* Randomized greedy selection (seed 003 §3, notes §2.4): ``n_random`` uniform picks, then
  ``n_greedy`` full-greedy picks over every remaining point, then a selection index J of size
  ``size``: after each inclusion the ``floor(retain * size)`` best members of J by the scores
  of the selection just made (pre-inclusion scores; no extra work) are kept and J is refilled
  by uniform draws from the points outside I and J. Only the columns of M in J are kept
  current; the others are caught up lazily when they re-enter J.
* Ties between scores are broken by a random key per point (drawn once per selection from the
  estimator's Generator); NaN scores count as -inf; active points are never selected again.
"""
import numpy as np

from .._numba import adf as _adf
from .._numba import scoring as _scoring
from .._numba.covfuncs import SE

#: the active-set size ``n_active="auto"`` asks for, capped by the number of training points
AUTO_ACTIVE = 100
#: Defaults of the randomized greedy scheme: seed 003's MNIST settings (footnote 7).
RANDOMIZED_DEFAULTS = {"n_random": 2, "n_greedy": 198, "size": 500, "retain": 0.5}

_SCORE_KIND = {"entropy": _scoring.SCORE_ENTROPY, "infogain": _scoring.SCORE_INFOGAIN}


def _random_fill(rng, blocked, need):
    """Up to ``need`` distinct uniform draws from the indices where ``blocked`` is False.

    ``blocked`` (n,) bool is updated in place to include the drawn indices.
    """
    free = blocked.size - int(np.count_nonzero(blocked))
    if need <= 0 or free == 0:
        return np.empty(0, dtype=np.int64)
    if need >= free:
        out = np.flatnonzero(~blocked).astype(np.int64)
        blocked[out] = True
        return out
    picks = []
    got = 0
    while got < need:
        cand = rng.integers(0, blocked.size, size=2 * (need - got) + 8)
        for j in cand:      # short loop: ~need iterations in total
            if not blocked[j]:
                blocked[j] = True
                picks.append(j)
                got += 1
                if got == need:
                    break
    return np.asarray(picks, dtype=np.int64)


def select_active_set(X, y, variance, lengthscale, bias_variance, bias, n_active,
                      selection="entropy", randomized=None, rng=None, verbose=False,
                      label="IVM", family=SE):
    """Run the IVM's forward selection and return the ADF state (notes §2.1-2.4).

    Parameters
    ----------
    X : ndarray of shape (n, D), C-contiguous float64
    y : ndarray of shape (n,)
        Labels in {-1, +1} (float64).
    variance, bias_variance, bias : float
    lengthscale : ndarray of shape (D,)
    n_active : int
        d, at most n.
    selection : {"entropy", "infogain", "random"}
    randomized : dict or None
        None: full greedy (every remaining point scored at every step). Otherwise a dict with
        the keys of :data:`RANDOMIZED_DEFAULTS` (all required here).
    rng : numpy.random.Generator
    verbose : bool
        Print progress about ten times per selection.
    label : str
        Prefix of the progress lines.
    family : int, default=0
        Stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE).

    Returns
    -------
    state : sparsegp._numba.adf.ADFState
        With ``k[0] == n_active``; columns of M outside the final selection index may lag.
    """
    n = X.shape[0]
    d = int(n_active)
    rng = np.random.default_rng() if rng is None else rng
    state = _adf.new_state(n, d, variance, bias_variance)
    work = np.empty(n)
    all_cols = np.arange(n, dtype=np.int64)
    tie_key = rng.random(n)
    report = max(1, d // 10)

    Xs, sq_norms = _adf.scaled_inputs(X, lengthscale)

    def include(i, cols):
        if cols is all_cols:
            # every column is current: the covariance column by BLAS (two gemv)
            p, m, _, _, _ = _adf.probit_site(y[i], state.h[i], state.diag_A[i], bias)
            _adf.cov_column_blas(Xs, sq_norms, variance, bias_variance, state, i, work,
                                 family)
            work[i] = state.diag_A[i]
            eta, _ = _adf.adf_include_column(*state, i, p, m, work, all_cols)
        else:
            eta, _, _ = _adf.adf_include_probit(X, variance, lengthscale, bias_variance,
                                                *state, i, y[i], bias, cols, work, family)
        if eta < 0:       # refused: a bug upstream, never silently continue
            raise RuntimeError(f"ADF inclusion of point {i} was refused")
        k = int(state.k[0])
        if verbose and (k % report == 0 or k == d):
            print(f"[{label}] included {k}/{d} (last: {i})")

    if selection == "random":
        for i in rng.permutation(n)[:d]:
            include(int(i), all_cols)
        return state

    kind = _SCORE_KIND[selection]
    scores = np.empty(n)
    if randomized is None:
        n_random, n_greedy = 0, d
    else:
        n_random = min(int(randomized["n_random"]), d)
        n_greedy = min(int(randomized["n_greedy"]), d - n_random)
    for i in rng.permutation(n)[:n_random]:
        include(int(i), all_cols)
    for _ in range(n_greedy):
        _scoring.compute_scores(kind, y, state.h, state.diag_A, bias, all_cols, scores)
        t = _scoring.select_best(scores, all_cols, state.is_active, tie_key)
        include(int(all_cols[t]), all_cols)
    if state.k[0] >= d:
        return state

    # randomized phase: selection index J of fixed size (seed 003 §3)
    size = int(randomized["size"])
    n_keep = int(np.floor(float(randomized["retain"]) * size))
    blocked = state.is_active.copy()
    if n_greedy > 0:
        # start from the best-scoring points of the last full scoring (recomputed: current)
        _scoring.compute_scores(kind, y, state.h, state.diag_A, bias, all_cols, scores)
        s = np.where(np.isnan(scores) | state.is_active, -np.inf, scores)
        best = np.argsort(-s, kind="stable")[:min(n_keep, n - int(state.k[0]))]
        J = best[~state.is_active[best]].astype(np.int64)
        blocked[J] = True
    else:
        J = np.empty(0, dtype=np.int64)
    J = np.concatenate([J, _random_fill(rng, blocked, size - J.size)])
    while state.k[0] < d:
        _adf.adf_catch_up(X, variance, lengthscale, bias_variance, *state, J, family)
        sc = _scoring.compute_scores(kind, y, state.h, state.diag_A, bias, J, scores[:J.size])
        t = _scoring.select_best(sc, J, state.is_active, tie_key)
        i = int(J[t])
        include(i, J)
        rest = np.delete(J, t)
        rest_s = np.delete(sc, t)
        if rest.size > n_keep:
            rest_s = np.where(np.isnan(rest_s), -np.inf, rest_s)
            keep = np.argsort(-rest_s, kind="stable")[:n_keep]
            blocked[np.delete(rest, keep)] = False
            rest = rest[keep]
        J = np.concatenate([rest, _random_fill(rng, blocked, size - rest.size)])
        if J.size == 0:
            break
    return state


def _fit_parallel_rows(n, n_active, selection, randomized):
    """Rows a fit on ``n`` training rows splits among threads (the thread policy's size,
    :meth:`IVMClassifier._parallel_rows`); parameters as given to the estimator.

    Its selection passes go parallel over the n rows only in the randomized scheme (the
    catch-up of J, at any n) or from :data:`~sparsegp._config.SCORING_PARALLEL_MIN_CANDIDATES`
    rows on (full-greedy scoring; the inclusion's append pass follows from
    :data:`~sparsegp._config.ADF_PARALLEL_MIN_WORK` / ``APPEND_WORK`` rows). Below that, a
    fit's only parallel regions are the kernel blocks against its d active rows (the
    validation grid's held-out predictions, the evidence), split over those d rows: returns
    d, so that an active set under the policy's ``PARALLEL_MIN_ROWS`` runs on one thread
    without a load probe. Unvalidated parameters give ``n`` (the fit raises on them).
    """
    randomized_scheme = selection != "random" and randomized not in (None, False)
    if (randomized_scheme or n >= _scoring.PARALLEL_MIN_CANDIDATES
            or _adf.APPEND_WORK * n >= _adf.PARALLEL_MIN_WORK):
        return n
    if isinstance(n_active, str):
        return min(AUTO_ACTIVE, n) if n_active == "auto" else n
    if isinstance(n_active, (int, np.integer)) and not isinstance(n_active, (bool, np.bool_)):
        return min(max(int(n_active), 1), n)
    return n
