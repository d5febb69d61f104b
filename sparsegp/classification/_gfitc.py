"""Generalized FITC classification: the estimator :class:`GFITCClassifier` (seed 000).

The estimator: validation, the evidence search over the kernel, the bias and the
pseudo-inputs, the fitted state and predictions. The EP engine it drives -- the whitened FITC
prior, the site schedules, the O(NM^2) evidence and its gradient -- is
:mod:`sparsegp.classification._fitc_ep`.
"""
import warnings
from typing import NamedTuple

import numpy as np
from scipy import linalg as sla
from sklearn.base import ClassifierMixin

from .._config import EP_MAX_SWEEPS, EP_TOL, JITTER, MAX_ITER, TOL
from .._inducing_base import InducingPointEstimator
from .._optimize import maximize, stopping_gain
from .._validation import check_option
from ..exceptions import ConvergenceWarning
from ..kernels import kernel_matrix
from ._binary import (
    _BinaryGPClassifierMixin, optimizer_advice, pack_theta, search_box, theta_gradient,
    theta_to_model, unpack_theta_vb,
)
from ._fitc_ep import SCHEDULES, _FITCPrior, fit_ep, log_evidence_gradient

__all__ = ["GFITCClassifier"]

#: Loosest EP tolerance of an optimiser evaluation when ``ep_search_rtol`` > 0.
SEARCH_EP_TOL_MAX = 1e-2
#: Default ``ep_search_rtol``: each search evaluation solves EP to a tenth of its first
#: residual (benchmarks/DEFAULTS.md).
SEARCH_RTOL = 0.1


class GFITCClassifier(_BinaryGPClassifierMixin, ClassifierMixin, InducingPointEstimator):
    """Sparse GP classifier: EP over the FITC prior with learnt pseudo-inputs (GFITC/SPGPC).

    Binary probit likelihood with bias, p(y = +1 | f) = Phi(f + beta), a stationary covariance
    (squared exponential by default, or Matérn ν = 1/2, 3/2, 5/2 through ``kernel``; isotropic
    or ARD) and M pseudo-inputs whose locations are learnt together with the kernel parameters
    and the bias by maximising the EP evidence (Naish-Guzman & Holden, 2007). Training costs
    O(N M^2) per EP sweep and per evidence gradient, O(N M) memory.

    The fit runs on centred and scaled inputs (:mod:`sparsegp._scaling`: one scale per
    feature for an ARD kernel and for the default covariance, which is thus an isotropic
    kernel on standardised inputs; one common scale for an isotropic kernel the user gave)
    and reports every fitted value in the user's units, so that predictions do not depend on
    the units or the offset of X, nor at the defaults on each column's units, beyond
    round-off.

    Parameters
    ----------
    n_inducing : int or "auto", default="auto"
        Number of pseudo-inputs M (1 <= M <= n_samples). ``"auto"``: 10, or n_samples when
        that is smaller. Ignored when ``inducing_points`` is given.
    inducing_points : array-like of shape (M, n_features), optional
        Initial pseudo-input locations (fixed with ``optimizer=None``).
    init : {"random", "kmeans"}, default="kmeans"
        Initialisation of the pseudo-inputs when ``inducing_points`` is None: a random subset
        of the training inputs, or k-means centres (found on the centred, scaled inputs).
    kernel : Kernel, optional
        The covariance: a :mod:`sparsegp.kernels` stationary kernel (``SquaredExponential``,
        ``Matern`` with ν = 1/2, 3/2, 5/2; ARD when its length-scale is an array), optionally
        times a constant, plus ``ConstantKernel`` summands (the bias variance v_b, added to
        K_fu, K_uu and the diagonal; learnt unless "fixed"), or the same built from
        scikit-learn's ``ConstantKernel``, ``RBF``
        and ``Matern``. Its values are the start; hyper-parameters it holds "fixed" are not
        learnt, and its bounds box the search with ``optimizer="lbfgs"`` (``"cg"`` is
        unconstrained). Never modified; the fitted copy is ``kernel_``. None: the isotropic
        squared exponential with variance 1 on standardised inputs, searched without bounds
        from length-scale ``sparsegp._scaling.start_lengthscale(D)`` (1.0, or
        sqrt(D / 21) beyond 21 features) standard deviations of each feature, so that the
        fit does not depend on the units of any column (an ARD
        kernel from the data: ``SquaredExponential(lengthscale=X.std(axis=0))``).
    bias : float, default=0.0
        Initial probit bias beta.
    jitter : float, default=1e-6
        ``jitter * variance`` is added to the diagonal of K_uu.
    optimizer : {"lbfgs", "cg"} or None, default="lbfgs"
        How variance, length-scale(s) (those the kernel does not hold fixed), bias and
        pseudo-inputs are learnt by maximising log Z_EP: L-BFGS-B (log kernel parameters
        within the kernel's bounds; bias and pseudo-inputs unbounded) or scipy's nonlinear
        conjugate gradients (the paper's choice; the bounds met by clipping), through
        :func:`sparsegp._optimize.maximize`. None holds every hyper-parameter and the
        pseudo-inputs fixed (EP runs at the given values only), as in scikit-learn's GPs.
        With the stopping rule, L-BFGS-B and ``ep_search_rtol=0.1`` end level with 30 CG
        steps in test NLP (median difference 0.0000 over 19 problems, none worse by 0.01)
        in 0.27 of their CPU time (``benchmarks/DEFAULTS.md``).
        The names are those of one vocabulary across the estimators (README, table
        "optimizer and max_iter"); "l-bfgs-b", the old spelling of "lbfgs", is
        accepted in this release only, with a ``FutureWarning``.
    max_iter : int, default=1000
        Safety cap on the optimiser iterations per (re)start: stopping there before the
        stopping rule is met raises a :class:`~sparsegp.exceptions.ConvergenceWarning`.
        With ``tol=None``, the fixed number of iterations to run, without a warning (seed
        000: ``optimizer="cg", max_iter=20, tol=None``).
    tol : float or None, default=3e-4
        Stopping tolerance in nats per training row: a start has converged once its log
        evidence gains less than ``tol * max(n_samples, 3000)`` over the last five
        iterations while its gradient is not growing, or when scipy's own test is met
        (:mod:`sparsegp._optimize`, "Stopping rule"). The evidence climbs on long after the
        predictions stop improving: the pseudo-inputs then fit noise (xor, N = 400, M = 4:
        run to L-BFGS-B's own test, test NLP .357 becomes .428), so the default stops once
        the remaining gain is below a nat on small data and 3e-4 nats a row on large
        (``benchmarks/DEFAULTS.md``). 0 runs to scipy's test; None runs ``max_iter``
        iterations.
    n_restarts : int, default=0
        Extra random initialisations (new pseudo-inputs from ``init``; variance and
        length-scales drawn uniformly inside the kernel's bounds, within a factor 10 of the
        given values where unbounded); the fit with the best evidence is kept.
    ep_tol : float, default=1e-6
        EP stops when the largest undamped site residual of a sweep, |moment-matched target -
        current| of any site parameter, is below this (also when damped).
    ep_max_sweeps : int, default=200
        Maximum EP sweeps per evidence evaluation.
    ep_damping : float, default=1.0
        EP step in natural parameters, in (0, 1]. The parallel schedule starts with this step
        and halves it whenever the largest site change grows (oscillation).
    ep_schedule : {"sequential", "parallel"}, default="parallel"
        Sequential: compiled sweep over a random permutation with O(M^2) rank-one updates and a
        refresh after each sweep. Parallel: all sites from one posterior, then one BLAS refresh.
    ep_search_rtol : float, default=0.1
        EP inside the optimiser as an inexact inner solve, in [0, 1): each evaluation stops once
        its undamped residual is below ``ep_search_rtol`` times that of its first iteration
        (never looser than 1e-2 nor tighter than ``ep_tol``), so the tolerance follows how far
        the warm start was from its fixed point and tightens to ``ep_tol`` as the steps shrink;
        the final EP run, and so ``log_evidence_``, is always at ``ep_tol``. 0 solves every
        evaluation to ``ep_tol`` (the papers' searches and the tables). At 0.1 on xor
        (N = 16 000, M = 50; ``benchmarks/bench_peers.py`` T1) 20 L-BFGS iterations took 22
        evaluations of about 3 EP iterations instead of 25 of 11. Under a fixed step count
        the inexact gradients led elsewhere (lower on 7 of 10 small problems by 0.07-0.7
        nats, ``benchmarks/GFITC_DEFAULTS.md``); under the stopping rule the fits end level
        in test NLP (``benchmarks/DEFAULTS.md``), so it is on by default.
    random_state : None, int or numpy.random.Generator
        Seeds the pseudo-input initialisation, the restarts and the EP site orders.
    verbose : bool, default=False
        Print the evidence after each optimiser iteration.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class (y = +1).
    inducing_points_ : ndarray of shape (M, n_features)
    kernel_ : Kernel
        The fitted covariance in the units of X (a copy of ``kernel``, or of the default SE
        kernel) at ``variance_`` and ``lengthscale_``, plus one ``ConstantKernel`` at the
        fitted v_b when ``kernel`` has constant summands. The default covariance, isotropic on
        standardised inputs, comes back with one length-scale per feature, ``lengthscale_``
        times that feature's standard deviation.
    lengthscale_ : float or ndarray of shape (n_features,)
        Float for an isotropic kernel. In the units of X, except the default covariance's
        one length-scale, in standard deviations of each feature.
    variance_ : float
    bias_ : float
    theta_ : ndarray of shape (n_free + 1,)
        ``[log variance, log lengthscale(s), (log v_b,) bias]`` without the kernel's fixed
        hyper-parameters, length-scales as ``lengthscale_``: the vector of
        :meth:`log_marginal_likelihood`.
    log_evidence_ : float
        EP estimate of log p(y | X) at the fitted state.
    log_evidence_gradient_ : dict
        Derivatives of ``log_evidence_`` w.r.t. the natural parameters: ``"variance"`` (float),
        ``"lengthscale"`` (float, or (n_features,) with ARD), ``"bias"`` (float),
        ``"inducing_points"`` (M, n_features), and ``"bias_variance"`` (float) with a
        constant summand; fixed kernel parameters included.
    n_sweeps_ : int
        EP sweeps of the final EP run.
    log_marginal_likelihood_value_ : float
        The objective the fit maximised, under scikit-learn's name: the EP log evidence log Z_EP
        (= ``log_evidence_``).
    n_iter_ : int
        Optimiser iterations of the start that was kept (0 without optimisation).
    converged_ : bool
        Whether that start met its stopping rule (True without optimisation; False at the
        ``max_iter``: the cap, or the fixed schedule of ``tol=None``).
    jitter_ : float
        Jitter multiple actually used on K_uu (larger than ``jitter`` only after a
        ``JitterWarning``).
    site_precision_ : ndarray of shape (n_samples,)
        EP site precisions tau~.
    site_mean_ : ndarray of shape (n_samples,)
        EP site means mu~ = nu~ / tau~ (0 where tau~ = 0).
    n_features_in_ : int

    References
    ----------
    A. Naish-Guzman and S. Holden, "The Generalized FITC Approximation", NIPS 2007.
    """

    _auto_inducing = 10

    _takes_bias_variance = True

    def __init__(self, n_inducing="auto", inducing_points=None, init="kmeans", kernel=None,
                 bias=0.0, jitter=JITTER, optimizer="lbfgs", max_iter=MAX_ITER, tol=TOL,
                 n_restarts=0, ep_tol=EP_TOL, ep_max_sweeps=EP_MAX_SWEEPS, ep_damping=1.0,
                 ep_schedule="parallel", ep_search_rtol=SEARCH_RTOL, random_state=None,
                 verbose=False):
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.init = init
        self.kernel = kernel
        self.bias = bias
        self.jitter = jitter
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.tol = tol
        self.n_restarts = n_restarts
        self.ep_tol = ep_tol
        self.ep_max_sweeps = ep_max_sweeps
        self.ep_damping = ep_damping
        self.ep_schedule = ep_schedule
        self.ep_search_rtol = ep_search_rtol
        self.random_state = random_state
        self.verbose = verbose

    # ---------------------------------------------------------------- validation
    def _validate(self, X, y):
        X, y_pm, hyper = self._validate_binary_fit(X, y)
        Z0 = self._check_inducing_points(*X.shape)
        check_option(self.ep_schedule, "ep_schedule", SCHEDULES)
        rtol = self.ep_search_rtol
        if isinstance(rtol, (bool, np.bool_)) or not np.isscalar(rtol) \
                or not (0.0 <= float(rtol) < 1.0):
            raise ValueError(f"ep_search_rtol must be a number in [0, 1); got {rtol!r}")
        self._check_jitter(positive=True)
        return X, y_pm, hyper, Z0

    def _parallel_pool(self, X=None):
        # the parallel schedule splits the sites among Numba's threads; the sequential one is
        # a compiled sweep plus one large BLAS refresh per sweep
        return "blas" if self.ep_schedule == "sequential" else "numba"

    # ---------------------------------------------------------------- fit
    def fit(self, X, y):
        """Fit the pseudo-inputs, kernel parameters and bias by EP evidence maximisation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Exactly two distinct labels.

        Returns
        -------
        self : GFITCClassifier
        """
        X, y_pm, hp, Z0 = self._validate(X, y)
        X_user = X
        N, D = X.shape
        rng = hp.rng
        # learn in model units (centred, scaled): the optimiser's steps in Z, and with them
        # the fit, are then the same whatever the units of X; reported in user units below
        scaling = self._input_scaling(X, hp)
        X, Z0 = self._to_model_units(scaling, X, hp, Z0)
        if Z0 is None:
            Z0 = self._initial_inducing_points(X, rng)
        M = Z0.shape[0]
        ep_kw = dict(tol=hp.ep_tol, max_sweeps=hp.ep_max_sweeps, damping=hp.ep_damping,
                     schedule=self.ep_schedule, rng=rng)
        spec = hp.spec
        family = spec.family
        variance, ls, bias, Z = hp.variance, hp.lengthscale, hp.bias, Z0
        vb = None if spec.bias_term is None else float(spec.bias_term.constant_value)
        tau0 = nu0 = None
        search_rtol = float(self.ep_search_rtol)
        if hp.optimizer is not None and hp.max_iter > 0:
            def evaluate(theta, warm):
                v, l, b, z, vb = unpack_theta_vb(theta, D, spec)
                prior = _FITCPrior(X, z.reshape(M, D), v, l, hp.jitter, escalate=False,
                                   family=family, bias_variance=vb)
                t0, n0 = (None, None) if warm is None else warm
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    res, lz, db = fit_ep(prior, y_pm, b, t0, n0, rtol=search_rtol,
                                         tol_max=SEARCH_EP_TOL_MAX, **ep_kw)
                dv, dl, dz, *dvb = log_evidence_gradient(prior, res.tau, res.nu, res.post)
                grad = theta_gradient(dv, dl, db, v, l, hp.ard, dz, spec,
                                      g_bias_variance=dvb[0] if dvb else None,
                                      bias_variance=vb)
                return lz, grad, (res.tau, res.nu)

            def restart(theta, rng):
                # a restart also re-draws the pseudo-inputs (or jitters given ones); its
                # kernel parameters come from the driver, the bias starts where it was
                if self.inducing_points is None:
                    Zr = self._initial_inducing_points(X, rng)
                else:
                    Zr = Z0 + 0.1 * np.std(X, axis=0) * rng.standard_normal(Z0.shape)
                theta[theta.size - Zr.size:] = Zr.ravel()
                return theta

            # fit runs under the thread policy (_parallel_pool): with the parallel schedule
            # OpenBLAS is held to one thread for the whole optimisation, which switches it once
            # instead of twice per evaluation (20 CG steps at N = 10 000, M = 100 on 2 cores:
            # 5.6 s against 6.4 s)
            bounds, restart_mask = search_box(spec, D, Z0.size)
            opt = maximize(
                evaluate, pack_theta(variance, ls, bias, hp.ard, Z0, spec, vb),
                method=hp.optimizer, bounds=bounds, max_iter=hp.max_iter,
                tol=stopping_gain(hp.tol, N), n_restarts=hp.n_restarts,
                random_state=rng, restart_mask=restart_mask,
                # a fixed schedule (tol=None) stops at max_iter by design: no warning then
                warn_at_cap=hp.tol is not None, warn_at_bound=True,
                restart=restart, warm=True, progress=bool(self.verbose), label="GFITC",
                # the exact search keeps its chain (the start evaluated twice): a seeded fit
                # is then the same as before
                reuse_start=search_rtol > 0.0,
                value_name="log evidence", advice=optimizer_advice(hp.optimizer))
            if not np.isfinite(opt.value):
                raise ValueError("the EP evidence could not be evaluated at any start; check "
                                 "the scale of X, the kernel's start values and jitter")
            variance, ls, bias, z, vb = unpack_theta_vb(opt.theta, D, spec)
            Z = z.reshape(M, D)
            tau0, nu0 = opt.state
            self.n_iter_ = int(opt.n_iter)
            self.converged_ = bool(opt.converged)
        else:
            self.n_iter_ = 0
            self.converged_ = True
        prior = _FITCPrior(X, Z, variance, ls, hp.jitter, family=family, bias_variance=vb)
        res, lz, db = fit_ep(prior, y_pm, bias, tau0, nu0, **ep_kw)
        if not res.converged:
            self._warn_ep_not_converged(res.n_sweeps, res.max_change)
        if not np.isfinite(lz):
            raise ValueError("EP produced a non-finite evidence; try a larger jitter or "
                             "damping < 1")
        dv, dl, dz, *dvb = log_evidence_gradient(prior, res.tau, res.nu, res.post)
        self._set_hyper_attributes(variance, ls, bias, spec, scaling, vb)
        self._vb = vb
        # what log_marginal_likelihood(theta) re-runs EP with (model units)
        self._lml_state = _EPProblem(X, y_pm, spec, res.nu.copy(),
                                     {k: v for k, v in ep_kw.items() if k != "rng"})
        self._family = family
        self._scaling, self._Z, self._ls = scaling, prior.Z.copy(), ls.copy()
        self.inducing_points_ = scaling.inverse_transform(prior.Z)
        self.jitter_ = float(prior.jitter)
        self.log_evidence_ = float(lz)
        self.log_marginal_likelihood_value_ = self.log_evidence_
        self.log_evidence_gradient_ = self._gradient_dict(
            dv, dl, db, ard=hp.ard, scaling=scaling,
            inducing_points=scaling.gradient_to_user(dz),
            **({} if vb is None else {"bias_variance": dvb[0]}))
        self.n_sweeps_ = int(res.n_sweeps)
        self.site_precision_ = res.tau.copy()
        pos = res.tau > 0.0
        self.site_mean_ = np.zeros(N)
        self.site_mean_[pos] = res.nu[pos] / res.tau[pos]
        # Prediction cache, form (B) of notes §1.7 with S^{-1} = R^T R:
        # mu* = (R L_u^{-1} k*)^T c,  var* = s2 - ||L_u^{-1} k*||^2 + ||R L_u^{-1} k*||^2.
        self._Lu = prior.Lu
        self._R = res.post.R
        self._c = res.post.R @ (prior.Vt.T @ res.post.btil)
        self._check_against_frequencies(X_user, (y_pm > 0).astype(np.int64))
        return self

    # ---------------------------------------------------------------- predict
    def _predict_latent(self, X):
        # in the model units of the fit (centred first: no digits lost to an offset)
        Ks = kernel_matrix(self._Z, self._scaling.transform(X), self._family, self.variance_,
                           self._ls)  # (M, n)
        prior = self.variance_
        if self._vb is not None:
            Ks += self._vb
            prior = self.variance_ + self._vb
        a = sla.solve_triangular(self._Lu, Ks, lower=True, check_finite=False)
        e = self._R @ a
        mean = e.T @ self._c
        var = prior - np.einsum("ij,ij->j", a, a) + np.einsum("ij,ij->j", e, e)
        return mean, var

    # ---------------------------------------------------------------- evidence at theta
    _lml_objective = "The EP log evidence log Z_EP"
    _lml_notes = """``theta`` is ``[log variance, log lengthscale(s), (log v_b,) bias]`` less the
kernel's fixed hyper-parameters (``theta_``, length-scales as ``lengthscale_``). The pseudo-inputs
stay at ``inducing_points_``. EP is run to convergence at ``theta`` with the fit's schedule and
tolerance, warm-started from the fitted sites; the gradient is that of notes §1.9 at its fixed
point, exact there. K_uu takes the jitter the fit ended with (``jitter_``). At ``theta=None`` both
are the fitted values."""

    def _log_marginal_likelihood_gradient(self):
        g = self.log_evidence_gradient_
        return theta_gradient(g["variance"], np.atleast_1d(g["lengthscale"]), g["bias"],
                              self.variance_, np.atleast_1d(self.lengthscale_),
                              self._lml_state.spec.ard, spec=self._lml_state.spec,
                              g_bias_variance=g.get("bias_variance"), bias_variance=self._vb)

    def _log_marginal_likelihood(self, theta, eval_gradient):
        prob = self._lml_state
        D = self.n_features_in_
        v, ls, b, _, vb = unpack_theta_vb(theta_to_model(theta, self._scaling, prob.spec), D,
                                          prob.spec)
        prior = _FITCPrior(prob.X, self._Z, v, ls, self.jitter_, escalate=False,
                           family=prob.spec.family, bias_variance=vb)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res, lz, db = fit_ep(prior, prob.y, b, self.site_precision_, prob.site_nu,
                                 rng=np.random.default_rng(0), **prob.ep_options)
        if not eval_gradient:
            return float(lz)
        dv, dl, _, *dvb = log_evidence_gradient(prior, res.tau, res.nu, res.post)
        return float(lz), theta_gradient(dv, dl, db, v, ls, prob.spec.ard, spec=prob.spec,
                                         g_bias_variance=dvb[0] if dvb else None,
                                         bias_variance=vb)


class _EPProblem(NamedTuple):
    """The fit's training problem in model units, for re-running EP at other
    hyper-parameters: inputs (N, D), labels in {-1, +1}, the model-unit covariance spec, the
    site nu~ (N,) and the EP options (tol, max_sweeps, damping, schedule)."""

    X: np.ndarray
    y: np.ndarray
    spec: object
    site_nu: np.ndarray
    ep_options: dict
