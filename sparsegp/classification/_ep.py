"""Full (dense, O(N^3)) Gaussian-process classifier with expectation propagation.

The "GPC" column of seed 000's Table 1 and the model that GFITC approaches as M -> N.  Prior
f ~ N(0, K), K = k(X, X) + jitter * variance * I (k stationary: squared exponential by
default, Matérn through ``kernel``, plus the bias variance v_b of its ``ConstantKernel``
summands in every entry), likelihood
p(y | f) = Phi(y (f + bias)).  EP follows Rasmussen & Williams (2006), Algorithms 3.5/3.6 and 5.2
(RW below): sequential sweeps with rank-one covariance updates (one compiled kernel per sweep,
:func:`sparsegp._numba.ep_dense.ep_dense_sweep`), and after every sweep the covariance is
recomputed from the sites through B = I + S^1/2 K S^1/2 (S = diag(tau), tau > 0 for the probit,
notes §0.4, so S^1/2 is real).
"""
from dataclasses import replace

import numpy as np
from scipy import linalg as sla
from sklearn.base import ClassifierMixin

from .._base import SparseGPEstimator
from .._covariance import variance_gradient
from .._numba.ep_dense import ep_dense_sweep, probit_cavity_terms
from .._numba.probit import log_ndtr_vec
from .._optimize import maximize, stopping_gain
from ..kernels import grad_contract, kernel_matrix
from ._binary import (
    _BinaryGPClassifierMixin,
    optimizer_advice,
    pack_theta,
    search_box,
    theta_gradient,
    theta_to_model,
    unpack_theta_vb,
)
from .._config import MAX_ITER, TOL
from .._config import PREDICT_BLOCK as _PREDICT_BATCH

__all__ = ["EPClassifier"]


class _EPFit:
    """Converged (or stopped) dense EP state at one set of hyper-parameters."""

    __slots__ = ("K", "tau", "nu", "Sigma", "mu", "L", "mu_cav", "var_cav", "log_z", "alpha",
                 "log_evidence", "n_sweeps", "converged", "max_change")


def _refresh(K, tau, nu):
    """Posterior from the sites (RW Algorithm 3.5 line 10): returns (Sigma, mu, L).

    L = chol(B), B = I + S^1/2 K S^1/2; Sigma = K - V^T V with V = L^-1 S^1/2 K.  Never forms
    K^-1 or 1/tau, so tau_n = 0 is fine.
    """
    sq = np.sqrt(tau)
    B = sq[:, None] * K * sq[None, :]
    B[np.diag_indices_from(B)] += 1.0
    L = np.linalg.cholesky(B)
    V = sla.solve_triangular(L, sq[:, None] * K, lower=True, check_finite=False)
    Sigma = np.ascontiguousarray(K - V.T @ V)
    mu = Sigma @ nu
    return Sigma, mu, L


def _evidence_terms(fit, y, bias):
    """Fill the cavity terms of ``fit`` and its log Z_EP (RW eq. 3.65 in the form of
    Algorithm 3.5 lines 13-16, with the bias inside log Zhat_n; notes §1.8).

    log Z_EP = sum log Phi(z_n) - sum log L_nn + 1/2 sum log(1 + tau_n/tau_-n) + 1/2 nu^T Sigma nu
               + 1/2 sum (tau_-n tau_n mu_-n^2 - 2 tau_-n mu_-n nu_n - nu_n^2)/(tau_-n + tau_n)
    """
    n = y.shape[0]
    var = np.ascontiguousarray(np.diag(fit.Sigma))
    fit.mu_cav, fit.var_cav = np.empty(n), np.empty(n)
    fit.log_z, fit.alpha = np.empty(n), np.empty(n)
    n_bad = probit_cavity_terms(var, fit.mu, fit.tau, fit.nu, y, bias, fit.mu_cav, fit.var_cav,
                                fit.log_z, fit.alpha)
    if n_bad:
        raise np.linalg.LinAlgError(f"{n_bad} non-positive cavity precision(s)")
    tau, nu = fit.tau, fit.nu
    tau_c = 1.0 / fit.var_cav
    mu_c = fit.mu_cav
    fit.log_evidence = float(
        np.sum(fit.log_z)
        - np.sum(np.log(np.diag(fit.L)))
        + 0.5 * np.sum(np.log1p(tau / tau_c))
        + 0.5 * (nu @ fit.mu)
        + 0.5 * np.sum((tau_c * tau * mu_c**2 - 2.0 * tau_c * mu_c * nu - nu**2) / (tau_c + tau))
    )
    return fit


def _run_ep(K, y, bias, tau0, nu0, tol, max_sweeps, damping, rng):
    """EP to convergence from sites (tau0, nu0) (zeros or a warm start).

    A warm start whose evidence is below that of zero sites, sum log Phi(y bias/sqrt(1 + K_nn)),
    is discarded and EP starts from zero instead (the rule of GPML's infEP).
    """
    n = y.shape[0]
    fit = _EPFit()
    fit.K = K
    fit.tau = np.zeros(n) if tau0 is None else np.array(tau0, dtype=np.float64)
    fit.nu = np.zeros(n) if nu0 is None else np.array(nu0, dtype=np.float64)
    fit.Sigma, fit.mu, fit.L = _refresh(K, fit.tau, fit.nu)
    if tau0 is not None and np.any(fit.tau != 0):
        zero_sites = float(np.sum(log_ndtr_vec(y * bias / np.sqrt(1.0 + np.diag(K)))))
        warm_ok = True
        try:
            warm_ok = _evidence_terms(fit, y, bias).log_evidence >= zero_sites
        except np.linalg.LinAlgError:
            warm_ok = False
        if not warm_ok:
            fit.tau, fit.nu = np.zeros(n), np.zeros(n)
            fit.Sigma, fit.mu, fit.L = K.copy(), np.zeros(n), np.eye(n)
    work = np.empty(n)
    fit.converged = False
    fit.max_change = np.inf
    fit.n_sweeps = 0
    for sweep in range(1, max_sweeps + 1):
        order = rng.permutation(n).astype(np.int64)
        max_change, _ = ep_dense_sweep(fit.Sigma, fit.mu, fit.tau, fit.nu, y, bias, damping,
                                       order, work)
        # rank-one updates accumulate round-off: recompute from the sites every sweep
        fit.Sigma, fit.mu, fit.L = _refresh(K, fit.tau, fit.nu)
        fit.n_sweeps, fit.max_change = sweep, max_change
        if max_change < tol:
            fit.converged = True
            break
    return _evidence_terms(fit, y, bias)


def _gradients(fit, X, K_se, variance, lengthscale, family, jitter=None, bias_variance=None):
    """d log Z_EP / d (variance, lengthscale_j (D,), bias) at an EP fixed point, and
    d/d v_b after them when ``bias_variance`` (v_b) is given (``jitter`` is then needed too).

    ``K_se`` is k(X, X) without jitter or v_b for the stationary ``family`` (the name is
    historical).

    At the fixed point the site parameters may be held fixed (notes §1.9 step 0), so for a
    parameter of the prior d log Z_EP = 1/2 tr((b b^T - R) dK) with R = (K + S^-1)^-1 =
    S^1/2 B^-1 S^1/2 and b = R mu~ = nu - R K nu (RW Algorithm 5.2, eq. 5.27).

    The bias enters only the likelihood.  With the sites fixed, the cavities (functions of K
    and the sites) do not move, and in log Z_EP the bias appears only in the tilted
    normalisers log Zhat_n = log Phi(y_n (mu_-n + bias)/sqrt(1 + s2_-n)); the implicit
    dependence through the sites vanishes by stationarity.  Hence
    d log Z_EP / d bias = sum_n d log Zhat_n / d bias = sum_n alpha_n, the same derivative as
    with respect to the cavity mean (notes §1.9 step 6).
    """
    sq = np.sqrt(fit.tau)
    Binv = sla.cho_solve((fit.L, True), np.eye(fit.L.shape[0]), check_finite=False)
    R = sq[:, None] * Binv * sq[None, :]
    b = fit.nu - R @ (fit.K @ fit.nu)
    W = np.outer(b, b)
    W -= R
    W *= 0.5
    if bias_variance is None:
        # K = K_se + jitter * variance * I is proportional to the variance
        g_var = variance_gradient(W, fit.K) / variance
    else:
        # K = K_se + v_b + jitter * variance * I: the constant does not scale with it
        g_var = variance_gradient(W, K_se) / variance + jitter * float(np.trace(W))
    g_ls, _ = grad_contract(X, X, K_se, W, family, variance, lengthscale, symmetric=True)
    g_bias = float(np.sum(fit.alpha))
    if bias_variance is None:
        return g_var, g_ls, g_bias
    # dK/dv_b is the all-ones matrix
    return g_var, g_ls, g_bias, float(np.sum(W))


def _theta_gradient(g, variance, lengthscale, spec, bias_variance):
    """:func:`theta_gradient` of :func:`_gradients`' tuple ``g``."""
    return theta_gradient(*g[:3], variance, lengthscale, spec.ard, spec=spec,
                          g_bias_variance=g[3] if len(g) > 3 else None,
                          bias_variance=bias_variance)


class EPClassifier(_BinaryGPClassifierMixin, ClassifierMixin, SparseGPEstimator):
    """Binary Gaussian-process classifier with full (dense) expectation propagation.

    Stationary covariance (squared exponential by default, or Matérn ν = 1/2, 3/2, 5/2
    through ``kernel``; isotropic or ARD), probit likelihood with a bias,
    p(y = classes_[1] | f) = Phi(f + bias).  EP runs to convergence on the dense N x N posterior
    (O(N^3) per sweep); the hyper-parameters maximise the EP evidence by conjugate gradients in
    log space (bias unconstrained), EP warm-started from the previous site parameters.  The
    constructor arguments, attributes and evidence gradient match
    :class:`sparsegp.GFITCClassifier` without the inducing points.

    As there, the fit runs on centred and scaled inputs (:mod:`sparsegp._scaling`: one scale
    per feature for an ARD kernel and for the default covariance, one common scale for an
    isotropic kernel the user gave) and reports in the user's units, so that at the defaults
    predictions do not depend on the units or offset of any column beyond round-off.

    Parameters
    ----------
    kernel : Kernel, optional
        The covariance: a :mod:`sparsegp.kernels` stationary kernel (``SquaredExponential``,
        ``Matern`` with ν = 1/2, 3/2, 5/2; ARD when its length-scale is an array), optionally
        times a constant, plus ``ConstantKernel`` summands (the bias variance v_b, added to
        every covariance entry; learnt in ``theta_`` unless "fixed"), or the same built from
        scikit-learn's ``ConstantKernel``, ``RBF`` and ``Matern``. Its values are the start;
        hyper-parameters it holds "fixed" are not
        learnt (and not in ``theta_``), and its bounds box the search with
        ``optimizer="lbfgs"`` (``"cg"`` is unconstrained). Never modified; the fitted copy is
        ``kernel_``. None: the isotropic squared exponential with variance 1 on standardised
        inputs, searched without bounds from length-scale
        ``sparsegp._scaling.start_lengthscale(D)`` (1.0, or sqrt(D / 21) beyond 21
        features) standard deviations of each feature, so that the fit does not depend on
        the units of any column (an ARD kernel from the
        data: ``SquaredExponential(lengthscale=X.std(axis=0))``).
    bias : float, default=0.0
        Initial probit bias.
    jitter : float, default=1e-6
        ``jitter * variance`` is added to the diagonal of K (the same convention as GFITC's
        K_uu).  EP here never inverts K, so ``jitter=0`` is allowed (compare with GFITC at
        Z = X with ``jitter=0``: its FITC prior equals k(X, X) up to O(jitter^2)).
    optimizer : {"lbfgs", "cg"} or None, default="lbfgs"
        How the EP evidence is maximised over the variance, length-scale(s) (those the kernel
        does not hold fixed) and bias: ``L-BFGS-B`` (log kernel parameters within the
        kernel's bounds, bias unbounded) or scipy ``CG`` (seed 000 uses 20 CG iterations;
        it evaluates at the point clipped into the bounds), through
        :func:`sparsegp._optimize.maximize`. None holds every hyper-parameter fixed (EP runs
        at the given values only), as in scikit-learn's GPs.
        The names are those of one vocabulary across the estimators (README, table
        "optimizer and max_iter"); "l-bfgs-b", the old spelling of "lbfgs", is
        accepted in this release only, with a ``FutureWarning``.
    max_iter : int, default=1000
        Safety cap on the optimiser iterations per start: stopping there before the stopping
        rule is met raises a :class:`~sparsegp.exceptions.ConvergenceWarning`. With
        ``tol=None``, the fixed number of iterations to run (seed 000: 20 CG steps), without
        a warning.
    tol : float or None, default=3e-4
        Stopping tolerance in nats per training row: the search has converged once the log
        evidence gains less than ``tol * n_samples`` over the last five iterations while its
        gradient is not growing, or when scipy's own test is met (:mod:`sparsegp._optimize`,
        "Stopping rule"; ``benchmarks/DEFAULTS.md``). 0 runs to scipy's test; None runs
        ``max_iter`` iterations, the papers' schedules.
    n_restarts : int, default=0
        Extra starts whose log kernel parameters are drawn uniformly inside the kernel's
        bounds (within a factor 10 of the given values where unbounded, as for the default
        kernel); the bias starts where given. The fit with the best evidence is kept.
    ep_tol : float, default=1e-6
        EP stops when the largest undamped site residual of a sweep, |moment-matched target -
        current| of any site parameter, is below this (also when damped).
    ep_max_sweeps : int, default=200
        EP sweep limit (per evidence evaluation).
    ep_damping : float, default=1.0
        EP damping in (0, 1]; 1 is undamped.
    random_state : None, int or numpy.random.Generator, default=None
        Seeds the site visiting order and the restarts.
    verbose : bool, default=False
        Print the optimiser's progress ("iter k: log evidence ...") and the final EP summary.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Labels; ``classes_[1]`` is the +1 class.
    n_features_in_ : int
    X_train_ : ndarray of shape (n_samples, n_features)
    y_train_ : ndarray of shape (n_samples,)
        Training labels mapped to -1/+1.
    kernel_ : Kernel
        The fitted covariance in the units of X (a copy of ``kernel``, or of the default SE
        kernel) at ``variance_`` and ``lengthscale_``, plus one ``ConstantKernel`` at the
        fitted v_b when ``kernel`` has constant summands. The default covariance, isotropic on
        standardised inputs, comes back with one length-scale per feature, ``lengthscale_``
        times that feature's standard deviation.
    variance_ : float
    lengthscale_ : float or ndarray of shape (n_features,)
        A float for an isotropic kernel. In the units of X, except the default covariance's
        one length-scale, in standard deviations of each feature.
    bias_ : float
    theta_ : ndarray of shape (n_free + 1,)
        ``[log variance, log lengthscale(s), (log v_b,) bias]`` without the kernel's fixed
        hyper-parameters, length-scales as ``lengthscale_``: the vector of
        :meth:`log_marginal_likelihood`.
    log_evidence_ : float
        EP log evidence log Z_EP at the fitted state.
    log_evidence_gradient_ : dict
        Derivatives of ``log_evidence_`` w.r.t. the natural parameters: ``"variance"`` (float),
        ``"lengthscale"`` (float, or (n_features,) with ARD), ``"bias"`` (float), and
        ``"bias_variance"`` (float) with a constant summand; fixed kernel parameters included.
    site_precision_ : ndarray of shape (n_samples,)
        Site precisions tau~.
    site_nu_ : ndarray of shape (n_samples,)
        Site precision-times-means nu~.
    site_mean_ : ndarray of shape (n_samples,)
        Site means nu~ / tau~.
    posterior_mean_, posterior_var_ : ndarray of shape (n_samples,)
        Marginals of the approximate posterior of f at the training inputs.
    n_sweeps_ : int
        EP sweeps of the final EP run.
    converged_ : bool
        Whether the final EP run met ``ep_tol``.
    log_marginal_likelihood_value_ : float
        The objective the fit maximised, under scikit-learn's name: the EP log evidence log Z_EP
        (= ``log_evidence_``).
    n_iter_ : int
        Optimiser iterations of the best start (0 without optimisation).
    converged_ : bool
        Whether the search met its stopping rule (True without optimisation; False at the
        ``max_iter``: the cap, or the fixed schedule of ``tol=None``).
    L_ : ndarray of shape (n_samples, n_samples)
        Lower Cholesky factor of B = I + S^1/2 K S^1/2 (prediction cache).
    alpha_ : ndarray of shape (n_samples,)
        (K + S~^-1)^-1 mu~, so that the predictive mean is k(X_train_, x*)^T alpha_.

    References
    ----------
    Rasmussen & Williams (2006), Gaussian Processes for Machine Learning, §3.6, Algorithms 3.5,
    3.6, 5.2.  Naish-Guzman & Holden (2007), The Generalized FITC Approximation (seed 000).
    """

    # EP's sweeps are compiled, sequential and as costly as the BLAS refresh after each, and
    # with OpenBLAS threaded its idle workers (two libraries' worth: numpy's and scipy's) spin
    # against the sweep: at N = 600 on 2 cores a fit took 5.3 s with threaded BLAS and 3.5 s
    # with one thread, so BLAS keeps one thread here (the default pool)

    _takes_bias_variance = True

    def __init__(self, kernel=None, bias=0.0, jitter=1e-6, optimizer="lbfgs", max_iter=MAX_ITER,
                 tol=TOL, n_restarts=0, ep_tol=1e-6, ep_max_sweeps=200, ep_damping=1.0,
                 random_state=None, verbose=False):
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
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------------------------------

    def _covariance(self, X, variance, lengthscale, jitter, family, bias_variance=None):
        """k(X, X) of the stationary ``family`` and K = k(X, X) (+ v_b) + jitter * variance
        * I."""
        K_se = kernel_matrix(X, X, family, variance, lengthscale)
        K = K_se.copy() if bias_variance is None else K_se + bias_variance
        K[np.diag_indices_from(K)] += jitter * variance
        return K_se, K

    def _ep_at(self, X, y, variance, lengthscale, bias, hyper, warm, bias_variance=None):
        K_se, K = self._covariance(X, variance, lengthscale, hyper.jitter, hyper.spec.family,
                                   bias_variance)
        tau0, nu0 = (None, None) if warm is None else warm
        fit = _run_ep(K, y, bias, tau0, nu0, hyper.ep_tol, hyper.ep_max_sweeps,
                      hyper.ep_damping, hyper.rng)
        return fit, K_se

    def fit(self, X, y):
        """Fit EP (and, unless ``optimizer=None``, the hyper-parameters) to the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two distinct labels of any type.

        Returns
        -------
        self : EPClassifier
        """
        X_user, y, hyper = self._validate_binary_fit(X, y)
        D = X_user.shape[1]
        # learn in model units (centred, scaled; per feature for the default covariance), so
        # that the fit does not depend on the units of X; reported in user units by _store
        scaling = self._input_scaling(X_user, hyper)
        X, _ = self._to_model_units(scaling, X_user, hyper)
        spec = hyper.spec
        vb0 = None if spec.bias_term is None else float(spec.bias_term.constant_value)
        theta0 = pack_theta(hyper.variance, hyper.lengthscale, hyper.bias, hyper.ard, spec=spec,
                            bias_variance=vb0)
        warm = None
        n_iter, converged = 0, True
        if hyper.optimizer is not None and hyper.max_iter > 0:
            def evaluate(theta, state):
                variance, lengthscale, bias, _, vb = unpack_theta_vb(theta, D, spec)
                fit, K_se = self._ep_at(X, y, variance, lengthscale, bias, hyper, state, vb)
                g = _gradients(fit, X, K_se, variance, lengthscale, spec.family, hyper.jitter,
                               vb)
                grad = _theta_gradient(g, variance, lengthscale, spec, vb)
                return fit.log_evidence, grad, (fit.tau, fit.nu)

            bounds, restart_mask = search_box(spec, D)
            best = maximize(evaluate, theta0, method=hyper.optimizer, bounds=bounds,
                            max_iter=hyper.max_iter, n_restarts=hyper.n_restarts,
                            tol=stopping_gain(hyper.tol, len(y)),
                            # a fixed schedule (tol=None) stops at max_iter by design
                            warn_at_cap=hyper.tol is not None, warn_at_bound=True,
                            random_state=hyper.rng, restart_mask=restart_mask, warm=True,
                            progress=bool(self.verbose), label="EPClassifier",
                            value_name="log evidence",
                            advice=optimizer_advice(hyper.optimizer))
            if not np.isfinite(best.value):
                raise ValueError(
                    "EP failed at every hyper-parameter value tried (Cholesky failure or "
                    "non-finite evidence); increase jitter or rescale X / the kernel's "
                    "start values"
                )
            theta0, warm, n_iter = best.theta, best.state, best.n_iter
            converged = bool(best.converged)
        variance, lengthscale, bias, _, vb = unpack_theta_vb(theta0, D, spec)
        try:
            fit, K_se = self._ep_at(X, y, variance, lengthscale, bias, hyper, warm, vb)
        except np.linalg.LinAlgError as exc:
            raise ValueError(
                f"EP failed at variance={variance:.4g}, lengthscale={lengthscale}, "
                f"bias={bias:.4g} ({exc}); increase jitter or rescale the inputs"
            ) from exc
        if not fit.converged:
            self._warn_ep_not_converged(fit.n_sweeps, fit.max_change)
        g = _gradients(fit, X, K_se, variance, lengthscale, spec.family, hyper.jitter, vb)
        self._scaling, self._X, self._ls, self._vb = scaling, X, lengthscale, vb
        self._store(fit, X_user, y, variance, lengthscale, bias, spec, n_iter)
        self.converged_ = converged
        # log_marginal_likelihood(theta) re-runs EP with the validated options
        self._ep_options = replace(hyper, rng=None)
        extra = {} if vb is None else {"bias_variance": g[3]}
        self.log_evidence_gradient_ = self._gradient_dict(*g[:3], ard=spec.ard, scaling=scaling,
                                                          **extra)
        if self.verbose:
            print(f"[EPClassifier] final EP: {fit.n_sweeps} sweeps, log evidence "
                  f"{fit.log_evidence:.6f}")
        self._check_against_frequencies(X_user, (y > 0).astype(np.int64))
        return self

    def _store(self, fit, X, y, variance, lengthscale, bias, spec, n_iter):
        """Fitted attributes; X in the user's units, ``lengthscale`` and ``spec`` in model
        units (``self._scaling``)."""
        self._set_hyper_attributes(variance, lengthscale, bias, spec, self._scaling, self._vb)
        # predictions and log_marginal_likelihood(theta) need the covariance's family, the
        # fixed values and the free/fixed layout of theta
        self._spec = spec
        self.X_train_ = X
        self.y_train_ = y
        self.site_precision_ = fit.tau
        self.site_nu_ = fit.nu
        with np.errstate(divide="ignore", invalid="ignore"):
            self.site_mean_ = np.where(fit.tau > 0, fit.nu / fit.tau, 0.0)
        self.posterior_mean_ = fit.mu
        self.posterior_var_ = np.diag(fit.Sigma).copy()
        self.log_evidence_ = fit.log_evidence
        self.log_marginal_likelihood_value_ = float(fit.log_evidence)
        self.n_sweeps_ = fit.n_sweeps
        self.converged_ = fit.converged
        self.n_iter_ = n_iter
        self.L_ = fit.L
        # RW Algorithm 3.6 line 4: alpha = nu - S^1/2 B^-1 S^1/2 K nu
        sq = np.sqrt(fit.tau)
        self.alpha_ = fit.nu - sq * sla.cho_solve((fit.L, True), sq * (fit.K @ fit.nu),
                                                  check_finite=False)

    def _predict_latent(self, X):
        """RW Algorithm 3.6: mean k*^T alpha_, variance k** - ||L^-1 S^1/2 k*||^2."""
        sq = np.sqrt(self.site_precision_)
        mean = np.empty(X.shape[0])
        var = np.empty(X.shape[0])
        for start in range(0, X.shape[0], _PREDICT_BATCH):
            stop = min(start + _PREDICT_BATCH, X.shape[0])
            # in the model units of the fit (centred first: no digits lost to an offset)
            Ks = kernel_matrix(self._X, self._scaling.transform(X[start:stop]),
                               self._spec.family, self.variance_, self._ls)
            prior = self.variance_
            if self._vb is not None:
                Ks += self._vb
                prior = self.variance_ + self._vb
            mean[start:stop] = Ks.T @ self.alpha_
            V = sla.solve_triangular(self.L_, sq[:, None] * Ks, lower=True, check_finite=False)
            var[start:stop] = prior - np.einsum("ij,ij->j", V, V)
        return mean, var

    _lml_objective = "The EP log evidence log Z_EP"
    _lml_notes = """``theta`` is ``[log variance, log lengthscale(s), (log v_b,) bias]`` less the
kernel's fixed hyper-parameters (``theta_``, length-scales as ``lengthscale_``). EP is run to
convergence at ``theta`` (tolerance ``ep_tol``), warm-started from the fitted sites, and the
gradient is that of RW Algorithm 5.2 at its fixed point, exact there; at ``theta=None`` both
are the fitted values."""

    def _log_marginal_likelihood_gradient(self):
        g = self.log_evidence_gradient_
        return theta_gradient(g["variance"], np.atleast_1d(g["lengthscale"]), g["bias"],
                              self.variance_, np.atleast_1d(self.lengthscale_),
                              bool(self._spec.ard), spec=self._spec,
                              g_bias_variance=g.get("bias_variance"), bias_variance=self._vb)

    def _log_marginal_likelihood(self, theta, eval_gradient):
        spec = self._spec
        X, y = self._X, self.y_train_
        # fit's options; the sweep order needs a generator of its own (a fixed one: the
        # fixed point does not depend on the order)
        hyper = replace(self._ep_options, rng=np.random.default_rng(0))
        variance, lengthscale, bias, _, vb = unpack_theta_vb(
            theta_to_model(theta, self._scaling, spec), self.n_features_in_, spec)
        fit, K_se = self._ep_at(X, y, variance, lengthscale, bias, hyper,
                                (self.site_precision_, self.site_nu_), vb)
        if not eval_gradient:
            return fit.log_evidence
        g = _gradients(fit, X, K_se, variance, lengthscale, spec.family, hyper.jitter, vb)
        return fit.log_evidence, _theta_gradient(g, variance, lengthscale, spec, vb)
