"""Informative vector machine (Lawrence, Seeger and Herbrich, NIPS 2002; seed 003).

Greedy forward selection of an active set I of d points. Each inclusion is one ADF step with
the probit-with-bias likelihood (seed 003 eq. 2), done in O(n d) by the in-place core of
:mod:`sparsegp._numba.adf` (eq. 3); candidates are scored in O(1) each from their marginals
(eq. 4 and the information gain of notes §2.3). Predictions use eq. 5.

Design decisions (notes §2; where the paper leaves room they are documented here):

* Kernel k(x, x') = s2 g(|(x - x') / l|^2) + v_b (``bias_variance`` v_b, notes §2.7): by default
  the SE g(q) = exp(-q/2) built from ``variance``/``lengthscale``/``ard``; ``kernel=`` takes one
  stationary kernel (SE or Matérn 1/2, 3/2, 5/2, optionally times a constant) instead. Every
  kernel evaluation, the compiled ADF columns included, uses that kernel's family.
* ``bias="auto"`` is b = Phi^-1(n_+ / n), the *fraction* of positives (the paper says "ratio";
  the literal ratio n_+/n_- gives b = +inf on balanced data; the toolbox uses the fraction).
* Randomized greedy selection (seed 003 §3, notes §2.4): ``n_random`` uniform picks, then
  ``n_greedy`` full-greedy picks over every remaining point, then a selection index J of size
  ``size``: after each inclusion the ``floor(retain * size)`` best members of J by the scores
  of the selection just made (pre-inclusion scores; no extra work) are kept and J is refilled
  by uniform draws from the points outside I and J. Only the columns of M in J are kept
  current; the others are caught up lazily when they re-enter J.
* Ties between scores are broken by a random key per point (drawn once per selection from the
  estimator's Generator); NaN scores count as -inf; active points are never selected again.
* ``optimize=True`` interleaves selection and hyper-parameter fitting as Lawrence's toolbox
  does (notes §2.6): repeat ``max_iter`` times {select I from scratch with the current
  (s2, l); maximise the approximate marginal likelihood log N(m_I | 0, K_II + Pi_I^-1) over
  (s2, l) with I and the sites fixed}, then select once more with the final parameters.
  Parameters a given kernel holds "fixed" are left out of the optimisation; its other bounds
  constrain the L-BFGS-B run. The legacy arguments are optimised without bounds, as before.
* ``log_evidence_`` is that approximate marginal likelihood (notes §2.6, B-form, with the
  constant -d/2 log 2 pi) at the final active set and sites: the toolbox's "approximate log
  likelihood", NOT an EP evidence. Sites with p = 0 (points classified with certainty, whose
  Gaussian site is flat) are left out of it.
* More than two classes: one binary IVM per class c (c -> +1, rest -> -1, own bias), combined by
  the largest log P_c(y = +1 | x) (seed 003 §4, notes §2.8). ``predict_proba`` normalises the
  C probabilities P_c(y = +1 | x) to sum to one (the classifiers are not trained jointly, so
  this is a heuristic; the argmax is the paper's rule).
"""
from dataclasses import dataclass

import numpy as np
from scipy import linalg as sla
from scipy import special
from sklearn.base import ClassifierMixin

from .._base import SparseGPEstimator
from .._numba import adf as _adf
from .._numba import scoring as _scoring
from .._validation import (
    check_classes,
    check_int,
    check_option,
    check_random_state,
)
from .._numba.covfuncs import SE
from .. import kernels as _kernels
from ._binary import (
    _BinaryGPClassifierMixin,
    free_log_params,
    log_param_bounds,
    maximize_evidence,
)

__all__ = ["IVMClassifier"]

#: Defaults of the randomized greedy scheme: seed 003's MNIST settings (footnote 7).
RANDOMIZED_DEFAULTS = {"n_random": 2, "n_greedy": 198, "size": 500, "retain": 0.5}

#: Optimiser iterations per hyper-parameter refit when ``optimize=True`` (toolbox kernIters).
KERNEL_ITERS = 100

#: Test points per block in predictions (bounds the (d, block) temporaries).
_PREDICT_BLOCK = 2048

_SCORE_KIND = {"entropy": _scoring.SCORE_ENTROPY, "infogain": _scoring.SCORE_INFOGAIN}


@dataclass
class _BinaryIVM:
    """A fitted binary IVM: everything eq. 5 needs, plus the fit's summary."""

    active: np.ndarray       # (d,) int64, inclusion order
    X_active: np.ndarray     # (d, D)
    p: np.ndarray            # (d,) site precisions
    m: np.ndarray            # (d,) site means
    L: np.ndarray            # (d, d) lower, L L^T = I + S K_II S
    w: np.ndarray            # (d,) S B^-1 S m (eq. 5)
    variance: float
    lengthscale: np.ndarray  # (D,)
    bias_variance: float
    bias: float
    log_evidence: float
    n_iter: int
    family: int = SE         # stationary family code of sparsegp._numba.covfuncs
    kernel: object = None    # the fitted kernel object (StationarySpec.fitted)

    def latent(self, X):
        """(mean, var) of f* at the rows of X (eq. 5): O(d) mean, O(d^2) variance each."""
        S = np.sqrt(self.p)
        n = X.shape[0]
        mean = np.empty(n)
        var = np.empty(n)
        for start in range(0, n, _PREDICT_BLOCK):
            stop = min(n, start + _PREDICT_BLOCK)
            Kx = _kernels.kernel_matrix(self.X_active, X[start:stop], self.family,
                                        self.variance, self.lengthscale) + self.bias_variance
            mean[start:stop] = self.w @ Kx
            V = sla.solve_triangular(self.L, S[:, None] * Kx, lower=True, check_finite=False)
            var[start:stop] = self.variance + self.bias_variance - np.einsum("ij,ij->j", V, V)
        return mean, np.maximum(var, 0.0)

    def log_proba_positive(self, X):
        """log P(y = +1 | x) = log Phi((mu + b) / sqrt(1 + sigma^2)), shape (n,)."""
        mean, var = self.latent(X)
        return special.log_ndtr((mean + self.bias) / np.sqrt(1.0 + var))


# ------------------------------------------------------------------------------------------
# active-set selection


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


# ------------------------------------------------------------------------------------------
# approximate marginal likelihood (notes §2.6)


def approx_log_likelihood(X_active, p, m, variance, lengthscale, bias_variance, grad=False,
                          family=SE):
    """log N(m_I | 0, K_II + Pi_I^-1) in the B-form, optionally with its gradient.

    Parameters
    ----------
    X_active : ndarray of shape (d, D)
    p, m : ndarray of shape (d,)
        Site precisions (> 0; callers drop p = 0 sites) and means.
    variance : float
    lengthscale : ndarray of shape (D,)
    bias_variance : float
    grad : bool
    family : int, default=0
        Stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE).

    Returns
    -------
    value : float
        -1/2 log|B| + 1/2 sum log p - 1/2 m^T S B^-1 S m - d/2 log 2 pi, B = I + S K_II S.
    g_variance : float
        d value / d s2 (only if ``grad``).
    g_lengthscale : ndarray of shape (D,)
        d value / d l_j per dimension (only if ``grad``).
    """
    d = p.size
    S = np.sqrt(p)
    X_active = np.ascontiguousarray(X_active, dtype=np.float64)
    ls = np.ascontiguousarray(lengthscale, dtype=np.float64)
    Ks = _kernels.kernel_matrix(X_active, X_active, family, variance, ls)
    B = np.eye(d) + S[:, None] * (Ks + bias_variance) * S[None, :]
    L = np.linalg.cholesky(B)
    u = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    value = (-np.sum(np.log(np.diag(L))) + 0.5 * np.sum(np.log(p)) - 0.5 * u @ u
             - 0.5 * d * np.log(2.0 * np.pi))
    if not grad:
        return value
    w = S * sla.solve_triangular(L, u, lower=True, trans="T", check_finite=False)
    Linv_S = sla.solve_triangular(L, np.diag(S), lower=True, check_finite=False)
    C = Linv_S.T @ Linv_S                         # S B^-1 S
    W = 0.5 * (np.outer(w, w) - C)                # dvalue/dK_II (notes §2.6)
    g_variance = float(np.sum(W * Ks)) / variance
    g_ls, _ = _kernels.grad_contract(X_active, X_active, Ks, W, family, variance, ls,
                                     symmetric=True)
    return value, g_variance, g_ls


def _finish(X, state, variance, lengthscale, bias_variance, bias, n_iter, spec):
    active, p, m, L = _adf.active_sites(state)
    S = np.sqrt(p)
    u = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    w = S * sla.solve_triangular(L, u, lower=True, trans="T", check_finite=False)
    X_active = X[active].copy()
    keep = p > 0
    log_ev = float(approx_log_likelihood(X_active[keep], p[keep], m[keep], variance,
                                         lengthscale, bias_variance, family=spec.family)
                   ) if keep.any() else 0.0
    return _BinaryIVM(active, X_active, p, m, L, w, float(variance), lengthscale.copy(),
                      float(bias_variance), float(bias), log_ev, n_iter, spec.family,
                      spec.fitted(variance, lengthscale))


def _fit_binary(X, y, spec, bias_variance, bias, opts, rng, label):
    """Select (and optionally optimise) one binary IVM; ``y`` in {-1, +1}.

    ``spec`` (:class:`sparsegp.kernels.StationarySpec`) gives the family and the starting
    (s2, l); its "fixed" parameters stay at their values.
    """
    family = spec.family
    variance, lengthscale = spec.variance, spec.lengthscale.copy()
    select = dict(n_active=opts["n_active"], selection=opts["selection"],
                  randomized=opts["randomized"], verbose=opts["verbose"], label=label,
                  family=family)
    D = X.shape[1]
    ard = spec.ard
    # theta = [log s2, log l (1 or D)]; the optimiser sees only the free entries (all of them
    # for the legacy arguments, so that path is the unconstrained fit it always was)
    free = free_log_params(spec, D)
    lims = log_param_bounds(spec, D)[free]
    # a given kernel's bounds go to L-BFGS-B; the legacy arguments have none (None: the
    # unconstrained run it always was)
    bounds = [tuple(b) for b in lims] if np.isfinite(lims).any() else None
    n_iter = 0
    if opts["optimize"] and free.any():
        for it in range(opts["max_iter"]):
            state = select_active_set(X, y, variance, lengthscale, bias_variance, bias,
                                      rng=rng, **select)
            active, p, m, _ = _adf.active_sites(state)
            keep = p > 0
            Xa, pa, ma = X[active[keep]], p[keep], m[keep]

            full0 = np.concatenate([[np.log(variance)],
                                    np.log(lengthscale) if ard else [np.log(lengthscale[0])]])

            def evaluate(x, warm, Xa=Xa, pa=pa, ma=ma, full0=full0):
                theta = full0.copy()
                theta[free] = x
                s2 = float(np.exp(theta[0]))
                ls = np.exp(theta[1:]) if ard else np.full(D, np.exp(theta[1]))
                v, gv, gl = approx_log_likelihood(Xa, pa, ma, s2, ls, bias_variance, True,
                                                  family)
                g_log_ls = gl * ls if ard else np.array([np.sum(gl) * ls[0]])
                return v, np.concatenate([[gv * s2], g_log_ls])[free], None

            if pa.size == 0:
                break
            theta0 = full0[free]
            res = maximize_evidence(evaluate, theta0, optimizer="lbfgs", max_iter=KERNEL_ITERS,
                                    rng=rng, n_log_params=theta0.size,
                                    verbose=opts["verbose"], label=f"{label} kernel",
                                    bounds=bounds)
            theta = full0.copy()
            theta[free] = res.theta
            variance = float(np.exp(theta[0]))
            lengthscale = (np.exp(theta[1:]) if ard
                           else np.full(D, np.exp(theta[1])))
            n_iter = it + 1
            if opts["verbose"]:
                print(f"[{label}] round {it + 1}/{opts['max_iter']}: approx. log likelihood "
                      f"{res.log_evidence:.4f}, variance {variance:.4g}, lengthscale "
                      f"{np.array2string(lengthscale[:4], precision=4)}")
    state = select_active_set(X, y, variance, lengthscale, bias_variance, bias, rng=rng,
                              **select)
    return _finish(X, state, variance, lengthscale, bias_variance, bias, n_iter, spec)


# ------------------------------------------------------------------------------------------
# estimator


class IVMClassifier(_BinaryGPClassifierMixin, ClassifierMixin, SparseGPEstimator):
    """Informative vector machine: sparse GP classification by greedy ADF inclusions.

    Implements seed 003 (Lawrence, Seeger and Herbrich, 2002): probit likelihood with bias,
    Phi(y (f + b)); the active set is grown one point at a time by the differential-entropy
    (or information-gain, or random) criterion; training costs O(n d^2) time and O(n d) memory,
    prediction O(d) for the mean and O(d^2) for the variance.

    Parameters
    ----------
    n_active : int, default=100
        Active-set size d (1 <= d <= number of training points).
    selection : {"entropy", "infogain", "random"}, default="entropy"
        Score of a candidate j: differential entropy -1/2 log(1 - a_jj nu_j) (seed 003 eq. 4),
        information gain KL(Q_new || Q) (notes §2.3), or uniform random choice.
    randomized : None, bool or dict, default=None
        None/False: full greedy selection (every remaining point is scored at every step).
        True: the randomized greedy scheme of seed 003 §3 with its MNIST settings
        ``{"n_random": 2, "n_greedy": 198, "size": 500, "retain": 0.5}``; a dict overrides any
        of these keys. Ignored for ``selection="random"``.
    kernel : None or kernel object, default=None
        The covariance (without ``bias_variance``): one stationary kernel of
        :mod:`sparsegp.kernels` (``SquaredExponential``, ``Matern`` with nu 0.5/1.5/2.5),
        optionally times a constant, or scikit-learn's ``ConstantKernel() * RBF()`` /
        ``ConstantKernel() * Matern(nu=...)``. Its values start the optimisation, which keeps
        to its bounds; parameters with "fixed" bounds are not optimised. None: the SE
        kernel of ``variance``, ``lengthscale`` and ``ard``, which must then keep their
        defaults if a kernel is given. Never modified.
    lengthscale : float or array-like of shape (n_features,), default=1.0
        SE length-scale(s) l (one per feature requires ``ard=True``); only with
        ``kernel=None``.
    variance : float, default=1.0
        SE signal variance s2; only with ``kernel=None``.
    ard : bool, default=False
        One length-scale per input dimension; only with ``kernel=None``.
    bias : float or "auto", default=0.0
        Probit bias b; "auto" = Phi^-1(fraction of positive training labels) per binary task
        (seed 003 §4, notes §2.7).
    bias_variance : float, default=0.0
        Constant v_b >= 0 added to the kernel (prior variance of a random offset; seed 003
        used 0.1 with ``bias="auto"`` on MNIST).
    optimize : bool, default=False
        Fit (variance, lengthscale) by the IVM's approximate marginal likelihood, interleaved
        with active-set selection (notes §2.6); ``bias`` and ``bias_variance`` stay fixed.
    max_iter : int, default=8
        Rounds of {select, refit kernel parameters} when ``optimize=True`` (a final selection
        follows); each refit runs up to ``KERNEL_ITERS`` (100) L-BFGS iterations.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the random picks and the tie-breaking keys.
    verbose : bool, default=False
        Print selection progress and optimiser rounds.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    active_set_ : ndarray of shape (n_active,) or list of them
        Training indices of the active set in order of inclusion (binary); for more than two
        classes a list with one array per class (task classes_[c] against the rest).
    site_precision_, site_mean_ : ndarray of shape (n_active,) or list of them
        Site parameters p_i, m_i of the active points, in inclusion order.
    log_evidence_ : float or ndarray of shape (n_classes,)
        Approximate marginal likelihood log N(m_I | 0, K_II + Pi_I^-1) (notes §2.6) at the final
        active set; NOT an EP evidence (see seed 000 §4 for why it is not a proper one).
    lengthscale_ : float, ndarray of shape (n_features,), or per class (n_classes, ...)
    variance_ : float or ndarray of shape (n_classes,)
    kernel_ : kernel object or list of kernel objects
        The covariance at the fitted (s2, l) (``bias_variance`` not included), of the same
        type as ``kernel`` (our SquaredExponential for ``kernel=None``; scikit-learn kernels
        come back as their :mod:`sparsegp.kernels` equivalent). For more than two classes a
        list of n_classes kernels, entry c that of the IVM of classes_[c] against the rest
        (each task fits its own (s2, l)).
    bias_ : float or ndarray of shape (n_classes,)
        The bias b used (after "auto").
    n_iter_ : int or ndarray of shape (n_classes,)
        Hyper-parameter rounds run (0 unless ``optimize``).

    References
    ----------
    N. D. Lawrence, M. Seeger, R. Herbrich. Fast sparse Gaussian process methods: the
    informative vector machine. NIPS 15, 2002.

    Examples
    --------
    >>> from sparsegp.datasets import make_xor
    >>> X, y = make_xor(200, random_state=0)
    >>> clf = IVMClassifier(n_active=40, random_state=0).fit(X, y)
    >>> clf.active_set_.shape
    (40,)
    """

    # the mixin contributes input checks for prediction only; fit, predict_* are our own

    _expected_failed_checks = {
        "check_non_transformer_estimators_n_iter": (
            "max_iter bounds the optional rounds of kernel refits (optimize=True); without "
            "optimisation no round runs and n_iter_ is 0 by definition"),
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True     # one IVM per class against the rest
        return tags

    def __init__(self, n_active=100, selection="entropy", randomized=None, kernel=None,
                 lengthscale=1.0, variance=1.0, ard=False, bias=0.0, bias_variance=0.0,
                 optimize=False, max_iter=8, random_state=None, verbose=False):
        self.n_active = n_active
        self.selection = selection
        self.randomized = randomized
        self.kernel = kernel
        self.lengthscale = lengthscale
        self.variance = variance
        self.ard = ard
        self.bias = bias
        self.bias_variance = bias_variance
        self.optimize = optimize
        self.max_iter = max_iter
        self.random_state = random_state
        self.verbose = verbose

    # -- validation ------------------------------------------------------------------------

    def _validate(self, X, y):
        X, y = self._validate_fit_data(X, y, classifier=True)
        n, D = X.shape
        classes, y_index = check_classes(y)
        if isinstance(self.n_active, (bool, np.bool_)) or not isinstance(
                self.n_active, (int, np.integer)):
            raise ValueError(f"n_active must be an integer; got {self.n_active!r}")
        if not 1 <= int(self.n_active) <= n:
            raise ValueError(
                f"n_active must be between 1 and the number of training points ({n}); got "
                f"{self.n_active}"
            )
        selection = check_option(self.selection, "selection", ("entropy", "infogain", "random"))
        randomized = self._check_randomized()
        spec = _kernels.kernel_spec(self.kernel, self.variance, self.lengthscale, self.ard, D,
                                    type(self).__name__)
        bias = self.bias
        if isinstance(bias, str):
            if bias != "auto":
                raise ValueError(f"bias must be a finite number or 'auto'; got {bias!r}")
        elif (isinstance(bias, (bool, np.bool_)) or not np.isscalar(bias)
              or not np.isfinite(float(bias))):
            raise ValueError(f"bias must be a finite number or 'auto'; got {bias!r}")
        vb = self.bias_variance
        if (isinstance(vb, (bool, np.bool_)) or not np.isscalar(vb)
                or not np.isfinite(float(vb)) or float(vb) < 0):
            raise ValueError(f"bias_variance must be a finite number >= 0; got {vb!r}")
        if not isinstance(self.optimize, (bool, np.bool_)):
            raise ValueError(f"optimize must be True or False; got {self.optimize!r}")
        max_iter = check_int(self.max_iter, "max_iter", minimum=1)
        if not isinstance(self.verbose, (bool, np.bool_, int, np.integer)):
            raise ValueError(f"verbose must be a bool; got {self.verbose!r}")
        rng = check_random_state(self.random_state)
        opts = dict(n_active=int(self.n_active), selection=selection, randomized=randomized,
                    optimize=bool(self.optimize), max_iter=max_iter,
                    verbose=bool(self.verbose))
        return X, classes, y_index, spec, float(vb), opts, rng

    def _check_randomized(self):
        r = self.randomized
        if r is None or r is False:
            return None
        if r is True:
            return dict(RANDOMIZED_DEFAULTS)
        if not isinstance(r, dict):
            raise ValueError(f"randomized must be None, a bool or a dict; got {r!r}")
        unknown = set(r) - set(RANDOMIZED_DEFAULTS)
        if unknown:
            raise ValueError(
                f"randomized has unknown keys {sorted(unknown)}; valid keys are "
                f"{sorted(RANDOMIZED_DEFAULTS)}"
            )
        out = {**RANDOMIZED_DEFAULTS, **r}
        for key in ("n_random", "n_greedy"):
            out[key] = check_int(out[key], f"randomized[{key!r}]", minimum=0)
        out["size"] = check_int(out["size"], "randomized['size']", minimum=1)
        retain = out["retain"]
        if isinstance(retain, (bool, np.bool_)) or not np.isscalar(retain) \
                or not 0.0 <= float(retain) <= 1.0:
            raise ValueError(f"randomized['retain'] must be in [0, 1]; got {retain!r}")
        out["retain"] = float(retain)
        return out

    # -- fit -------------------------------------------------------------------------------

    def fit(self, X, y):
        """Select the active set(s) (and fit hyper-parameters if ``optimize``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two or more classes; more than two trains one IVM per class against the rest.

        Returns
        -------
        self : IVMClassifier
        """
        X, classes, y_index, spec, vb, opts, rng = self._validate(X, y)
        self.classes_ = classes
        tasks = [1] if classes.size == 2 else list(range(classes.size))
        models = []
        for c in tasks:
            y_pm = np.where(y_index == c, 1.0, -1.0)
            if self.bias == "auto":
                bias = float(special.ndtri(np.mean(y_pm > 0)))
            else:
                bias = float(self.bias)
            label = "IVM" if len(tasks) == 1 else f"IVM {classes[c]!r} vs rest"
            models.append(_fit_binary(X, y_pm, spec, vb, bias, opts, rng, label))
        self.models_ = models
        self._ard = bool(spec.ard)
        self._set_attributes()
        return self

    def _set_attributes(self):
        ms = self.models_

        def ls_of(mod):
            return mod.lengthscale.copy() if self._ard else float(mod.lengthscale[0])

        if len(ms) == 1:
            mod = ms[0]
            self.active_set_ = mod.active.copy()
            self.site_precision_ = mod.p.copy()
            self.site_mean_ = mod.m.copy()
            self.log_evidence_ = mod.log_evidence
            self.lengthscale_ = ls_of(mod)
            self.variance_ = mod.variance
            self.kernel_ = mod.kernel
            self.bias_ = mod.bias
            self.n_iter_ = mod.n_iter
        else:
            self.active_set_ = [mod.active.copy() for mod in ms]
            self.site_precision_ = [mod.p.copy() for mod in ms]
            self.site_mean_ = [mod.m.copy() for mod in ms]
            self.log_evidence_ = np.array([mod.log_evidence for mod in ms])
            self.lengthscale_ = np.array([ls_of(mod) for mod in ms])
            self.variance_ = np.array([mod.variance for mod in ms])
            self.kernel_ = [mod.kernel for mod in ms]
            self.bias_ = np.array([mod.bias for mod in ms])
            self.n_iter_ = np.array([mod.n_iter for mod in ms])

    # -- prediction ------------------------------------------------------------------------

    def predict_latent(self, X):
        """Mean and variance of the latent f* (bias excluded), seed 003 eq. 5.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        mean, var : ndarray of shape (n_samples,), or (n_samples, n_classes) for more than
            two classes (column c: the IVM of classes_[c] against the rest).
        """
        X = self._check_predict_input(X)
        out = [mod.latent(X) for mod in self.models_]
        if len(out) == 1:
            return out[0]
        return (np.column_stack([o[0] for o in out]), np.column_stack([o[1] for o in out]))

    def decision_function(self, X):
        """Binary: probit argument (mu + b) / sqrt(1 + sigma^2), shape (n_samples,), positive
        -> classes_[1]. Multi-class: log P_c(y = +1 | x), shape (n_samples, n_classes)."""
        X = self._check_predict_input(X)
        if len(self.models_) == 1:
            mod = self.models_[0]
            mean, var = mod.latent(X)
            return (mean + mod.bias) / np.sqrt(1.0 + var)
        return np.column_stack([mod.log_proba_positive(X) for mod in self.models_])

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, n_classes), columns ordered as ``classes_``.

        Multi-class: P_c(y = +1 | x) of each c-against-rest IVM, normalised over c.
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            return np.column_stack([special.ndtr(-d), special.ndtr(d)])
        # normalise in log space: a row of tiny probabilities must not become 0/0
        d = d - d.max(axis=1, keepdims=True)
        P = np.exp(d)
        return P / P.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Class of each row of X: sign(mu + b) (binary) or argmax_c log P_c(y = +1 | x)."""
        d = self.decision_function(X)
        if d.ndim == 1:
            return self.classes_[(d > 0).astype(np.int64)]
        return self.classes_[np.argmax(d, axis=1)]
