"""The stagewise classifier's inner loop (Algorithm 1, steps 2-5 of seed 004): the basis vectors
and their sites.

From the prior, ``d_max`` basis vectors are added one at a time through the ADF core of the IVM
(:mod:`sparsegp._numba.adf`, notes §2.2). Each is chosen by one of the selection rules of
:class:`~sparsegp.classification._stagewise.StagewiseGPClassifier` (a working set scored by the
look-ahead of :mod:`sparsegp._numba.stagewise`, or the IVM scores of
:mod:`sparsegp._numba.scoring`), and its site is set by moment matching (eq. 2) or by minimising
the selection loss over the site parameters (notes §3.4, :func:`_optimise_site`). Each class
keeps a reserve of non-active points (:func:`class_reserve`) so that eq. 4 sees both classes.
Used by the estimator (:mod:`sparsegp.classification._stagewise`), whose outer loop then fits the
hyper-parameters on eq. 4 (:mod:`sparsegp.classification._stagewise_eq4`).
"""
import math

import numpy as np
from scipy import optimize

from .._numba import adf as _adf
from .._numba import scoring as _scoring
from .._numba import stagewise as _sw
from .._numba.covfuncs import SE

#: Of each class, the inner loop leaves at least this fraction of its share of the non-active
#: set, (n - d_max) n_c / n, out of the active set (:func:`class_reserve`)
RESERVE_FRACTION = 0.5
#: Bounds on tau = log p for the site optimisation: p in [e^-25, e^25]. The paper's problem
#: is unconstrained above when eta~ A_jj >= 1; the cap only keeps the optimiser finite.
TAU_MIN, TAU_MAX = -25.0, 25.0
#: Iteration budget of one site optimisation (the paper bounds the evaluations, §5).
SITE_MAXITER = 50


def _inner_loop(X, y, state, d_max, selection, kappa, site_update, s2, ls, b, rng,
                family=SE, bias_variance=0.0):
    """One inner loop from the prior; returns (active, p, m, NLP_a after each inclusion).

    ``family`` is the stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE) of
    the kernel s2 g(q) + v_b (``bias_variance``) whose ADF columns the loop computes.
    """
    n = X.shape[0]
    _adf.reset_state(state, s2, bias_variance)
    cols = np.arange(n, dtype=np.int64)
    # every column stays up to date (cols = all points), so the core's BLAS column path applies
    Xs, sq_norms = _adf.scaled_inputs(X, ls)
    use_set = selection in ("adaptive", "random", "validation")
    validation = selection == "validation"
    kmax = min(kappa, n) if use_set else 1
    kt = np.empty((kmax, n))
    nlp = np.empty(kmax)
    alpha = np.empty(kmax)
    nu = np.empty(kmax)
    keys = np.empty(n)
    J = np.empty(kmax, dtype=np.int64)
    scores = np.empty(n)
    # loss weights: eq. 5 sums over every point; eq. 4 over the non-active set (updated below)
    weights = np.ones(n)
    ones = np.ones(n)
    trace = np.empty(d_max)
    kind = _scoring.SCORE_ENTROPY if selection == "entropy" else _scoring.SCORE_INFOGAIN
    reserve = class_reserve(y, d_max)
    # non-active points of each class ({-1, +1} at positions 0, 1), and the candidates a rule
    # may choose: the non-active points of the classes above their reserve
    left = np.array([np.sum(y < 0), np.sum(y > 0)])
    blocked = np.zeros(n, dtype=bool)
    for side, label in enumerate((-1.0, 1.0)):
        if left[side] <= reserve[side]:      # a class of one point, kept whole for eq. 4
            blocked[y == label] = True
    for t in range(d_max):
        n_free = n - t
        # eq. 4 after including a candidate averages over the n_free - 1 others
        norm = float(max(n_free - 1, 1)) if validation else float(n)
        if use_set:
            E = rng.standard_exponential(n)
            _sw.sampling_keys(state.diag_A, state.h, y, b, blocked, E,
                              selection == "adaptive", keys)
            found = _sw.smallest_keys(keys, min(kappa, n_free), J)
            Jc = J[:found]
            _adf.cov_columns_blas(Xs, sq_norms, s2, bias_variance, state, Jc, kt, family)
            _sw.lookahead_moment(Jc, kt, state.diag_A, state.h, y, b, weights, validation,
                                 nlp, alpha, nu)
            losses = nlp[:found] / norm
            if site_update == "optimize" and not validation:
                sites = [_optimise_site(state, y, b, weights, norm, kt[c], Jc[c], -1)
                         for c in range(found)]
                losses = np.array([s[2] for s in sites])
            c = int(np.argmin(losses))
            j = int(Jc[c])
            if site_update == "optimize" and not validation:
                p_j, m_j = sites[c][:2]
            elif site_update == "optimize":
                p_j, m_j, _ = _optimise_site(state, y, b, weights, norm, kt[c], j, j)
            else:
                p_j, m_j = _adf.probit_site(y[j], state.h[j], state.diag_A[j], b)[:2]
            col = kt[c]
        else:
            _scoring.compute_scores(kind, y, state.h, state.diag_A, b, cols, scores)
            c = _scoring.select_best(scores, cols, blocked, rng.random(n))
            j = int(cols[c])
            col = kt[0]
            _adf.cov_column_blas(Xs, sq_norms, s2, bias_variance, state, j, col, family)
            if site_update == "optimize":
                p_j, m_j, _ = _optimise_site(state, y, b, weights, norm, col, j, -1)
            else:
                p_j, m_j = _adf.probit_site(y[j], state.h[j], state.diag_A[j], b)[:2]
        eta, _ = _adf.adf_include_column(*state, j, p_j, m_j, col, cols)
        if eta < 0:  # pragma: no cover - the core refused: a bug, not a user error
            raise RuntimeError(f"ADF core refused to include point {j} (p={p_j}, m={m_j})")
        if validation:
            weights[j] = 0.0
        blocked[j] = True
        side = int(y[j] > 0)
        left[side] -= 1
        if left[side] <= reserve[side]:
            blocked[y == y[j]] = True
        if use_set and not validation and site_update == "moment":
            trace[t] = losses[c]     # the look-ahead already is NLP_a after this inclusion
        else:
            trace[t] = _sw.weighted_nlp(y, state.h, state.diag_A, b, ones) / n
    k = int(state.k[0])
    return (state.active[:k].copy(), state.sqrt_p[:k] ** 2, state.site_mean[:k].copy(), trace)


def class_reserve(y, d_max):
    """How many points of each class the inner loop keeps out of the active set.

    Eq. 4 fits the hyper-parameters (the bias among them) to the non-active points alone.
    Adaptive sampling (eq. 11) prefers badly predicted points, often those of one class, and
    can take every point of that class into the active set; eq. 4 over one class is then
    minimised by a bias that predicts that class everywhere, and the outer loop keeps that
    model, its NLP near 0, as the best: a constant predictor (issue 49). Keeping
    ``RESERVE_FRACTION`` of each class's share of the n - d_max non-active points, and at
    least one point of each class, keeps both classes in eq. 4. A share rounds to none for a
    class of a few points among a few rows (fuzz problems of 4-44 rows collapsed so); when
    the non-active set has no room for one point of each (d_max = n - 1), the shares alone
    are kept. Either way the reserves fit in the non-active set, so the selection always
    has a candidate.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    d_max : int
        Active-set size.

    Returns
    -------
    reserve : ndarray of shape (2,), int
        For the labels -1 and +1, in that order.
    """
    n = y.shape[0]
    counts = np.array([np.sum(y < 0), np.sum(y > 0)])
    share = np.floor(RESERVE_FRACTION * counts * (n - d_max) / n).astype(np.int64)
    at_least_one = np.maximum(share, np.minimum(counts, 1))
    return at_least_one if at_least_one.sum() <= n - d_max else share


def _optimise_site(state, y, b, weights, norm, col, j, skip):
    """Minimise the selection loss over (alpha~_j, tau_j = log p_j) (notes §3.4).

    eta_j = p_j / (1 + p_j A_jj) <= eta~_j keeps diag A non-negative: unconstrained in tau when
    eta~_j A_jj >= 1, else tau <= log(eta~_j / (1 - eta~_j A_jj)). Started from the moment
    matched site; the start is kept if the optimiser does not improve on it.

    Returns
    -------
    p_j, m_j : float
        The site in the (p, m) parameters of eq. 1 (m_j = f_hat_j + alpha~_j / eta_j).
    loss : float
        The selection loss at that site (divided by ``norm``).
    """
    a = float(state.diag_A[j])
    h_j = float(state.h[j])
    eta_t = _sw.eta_upper_bound(state.diag_A, col)
    tau_hi = TAU_MAX
    if eta_t * a < 1.0:
        # p <= eta~ / (1 - eta~ a) (notes §3.4); a hair inside so round-off cannot cross it
        tau_hi = min(TAU_MAX, math.log(eta_t / (1.0 - eta_t * a)) - 1e-12)
    p0, _, alpha0, _, _ = _adf.probit_site(y[j], h_j, a, b)
    tau0 = min(max(math.log(p0) if p0 > 0 else TAU_MIN, TAU_MIN), tau_hi)
    x0 = np.array([alpha0, tau0])

    def fun(x):
        f, ga, gt = _sw.site_objective(y, state.h, state.diag_A, b, weights, col, a,
                                       x[0], x[1], skip)
        return f / norm, np.array([ga, gt]) / norm

    f0 = fun(x0)[0]
    res = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B",
                            bounds=[(None, None), (TAU_MIN, tau_hi)],
                            options={"maxiter": SITE_MAXITER})
    x, f = (res.x, float(res.fun)) if np.isfinite(res.fun) and res.fun < f0 else (x0, f0)
    p = math.exp(x[1])
    eta = p / (1.0 + p * a)
    return p, h_j + x[0] / eta, f
