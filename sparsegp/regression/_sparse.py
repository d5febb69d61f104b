"""``SparseGPRegressor``: the sparse GP regression family of seed 001 plus VFE and the exact GP.

The estimator: its arguments, their validation, ``fit`` in model units and what it reports in
the user's, the public evidence and ``predict``. It sits over the modules that hold each
part of the model:

* :mod:`sparsegp.regression._base`: the evidence of every approximation and its gradient;
* :mod:`sparsegp.regression._search`: the log-space vector of hyper-parameters and the
  search over it and the inducing inputs (the VFE bound's stage, the coarse start);
* :mod:`sparsegp.regression._inducing`: where the inducing inputs, or SoD's subset, start;
* :mod:`sparsegp.regression._predict`: the latent predictions from the fitted factors;
* :mod:`sparsegp.regression._checks`: the warnings for a fit that should not be trusted.

The last four reach the estimator as mixins, each naming what it reads from it.
"""
import math

import numpy as np

from sklearn.base import RegressorMixin

from .._config import DENSE_BLAS_MIN_ROWS, JITTER, MAX_ITER, REGRESSION_TOL
from .._inducing_base import InducingPointEstimator
from .._scaling import InputScaling, scaling_for
from .._validation import check_int, check_optimizer, check_option, check_tol
from ..exceptions import JitterWarning, warn
from ..inducing import check_blocks, kmeans_blocks, median_split_blocks
from ..kernels import ConstantKernel, kernel_spec
from . import _base
from ._checks import _FitCheckMixin
from ._inducing import _InducingStartMixin
from ._predict import _PredictMixin
from ._search import DEFAULT_BOX, _SearchMixin


def _rows(X):
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) >= 1 else 0


class SparseGPRegressor(RegressorMixin, _FitCheckMixin, _PredictMixin, _SearchMixin,
                        _InducingStartMixin, InducingPointEstimator):
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
    init : {"kmeans", "random", "greedy"}, default="kmeans"
        Where the inducing inputs start (not SoD's rows: ``subset``). ``"kmeans"``: k-means
        centres, every estimator's start (``benchmarks/INIT.md``); ``"random"``: M training
        inputs drawn without replacement; ``"greedy"``: training inputs chosen one by one by
        the largest conditional prior variance Var[f(x) | u] = k(x, x) − Q(x, x) (pivoted
        incomplete Cholesky under the initial hyper-parameters; O(N M²), no targets used),
        the cheap criterion of seed 001's "choice of the inducing variables".
    subset : {"random", "kmeans", "greedy"}, default="random"
        How ``"sod"`` picks its M training rows, the three ways of ``init`` (``"kmeans"``: the
        rows nearest the centres); read by no other approximation. Random, as SoD's rows are
        its model and never move, and k-means rows lost by up to 0.6 nats of test NLP at small
        M (``benchmarks/INIT.md``). For one release ``init="random"`` or ``"greedy"`` with
        ``subset`` at its default still picks them, with a ``FutureWarning`` (``init="kmeans"``
        is its default, so SoD then takes ``subset``'s).
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
        (70/30 split, N = 309, D = 10, M = 50) it ran FITC's noise to 5.4e-5 var(y) for a
        test R² of 0.300 (``"vfe"``: noise 0.38 var(y), R² 0.363; PITC 0.332 -> 0.374;
        scikit-learn's exact GP 0.378); on Friedman #1 (N = 300, 1000, 3000) PITC's test
        R² went from 0.72, 0.80, 0.94 to 0.82, 0.89, 0.94 and FITC's from 0.82, 0.85, 0.94
        to 0.83, 0.90, 0.94; where N is large against M × D the joint search may do a little
        better (8-D, N = 2000: FITC 0.963 against 0.961, PITC 0.967 against 0.960; the
        table (k-means start) is in ``benchmarks/DEFAULTS.md``). A noise floor does not help
        (diag(K_ff − Q_ff) takes the noise's place), nor does starting FITC's own joint
        search from the VFE fit (it runs off to the same optimum), and inducing inputs held
        at their k-means start lose up to 0.21 R² on Friedman #1.

        ``max_iter`` and ``n_restarts`` apply to the first stage (the best bound wins); the
        second, a search over the few hyper-parameters, runs from its result (typically 5-25
        iterations).

        Why ``"vfe"`` for SoR and DTC (issue 49): their evidence takes the prior variance
        K_ff − Q_ff that the inducing inputs leave unexplained as zero, so over the inducing
        inputs it is maximised by a degenerate model. On standardised ``load_diabetes``
        (70/30 split, M = 50) the joint search ran the signal variance to 3e4-1e6 var(y)
        (1e6 its bound), two of three searches stopping at the 1000-iteration cap, and ended
        at test R² −5.4 to −211 by ``random_state``; its path was chaotic, a 1e-12 relative
        change to X moving the predictions by 1.9-107 s.d. of y. Placed by the bound, the
        inducing inputs leave a well-posed search over the three hyper-parameters: test R²
        0.353-0.368, converged in 29-44 iterations, predictions moved by at most 2.3e-10 s.d.
        of y (``benchmarks/sor_dtc_continuity.py``, from the k-means start).
    kernel : Kernel, optional
        The covariance: a :mod:`sparsegp.kernels` stationary kernel (``SquaredExponential``,
        ``Matern`` with ν = 1/2, 3/2, 5/2; ARD when its length-scale is an array), optionally
        times a constant, plus ``ConstantKernel`` summands (the bias variance v_b, added to
        every covariance entry of every approximation: K_ff, K_fu, K_uu and k**), or the same
        built from scikit-learn's ``ConstantKernel``, ``RBF`` and ``Matern``. Its values are
        the start, its bounds (or "fixed") bound the search; with ``normalize_y`` the
        variance and v_b are relative to var(y). None: an isotropic squared exponential on standardised features, starting at variance
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
        The names are those of one vocabulary across the estimators (README, table
        "optimizer and max_iter").
    max_iter : int, default=1000
        Safety cap on the optimiser iterations per start (and per stage); stopping there
        before converging raises a :class:`~sparsegp.exceptions.ConvergenceWarning`. With
        ``tol=None``, the fixed number of iterations to run (no warning).
    tol : float or None, default=3e-5
        Stopping tolerance in nats per training row: a search has converged once its
        evidence (on the normalised targets) gains less than ``tol * max(n_samples, 3000)``
        over the last five iterations while its gradient is not growing, or at L-BFGS-B's
        own test (:mod:`sparsegp._optimize`, "Stopping rule"). Tighter than the classifiers'
        3e-4: a regression evaluation is cheap, and on Friedman #1 the inducing inputs still
        improve the test R² at gains of 1e-4 nats a row (``benchmarks/DEFAULTS.md``). 0 runs
        to scipy's test; None runs ``max_iter`` iterations.
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
        kernel), its variance (and the constant summand's v_b, one ``ConstantKernel``) in the
        units of y². The default covariance, isotropic on
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
        ``[log s², log ℓ (1 value, or D with ARD), (log v_b,) log σ²]`` at the fit, less the
        hyper-parameters the kernel holds fixed, in the units of ``variance_``,
        ``lengthscale_`` and ``noise_variance_``: the vector of :meth:`log_marginal_likelihood`.
    log_marginal_likelihood_gradient_ : dict
        Its gradient with respect to the natural parameters: ``"variance"`` (float),
        ``"lengthscale"`` (float, or (D,) with ARD), ``"noise_variance"`` (float) and
        ``"inducing_points"`` ((M, D), None for ``"sod"`` and ``"exact"``), and
        ``"bias_variance"`` (float) for a kernel with a constant summand.
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
    _subsets = ("random", "kmeans", "greedy")

    def __init__(self, approximation="fitc", n_inducing="auto", inducing_points=None,
                 init="kmeans", subset="random", inducing_objective="auto", kernel=None,
                 noise_variance=0.1, normalize_y=True, jitter=JITTER, optimizer="lbfgs",
                 max_iter=MAX_ITER, tol=REGRESSION_TOL, coarse_rows="auto", n_restarts=0,
                 blocks=None, random_state=None, verbose=False):
        self.approximation = approximation
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.init = init
        self.subset = subset
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
        check_option(self.subset, "subset", self._subsets)
        check_optimizer(self.optimizer, ("lbfgs", "cg"))
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
        return kernel_spec(self.kernel, X.shape[1], type(self).__name__,
                           default_bounds=DEFAULT_BOX, bias=True)

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
        if "bias_variance" in grad:
            out["bias_variance"] = grad["bias_variance"] / u2
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
        # the bias variance v_b of constant summands, in model units as s² is
        vb = None if spec.bias_term is None else float(spec.bias_term.constant_value)
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
            idx = self._choose_subset(X, s2, ls, jitter, rng, vb)
            self.subset_indices_ = idx
            Xfit, yfit = X[idx], y[idx]
        else:
            Xfit, yfit = X, y
        if method in _base.SPARSE_METHODS and Z is None:
            Z = self._init_Z(X, s2, ls, jitter, rng, vb)
        if method == "pitc":
            if blocks is None and self.blocks is not None:
                blocks = kmeans_blocks(X, int(self.blocks), rng)
            elif blocks is None:
                blocks = median_split_blocks(X, Z.shape[0])
            self.blocks_ = blocks
        self._blocks_fit = blocks

        theta0 = self._pack(s2, ls, sn2, vb)
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
        s2, ls, sn2, vb = self._unpack(theta, D)
        self._s2, self._sn2, self._ls = s2, sn2, ls     # model units (y normalised)
        self._vb = vb
        self._Z = Z
        u2 = y_std * y_std
        self.y_mean_, self.y_std_ = float(y_mean), float(y_std)
        self.kernel_ = scaling.kernel_to_user(spec, s2 * u2, ls)
        if vb is not None:
            self.kernel_ = self.kernel_ + ConstantKernel(vb * u2,
                                                         spec.bias_term.constant_value_bounds)
        self.variance_ = s2 * u2
        self.lengthscale_ = self._ls_reported(ls)
        self.noise_variance_ = sn2 * u2
        self.theta_ = self._pack(self.variance_, ls * self._ls_unit, self.noise_variance_,
                                 None if vb is None else vb * u2)
        self.n_iter_ = n_iter
        if method in _base.SPARSE_METHODS:
            # inducing inputs the user gave and the fit did not move are reported as given
            self.inducing_points_ = (Z_user.copy() if Z_user is not None and Z is Z_start
                                     else scaling.inverse_transform(Z))
        elif method == "sod":
            self.inducing_points_ = self.X_train_[self.subset_indices_].copy()
        lml, grad, post = self._evidence(Xfit, yfit, s2, ls, sn2, Z, jitter, blocks, True,
                                         warn=True, fitted_mean=optimised, vb=vb)
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

    # ------------------------------------------------------------------ public evidence
    _lml_objective = "The log evidence of the approximation (VFE: its variational bound)"
    _lml_notes = """``theta`` is ``[log s², log ℓ (1 value, or D with ARD), (log v_b,) log σ²]``
less the hyper-parameters the kernel holds fixed (``theta_``; v_b is the bias variance of
the kernel's constant summands), in the units of ``variance_``, ``lengthscale_`` and
``noise_variance_`` (v_b as ``variance_``). The inducing inputs stay at ``inducing_points_`` (the
SoD subset and the PITC blocks at the fitted ones), K_uu takes the jitter ``jitter``, and the
value is a density of y in its own units, as ``log_marginal_likelihood_``."""

    def _log_marginal_likelihood(self, theta, eval_gradient):
        D = self.n_features_in_
        # to the model's units: variances relative to var(y), length-scales to theirs
        log_u2 = 2.0 * math.log(self.y_std_)
        at = self._packing().slices
        theta[at["log_variance"]] -= log_u2
        ls = at["log_lengthscale"]
        theta[ls] -= np.log(self._ls_unit[:ls.stop - ls.start])
        theta[at["log_noise_variance"]] -= log_u2
        if "log_bias_variance" in at:
            theta[at["log_bias_variance"]] -= log_u2
        s2, ls, sn2, vb = self._unpack(theta, D)
        X, y = self._training_rows(), self._y_model
        if self.approximation == "sod":
            X, y = X[self.subset_indices_], y[self.subset_indices_]
        Z = getattr(self, "_Z", None)
        lml, grad, _ = self._evidence(X, y, s2, ls, sn2, Z, self.jitter, self._blocks_fit,
                                      eval_gradient, vb=vb)
        lml = float(lml) - y.size * math.log(self.y_std_)
        if not eval_gradient:
            return lml
        # log-space gradients do not change with the units
        return lml, self._pack_grad(grad, s2, ls, sn2, False, vb)

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


def _target_scale(y):
    """Mean and standard deviation of y (1 for a constant y, so nothing is divided by 0)."""
    mean = float(np.mean(y))
    std = float(np.std(y))
    return mean, (std if std > 0.0 and math.isfinite(std) else 1.0)

