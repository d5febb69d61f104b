"""``SparseGPRegressor``: the sparse GP regression family of seed 001 plus VFE and the exact GP."""
import math
import warnings

import numpy as np

from sklearn.base import RegressorMixin

from .._config import (COARSE_LEVEL_FACTOR, COARSE_MIN_FACTOR, COARSE_ROWS,
                       COARSE_ROWS_PER_UNKNOWN,
                       DENSE_BLAS_MIN_ROWS, JITTER, MAX_ITER, REGRESSION_TOL)
from .._inducing_base import InducingPointEstimator
from .._optimize import kernel_log_bounds, maximize, stopping_gain, unbounded
from .._scaling import InputScaling, scaling_for
from .._validation import check_int, check_option, check_tol
from ..exceptions import ConvergenceWarning, JitterWarning, warn
from ..inducing import check_blocks, kmeans, kmeans_blocks, median_split_blocks
from ..kernels import kernel_spec
from . import _base, _predict
from ._inducing import greedy_variance_selection

_LOG_BOUND = math.log(1e6)
#: A fitted model whose training R² is at most this predicts no better than the mean of y.
MEAN_R2 = 1e-2
#: Mean prior variance left unexplained by the inducing inputs at the training inputs,
#: mean(K_nn − Q_nn), as a multiple of var(y), beyond which a SoR/DTC fit is reported as far
#: more certain than its kernel supports (``_warn_if_degenerate``). Measured at the defaults
#: (70/30 splits; M = 15 and 50): healthy fits at most 1.3 (test R² within 0.01 of training
#: R²), degenerate ones from 6.9 (5-D synthetic, training R² 1.00, test −0.19) to 5e5
#: (diabetes, training 0.96, test −6.6).
DEGENERATE_RATIO = 4.0


def _rows(X):
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) >= 1 else 0


class SparseGPRegressor(RegressorMixin, InducingPointEstimator):
    """Sparse Gaussian-process regression with a stationary covariance (SE by default).

    One estimator for the unifying view of Quiñonero-Candela & Rasmussen (seed 001): every
    approximation is an exact GP with an effective prior covariance on the training set and a
    test conditional (notes §4.1), computed in O(N M²) time and O(N M) memory through
    Cholesky factors and Woodbury's identity — never an N×N matrix, except for ``"exact"``.

    The fit runs in model units (:mod:`sparsegp._scaling`): the inputs centred and scaled,
    one scale per feature for an ARD kernel or the default covariance, one common scale for
    an isotropic kernel or length-scale the user gave; with ``normalize_y`` the targets too.
    The default covariance is thus an isotropic kernel on standardised inputs (as behind a
    ``StandardScaler``), and a fit does not depend on the units of X or y. Fitted values,
    inducing inputs, gradients and predictions are reported in the user's units.

    An optimised fit that should not be trusted says so in a
    :class:`~sparsegp.exceptions.ConvergenceWarning` with what to try: when a
    hyper-parameter ends on its bound, when the fit predicts the training targets no better
    than their mean (training R² at most 0.01), and, for SoR and DTC, when it is far more
    certain than its kernel supports (the prior variance the inducing inputs leave
    unexplained at the training inputs, which these two take as zero, averages more than
    four times var(y)).

    Parameters
    ----------
    approximation : {"fitc", "sod", "sor", "dtc", "fic", "pitc", "vfe", "exact"}, default="fitc"
        ``"sod"``: exact GP on a subset of ``n_inducing`` training points (O(M³)).
        ``"sor"``: subset of regressors, Q_ff, deterministic test conditional.
        ``"dtc"``: Q_ff with the exact test conditional (same mean as SoR, larger variance).
        ``"fitc"``: Q_ff + diag(K_ff − Q_ff), exact test conditional (joint predictions use
        the full K**). ``"fic"``: the same training prior with a fully independent test
        conditional (differs from FITC only in ``return_cov``). ``"pitc"``: block-diagonal
        correction, blocks from ``blocks``. ``"vfe"``: Titsias' variational bound, DTC
        evidence minus tr(K_ff − Q_ff)/(2σ²), DTC predictions. ``"exact"``: full GP (O(N³)).
    n_inducing : int or "auto", default="auto"
        Number of inducing inputs M (subset size for ``"sod"``); ``"auto"`` is 50, or N
        when there are fewer training rows. Ignored when ``inducing_points`` is given.
    inducing_points : array-like of shape (M, D), optional
        Initial inducing inputs; overrides ``n_inducing`` and ``init``.
    init : {"random", "kmeans", "greedy"}, default="random"
        ``"random"``: M training inputs drawn without replacement; ``"kmeans"``: k-means
        centres; ``"greedy"``: greedy forward selection of training inputs by the largest
        conditional prior variance Var[f(x) | u] = k(x, x) − Q(x, x) given the points already
        chosen (pivoted incomplete Cholesky under the initial hyper-parameters; O(N M²), no
        targets used) — the cheap posterior-variance criterion of seed 001's "choice of the
        inducing variables".
    inducing_objective : {"auto", "vfe", "evidence"} or None, default="auto"
        What moves the inducing inputs in an optimised fit (ignored by ``"sod"`` and
        ``"exact"``, which have none). ``"evidence"``: the approximation's own evidence, over
        the hyper-parameters and the inducing inputs together (seed 001, and Snelson &
        Ghahramani's SPGP for FITC: the behaviour of the papers' tables). ``"vfe"``: two
        stages; first Titsias' bound over both, which treats the inducing inputs as
        variational parameters (moving them only brings the approximation closer to the
        exact GP), then the approximation's own evidence over the hyper-parameters alone,
        the inducing inputs held where the bound put them. None: the inducing inputs stay
        at their initial values. ``"auto"``: ``"vfe"`` for ``"fitc"``, ``"fic"``, ``"pitc"``,
        ``"sor"`` and ``"dtc"`` (for ``"vfe"`` the two are one).

        Why ``"vfe"`` for the FITC family: their evidence is that of a model whose
        input-dependent noise diag(K_ff − Q_ff) (PITC: its blocks) the M × D inducing
        coordinates shape, so maximising it over them fits the noise to the training
        targets (Bauer, van der Wilk & Rasmussen, NeurIPS 2016). On raw ``load_diabetes``
        (70/30 split, N = 309, D = 10, M = 50) it ran FITC's noise to 6e-5 var(y) for a
        test R² of 0.312 (``"vfe"``: noise 0.35 var(y), R² 0.335; PITC 0.322 -> 0.362;
        scikit-learn's exact GP 0.378); on Friedman #1 (N = 300, 1000, 3000) PITC's test
        R² went from 0.71, 0.80, 0.81 to 0.83, 0.89, 0.94 and FITC's from 0.82, 0.85, 0.94
        to 0.83, 0.89, 0.94; where N is large against M × D the joint search may do a little
        better (8-D, N = 2000: FITC 0.963 against 0.961, PITC 0.966 against 0.960; the
        table is in ``benchmarks/DEFAULTS.md``). A noise floor does not help
        (diag(K_ff − Q_ff) takes the noise's place), nor does starting FITC's own joint
        search from the VFE fit (it runs off to the same optimum), and inducing inputs held
        at a random start lose up to 0.15 R² on Friedman #1.

        ``max_iter`` and ``n_restarts`` apply to the first stage (the best bound wins); the
        second, a search over the few hyper-parameters, runs from its result (typically 5-25
        iterations).

        Why ``"vfe"`` for SoR and DTC (issue 49): their evidence takes the prior variance
        K_ff − Q_ff that the inducing inputs leave unexplained as zero, so over the inducing
        inputs it is maximised by a degenerate model. On standardised ``load_diabetes``
        (70/30 split, M = 50) the joint search ran the signal variance to its bound 1e6
        var(y), two of three searches stopping at the 1000-iteration cap, and ended at test
        R² −9.1 to −104 by ``random_state``; its path was chaotic, a 1e-12 relative change
        to X moving the predictions by 24-26 s.d. of y. Placed by the bound, the inducing
        inputs leave a well-posed search over the three hyper-parameters: test R²
        0.348-0.358, converged in 39-50 iterations, predictions moved by at most 2.4e-7 s.d.
        of y (``benchmarks/sor_dtc_continuity.py``).
    kernel : Kernel, optional
        The covariance: a :mod:`sparsegp.kernels` stationary kernel (``SquaredExponential``,
        ``Matern`` with ν = 1/2, 3/2, 5/2; ARD when its length-scale is an array), optionally
        times a constant, or the same built from scikit-learn's ``ConstantKernel``, ``RBF``
        and ``Matern``. Its values are the start, its bounds (or "fixed") bound the search.
        None: an isotropic squared exponential on standardised features, starting at variance
        1 and length-scale 1 (one standard deviation of each feature; sqrt(D / 21) beyond
        21 features, :func:`sparsegp._scaling.start_lengthscale`), with the search box
        [1e-6, 1e6] in those units; a kernel given is in the units of X.
    noise_variance : float, default=0.1
        Initial Gaussian noise variance σ² (> 0).
    normalize_y : bool, default=True
        Centre the targets and scale them to unit variance before fitting (scikit-learn's
        name and meaning): the starting values of ``noise_variance`` and the kernel's
        variance are then relative to var(y), so the defaults suit targets in any units.
        Fitted values, predictions and the evidence are reported in the units of y.
        False fits a zero-mean GP to y as given.
    jitter : float, default=1e-6
        K_uu jitter as a multiple of the signal variance (notes §0.2); grown tenfold, with a
        :class:`~sparsegp.exceptions.JitterWarning`, when K_uu cannot be factorised.
    optimizer : {"lbfgs", "cg"} or None, default="lbfgs"
        How the evidence (VFE: the bound) is maximised over log s², log ℓ, log σ² and the
        inducing inputs (not for ``"sod"``/``"exact"``, which have none to move): L-BFGS-B
        (log-parameters within the kernel's bounds, [1e-6, 1e6] by default, and σ² within
        [1e-6, 1e6]) or nonlinear conjugate gradients (evaluated at the point clipped into
        those bounds), through :func:`sparsegp._optimize.maximize`. None holds every
        hyper-parameter and the inducing inputs fixed, as in scikit-learn's GPs.
    max_iter : int, default=1000
        Safety cap on the optimiser iterations per start (and per stage); stopping there
        before converging raises a :class:`~sparsegp.exceptions.ConvergenceWarning`. With
        ``tol=None``, the fixed number of iterations to run (no warning).
    tol : float or None, default=3e-5
        Stopping tolerance in nats per training row: a search has converged once its
        evidence (on the normalised targets) gains less than ``tol * max(n_samples, 3000)``
        over the last five iterations, or when L-BFGS-B's own test is met
        (:mod:`sparsegp._optimize`, "Stopping rule"). Tighter than the classifiers' 3e-4: a
        regression evaluation is cheap, and on Friedman #1 the inducing inputs still improve
        the test R² at gains of 1e-4 nats a row (``benchmarks/DEFAULTS.md``). 0 runs to
        scipy's test; None runs ``max_iter`` iterations.
    coarse_rows : "auto", int or None, default="auto"
        A coarse start for large training sets: the search that places the inducing inputs
        by the VFE bound (every sparse method's at ``inducing_objective="auto"``) runs first
        on a random subset of this many rows, then on subsets three times larger while they
        are at most a third of the training set (each holding the one before), and last on
        every row, each search starting where the one before ended. A coarse evaluation
        costs its share of the rows, and the small searches bring the inducing inputs near
        where the full search ends, which then needs a fraction of its iterations (issue
        45's T2, N = 100 000, M = 100, D = 5: the test accuracy of GPflow's 100 iterations
        in two thirds of the evaluations, and 20-26 % less CPU time for the whole fit on
        other seeds; ``benchmarks/COARSE_START.md``). Each coarse search
        stops on the full search's rule in nats (``tol`` times all the rows), not per row of
        its own. The subsets are drawn with ``random_state`` from the rows in lexicographic
        order, so they do not depend on the order of the rows or on their units.
        ``"auto"``: 10 000 rows, or 20 per unknown of the search if more, when there are at
        least four times as many training rows and the fit stops on its rule (``tol`` not
        None); otherwise none. None: no coarse start. The joint search of
        ``inducing_objective="evidence"`` has none: on a subset, the FITC family's evidence
        fits its noise with the inducing inputs (see ``inducing_objective``).
    n_restarts : int, default=0
        Extra starts whose log hyper-parameters are drawn uniformly inside their bounds (as
        scikit-learn's ``GaussianProcessRegressor`` does; and, unless ``inducing_points`` is
        given, with inducing inputs initialised afresh under them); the best evidence wins.
    blocks : int or list of index arrays, optional
        PITC partition. An int asks for that many k-means blocks
        (:func:`sparsegp.inducing.kmeans_blocks`); a list of integer arrays must partition
        0..N-1. Default: balanced blocks of M/2..M points from recursive median splits of
        the inputs (block size about M keeps O(N M²); k-means blocks can be very uneven,
        and the batched PITC algebra costs (number of blocks) × (largest block)³).
    random_state : None, int or numpy.random.Generator
        Seeds the inducing-input initialisation, the k-means blocks and the restarts.
    verbose : bool, default=False
        Show a progress bar per start with the evidence, and the final evidence.

    Attributes
    ----------
    inducing_points_ : ndarray of shape (M, D)
        Final inducing inputs in the units of X (the subset for ``"sod"``; absent for
        ``"exact"``).
    kernel_ : Kernel
        The fitted covariance in the user's units (a copy of ``kernel``, or of the default SE
        kernel), its variance in the units of y². The default covariance, isotropic on
        standardised inputs, comes back with one length-scale per feature,
        ``lengthscale_`` times that feature's standard deviation.
    variance_, noise_variance_ : float
    lengthscale_ : float or ndarray of shape (D,)
        Fitted hyper-parameters (an array with ARD), as ``log_marginal_likelihood`` reads
        them: variances in the units of y², length-scales in the units of X, except the
        default covariance's one length-scale, in standard deviations of each feature.
    log_marginal_likelihood_ : float
        Log evidence of the approximation (VFE: the variational lower bound) at the fit, as a
        density of y in its own units (with ``normalize_y``, the mean of y is taken as known).
    theta_ : ndarray of shape (n_free,)
        ``[log s², log ℓ (1 value, or D with ARD), log σ²]`` at the fit, less the
        hyper-parameters the kernel holds fixed, in the units of ``variance_``,
        ``lengthscale_`` and ``noise_variance_``: the vector of :meth:`log_marginal_likelihood`.
    log_marginal_likelihood_gradient_ : dict
        Its gradient with respect to the natural parameters: ``"variance"`` (float),
        ``"lengthscale"`` (float, or (D,) with ARD), ``"noise_variance"`` (float) and
        ``"inducing_points"`` ((M, D), None for ``"sod"`` and ``"exact"``).
    blocks_ : list of ndarray
        PITC blocks used (PITC only).
    subset_indices_ : ndarray of shape (M,)
        Training rows used by ``"sod"``.
    jitter_ : float
        Jitter multiple finally used on K_uu.
    log_marginal_likelihood_value_ : float
        The objective the fit maximised, under scikit-learn's name: the log evidence (VFE: its
        bound), as ``log_marginal_likelihood_``.
    n_iter_ : int
        Optimiser iterations of the best start (0 without optimisation; with
        ``inducing_objective="vfe"``, those of both stages; with a coarse start, its
        iterations on the subset too).
    coarse_rows_ : int
        Rows of the first (smallest) coarse search (0 when there was none).
    converged_ : bool
        Whether every search met its stopping rule (True without optimisation; False when
        one stopped at ``max_iter``, or ran the fixed schedule of ``tol=None``).
    n_features_in_ : int
    X_train_, y_train_ : ndarrays
        Copies of the training data, in the user's units (needed by augmentation and
        transduction).
    y_mean_, y_std_ : float
        The centre and scale taken off y (0 and 1 without ``normalize_y``).

    References
    ----------
    J. Quiñonero-Candela and C. E. Rasmussen, A unifying view of sparse approximate Gaussian
    process regression, JMLR 6 (2005) (seed 001). M. Titsias, Variational learning of
    inducing variables in sparse Gaussian processes, AISTATS 2009 (VFE).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsegp import SparseGPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-3, 3, size=(200, 1)); y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=200)
    >>> gp = SparseGPRegressor("fitc", n_inducing=10, random_state=0).fit(X, y)
    >>> mean, std = gp.predict(X[:5], return_std=True)
    """

    _inits = ("random", "kmeans", "greedy")

    def __init__(self, approximation="fitc", n_inducing="auto", inducing_points=None,
                 init="random", inducing_objective="auto", kernel=None, noise_variance=0.1,
                 normalize_y=True, jitter=JITTER, optimizer="lbfgs", max_iter=MAX_ITER,
                 tol=REGRESSION_TOL, coarse_rows="auto", n_restarts=0, blocks=None,
                 random_state=None, verbose=False):
        self.approximation = approximation
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.init = init
        self.inducing_objective = inducing_objective
        self.kernel = kernel
        self.noise_variance = noise_variance
        self.normalize_y = normalize_y
        self.jitter = jitter
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.tol = tol
        self.coarse_rows = coarse_rows
        self.n_restarts = n_restarts
        self.blocks = blocks
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _parallel_pool(self, X=None):
        # FITC/DTC-type evidences split their rows among Numba's threads. PITC's blocks are
        # BLAS calls, but held to one BLAS thread too: OpenBLAS's dgemm rounds differently
        # with two threads than with one (Vtᵀ U differs in the last bits), and PITC's
        # optimiser path carried that to 0.8 % of y's s.d. on diabetes; pinned, the fit is
        # the same at any thread count (issue 23 item 6; and on a loaded machine two BLAS
        # threads made its evidence 13x slower, N = 20 000, M = 100). The exact GP and SoD
        # are N x N factorisations, which gain from threaded BLAS only once they are large
        # (exact evidence + gradient on 2 cores: 0.96 s against 1.37 s pinned at N = 3000,
        # but no gain at N = 1500); their fits converge, and 1 and 2 BLAS threads agreed to
        # 3e-12 of y's s.d. (exact, N = 3200)
        if self.approximation in _base.ROW_SPLIT_METHODS or self.approximation == "pitc":
            return "numba"
        rows = getattr(self, "X_train_", None)
        n = max(_rows(X), 0 if rows is None else rows.shape[0])
        return "blas" if n >= DENSE_BLAS_MIN_ROWS else "numba"

    def _validate(self, X, y):
        X, y = self._validate_fit_data(X, y, classifier=False)
        N, D = X.shape
        check_option(self.approximation, "approximation", _base.APPROXIMATIONS)
        if self.optimizer is not None:
            check_option(self.optimizer, "optimizer", ("lbfgs", "cg"))
        if self.inducing_objective is not None:
            check_option(self.inducing_objective, "inducing_objective",
                         ("auto", "vfe", "evidence"))
        if not isinstance(self.normalize_y, (bool, np.bool_)):
            raise ValueError(f"normalize_y must be True or False; got {self.normalize_y!r}")
        sn2 = self._check_positive_param("noise_variance")
        spec = self._kernel_spec(X)
        s2, ls = spec.variance, spec.lengthscale
        jitter = self._check_jitter()
        check_int(self.max_iter, "max_iter", minimum=0)
        check_tol(self.tol)
        if not (self.coarse_rows is None or isinstance(self.coarse_rows, str)
                and self.coarse_rows == "auto"):
            if isinstance(self.coarse_rows, str):
                raise ValueError("coarse_rows must be 'auto', None or an integer >= 1; got "
                                 f"{self.coarse_rows!r}")
            check_int(self.coarse_rows, "coarse_rows", minimum=1)
        check_int(self.n_restarts, "n_restarts", minimum=0)
        Z = None
        if self.approximation != "exact":
            Z = self._check_inducing_points(N, D)
        blocks = None
        if self.blocks is not None and not isinstance(self.blocks, (int, np.integer)):
            blocks = check_blocks(self.blocks, N)
        elif self.blocks is not None:
            check_int(self.blocks, "blocks", minimum=1, maximum=N)
        return X, y, spec, sn2, jitter, Z, blocks

    def _kernel_spec(self, X):
        """The covariance to fit: ``kernel``, or for None the default SE kernel."""
        bounds = (math.exp(-_LOG_BOUND), math.exp(_LOG_BOUND))
        return kernel_spec(self.kernel, X.shape[1], type(self).__name__,
                           default_bounds=bounds)

    def _default_covariance(self):
        """Whether the user gave no kernel (the data-following start).

        Then the inputs are standardised per feature and the start and box of the
        length-scale are in units of each feature's spread (:mod:`sparsegp._scaling`).
        """
        return self.kernel is None

    def _ls_reported(self, ls):
        """``lengthscale_`` from model-unit length-scales (D,): float unless ARD; values the
        kernel holds fixed as the user gave them."""
        spec = self._spec
        out = (np.asarray(ls, dtype=np.float64) * self._ls_unit if spec.free_lengthscale
               else spec.user_lengthscale)
        return out.copy() if spec.ard else float(out[0])

    def _user_gradient(self, grad, u2):
        """The evidence gradient in the units of the reported parameters.

        ``grad`` holds derivatives by the model-unit parameters (y normalised): variances
        scale by ``u2`` = var(y), a length-scale and the inducing inputs by their units.
        """
        out = dict(grad)
        out["variance"] = grad["variance"] / u2
        out["noise_variance"] = grad["noise_variance"] / u2
        g_ls = np.asarray(grad["lengthscale"], dtype=np.float64) / self._ls_unit
        # an isotropic length-scale moves every dimension's at once (one common unit)
        out["lengthscale"] = g_ls if self._spec.ard else float(np.sum(g_ls))
        if grad.get("inducing_points") is not None:
            out["inducing_points"] = self._scaling.gradient_to_user(grad["inducing_points"])
        return out

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y):
        """Fit the hyper-parameters (and inducing inputs) by maximising the evidence.

        Parameters
        ----------
        X : array-like of shape (N, D)
        y : array-like of shape (N,)

        Returns
        -------
        self : SparseGPRegressor
        """
        X, y, spec, sn2, jitter, Z_user, blocks = self._validate(X, y)
        rng = self._check_random_state()
        method = self.approximation
        N, D = X.shape
        self.X_train_ = X
        self.y_train_ = y
        # learn in model units (sparsegp._scaling): centred, and scaled per feature for the
        # default covariance or an ARD kernel, so the fit is the same whatever the units of
        # X; everything is reported in the user's units below
        default = self._default_covariance()
        scaling = scaling_for(X, spec, default, standardise_default=True)
        self._scaling = scaling
        self._spec = spec = scaling.spec_to_model(spec, keep_bounds=default)
        # the units lengthscale_ is reported in: the user's, except for the default
        # isotropic covariance, whose one length-scale is in units of each feature's spread
        self._ls_unit = (np.ones(D) if default and not spec.ard else scaling.scale.copy())
        s2, ls = spec.variance, spec.lengthscale
        X = scaling.transform(X)
        Z = None if Z_user is None else scaling.transform(Z_user)
        y_mean, y_std = _target_scale(y) if self.normalize_y else (0.0, 1.0)
        if self.normalize_y:
            y = (y - y_mean) / y_std
        self._y_model = y                       # the targets the model sees

        if method == "sod":
            if Z is not None:
                raise ValueError("approximation='sod' selects a subset of the training data; "
                                 "pass n_inducing instead of inducing_points")
            idx = self._choose_subset(X, s2, ls, jitter, rng)
            self.subset_indices_ = idx
            Xfit, yfit = X[idx], y[idx]
        else:
            Xfit, yfit = X, y
        if method in _base.SPARSE_METHODS and Z is None:
            Z = self._init_Z(X, s2, ls, jitter, rng)
        if method == "pitc":
            if blocks is None and self.blocks is not None:
                blocks = kmeans_blocks(X, int(self.blocks), rng)
            elif blocks is None:
                blocks = median_split_blocks(X, Z.shape[0])
            self.blocks_ = blocks
        self._blocks_fit = blocks

        theta0 = self._pack(s2, ls, sn2)
        n_iter = 0
        self.coarse_rows_ = 0
        self.converged_ = True          # each search below clears it if it stops at its cap
        max_jitter = [jitter]
        optimised = bool(self.optimizer is not None and self.max_iter > 0)
        Z_start = Z
        if optimised:
            theta, Z, n_iter = self._search(X, Xfit, yfit, theta0, Z, jitter, blocks,
                                            max_jitter, rng)
        else:
            theta = theta0
        if max_jitter[0] > jitter:
            warn(f"K_uu needed jitter up to {max_jitter[0]:g} x variance during "
                 "optimisation (nearly coincident inducing inputs)", JitterWarning)
        s2, ls, sn2 = self._unpack(theta, D)
        self._s2, self._sn2, self._ls = s2, sn2, ls     # model units (y normalised)
        self._Z = Z
        u2 = y_std * y_std
        self.y_mean_, self.y_std_ = float(y_mean), float(y_std)
        self.kernel_ = scaling.kernel_to_user(spec, s2 * u2, ls)
        self.variance_ = s2 * u2
        self.lengthscale_ = self._ls_reported(ls)
        self.noise_variance_ = sn2 * u2
        self.theta_ = self._pack(self.variance_, ls * self._ls_unit, self.noise_variance_)
        self.n_iter_ = n_iter
        if method in _base.SPARSE_METHODS:
            # inducing inputs the user gave and the fit did not move are reported as given
            self.inducing_points_ = (Z_user.copy() if Z_user is not None and Z is Z_start
                                     else scaling.inverse_transform(Z))
        elif method == "sod":
            self.inducing_points_ = self.X_train_[self.subset_indices_].copy()
        lml, grad, post = self._evidence(Xfit, yfit, s2, ls, sn2, Z, jitter, blocks, True,
                                         warn=True, fitted_mean=optimised)
        self._post = post
        if optimised:
            self._warn_if_degenerate(X)
        if method in _base.SPARSE_METHODS:
            post.fitted_mean = None             # the check's alone, not the fitted model's
        self.jitter_ = post.jitter if method in _base.SPARSE_METHODS else 0.0
        # the density of y in its own units: y = y_std * y_model + y_mean
        self.log_marginal_likelihood_ = float(lml) - yfit.size * math.log(y_std)
        self.log_marginal_likelihood_value_ = self.log_marginal_likelihood_
        self.log_marginal_likelihood_gradient_ = self._user_gradient(grad, u2)
        if self.verbose:
            print(f"[SparseGPRegressor] {method}: log marginal likelihood {lml:.6g}")
        return self

    def _warn_if_degenerate(self, X):
        """ConvergenceWarnings for a fitted model that should not be trusted silently.

        * **No better than the mean of y**: the coefficient of determination of the fitted
          mean at the training inputs, R² = 1 − Σ(y − μ)² / Σ(y − ȳ)², at most
          ``MEAN_R2`` (a flat fit, or a zero-mean fit far from y with ``normalize_y=False``).
        * **SoR/DTC more certain than their kernel** (issue 23): their effective prior Q_ff
          takes the variance K_nn − Q_nn that the inducing inputs leave unexplained at each
          training input as known to be zero, so their evidence fits the training targets
          as if that variance did not exist; DTC's own predictive variance at those same
          inputs (exact test conditional) includes it. When its mean exceeds
          ``DEGENERATE_RATIO`` times var(y) (the model's s.d. at its own training inputs over
          twice that of y, while the mean fits them), the training fit rests on a prior the
          kernel does not support, and predictions away from the training inputs are
          typically far worse than the training fit (diabetes: training R² 0.96, test
          R² −6.6). The mean is tr(K_ff − Q_ff) / N, which the final evaluation computed
          (DTC's evidence exceeds the VFE bound at the same parameters by exactly
          tr(K_ff − Q_ff) / (2σ²)).

        Run after an optimised fit only: fixed hyper-parameters are the user's model. Both
        checks read what the final evidence evaluation left in ``self._post``; neither
        evaluates the kernel again (except for ``"sod"``, whose mean at the rows outside the
        subset is new).

        Parameters
        ----------
        X : ndarray of shape (N, D)
            The training inputs in model units.
        """
        method = self.approximation
        label = f"SparseGPRegressor ({method})"
        y_model = self._y_model
        ss = float(np.sum((y_model - np.mean(y_model)) ** 2))
        if ss > 0.0:
            resid = y_model - self._training_mean(X)
            r2 = 1.0 - float(np.sum(resid * resid)) / ss
            if r2 <= MEAN_R2:
                first = "" if self.normalize_y else "normalize_y=True, "
                warn(
                    f"{label}: the fit predicts the training targets no better than their mean "
                    f"(training R² {r2:.3g}); the evidence is likely at a degenerate optimum "
                    f"(a length-scale or signal variance at an extreme). Try {first}"
                    "n_restarts > 0 or other initial hyper-parameters, and check that y "
                    "depends on X", ConvergenceWarning)
        if method in ("sor", "dtc"):
            unexplained = self._post.trace_gap / y_model.size
            ratio = unexplained / max(ss / y_model.size, np.finfo(float).tiny)
            if ratio > DEGENERATE_RATIO:
                warn(
                    f"{label}: the fit is far more certain than its kernel supports: at the "
                    "training inputs the inducing inputs leave prior variance averaging "
                    f"{ratio:.3g} times var(y) unexplained, which {method} treats as zero. Its "
                    "training fit is likely far better than its predictions elsewhere; try "
                    "approximation='vfe' or 'fitc', more inducing points, or n_restarts > 0",
                    ConvergenceWarning)

    def _training_mean(self, X):
        """Fitted mean (model units) at the model-unit training rows X, without variances."""
        method, family = self.approximation, self._spec.family
        if method == "exact":
            _, alpha = self._post
            return self._y_model - self._sn2 * alpha            # K α = y − σ² α
        if method == "sod":
            Xs = X[self.subset_indices_]
            return _base.cross_cov(X, Xs, self._s2, self._ls, family=family) @ self._post[1]
        return self._post.fitted_mean                           # K_fu w, from the evaluation

    def _choose_subset(self, X, s2, ls, jitter, rng):
        N = X.shape[0]
        M = self._n_inducing(N)
        if self.init == "random":
            return np.sort(rng.choice(N, size=M, replace=False))
        if self.init == "greedy":
            return np.sort(greedy_variance_selection(X, M, s2, ls, rng, jitter,
                                                     self._spec.family))
        # k-means: the training point nearest each centre (duplicates topped up at random)
        C, _ = kmeans(X, X[rng.choice(N, size=M, replace=False)])
        d2 = (np.einsum("nd,nd->n", X, X)[:, None] - 2.0 * X @ C.T
              + np.einsum("md,md->m", C, C)[None, :])
        idx = np.unique(np.argmin(d2, axis=0))
        if idx.size < M:
            rest = np.setdiff1d(np.arange(N), idx)
            idx = np.concatenate([idx, rng.choice(rest, size=M - idx.size, replace=False)])
        return np.sort(idx)

    def _init_Z(self, X, s2, ls, jitter, rng):
        M = self._n_inducing(X.shape[0])
        if self.init == "greedy":
            return X[greedy_variance_selection(X, M, s2, ls, rng, jitter,
                                               self._spec.family)].copy()
        return self._initial_inducing_points(X, rng)

    def _pack(self, s2, ls, sn2):
        """Log-space vector of the free hyper-parameters: [log s², log ℓ (1 or D), log σ²]."""
        spec = self._spec
        parts = []
        if spec.free_variance:
            parts.append([math.log(s2)])
        if spec.free_lengthscale:
            parts.append(np.log(ls if spec.ard else ls[:1]))
        parts.append([math.log(sn2)])
        return np.concatenate(parts)

    def _theta_bounds(self):
        """Bounds (n_free, 2) matching :meth:`_pack`: the kernel's, then the noise's."""
        free, lims = kernel_log_bounds(self._spec, self.n_features_in_)
        return np.vstack([lims[free], [[-_LOG_BOUND, _LOG_BOUND]]])

    def _theta_names(self):
        """Names of :meth:`_pack`'s entries, for the driver's bound warning.

        The noise variance is left out (None): its box [1e-6, 1e6] var(y) is a floor for
        the factorisations, and a noise on that floor means the targets look noise-free to
        the model, rightly (a noise-free function, constant targets) or through FITC's
        diag(K − Q) taking its place; a wider box would change nothing. A noise on the
        ceiling is a flat fit, which the training-R² warning reports.
        """
        spec = self._spec
        names = ["variance"] if spec.free_variance else []
        if spec.free_lengthscale:
            D = self.n_features_in_
            names += [f"lengthscale[{j}]" for j in range(D)] if spec.ard else ["lengthscale"]
        return names + [None]

    def _unpack(self, theta, D):
        spec = self._spec
        i = 0
        s2 = spec.variance
        if spec.free_variance:
            s2 = float(math.exp(theta[0]))
            i = 1
        ls = spec.lengthscale
        if spec.free_lengthscale:
            n_ls = D if spec.ard else 1
            ls = np.exp(theta[i:i + n_ls])
            if not spec.ard:
                ls = np.full(D, ls[0])
            i += n_ls
        sn2 = float(math.exp(theta[i]))
        return s2, np.ascontiguousarray(ls), sn2

    def _evidence(self, X, y, s2, ls, sn2, Z, jitter, blocks, eval_gradient, warn=True,
                  workspace=None, method=None, fitted_mean=False):
        method = method or self.approximation
        family = self._spec.family
        if method in _base.SPARSE_METHODS:
            args = (X, y, Z, s2, ls, sn2, method, blocks, jitter, eval_gradient, workspace,
                    family, fitted_mean)
            if warn:
                return _base.sparse_lml(*args)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", JitterWarning)
                return _base.sparse_lml(*args)
        return _base.exact_lml(X, y, s2, ls, sn2, eval_gradient, family)

    def _search(self, X_all, X, y, theta0, Z0, jitter, blocks, max_jitter, rng):
        """The optimised fit: (theta, Z, n_iter) as ``inducing_objective`` says."""
        method = self.approximation
        objective = self.inducing_objective
        if method not in _base.SPARSE_METHODS:
            objective = None                    # SoD and the exact GP: no inducing inputs
        elif objective == "auto":
            # every method but VFE, whose own objective is the bound (the docstring says why
            # the FITC family's and SoR/DTC's evidences must not place the inducing inputs)
            objective = "vfe" if method != "vfe" else "evidence"
        if method == "vfe" and objective is not None:      # the bound is VFE's evidence
            return self._bound_search(X, y, theta0, Z0, jitter, blocks, max_jitter, rng)
        if objective != "vfe" or method == "vfe":
            return self._optimise(X_all, X, y, theta0, Z0, objective is not None, jitter,
                                  blocks, max_jitter, rng)
        # the bound places Z; its hyper-parameters are only the second stage's start, so
        # their bounds are not reported
        theta, Z, n_bound = self._bound_search(X, y, theta0, Z0, jitter, blocks, max_jitter,
                                               rng, stage="inducing inputs by the VFE bound")
        theta, Z, n_own = self._optimise(X_all, X, y, theta, Z, False, jitter, blocks,
                                         max_jitter, rng, n_restarts=0)
        return theta, Z, n_bound + n_own

    def _bound_search(self, X, y, theta0, Z0, jitter, blocks, max_jitter, rng, stage=None):
        """The search over theta and Z by the VFE bound, from a coarse start if there is one.

        Returns (theta, Z, n_iter), the iterations of both searches counted.
        """
        levels = self._coarse_levels(X, y, theta0.size + Z0.size, rng)
        n_coarse, n_restarts = 0, None
        for rows in levels:
            Xc, yc = X[rows], y[rows]
            theta0, Z0, n_level = self._optimise(
                Xc, Xc, yc, theta0, Z0, True, jitter, blocks, max_jitter, rng, method="vfe",
                stage=f"coarse start on {rows.size} of {y.size} rows", coarse=True,
                gain_rows=y.size, n_restarts=n_restarts)
            n_coarse += n_level
            n_restarts = 0                      # the restarts ran on the smallest subset
        if levels:
            self.coarse_rows_ = int(levels[0].size)
        theta, Z, n_iter = self._optimise(X, X, y, theta0, Z0, True, jitter, blocks,
                                          max_jitter, rng, method="vfe", stage=stage,
                                          n_restarts=n_restarts)
        return theta, Z, n_coarse + n_iter

    def _coarse_levels(self, X, y, n_unknowns, rng):
        """Rows of each coarse search (``coarse_rows``), smallest first; [] for none.

        The first level has ``coarse_rows`` rows, and each next one COARSE_LEVEL_FACTOR times
        as many while that is at most 1/COARSE_LEVEL_FACTOR of the training set; each level
        holds the one before. The rows are drawn from the training set in lexicographic order
        of (X, y), so the subsets are the same whatever the order of the rows, and so is
        their own order; scaling X or y keeps that order (up to ties that rounding creates),
        so they are the same in any units.
        """
        N = y.size
        if self.coarse_rows is None:
            return []
        if isinstance(self.coarse_rows, str):           # "auto"
            if self.tol is None:
                return []                               # a fixed schedule, as the papers ran
            size = max(COARSE_ROWS, COARSE_ROWS_PER_UNKNOWN * n_unknowns)
            if N < COARSE_MIN_FACTOR * size:
                return []
        else:
            size = int(self.coarse_rows)
            if size >= N:
                return []
        sizes = [size]
        while sizes[-1] * COARSE_LEVEL_FACTOR ** 2 <= N:
            sizes.append(sizes[-1] * COARSE_LEVEL_FACTOR)
        # np.lexsort's last key is the primary one: X's first column, then the next, ..., y
        order = np.lexsort(np.vstack([y[None, :], X[:, ::-1].T]))
        drawn = rng.permutation(N)
        return [order[np.sort(drawn[:n])] for n in sizes]

    def _optimise(self, X_all, X, y, theta0, Z0, move_Z, jitter, blocks, max_jitter, rng,
                  method=None, stage=None, n_restarts=None, coarse=False, gain_rows=None):
        """Maximise the evidence over theta (and Z) with the training driver.

        Returns the best (theta, Z, n_iter) over the start and ``n_restarts`` restarts;
        a restart draws theta inside the bounds and, unless ``inducing_points`` is given,
        initialises Z afresh under the drawn hyper-parameters. ``method`` names another
        approximation's objective (the VFE bound of ``_search``'s first stage), ``stage``
        that search in the warnings, which then leave out the bounds of theta. A ``coarse``
        search (on a subset of the rows, the start of the search on all of them) neither
        warns at its cap nor counts towards ``converged_``; it stops on the full search's
        gain in nats, counted on ``gain_rows`` (all the training rows), not on its own rows:
        its start need not be finer than that, and on T2 the last two thirds of a search
        to its own per-row rule moved the test NLP by under 0.001 (COARSE_START.md).
        """
        D = X.shape[1]
        n_th = theta0.size
        x0 = np.concatenate([theta0, Z0.ravel()]) if move_Z else theta0.copy()
        Zshape = Z0.shape if Z0 is not None else None
        workspace = _base.Workspace()            # the same N×M buffers for every evaluation

        def evaluate(x, _warm):
            theta = x[:n_th]
            Z = np.ascontiguousarray(x[n_th:].reshape(Zshape)) if move_Z else Z0
            s2, ls, sn2 = self._unpack(theta, D)
            lml, grad, post = self._evidence(X, y, s2, ls, sn2, Z, jitter, blocks, True,
                                             warn=False, workspace=workspace, method=method)
            if hasattr(post, "jitter"):
                max_jitter[0] = max(max_jitter[0], post.jitter)
            return lml, self._pack_grad(grad, s2, ls, sn2, move_Z), None

        def restart(x, rng):
            if move_Z and self.inducing_points is None:
                s2r, lsr, _ = self._unpack(x[:n_th], D)
                x[n_th:] = self._init_Z(X_all, s2r, lsr, jitter, rng).ravel()
            return x

        bounds = np.vstack([self._theta_bounds(), unbounded(x0.size - n_th)])
        label = f"SparseGPRegressor ({self.approximation}" + (f"; {stage})" if stage else ")")
        restart_mask = np.arange(x0.size) < n_th
        # fit holds the thread policy (_parallel_pool) around the whole run: one OpenBLAS
        # thread-count switch, not two per evaluation
        res = maximize(evaluate, x0, method=self.optimizer, bounds=bounds,
                       max_iter=self.max_iter,
                       tol=stopping_gain(self.tol, y.size if gain_rows is None else gain_rows),
                       # a fixed schedule (tol=None) stops at max_iter by design; a coarse
                       # search's end is only the full search's start
                       warn_at_cap=self.tol is not None and not coarse,
                       n_restarts=self.n_restarts if n_restarts is None else n_restarts,
                       random_state=rng, restart_mask=restart_mask, restart=restart,
                       progress=bool(self.verbose), label=label,
                       value_name="log marginal likelihood",
                       advice=", or try n_restarts > 0 or other initial hyper-parameters",
                       names=self._theta_names(),
                       # constant targets identify no hyper-parameter and are predicted
                       # exactly: nothing to warn about
                       warn_at_bound=stage is None and bool(np.ptp(y) > 0))
        if not np.isfinite(res.value):
            raise ValueError(
                "the evidence could not be evaluated at any start (failed factorisation or a "
                "non-finite value); try more jitter, standardised inputs or other initial "
                "hyper-parameters")
        if not coarse:
            self.converged_ = self.converged_ and bool(res.converged)
        x = res.theta
        Z = np.ascontiguousarray(x[n_th:].reshape(Zshape)) if move_Z else Z0
        return x[:n_th].copy(), Z, res.n_iter

    def _pack_grad(self, grad, s2, ls, sn2, move_Z):
        spec = self._spec
        gl = grad["lengthscale"] * ls
        parts = []
        if spec.free_variance:
            parts.append([grad["variance"] * s2])
        if spec.free_lengthscale:
            parts.append(gl if spec.ard else [np.sum(gl)])
        parts.append([grad["noise_variance"] * sn2])
        if move_Z:
            parts.append(grad["inducing_points"].ravel())
        return np.concatenate(parts)

    # ------------------------------------------------------------------ public evidence
    _lml_objective = "The log evidence of the approximation (VFE: its variational bound)"
    _lml_notes = """``theta`` is ``[log s², log ℓ (1 value, or D with ARD), log σ²]`` less the
hyper-parameters the kernel holds fixed (``theta_``), in the units of ``variance_``,
``lengthscale_`` and ``noise_variance_``. The inducing inputs stay at ``inducing_points_`` (the
SoD subset and the PITC blocks at the fitted ones), K_uu takes the jitter ``jitter``, and the
value is a density of y in its own units, as ``log_marginal_likelihood_``."""

    def _log_marginal_likelihood(self, theta, eval_gradient):
        D = self.n_features_in_
        # to the model's units: variances relative to var(y), length-scales to theirs
        log_u2 = 2.0 * math.log(self.y_std_)
        i = 0
        if self._spec.free_variance:
            theta[0] -= log_u2
            i = 1
        if self._spec.free_lengthscale:
            n_ls = D if self._spec.ard else 1
            theta[i:i + n_ls] -= np.log(self._ls_unit[:n_ls])
        theta[-1] -= log_u2
        s2, ls, sn2 = self._unpack(theta, D)
        X, y = self._training_rows(), self._y_model
        if self.approximation == "sod":
            X, y = X[self.subset_indices_], y[self.subset_indices_]
        Z = getattr(self, "_Z", None)
        lml, grad, _ = self._evidence(X, y, s2, ls, sn2, Z, self.jitter, self._blocks_fit,
                                      eval_gradient)
        lml = float(lml) - y.size * math.log(self.y_std_)
        if not eval_gradient:
            return lml
        # log-space gradients do not change with the units
        return lml, self._pack_grad(grad, s2, ls, sn2, False)

    # ------------------------------------------------------------------ prediction
    def predict(self, X, return_std=False, return_cov=False, augment=False, transduce=False):
        """Predictive distribution of the latent function f at ``X``, in the units of y.

        Parameters
        ----------
        X : array-like of shape (T, D)
        return_std : bool
            Also return the predictive standard deviation of f (add ``noise_variance_`` to
            the variance for noisy targets).
        return_cov : bool
            Return the joint predictive covariance under the approximation's test conditional
            instead (FITC: exact K**; FIC: diag(K** − Q**) + Q** parts, so the two differ only
            off the diagonal; SoR: Q**). O(T² M).
        augment : bool
            Augmentation (ASoR = ADTC, notes §4.6; ``"sor"``, ``"dtc"``, ``"vfe"`` only): each
            test point joins the inducing set for its own prediction. O(N M²) once plus
            O(N (M + D)) per test point, memory O(N · 256). No ``return_cov``.
        transduce : bool
            Transduction by the Bayesian committee machine (notes §4.7): inducing inputs =
            the test inputs, training conditional of the approximation (PITC blocks give
            Tresp's BCM). O(N T² + N B²), recomputed for every call.

        Returns
        -------
        mean : ndarray of shape (T,)
        std : ndarray of shape (T,)
            Only when ``return_std`` is True.
        cov : ndarray of shape (T, T)
            Only when ``return_cov`` is True.
        """
        Xs = self._validate_predict_data(X)
        Xs = self._scaling.transform(Xs)
        if return_std and return_cov:
            raise ValueError("at most one of return_std and return_cov may be True")
        mean, spread = self._predict_model(Xs, self._s2, self._ls, self._sn2, return_cov,
                                           augment, transduce)
        # back to the units of y
        u = self.y_std_
        mean = u * mean + self.y_mean_
        if return_cov:
            return mean, (u * u) * spread
        if return_std:
            return mean, u * np.sqrt(spread)
        return mean

    def _training_rows(self):
        """The training inputs in model units (recomputed: the same numbers as in fit)."""
        return self._scaling.transform(self.X_train_)

    def _predict_model(self, Xs, s2, ls, sn2, return_cov, augment, transduce):
        """Latent mean and variance (or covariance) at model-unit rows Xs, in model units."""
        method = self.approximation
        if augment and transduce:
            raise ValueError("augment and transduce cannot both be True")
        full = bool(return_cov)
        if augment:
            if method not in ("sor", "dtc", "vfe"):
                raise ValueError("augment=True is implemented for approximation 'sor', 'dtc' "
                                 f"and 'vfe' (ASoR = ADTC); got {method!r}")
            if return_cov:
                raise ValueError("augment=True predicts each test point on its own; "
                                 "return_cov is not available")
            mean, var = _predict.augmented_predict(self._training_rows(), self._y_model,
                                                   self._Z, Xs, s2, ls, sn2, self.jitter,
                                                   family=self._spec.family)
        elif transduce:
            if method not in _base.SPARSE_METHODS:
                raise ValueError(f"transduce=True needs a sparse approximation; got {method!r}")
            mean, cov = _predict.bcm_predict(self._training_rows(), self._y_model, Xs, s2, ls,
                                             sn2, method, self._blocks_fit, self.jitter,
                                             self._spec.family)
            var = np.maximum(np.diag(cov), 0.0)
            if full:
                return mean, cov
        elif method in _base.SPARSE_METHODS:
            out = _predict.sparse_predict(self._post, self._Z, Xs, s2, ls, full,
                                          self._spec.family)
            mean, var = out
            if full:
                return mean, var
        else:
            Xt = self._training_rows()
            Xt = Xt if method == "exact" else Xt[self.subset_indices_]
            mean, var = _predict.exact_predict(Xt, self._post, Xs, s2, ls, full,
                                               self._spec.family)
            if full:
                return mean, var
            var = np.maximum(var, 0.0)
        return mean, var


def _target_scale(y):
    """Mean and standard deviation of y (1 for a constant y, so nothing is divided by 0)."""
    mean = float(np.mean(y))
    std = float(np.std(y))
    return mean, (std if std > 0.0 and math.isfinite(std) else 1.0)

