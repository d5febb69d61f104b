"""Additive-model (stagewise) sparse GP classifier of Sundararajan & Shevade (seed 004).

Algorithm 1 of the paper: an inner loop adds ``d_max`` basis vectors one at a time through the
ADF core of the IVM (:mod:`sparsegp._numba.adf`, notes §2.2), choosing each by one of

* ``"adaptive"``: a working set J of kappa points drawn from chi_j of eq. 11, the one with the
  smallest look-ahead NLP_a of eq. 5 included (eq. 10);
* ``"random"``: the same with J drawn uniformly;
* ``"validation"``: Shevade & Sundararajan (2009), kappa = 59 uniform candidates scored by the
  NLP of eq. 4 over the non-active set after the inclusion (notes §3.5);
* ``"entropy"`` / ``"infogain"``: the IVM scores over every non-active point (notes §2.3, §3.6);

and setting its site either by moment matching (eq. 2) or by minimising the selection loss over
the site parameters (notes §3.4). The outer loop re-estimates the hyper-parameters by conjugate
gradients on the NLP of eq. 4 with the active set and the sites fixed (gradient in O(n d^2),
notes §3.7) and keeps the best model by NLP.

The covariance is one stationary kernel k = s2 g(|(x - x') / l|^2): by default the isotropic SE
kernel from a start that follows the data, or any kernel given as ``kernel=`` (SE, Matérn 1/2,
3/2, 5/2, optionally times a constant). Its family code (:mod:`sparsegp._numba.covfuncs`) reaches
every kernel evaluation: the ADF columns of the inner loop, eq. 4 and its gradient, and the
predictions.
"""
import math

import numpy as np
from scipy import linalg as sla
from scipy import optimize
from scipy.spatial.distance import cdist
from sklearn.base import ClassifierMixin

from .._base import SparseGPEstimator
from .._validation import (
    check_binary_labels,
    check_int,
    check_optimizer,
    check_option,
    check_random_state,
    check_size,
    plain,
)
from .._numba import adf as _adf
from .._numba import scoring as _scoring
from .._numba import stagewise as _sw
from .._numba import covfuncs as _cf
from .._numba.covfuncs import SE
from .._numba.probit import inv_mills_vec, log_ndtr_vec
from ..kernels import grad_contract, kernel_matrix, kernel_spec
from .._optimize import kernel_log_bounds, maximize, unbounded, warn_at_bounds
from ._binary import (
    OPTIMIZER_NAMES,
    OPTIMIZER_RENAMED,
    _BinaryGPClassifierMixin,
    pack_theta,
    theta_gradient,
    theta_to_model,
    unpack_theta,
)

__all__ = ["StagewiseGPClassifier"]

#: the number of basis vectors ``d_max="auto"`` asks for, capped at half the rows (the paper
#: asks for d_max << n "to avoid any overfitting", §3: eq. 4 learns the hyper-parameters on the
#: non-active set only)
AUTO_D_MAX = 80
#: Of each class, the inner loop leaves at least this fraction of its share of the non-active
#: set, (n - d_max) n_c / n, out of the active set (:func:`class_reserve`)
RESERVE_FRACTION = 0.5
SELECTIONS = ("adaptive", "random", "validation", "entropy", "infogain")
SITE_UPDATES = ("moment", "optimize")
#: Working-set size used by the validation rule when ``kappa`` is None (notes §3.5).
VALIDATION_KAPPA = 59
#: Bounds on tau = log p for the site optimisation: p in [e^-25, e^25]. The paper's problem
#: is unconstrained above when eta~ A_jj >= 1; the cap only keeps the optimiser finite.
TAU_MIN, TAU_MAX = -25.0, 25.0
#: Iteration budget of one site optimisation (the paper bounds the evaluations, §5).
SITE_MAXITER = 50
#: Optimiser (CG) iterations per outer iteration on the NLP of eq. 4 (not stated in the paper;
#: notes §3.7).
CG_MAXITER = 20
#: Natural bounds of the default covariance's variance and length-scale, in model units
#: (standardised inputs). With the sites fixed, eq. 4 can keep improving along s2 -> inf (the
#: kernel tends to a polynomial interpolant of the site means): unbounded, the first CG run
#: ended at s2 ~ e^21 on a 60-point set, predictions lost their digits to s2 - |V|^2, and the
#: next inner loop's choices, hence the fit, changed under a relative 1e-9 change of X.
DEFAULT_BOUNDS = (1e-3, 1e3)
#: What the warning for a kept model on the default box suggests.
BOUND_ADVICE = ("pass a kernel with wider bounds (the default covariance's box is "
                f"[{DEFAULT_BOUNDS[0]:g}, {DEFAULT_BOUNDS[1]:g}], the length-scale in standard "
                "deviations of each feature) or with the parameter fixed, or more basis "
                "vectors (d_max); a length-scale on its upper bound or a variance on its lower "
                "one is a nearly constant function: check that y depends on X")


class StagewiseGPClassifier(_BinaryGPClassifierMixin, ClassifierMixin, SparseGPEstimator):
    """Sparse GP classifier built as a forward stagewise additive model (seed 004).

    Parameters
    ----------
    d_max : int or "auto", default="auto"
        Number of basis vectors (active-set size), smaller than the number of training
        points (the NLP of eq. 4 needs a non-active point). ``"auto"``: 80, or half the
        number of training points (rounded down) when that is smaller: eq. 4 learns the
        hyper-parameters on the non-active points alone, and with one or a few of them left
        (d_max = n - 1 was the rule before) it is minimised by the bias alone, giving a
        constant predictor.
    selection : {"adaptive", "random", "validation", "entropy", "infogain"}, default="adaptive"
        Basis-vector selection rule (see the module docstring).
    kappa : int or None, default=None
        Working-set size for ``"adaptive"``, ``"random"`` and ``"validation"``; None means 2
        (59 for ``"validation"``). Values above the number of non-active points are clipped.
        Ignored by ``"entropy"`` and ``"infogain"``.
    site_update : {"moment", "optimize"}, default="moment"
        ``"moment"``: ADF moment matching (eq. 2). ``"optimize"``: minimise the selection loss
        over (alpha~_j, tau_j = log p_j) subject to eta_j <= eta~_j (notes §3.4); for the
        working-set rules every member of J is optimised before the choice (paper §3), for
        the other rules only the chosen point.
    kernel : None or kernel object, default=None
        The covariance: one stationary kernel of :mod:`sparsegp.kernels`
        (``SquaredExponential``, ``Matern`` with nu 0.5/1.5/2.5), optionally times a constant,
        or scikit-learn's ``ConstantKernel() * RBF()`` / ``ConstantKernel() * Matern(nu=...)``.
        Its values are the initial hyper-parameters; parameters with "fixed" bounds are not
        optimised, and the others stay within their bounds (the CG of Algorithm 1 sees eq. 4
        at the clipped point). None: the isotropic SE kernel with variance 1 on standardised
        inputs, from length-scale ``sparsegp._scaling.start_lengthscale(D)`` (1.0, or
        sqrt(D / 21) beyond 21 features) standard deviations of each feature, so that the
        fit does not depend on the units of any
        column (an ARD kernel from the data: ``SquaredExponential(lengthscale=X.std(axis=0))``),
        variance and length-scale within ``DEFAULT_BOUNDS`` = (1e-3, 1e3) (standard
        deviations for the length-scale), since eq. 4 with the sites fixed may keep improving
        as s2 grows without end. When the kept model's length-scale ends on a bound of this
        box, or its variance on the lower one, a
        :class:`~sparsegp.exceptions.ConvergenceWarning` names it and what to try (the
        variance's ceiling is the guard just described, reached by design; a box the user
        gave is the user's model). Never modified. The fit
        runs on centred, scaled inputs (:mod:`sparsegp._scaling`: per feature for an ARD
        kernel and for the default, one common scale for an isotropic kernel the user gave)
        and reports in the user's units.
    bias : float, default=0.0
        Initial probit bias b: p(y = +1 | f) = Phi(f + b).
    max_iter : int, default=20
        iter_max of Algorithm 1: outer iterations, each an inner loop followed by a
        hyper-parameter update.
    tol : float, default=1e-4
        Stop the outer loop when the NLP of eq. 4 changes by less than this.
    optimizer : {"cg", "lbfgs"} or None, default="cg"
        How each outer iteration re-estimates the hyper-parameters on the NLP of eq. 4 (up
        to ``CG_MAXITER`` iterations, through :func:`sparsegp._optimize.maximize`): nonlinear
        conjugate gradients (notes §3.7) or L-BFGS-B. None holds them fixed: the inner loop
        runs once at the given values.
        The names are those of one vocabulary across the estimators (README, table
        "optimizer and max_iter"); "l-bfgs-b", the old spelling of "lbfgs", is
        accepted in this release only, with a ``FutureWarning``.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the working sets and tie breaks.
    verbose : bool, default=False
        Print the NLP after every outer iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
    active_set_ : ndarray of shape (d_max,)
        Training indices of the basis vectors, in inclusion order.
    basis_vectors_ : ndarray of shape (d_max, n_features)
        Their inputs.
    site_precision_ : ndarray of shape (d_max,)
        p_j of the basis vectors.
    site_mean_ : ndarray of shape (d_max,)
        m_j of the basis vectors.
    variance_, lengthscale_, bias_ : float, float or ndarray, float
        Hyper-parameters of the kept model; length-scales in the units of X, except the
        default covariance's one length-scale, in standard deviations of each feature.
    kernel_ : kernel object
        The covariance at the kept (s2, l) in the units of X, of the same type as ``kernel``
        (our SquaredExponential for ``kernel=None``, with one length-scale per feature:
        ``lengthscale_`` times that feature's standard deviation; scikit-learn kernels come
        back as their :mod:`sparsegp.kernels` equivalent).
    nlp_history_ : list of float
        NLP of eq. 4 after every outer iteration (the kept model has the smallest).
    inner_nlp_ : ndarray of shape (d_max,)
        Training NLP_a (eq. 5) after each inclusion of the kept model's inner loop (at the
        hyper-parameters that loop ran with).
    theta_ : ndarray of shape (n_free + 1,)
        ``[log s2, log l (1, or n_features with ARD), b]`` of the kept model less the kernel's
        fixed hyper-parameters, length-scales as ``lengthscale_``: the vector of
        :meth:`log_marginal_likelihood`.
    log_marginal_likelihood_value_ : float
        The objective the fit maximised, under scikit-learn's name: minus the smallest NLP of
        eq. 4, the objective this estimator minimises (it has no evidence).
    n_iter_ : int
        Outer iterations run.
    cholesky_ : ndarray of shape (d_max, d_max)
        Lower factor of B = I + S K_uu S at the kept hyper-parameters (S = diag(sqrt(p))).
    predictive_weights_ : ndarray of shape (d_max,)
        w = S B^-1 S m: the latent mean is k(x, basis_vectors_) @ w (eq. 8).

    Notes
    -----
    Eq. 4 fits the hyper-parameters, the bias among them, to the non-active points alone;
    over one class it is minimised by a bias that predicts that class everywhere. So every
    selection rule leaves at least half of each class's share of the n - d_max non-active
    points out of the active set (:func:`class_reserve`; zero when d_max = n - 1), and
    ``d_max="auto"`` keeps half the rows non-active. Adaptive sampling, which prefers badly
    predicted points, otherwise took a whole class into the active set on most data sets of
    under 80 rows, and the fit ended at a constant predictor (issue 49).

    Algorithm 1 is greedy: each inclusion takes the best-scoring candidate, and near-tied
    candidates can differ only in the last bits of their scores. On data whose labels carry
    little signal (random labels, points repeated with opposite labels) such ties are common,
    and a change of rounding alone (another thread count, BLAS or library version) can change
    which points are chosen from some inclusion on, and with them the fitted model. Fits of
    such data agree in quality (training and test NLP), not point for point. On data with
    signal the fit is the same to round-off (``tests/test_invariance.py``).

    References
    ----------
    S. Sundararajan and S. Shevade, "An additive model view to sparse Gaussian process
    classifier design" (seed 004); notes §3.
    """

    # BLAS on one thread (the Numba pool's policy) also suits the outer loop, whose eq. 4
    # evaluations are mostly BLAS: at d_max = 320 (Waveform, n = 4 000, 2 idle cores) one
    # took 62-71 ms with one BLAS thread and 90-106 ms with two, whatever Numba's count
    _thread_pool = "numba"

    def __init__(self, d_max="auto", selection="adaptive", kappa=None, site_update="moment",
                 kernel=None, bias=0.0, max_iter=20, tol=1e-4, optimizer="cg",
                 random_state=None, verbose=False):
        self.d_max = d_max
        self.selection = selection
        self.kappa = kappa
        self.site_update = site_update
        self.kernel = kernel
        self.bias = bias
        self.max_iter = max_iter
        self.tol = tol
        self.optimizer = optimizer
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------------------------
    # validation

    def _validate(self, X, y):
        X, y = self._validate_fit_data(X, y, classifier=True)
        classes, y_pm = check_binary_labels(y)
        n, D = X.shape
        # eq. 4 averages over the non-active points: at least one must remain
        d_max = check_size(self.d_max, "d_max", min(AUTO_D_MAX, n // 2), n - 1,
                           "the number of training points less one")
        selection = check_option(self.selection, "selection", SELECTIONS)
        if self.kappa is None:
            kappa = VALIDATION_KAPPA if selection == "validation" else 2
        else:
            kappa = check_int(self.kappa, "kappa", minimum=1)
        site_update = check_option(self.site_update, "site_update", SITE_UPDATES)
        # kernel=None: the default kernel, whose data-following start fit sets
        spec = kernel_spec(self.kernel, D, type(self).__name__, default_bounds=DEFAULT_BOUNDS)
        bias = self.bias
        if isinstance(bias, (bool, np.bool_)) or not np.isscalar(bias) \
                or not np.isfinite(float(bias)):
            raise ValueError(f"bias must be a finite real number; got {plain(bias)!r}")
        max_iter = check_int(self.max_iter, "max_iter", minimum=1)
        tol = self.tol
        if isinstance(tol, (bool, np.bool_)) or not np.isscalar(tol) \
                or not np.isfinite(float(tol)) or float(tol) < 0:
            raise ValueError(f"tol must be a non-negative finite number; got {plain(tol)!r}")
        optimizer = check_optimizer(self.optimizer, OPTIMIZER_NAMES, OPTIMIZER_RENAMED)
        rng = check_random_state(self.random_state)
        return (X, y_pm, classes, d_max, selection, kappa, site_update, spec, float(bias),
                max_iter, float(tol), optimizer, rng)

    # ------------------------------------------------------------------------------------
    # fit

    def fit(self, X, y):
        """Run Algorithm 1 of seed 004 on (X, y).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two distinct labels.

        Returns
        -------
        self
        """
        (X, y_pm, classes, d_max, selection, kappa, site_update, spec, b, max_iter, tol,
         optimizer, rng) = self._validate(X, y)
        self.classes_ = classes
        ard = bool(spec.ard)
        family = spec.family
        # learn in model units (centred, scaled; per feature for the default covariance), so
        # that the fit does not depend on the units of X. Centring also keeps the digits of
        # the ADF's kernel columns, |a|^2 + |b|^2 - 2 a.b, which an offset such as X + 1e9
        # destroys. Reported in the user's units below.
        scaling = self._spec_scaling(X, spec)
        spec = scaling.spec_to_model(spec)
        X_user, X = X, scaling.transform(X)
        s2, ls = spec.variance, spec.lengthscale.copy()
        # the bias is always free; fixed kernel parameters keep their entries of theta
        free, lims = kernel_log_bounds(spec, X.shape[1])
        free = np.append(free, True)
        bounds = np.vstack([lims, unbounded(1)])[free]
        n_outer = max_iter if optimizer is not None else 1
        state = _adf.new_state(X.shape[0], d_max, s2)
        theta = pack_theta(s2, ls, b, ard)
        history = []
        best = None
        for it in range(n_outer):
            s2, ls, b, _ = unpack_theta(theta, X.shape[1], ard)
            active, p, m, trace = _inner_loop(X, y_pm, state, d_max, selection, kappa,
                                              site_update, s2, ls, b, rng, family)
            if optimizer is not None:
                theta_new, nlp = _optimise_hyper(X, y_pm, active, p, m, theta, ard, family,
                                                 free, bounds, optimizer)
            else:
                theta_new = theta
                nlp = nlp_eq4(theta, X, y_pm, active, p, m, ard, family=family)[0]
            history.append(nlp)
            if self.verbose:
                print(f"[StagewiseGPClassifier] outer {it + 1}: NLP (eq. 4) {nlp:.6f}")
            if best is None or nlp < best[0]:
                best = (nlp, theta_new.copy(), active, p, m, trace)
            theta = theta_new
            if it > 0 and abs(history[-1] - history[-2]) < tol:
                break
        _, theta, active, p, m, trace = best
        if optimizer is not None and self.kernel is None:
            self._warn_at_default_box(theta, bounds)
        s2, ls, b, _ = unpack_theta(theta, X.shape[1], ard)
        self._family = family
        # theta_ too (pack_theta with the spec leaves out what the kernel holds fixed, as
        # ``free`` does)
        self._set_hyper_attributes(s2, ls, b, spec, scaling)
        self.active_set_ = active
        self.basis_vectors_ = X_user[active].copy()
        self.site_precision_ = p
        self.site_mean_ = m
        self.inner_nlp_ = trace
        self.n_iter_ = len(history)
        # predictions run in model units: the basis vectors' rows and the length-scales
        self._scaling, self._basis, self._ls = scaling, X[active], ls
        self.cholesky_, self.predictive_weights_ = _predictor(self._basis, p, m, s2, ls, family)
        self.nlp_history_ = history
        # the objective this estimator optimises is the NLP of eq. 4 (minimised)
        self.log_marginal_likelihood_value_ = -float(min(history, default=np.nan))
        # eq. 4 at other hyper-parameters: the model-unit rows, labels, the full theta and
        # the model-unit spec (theta_to_model)
        self._nlp_problem = (X, y_pm, theta.copy(), free, ard, spec)
        self._check_against_frequencies(X_user, (y_pm > 0).astype(np.int64))
        return self

    @staticmethod
    def _warn_at_default_box(theta, bounds):
        """The training driver's bound warning for the kept model of the default covariance.

        The outer loop's searches are rounds of Algorithm 1 and do not warn; the model kept
        is the fit, so its ``theta`` = [log s2, log l, b] (isotropic, all free) is checked
        against ``bounds`` (3, 2), less the variance's ceiling (``DEFAULT_BOUNDS``).
        """
        lo, hi = bounds[:, 0], bounds[:, 1].copy()
        hi[0] = np.inf
        warn_at_bounds(theta, lo, hi, ["variance", "lengthscale"], "StagewiseGPClassifier",
                       advice=BOUND_ADVICE)

    # ------------------------------------------------------------------------------------
    # the objective at other hyper-parameters

    _lml_objective = "Minus the NLP of eq. 4 (the mean over the non-active points)"
    _lml_notes = """``theta`` is ``[log s2, log l (1, or n_features with ARD), b]`` less the kernel's
fixed hyper-parameters (``theta_``, length-scales as ``lengthscale_``). The basis vectors and
their sites (``active_set_``, ``site_precision_``, ``site_mean_``) stay at the kept model's:
this is the function the outer loop's conjugate gradients maximise (Algorithm 1 step 6), and
its gradient (notes §3.7) is exact."""

    def _log_marginal_likelihood(self, theta, eval_gradient):
        X, y, full, free, ard, spec = self._nlp_problem
        full = full.copy()
        full[free] = theta_to_model(theta, self._scaling, spec)
        nlp, grad = nlp_eq4(full, X, y, self.active_set_, self.site_precision_,
                            self.site_mean_, ard, gradient=eval_gradient, family=self._family)
        return (-nlp, -grad[free]) if eval_gradient else -nlp

    # ------------------------------------------------------------------------------------
    # prediction

    def _latent_parts(self, X):
        Kus = kernel_matrix(self._basis, self._scaling.transform(X), self._family,
                            self.variance_, self._ls)                       # (d, n*)
        S = np.sqrt(self.site_precision_)
        V = sla.solve_triangular(self.cholesky_, S[:, None] * Kus, lower=True)
        return Kus, V

    def _predict_latent(self, X):
        Kus, V = self._latent_parts(X)
        mean = Kus.T @ self.predictive_weights_
        var = self.variance_ - np.sum(V * V, axis=0)
        return mean, var

    def staged_predict_proba(self, X):
        """Class probabilities after each of the first t = 1..d_max inclusions (eqs. 8-9).

        Uses the kept model's hyper-parameters and sites; the model after t inclusions has the
        leading t x t block of ``cholesky_``, so all stages cost O(d_max^2 n_samples).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Yields
        ------
        proba : ndarray of shape (n_samples, 2)
            Columns ordered as ``classes_``.
        """
        from scipy.special import ndtr
        X = self._check_predict_input(X)
        _, V = self._latent_parts(X)
        S = np.sqrt(self.site_precision_)
        c = sla.solve_triangular(self.cholesky_, S * self.site_mean_, lower=True)
        mean = np.zeros(X.shape[0])
        var = np.full(X.shape[0], self.variance_)
        for t in range(V.shape[0]):
            mean += c[t] * V[t]
            var -= V[t] * V[t]
            z = (mean + self.bias_) / np.sqrt(1.0 + np.maximum(var, 0.0))
            yield np.column_stack([ndtr(-z), ndtr(z)])


# ----------------------------------------------------------------------------------------------
# inner loop (Algorithm 1, steps 2-5)


def _inner_loop(X, y, state, d_max, selection, kappa, site_update, s2, ls, b, rng,
                family=SE):
    """One inner loop from the prior; returns (active, p, m, NLP_a after each inclusion).

    ``family`` is the stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE) of
    the kernel s2 g(q) whose ADF columns the loop computes.
    """
    n = X.shape[0]
    _adf.reset_state(state, s2, 0.0)
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
            _adf.cov_columns_blas(Xs, sq_norms, s2, 0.0, state, Jc, kt, family)
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
            _adf.cov_column_blas(Xs, sq_norms, s2, 0.0, state, j, col, family)
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
    ``RESERVE_FRACTION`` of each class's share of the n - d_max non-active points keeps
    both classes in eq. 4; the shares sum to at most half the non-active set, so the
    selection always has a candidate.

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
    return np.floor(RESERVE_FRACTION * counts * (n - d_max) / n).astype(np.int64)


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


# ----------------------------------------------------------------------------------------------
# outer loop: NLP of eq. 4 and its gradient with u and the sites fixed (notes §3.7)


def nlp_eq4(theta, X, y, active, p, m, ard, gradient=False, family=SE, sqdist=None):
    """NLP of eq. 4 over the non-active points, and optionally d NLP / d theta.

    Parameters
    ----------
    theta : ndarray
        ``[log s2, log l (1 or D), b]`` (:func:`pack_theta`).
    X : ndarray of shape (n, D)
    y : ndarray of shape (n,)
        Labels in {-1, +1}.
    active : ndarray of shape (d,), int
    p, m : ndarray of shape (d,)
        Fixed site parameters of the active points.
    ard : bool
    gradient : bool
    family : int, default=0
        Stationary family code of :mod:`sparsegp._numba.covfuncs` (0: SE).
    sqdist : tuple of ndarray, optional
        Isotropic kernels only: ``(d2_cu (n - d, d), d2_uu (d, d))`` from
        :func:`active_sqdist` for this ``active``; the covariances and the length-scale
        derivative are then one pass over them instead of new distances (the optimiser
        calls this function with the same active set at every step).

    Returns
    -------
    nlp : float
    grad : ndarray like theta or None

    With S = diag(sqrt(p)), B = I + S K_uu S = L L^T, C = S B^-1 S, w = C m:
    f_hat_i = k_iu w, A_ii = s2 - |L^-1 S k_ui|^2. Cost O(n d^2 + n d D).
    """
    n, D = X.shape
    s2, ls, b, _ = unpack_theta(theta, D, ard)
    mask = np.ones(n, dtype=bool)
    mask[active] = False
    yc = y[mask]
    nc = yc.shape[0]
    if sqdist is None:
        Xu, Xc = X[active], X[mask]
        Kuu = kernel_matrix(Xu, Xu, family, s2, ls)
        Kcu = kernel_matrix(Xc, Xu, family, s2, ls)
    else:
        if ard:
            raise ValueError("sqdist holds isotropic distances; it cannot serve an ARD kernel")
        (Kcu, Fcu), (Kuu, Fuu) = (_iso_kernel(d2, family, s2, ls[0], gradient)
                                  for d2 in sqdist)
    S = np.sqrt(p)
    B = np.eye(len(active)) + S[:, None] * Kuu * S[None, :]
    L = np.linalg.cholesky(B)
    # V is (d, nc) in Fortran order, the layout LAPACK's triangular solves use, so each solve
    # works in place; this function runs at every CG step, and its d x nc temporaries are what
    # it costs beyond the two solves
    V = np.multiply(Kcu.T, S[:, None], order="F")
    V = sla.solve_triangular(L, V, lower=True, overwrite_b=True, check_finite=False)
    c = sla.solve_triangular(L, S * m, lower=True, check_finite=False)
    f = c @ V
    A = np.maximum(s2 - np.einsum("ij,ij->j", V, V), 0.0)
    s = np.sqrt(1.0 + A)
    z = yc * (f + b) / s
    nlp = -float(np.mean(log_ndtr_vec(z)))
    if not gradient:
        return nlp, None
    r = inv_mills_vec(z)
    g = r * yc / s                    # d log Phi / d f_hat_i
    q = -0.5 * r * z / (s * s)        # d log Phi / d A_ii
    w = S * sla.solve_triangular(L, c, trans="T", lower=True, check_finite=False)   # C m
    W = sla.solve_triangular(L, V, trans="T", lower=True, overwrite_b=True,
                             check_finite=False)
    W *= S[:, None]                   # C K_uc, in V's memory
    Wg = W @ g
    G_uu = -0.5 * (np.outer(Wg, w) + np.outer(w, Wg)) + (W * q) @ W.T
    scale = -1.0 / nc
    if sqdist is None:
        # G_cu = g w^T - 2 diag(q) W^T, built as one (nc, d) C-ordered array
        G_cu = W.T * (-2.0 * q)[:, None]
        G_cu += np.outer(g, w)
        sum_k = np.vdot(G_cu, Kcu)
        gl_cu, _ = grad_contract(Xc, Xu, Kcu, G_cu, family, s2, ls)
        gl_uu, _ = grad_contract(Xu, Xu, Kuu, G_uu, family, s2, ls, symmetric=True)
        g_ls = scale * (gl_cu + gl_uu)
    else:
        # q = d2 / l^2, so dK/dl = s2 G(q) q / l = s2 G(q) d2 / l^3 (covfuncs' table)
        sum_k, sum_l = _sw.eq4_cross_contractions(W.T, Kcu, Fcu, sqdist[0], g, w, q)
        sum_l += np.einsum("ij,ij,ij->", G_uu, Fuu, sqdist[1])
        g_ls = np.array([scale * sum_l / ls[0] ** 3])
    g_s2 = scale * ((sum_k + np.vdot(G_uu, Kuu)) / s2 + np.sum(q))
    g_b = scale * np.sum(g)
    return nlp, theta_gradient(g_s2, g_ls, g_b, s2, ls, ard)


def active_sqdist(X, active):
    """Unscaled squared distances ``(d2_cu (n - d, d), d2_uu (d, d))`` of the non-active rows
    (in order) to the active ones and among the active ones, for :func:`nlp_eq4`.

    Kept for one outer iteration: as large as K_cu itself (n = 4 000, d = 320: 10 MB)."""
    mask = np.ones(X.shape[0], dtype=bool)
    mask[active] = False
    Xu = X[active]
    # cdist sums exact differences, so the Matérn square roots see no cancellation
    return cdist(X[mask], Xu, "sqeuclidean"), cdist(Xu, Xu, "sqeuclidean")


def _iso_kernel(d2, family, s2, l, want_g):
    """(K, F) over squared distances d2: K = s2 g(d2 / l^2), F its derivative factor
    s2 G (K itself for SE; None without ``want_g``)."""
    K = np.empty_like(d2)
    F = None
    want_f = want_g and family != SE
    if want_f:
        F = np.empty_like(d2)
    # without want_f the G slot is never written; K fills it so the signature stays typed
    _cf.stationary_from_iso_sqdist(d2.reshape(-1), 1.0 / (l * l), family, s2, K.reshape(-1),
                                   (F if want_f else K).reshape(-1), want_f)
    if want_g and family == SE:
        F = K
    return K, F


def _optimise_hyper(X, y, active, p, m, theta0, ard, family=SE, free=None, bounds=None,
                    method="cg"):
    """``method`` ("cg" or "lbfgs") on the NLP of eq. 4 (Algorithm 1 step 6); returns
    (theta, nlp).

    ``free`` (bool mask over theta, default all True) selects the entries the optimiser moves;
    the others (kernel parameters held "fixed") keep their values in ``theta0``. ``bounds``
    (n_free, 2), optional, bound the free entries; CG meets them as the training driver does
    (:func:`sparsegp._optimize.maximize`: evaluated at the clipped point, result clipped).
    """
    free = np.ones(theta0.size, dtype=bool) if free is None else free
    sqdist = None if ard else active_sqdist(X, active)

    def evaluate(x, _warm):
        theta = theta0.copy()
        theta[free] = x
        nlp, grad = nlp_eq4(theta, X, y, active, p, m, ard, gradient=True, family=family,
                            sqdist=sqdist)
        return -nlp, -grad[free], None

    # one CG run per outer iteration of Algorithm 1: its cap is the algorithm's, not a fit's
    best = maximize(evaluate, theta0[free], method=method, bounds=bounds, max_iter=CG_MAXITER,
                    label="NLP eq. 4", warn_at_cap=False)
    theta = theta0.copy()
    theta[free] = best.theta
    return theta, -best.value


def _predictor(Xu, p, m, s2, ls, family=SE):
    """(L, w) with L L^T = I + S K_uu S and w = S B^-1 S m (notes §2.5)."""
    Kuu = kernel_matrix(Xu, Xu, family, s2, np.ascontiguousarray(ls))
    S = np.sqrt(p)
    L = np.linalg.cholesky(np.eye(len(p)) + S[:, None] * Kuu * S[None, :])
    w = S * sla.cho_solve((L, True), S * m)
    return L, w
