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
kernel from a start that follows the data, or any kernel given as ``kernel=`` (SE, Matérn 1/2, 3/2,
5/2, optionally times a constant), plus a constant v_b in every entry when the kernel has
``ConstantKernel`` summands (the ADF's bias variance). Its family code
(:mod:`sparsegp._numba.covfuncs`) reaches every kernel evaluation: the ADF columns of the inner
loop, eq. 4 and its gradient, and the predictions.

The inner loop lives in :mod:`sparsegp.classification._stagewise_select`, eq. 4, its gradient
and the outer loop's search in :mod:`sparsegp.classification._stagewise_eq4`; this module holds
the estimator.
"""
import numpy as np
from scipy import linalg as sla
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
from .._numba.covfuncs import SE
from ..kernels import kernel_matrix, kernel_spec
from .._optimize import warn_at_bounds
from .._params import BOX_OVERRIDES, bias_variance_blocks
from ._binary import (
    OPTIMIZER_NAMES,
    OPTIMIZER_RENAMED,
    _BinaryGPClassifierMixin,
    pack_theta,
    theta_packing,
    theta_to_model,
)
from ._stagewise_eq4 import _optimise_hyper, nlp_eq4, unpack_full
from ._stagewise_select import _inner_loop

__all__ = ["StagewiseGPClassifier"]

#: the number of basis vectors ``d_max="auto"`` asks for, capped at half the rows (the paper
#: asks for d_max << n "to avoid any overfitting", §3: eq. 4 learns the hyper-parameters on the
#: non-active set only)
AUTO_D_MAX = 80
SELECTIONS = ("adaptive", "random", "validation", "entropy", "infogain")
SITE_UPDATES = ("moment", "optimize")
#: Working-set size used by the validation rule when ``kappa`` is None (notes §3.5).
VALIDATION_KAPPA = 59
#: Natural bounds of the default covariance's variance and length-scale, in model units
#: (:data:`sparsegp._params.BOX_OVERRIDES`, where the reason is).
DEFAULT_BOUNDS = BOX_OVERRIDES["stagewise"]
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
        plus ``ConstantKernel`` summands (the bias variance v_b, added to every covariance
        entry; learnt unless "fixed"), or scikit-learn's ``ConstantKernel() * RBF()`` /
        ``ConstantKernel() * Matern(nu=...)``.
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
        back as their :mod:`sparsegp.kernels` equivalent), plus one ``ConstantKernel`` at the
        kept v_b when ``kernel`` has constant summands.
    nlp_history_ : list of float
        NLP of eq. 4 after every outer iteration (the kept model has the smallest).
    inner_nlp_ : ndarray of shape (d_max,)
        Training NLP_a (eq. 5) after each inclusion of the kept model's inner loop (at the
        hyper-parameters that loop ran with).
    theta_ : ndarray of shape (n_free + 1,)
        ``[log s2, log l (1, or n_features with ARD), (log v_b,) b]`` of the kept model less
        the kernel's fixed hyper-parameters, length-scales as ``lengthscale_``: the vector of
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
    points, and at least one point of each class, out of the active set
    (:func:`class_reserve`; with one non-active point, d_max = n - 1, there is no room for
    both, and eq. 4 over one class has no minimum, so the outer loop then keeps the
    hyper-parameters it has), and ``d_max="auto"`` keeps half the rows non-active.
    Adaptive sampling, which prefers badly predicted points, otherwise took a whole class
    into the active set on most data sets of under 80 rows, and the fit ended at a constant
    predictor (issue 49).

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
        spec = kernel_spec(self.kernel, D, type(self).__name__, default_bounds=DEFAULT_BOUNDS,
                           bias=True)
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
        # eq. 4's vector [log s2, log l, (log v_b,) b] is the binary packing's with every
        # entry kept: fixed kernel parameters and a held bias variance v_b (the kernel's
        # constant summands) stay in it at their values; the packing's blocks say which
        # entries the search moves (the bias always) and their bounds
        packing = theta_packing(X.shape[1], ard, spec)
        free, bounds = packing.free_mask(), packing.bounds()
        vb_block = bias_variance_blocks(spec)
        with_vb = bool(vb_block)
        n_outer = max_iter if optimizer is not None else 1
        state = _adf.new_state(X.shape[0], d_max, s2)
        theta = pack_theta(s2, ls, b, ard)
        if with_vb:
            theta = np.insert(theta, theta.size - 1, np.log(vb_block[0].natural_value))
        history = []
        best = None
        for it in range(n_outer):
            s2, ls, b, vb = unpack_full(theta, X.shape[1], ard, with_vb)
            active, p, m, trace = _inner_loop(X, y_pm, state, d_max, selection, kappa,
                                              site_update, s2, ls, b, rng, family,
                                              bias_variance=0.0 if vb is None else vb)
            if optimizer is not None and not _one_class_left(y_pm, active):
                theta_new, nlp = _optimise_hyper(X, y_pm, active, p, m, theta, ard, family,
                                                 free, bounds, optimizer, with_vb)
            else:
                theta_new = theta
                nlp = nlp_eq4(theta, X, y_pm, active, p, m, ard, family=family,
                              with_bias_variance=with_vb)[0]
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
        s2, ls, b, vb = unpack_full(theta, X.shape[1], ard, with_vb)
        if with_vb and not vb_block[0].free:
            vb = vb_block[0].natural_value                    # held: as the kernel gave it
        self._family, self._vb = family, vb
        # theta_ too (pack_theta with the spec leaves out what the kernel holds fixed, as
        # ``free`` does)
        self._set_hyper_attributes(s2, ls, b, spec, scaling, vb)
        self.active_set_ = active
        self.basis_vectors_ = X_user[active].copy()
        self.site_precision_ = p
        self.site_mean_ = m
        self.inner_nlp_ = trace
        self.n_iter_ = len(history)
        # predictions run in model units: the basis vectors' rows and the length-scales
        self._scaling, self._basis, self._ls = scaling, X[active], ls
        self.cholesky_, self.predictive_weights_ = _predictor(self._basis, p, m, s2, ls, family,
                                                              vb)
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
    _lml_notes = """``theta`` is ``[log s2, log l (1, or n_features with ARD), (log v_b,) b]`` less
the kernel's fixed hyper-parameters (``theta_``, length-scales as ``lengthscale_``). The basis
vectors and their sites (``active_set_``, ``site_precision_``, ``site_mean_``) stay at the kept
model's: this is the function the outer loop's conjugate gradients maximise (Algorithm 1 step 6),
and its gradient (notes §3.7) is exact."""

    def _log_marginal_likelihood(self, theta, eval_gradient):
        X, y, full, free, ard, spec = self._nlp_problem
        full = full.copy()
        full[free] = theta_to_model(theta, self._scaling, spec)
        nlp, grad = nlp_eq4(full, X, y, self.active_set_, self.site_precision_,
                            self.site_mean_, ard, gradient=eval_gradient, family=self._family,
                            with_bias_variance=self._vb is not None)
        return (-nlp, -grad[free]) if eval_gradient else -nlp

    # ------------------------------------------------------------------------------------
    # prediction

    def _latent_parts(self, X):
        Kus = kernel_matrix(self._basis, self._scaling.transform(X), self._family,
                            self.variance_, self._ls)                       # (d, n*)
        if self._vb is not None:
            Kus += self._vb
        S = np.sqrt(self.site_precision_)
        V = sla.solve_triangular(self.cholesky_, S[:, None] * Kus, lower=True)
        return Kus, V

    def _prior_variance(self):
        """k(x, x): s2, plus v_b with a constant summand."""
        return self.variance_ if self._vb is None else self.variance_ + self._vb

    def _predict_latent(self, X):
        Kus, V = self._latent_parts(X)
        mean = Kus.T @ self.predictive_weights_
        var = self._prior_variance() - np.sum(V * V, axis=0)
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
        var = np.full(X.shape[0], self._prior_variance())
        for t in range(V.shape[0]):
            mean += c[t] * V[t]
            var -= V[t] * V[t]
            z = (mean + self.bias_) / np.sqrt(1.0 + np.maximum(var, 0.0))
            yield np.column_stack([ndtr(-z), ndtr(z)])



# ----------------------------------------------------------------------------------------------
# the outer loop's guard and the kept model's prediction factor


def _one_class_left(y, active):
    """Are the non-active labels ``y`` (in {-1, +1}) all of one class?

    Eq. 4 over one class has no minimum: the bias runs off until that class has probability 1
    everywhere. :func:`~sparsegp.classification._stagewise_select.class_reserve` keeps both
    classes out of the active set whenever the n - d_max non-active points leave room for
    one of each; with a single non-active point (d_max = n - 1, or two training rows) they
    cannot, and the outer loop then keeps the hyper-parameters it has."""
    rest = np.delete(y, active)
    return bool(np.all(rest == rest[0]))


def _predictor(Xu, p, m, s2, ls, family=SE, bias_variance=None):
    """(L, w) with L L^T = I + S K_uu S and w = S B^-1 S m (notes §2.5); K_uu with the
    constant ``bias_variance`` v_b in every entry when given."""
    Kuu = kernel_matrix(Xu, Xu, family, s2, np.ascontiguousarray(ls))
    if bias_variance is not None:
        Kuu += bias_variance
    S = np.sqrt(p)
    L = np.linalg.cholesky(np.eye(len(p)) + S[:, None] * Kuu * S[None, :])
    w = S * sla.cho_solve((L, True), S * m)
    return L, w
