"""The base of the three multi-class GP classifiers: parameters, validation, start, ``theta_``,
predictions; and the parameter and attribute descriptions the three docstrings share
(:data:`SHARED_DOCS`, :func:`fill_shared_docs`).
"""
import inspect
import warnings

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.base import ClassifierMixin

from ... import kernels as _kernels
from ..._numba import covfuncs as _cf
from ... import _covariance as _cov
from ..._docstrings import fill_doc
from ..._inducing_base import InducingPointEstimator, median_lengthscale, take_rows  # noqa: F401
from ..._scaling import InputScaling
from ..._validation import check_int, check_optimizer
from ...exceptions import ConvergenceWarning, warn
from ..._params import Block, Packing, bias_variance_blocks, class_stack_bounds
from .kernel import pack_params
from .._frequencies import FrequencyCheckMixin
from .rows import check_multiclass_labels, check_row_sliceable, is_lazy_store

#: A start whose median 0.5 |x - x'|^2 / l^2 over training rows exceeds this (k/s2 < 1e-9) has vanishing kernel
#: values and gradients; see MultiClassGPClassifier._rescue_degenerate_lengthscale
DEGENERATE_EXPONENT = 20.0
#: Below this many inducing points a class, a fit no better than the class frequencies is
#: first told to use more (seed 002 Fig. 3: M = 1 and 2 draw no boundary on 3 classes)
_FEW_INDUCING = 8

#: Default of a renamed constructor argument's old name: "not given" (scikit-learn's way to
#: keep an old name for a release, e.g. ``base_estimator`` -> ``estimator``)
DEPRECATED = "deprecated"
#: The multi-class models' renamed arguments, new name -> old name (issue 48). sigma0_c is the
#: variance of a Gaussian noise on each class's latent function, a white term of its prior
#: (``kernel.py``); the regressor's ``noise_variance`` is the noise on an observation y, a
#: different quantity that the multi-class models, whose labels are discrete, do not have.
RENAMED = {"latent_noise_variance": "noise_variance",
           "latent_noise_variance_bounds": "noise_variance_bounds"}


# --------------------------------------------------------------------------------------------
# shared docstring text
# --------------------------------------------------------------------------------------------
#: numpydoc text the three estimators' docstrings share: :func:`fill_shared_docs` puts each
#: entry where a docstring has a line ``%(name)s``, indented as that line. "kernel_box" is
#: the kernel's start and the noise in the baselines, which search inside a box.
SHARED_DOCS = {
    "inducing": """\
n_inducing : int or "auto", default="auto"
    Inducing points per class, M: ``"auto"`` is 20, or the number of training points when
    that is smaller (ignored when ``inducing_points`` is given).
inducing_points : ndarray of shape (M, D) or (C, M, D), optional
    Initial inducing inputs (shared by every class when 2-D).
init : {"random", "kmeans", "subset"}, default="kmeans"
    Initial Z_c: M random training rows drawn independently per class (``"random"``, the
    paper's start), k-means centres started from them (``"kmeans"``), or M random rows of
    class c (``"subset"``, requires M <= every class size). The default is the one every
    estimator that places inducing inputs takes: by ``benchmarks/INIT.md`` k-means wins for
    EP and the variational bound and ties for GFITC, at the same cost.""",
    "kernel": """\
kernel : Kernel or list of Kernel, optional
    The signal covariance of every class: a :mod:`sparsegp.kernels` stationary kernel
    (``SquaredExponential``, ``Matern`` with nu = 1/2, 3/2, 5/2), optionally times a
    constant, or the same built from scikit-learn's ``ConstantKernel``, ``RBF`` and
    ``Matern``. It gives the family and every class's starting variance and length-scales
    (each class then learns its own); an isotropic length-scale stays isotropic per class,
    an array one per feature is ARD. ``ConstantKernel`` summands (``SquaredExponential() +
    ConstantKernel(0.5)``) add a bias variance v_c to every covariance entry of class c,
    each class learning its own from the constant's value within its bounds ("fixed":
    held). A list of C such kernels (``classes_`` order, one family, all isotropic or all
    ARD, all with a constant or none; ``kernel_`` is one) starts each class from its own.""",
    "kernel_box": """\
    Its log bounds (within the box [-10, 10]) bound the search, "fixed" holds a parameter.
    None: the SE-ARD kernel, every class starting at variance 1 and the length-scale
    sqrt(median pairwise distance) (notes §5.3). The latent noise is
    ``latent_noise_variance``, apart from the kernel.
latent_noise_variance : float or ndarray of shape (C,), default=1.0
    Initial variance sigma0_c of the Gaussian noise added to each class's latent function
    (a white term of its prior; there is no noise on the labels themselves).
latent_noise_variance_bounds : None, "fixed" or pair of floats, default=None
    Bounds of the latent noise variance's search (natural values, within the box [-10, 10]
    of its log), "fixed" to hold it, None for the box alone.""",
    "renamed": """\
noise_variance : "deprecated"
    The old name of ``latent_noise_variance`` (``noise_variance`` is the regressor's
    observation noise), accepted in this release only: a value given here is used, with a
    ``FutureWarning``; giving both names is a ``ValueError``.
noise_variance_bounds : "deprecated"
    The old name of ``latent_noise_variance_bounds``, as ``noise_variance``.""",
    "nugget": """\
noise_in_kuu : bool, default=True
    Put sigma0_c on the diagonal of K_c (the R code's nugget convention, notes §1.1).
jitter : float, default=1e-10
    ``jitter * sigma_c`` is added to K_c's diagonal: relative to each class's signal
    variance, as in every estimator of the library (at sigma_c = 1, the R code's nugget).""",
    "fitted": """\
Attributes
----------
classes_ : ndarray of shape (C,)
n_features_in_ : int
inducing_points_ : ndarray of shape (C, M, D)
variance_, noise_ : ndarray of shape (C,)
lengthscale_ : ndarray of shape (C, D)
kernel_ : list of Kernel
    The C fitted signal covariances, one per class (see
    :attr:`MultiClassGPClassifier.kernel_`): copies of ``kernel`` at ``variance_[c]``,
    ``lengthscale_[c]`` (plus one ``ConstantKernel`` at the class's fitted bias variance
    v_c when ``kernel`` has constant summands), or SE-ARD kernels without one.""",
    "theta": """\
theta_ : ndarray of shape (n_theta,)
    ``[log variance_ (C), log noise_ (C), log lengthscale_ (C x D, or C for an isotropic
    kernel), then with a constant summand log v_c (C)]`` less the kernel's fixed
    hyper-parameters: the vector of :meth:`log_marginal_likelihood`.""",
    "villacampa2017": """\
C. Villacampa-Calvo and D. Hernández-Lobato. Scalable multi-class Gaussian process
classification using expectation propagation. ICML 2017.""",
}


#: Class decorator: each docstring line ``%(name)s`` becomes ``SHARED_DOCS[name]``, every
#: line with the placeholder's indentation, so that ``help()``, numpydoc and the docstring
#: tests see the full text (:func:`sparsegp._docstrings.fill_doc`).
fill_shared_docs = fill_doc(SHARED_DOCS)


class MultiClassGPClassifier(FrequencyCheckMixin, ClassifierMixin, InducingPointEstimator):
    """Base of the three multi-class classifiers: validation, initial state, predictions.

    Subclasses define ``predict_latent(X) -> (mean, var)`` and ``predict_proba(X)``, both of
    shape (n_samples, C) with columns ordered as ``classes_``, on top of ``_latent(X)`` and
    ``_proba(mean, var)``, which take already validated float64 inputs. ``score`` is
    scikit-learn's accuracy; the test NLL is ``sparsegp.metrics.mean_nlp(y,
    est.predict_proba(X), classes=est.classes_)``.

    Training and prediction run in model units (:mod:`sparsegp._scaling`): the inputs centred
    and scaled, per feature for the default ARD kernel. ``_validate_training_data`` and
    ``_validate_predict_data`` return model-unit rows, and ``_scaling`` converts the given
    start in and the reported ``inducing_points_`` and ``lengthscale_`` out, so that a fit
    does not depend on the units or the offset of X.
    """

    _inits = ("random", "kmeans", "subset")
    _auto_inducing = 20

    def __init__(self, n_inducing, inducing_points, init, kernel, latent_noise_variance,
                 latent_noise_variance_bounds, max_iter, optimizer, noise_in_kuu, jitter,
                 random_state, verbose, callback, noise_variance, noise_variance_bounds):
        # the parameters every multi-class estimator takes, stored unchanged (scikit-learn
        # reads them back by the names of the subclass's signature)
        self.n_inducing = n_inducing
        self.inducing_points = inducing_points
        self.init = init
        self.kernel = kernel
        self.latent_noise_variance = latent_noise_variance
        self.latent_noise_variance_bounds = latent_noise_variance_bounds
        self.noise_variance = noise_variance
        self.noise_variance_bounds = noise_variance_bounds
        self.max_iter = max_iter
        self.optimizer = optimizer
        self.noise_in_kuu = noise_in_kuu
        self.jitter = jitter
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def _validate_training_data(self, X, y, row_sliceable):
        """Check X and y; return ``(X, N, D, classes, y_index)``.

        With ``row_sliceable`` X may be any 2-D array-like with row slicing (memmap, h5py or
        zarr dataset), which is left unread; otherwise X comes back as a float64 copy.
        """
        if row_sliceable and is_lazy_store(X):
            # out of core: the rows stay where they are; what can be checked without
            # reading them is checked as the in-memory path checks it
            N, D = check_row_sliceable(X)
            if np.dtype(getattr(X, "dtype", np.float64)).kind not in "iufb":
                raise ValueError(f"X must hold real numbers; got dtype {X.dtype}")
            self._record_features(X)
            if y is None:
                raise ValueError(f"{type(self).__name__} requires y to be passed, but the "
                                 "target y is None")
            y = np.asarray(y)
            check_classification_targets(y)
        else:
            # in memory (arrays, DataFrames, lists): one validation for batch and minibatch
            X, y = self._validate_fit_data(X, y, classifier=True)
            N, D = X.shape
        classes, y_index = check_multiclass_labels(y)
        if y_index.shape[0] != N:
            raise ValueError(f"X and y have different lengths: X has {N} rows, y has "
                             f"{y_index.shape[0]}")
        self._scaling = InputScaling.from_rows(X, self._per_feature_scaling(D))
        return self._scaling.rows(X), N, D, classes, y_index

    def _validate_predict_data(self, X):
        """The checks of every estimator, then X in the fit's model units (a new array)."""
        X = super()._validate_predict_data(X)      # "not fitted" comes first
        return self._scaling.transform(X)

    def _per_feature_scaling(self, n_features):
        """Whether the inputs are scaled per feature: for the default ARD kernel or an ARD
        ``kernel`` (:meth:`sparsegp._scaling.InputScaling.wants_per_feature`)."""
        specs = self._kernel_specs(n_features)
        return specs is None or InputScaling.wants_per_feature(specs[0])

    def _check_iterations_and_callback(self, min_iter):
        """``max_iter`` (>= ``min_iter``) and ``jitter``; ``callback`` must be callable."""
        max_iter = check_int(self.max_iter, "max_iter", minimum=min_iter)
        jitter = self._check_jitter()
        if self.callback is not None and not callable(self.callback):
            raise ValueError(f"callback must be callable; got {self.callback!r}")
        return max_iter, jitter

    def _check_optimizer(self, batch_size, batch_rule, minibatch_rule):
        """The rule that learns the hyper-parameters and inducing inputs, or None (held).

        ``optimizer="auto"`` is ``batch_rule`` in batch mode (``batch_size`` None) and
        ``minibatch_rule`` with minibatches; a named rule must be that of the mode.
        """
        rule = batch_rule if batch_size is None else minibatch_rule
        if check_optimizer(self.optimizer, ("auto", batch_rule, minibatch_rule)) is None:
            return None
        if self.optimizer not in ("auto", rule):
            mode = "batch mode (batch_size=None)" if batch_size is None else "minibatch mode"
            raise ValueError(f"optimizer={self.optimizer!r} is not available in {mode}, which "
                             f"steps by {rule!r}; use optimizer='auto' or {rule!r}")
        return rule

    def _print_every(self):
        """Iterations between progress lines: ``verbose`` itself, 10 for True, 0 for off."""
        if isinstance(self.verbose, (bool, np.bool_)):
            return 10 if self.verbose else 0
        return int(self.verbose)

    def _initial_parameters(self, X, y_index, n_classes, rng):
        """Initial ``(variance, noise, lengthscale, Z)`` of shapes (C,), (C,), (C, D), (C, M, D).

        Every multi-class estimator draws them in the same order from the same arguments, so
        that the baselines and ``MultiClassEPClassifier`` given one ``random_state`` start
        from the same point, as in the paper's experiments. A ``kernel`` gives every class
        its variance and length-scales (an isotropic value repeated over the D features), a
        list of kernels each class its own; without one every class starts at variance 1
        and the median heuristic's length-scale. Sets ``_spec`` (:meth:`_kernel_specs`),
        which the fit and ``kernel_`` read.
        """
        scaling = self._scaling
        specs = self._kernel_specs(X.shape[1], n_classes)
        if specs is not None:
            # the start and the box in model units; ``fitted`` still builds the user's kernel
            specs = [scaling.spec_to_model(spec) for spec in specs]
        self._spec = specs
        noise = self._check_positive_param(self._given_name("latent_noise_variance"),
                                           n_classes)
        if specs is None:
            # the median heuristic on the model-unit rows (on standardised inputs, the
            # paper's start)
            variance = np.ones(n_classes)
            lengthscale = np.full((n_classes, X.shape[1]), median_lengthscale(X, rng))
        else:
            variance = np.array([spec.variance for spec in specs])
            lengthscale = np.stack([spec.lengthscale for spec in specs])
        Z = self._check_inducing_points(X.shape[0], X.shape[1], n_classes)
        if Z is None:
            Z = self._initial_inducing_points(X, rng, y_index, n_classes)
        else:
            Z = scaling.transform(Z)
        if specs is not None:
            # a kernel's length-scales are a given start, which may be far off the data; the
            # ones the fit will not move are the model the user asked for, and stay
            learnt = np.array([self.optimizer is not None and spec.free_lengthscale
                               for spec in specs])
            lengthscale = self._rescue_degenerate_lengthscale(X, Z, lengthscale, rng, learnt)
        return variance, noise, lengthscale, Z

    # -- the covariance given as ``kernel`` ------------------------------------------------

    def _kernel_specs(self, n_features, n_classes=None):
        """The :class:`~sparsegp.kernels.StationarySpec` of each class; None without a kernel.

        ``kernel`` is one kernel (every class's start) or a list of kernels, one per class;
        with ``n_classes`` the result has one spec per class, without it one per kernel given.

        A kernel may add ``ConstantKernel`` summands, kept as the spec's ``bias_term``
        (:func:`sparsegp.kernels.split_bias_variance`): v_c, the bias variance of each class
        (:mod:`.kernel`), starts at the constant's value and is searched within its bounds,
        or held where they are "fixed".

        Raises
        ------
        ValueError
            When a kernel is not a single stationary kernel optionally times a constant,
            plus constants, the kernels of a list differ in family, in being ARD or in having
            a constant, or their number is not ``n_classes``.
        """
        if self.kernel is None:
            return None
        owner = type(self).__name__
        given = self.kernel if isinstance(self.kernel, (list, tuple)) else [self.kernel]
        specs = [_kernels.kernel_spec(k, n_features, owner, bias=True) for k in given]
        if not specs or any((s.family, s.ard, s.bias_term is None)
                            != (specs[0].family, specs[0].ard, specs[0].bias_term is None)
                            for s in specs):
            raise ValueError(f"{owner}: a list of kernels needs one kernel per class, all of "
                             f"one family, all isotropic or all ARD, and all with a constant "
                             f"summand or none; got {self.kernel!r}")
        if n_classes is None:
            return specs
        if len(specs) == 1:
            return specs * n_classes
        if len(specs) != n_classes:
            raise ValueError(f"{owner}: kernel is a list of {len(specs)} kernels but y has "
                             f"{n_classes} classes; give one kernel per class, or one for all")
        return specs

    def _given_name(self, name):
        """The name under which the user gave the renamed argument ``name`` (a key of
        :data:`RENAMED`): its old name, with a ``FutureWarning``, when a value was given
        there; otherwise ``name`` itself.

        Raises
        ------
        ValueError
            When both names were given a value.
        """
        old = RENAMED[name]
        given = getattr(self, old)
        if isinstance(given, str) and given == DEPRECATED:
            return name
        default = inspect.signature(type(self).__init__).parameters[name].default
        new = getattr(self, name)
        if not (new is default or (np.ndim(new) == 0 and not isinstance(new, str)
                                   and new == default)):
            raise ValueError(f"{old} is the old name of {name}; give only {name}, got "
                             f"{old}={given!r} and {name}={new!r}")
        warnings.warn(f"{type(self).__name__}: {old} is renamed {name} (the variance of a "
                      f"noise on each latent function, not on the labels); the old name is "
                      f"accepted in this release only", FutureWarning, stacklevel=4)
        return old

    def _noise_bounds(self):
        """``latent_noise_variance_bounds`` as ``(fixed, log bounds (2,) or None)``."""
        name = self._given_name("latent_noise_variance_bounds")
        b = getattr(self, name)
        if b is None:
            return False, None
        if isinstance(b, str) and b == "fixed":
            return True, None
        try:
            arr = np.asarray(b, dtype=np.float64).ravel()
        except (TypeError, ValueError):
            arr = np.empty(0)
        if arr.size != 2 or not (0 < arr[0] <= arr[1] < np.inf):
            raise ValueError(f"{name} must be None, 'fixed' or (low, high) with "
                             f"0 < low <= high < inf; got {b!r}")
        return False, np.log(arr)

    def _kernel_family(self):
        """Stationary family code of the fitted covariance (SE without a ``kernel``)."""
        specs = getattr(self, "_spec", None)
        return _cf.SE if specs is None else specs[0].family

    def _kernel_settings(self, C, M, D):
        """``(family, isotropic, log_bounds, frozen)`` for a packed vector of C classes.

        ``log_bounds`` and ``frozen`` are :func:`sparsegp._params.class_stack_bounds` of the
        classes' kernels and ``latent_noise_variance_bounds``: None without either (the
        default covariance is unbounded, as it always was), otherwise (lo, hi) arrays the
        size of :func:`pack_params`' vector; ``frozen`` (boolean, same size) marks the
        coordinates a "fixed" bound holds.
        """
        noise_fixed, noise_box = self._noise_bounds()
        specs = getattr(self, "_spec", None)
        log_bounds, frozen = class_stack_bounds(specs, (C, M, D), noise_fixed, noise_box)
        if specs is None:
            return _cf.SE, False, log_bounds, frozen
        return specs[0].family, not specs[0].ard, log_bounds, frozen

    def _initial_log_bias(self):
        """log v_c (C,) at the start, from each class's constant summands (-inf for a zero
        constant, which stays held: :func:`sparsegp._params.bias_variance_blocks`); None when
        the kernels have none. Reads ``_spec`` (:meth:`_initial_parameters`)."""
        specs = getattr(self, "_spec", None)
        if specs is None or specs[0].bias_term is None:
            return None
        with np.errstate(divide="ignore"):
            return np.log([float(s.bias_term.constant_value) for s in specs])

    @property
    def kernel_(self):
        """The fitted covariances: a list of C kernels, one per class (``classes_`` order).

        Each is a copy of that class's ``kernel`` at its fitted ``variance_[c]`` and
        ``lengthscale_[c]`` (a single length-scale when ``kernel`` is isotropic), or, without
        a ``kernel``, ``SquaredExponential(variance_[c], lengthscale_[c])`` with ARD
        length-scales; given back as ``kernel``, they start every class where it ended. A
        kernel with constant summands comes back as the stationary kernel plus one
        ``ConstantKernel`` at the class's fitted bias variance v_c (with the constants'
        bounds, summed; "fixed" if one was). The additive noise ``noise_``
        (``latent_noise_variance``) is not part of them.
        """
        variance = self.variance_          # AttributeError before fit, as for any fitted value
        lengthscale = np.atleast_2d(self.lengthscale_)
        specs = getattr(self, "_spec", None)
        if specs is None:
            return [_kernels.SquaredExponential(float(v), np.array(ls, dtype=np.float64))
                    for v, ls in zip(variance, lengthscale)]
        kernels = [spec.fitted(float(v), ls)
                   for spec, v, ls in zip(specs, variance, lengthscale)]
        if specs[0].bias_term is None:
            return kernels
        bias = self._hyp.bias
        return [k + _kernels.ConstantKernel(float(b), spec.bias_term.constant_value_bounds)
                for k, b, spec in zip(kernels, bias, specs)]

    def _rescue_degenerate_lengthscale(self, X, Z, lengthscale, rng, learnt):
        """Scale given length-scales up when the kernel between training points vanishes.

        With length-scales far below the distances between points (unit length-scales on
        standardised 36-D data: k/s2 ~ exp(-36) between typical points) every kernel value and
        every gradient with respect to the length-scales underflows into rounding noise, and
        gradient ascent cannot leave the start (SEP ended at chance error). Then the
        length-scales of the classes that will be learnt (``learnt``, boolean of shape (C,))
        are multiplied by one factor, keeping their ARD ratios, so that their geometric mean
        is the median heuristic's, and a warning says so. Held length-scales (``"fixed"``
        bounds or ``optimizer=None``, e.g. a fitted ``kernel_`` given back) are the model
        asked for: they stay, with a warning that the predictions will be near the prior.
        """
        # a generator of its own: the check must not shift the estimator's random stream
        pick = np.random.default_rng(0).choice(X.shape[0], size=min(X.shape[0], 500),
                                               replace=False)
        rows = take_rows(X, np.sort(pick))
        if rows.shape[0] < 2:
            return lengthscale
        # between training rows, not rows and Z: k-means centres (the default start) sit
        # nearer every row than rows sit to each other (about half the squared distance), so
        # a kernel that vanishes between the data would pass unseen, and the fit would stay
        # near the prior without a word
        pairs = np.triu_indices(rows.shape[0], 1)
        # classes usually share one start, so each distinct row of length-scales is read once
        distinct, which = np.unique(lengthscale, axis=0, return_inverse=True)
        per_row = [0.5 * np.median(_cov.sqdist(rows / ls, rows / ls)[pairs]) for ls in distinct]
        exponents = [per_row[k] for k in np.ravel(which)]
        if max(exponents) <= DEGENERATE_EXPONENT:
            return lengthscale
        if not learnt.any():
            warn(
                f"the given lengthscale makes the kernel between training points vanish "
                f"(median k/variance = exp(-{max(exponents):.0f})) and it is held "
                f"(fixed bounds or optimizer=None), so the predictions will stay near the "
                f"prior; longer length-scales or standardised inputs help.",
                ConvergenceWarning)
            return lengthscale
        target = median_lengthscale(X, rng)
        geo = np.exp(np.mean(np.log(lengthscale), axis=1, keepdims=True))
        rescued = np.where(learnt[:, None], lengthscale * (target / geo), lengthscale)
        warn(
            f"the initial lengthscale makes the kernel between training points vanish "
            f"(median k/variance = exp(-{max(exponents):.0f})), so no gradient "
            f"could move it; starting instead from length-scales scaled by "
            f"{float(np.mean((target / geo)[learnt])):.3g} to the median heuristic "
            f"({target:.3g}; kernel=None uses it directly). Standardised inputs help.",
            ConvergenceWarning)
        return rescued

    def _judged_proba(self, X, rows):
        """Probabilities (len(rows), n_classes) of the training rows ``rows`` for the
        end-of-fit check (:mod:`sparsegp.classification._frequencies`); ``X`` is fit's own
        float64 copy (or row store), so there is no second validation."""
        return self._proba(*self._latent(take_rows(X, rows)))

    def _frequency_advice(self):
        """What to try after a fit no better than the class frequencies, most likely first,
        naming only this estimator's parameters."""
        M = np.shape(self.inducing_points_)[1]
        more_inducing = f"more inducing points (n_inducing; {M} a class now)"
        advice = ["standardised inputs", "kernel=None (the median heuristic)",
                  "more iterations (max_iter)"]
        # a handful of inducing inputs a class cannot draw most class boundaries
        advice.insert(0 if M < _FEW_INDUCING else len(advice), more_inducing)
        if "learning_rate" in self.get_params():
            advice.append("a larger learning_rate")
        return advice

    # -- theta_: the free hyper-parameters of log_marginal_likelihood ------------------------

    def _set_theta(self, log_variance, log_noise, log_lengthscale, log_bias=None):
        """Set ``theta_`` from the model-unit log hyper-parameters (C,), (C,), (C, D) and,
        for a kernel with a constant, the log bias variances (C,).

        ``theta_`` is ``[log variance (C), log noise (C), log lengthscale (C x D, or C for
        an isotropic kernel), (log bias variance (C))]`` less what the kernel holds fixed,
        length-scales in the user's units, classes in ``classes_`` order: the per-class stack
        of :mod:`sparsegp._params`, one block per class and parameter, held where that
        class's kernel says "fixed" (at the fitted value) and shared by the D features when
        isotropic. Also keeps the packing, for :meth:`_hyper_at` and :meth:`_theta_gradient`.
        """
        C, D = np.shape(log_lengthscale)
        specs = getattr(self, "_spec", None)      # one per class (all ARD or all isotropic)
        log_ls_user = np.asarray(log_lengthscale) + np.log(self._scaling.scale)
        lv, ln = np.ravel(log_variance), np.ravel(log_noise)
        variances = [Block(f"log_variance[{c}]", 1, value=lv[c],
                           free=specs is None or specs[c].free_variance) for c in range(C)]
        noises = [Block(f"log_noise[{c}]", 1) for c in range(C)]
        shared = specs is not None and not specs[0].ard
        # an isotropic class's first entry stands for all D, held or free
        scales = [Block(f"log_lengthscale[{c}]", D,
                        value=log_ls_user[c, 0] if shared else log_ls_user[c],
                        free=specs is None or specs[c].free_lengthscale, shared=shared)
                  for c in range(C)]
        # each class's v_c, held where its constant is "fixed" or zero
        biases = [] if log_bias is None else [
            Block(f"log_bias_variance[{c}]", 1, value=log_bias[c],
                  free=bias_variance_blocks(specs[c])[0].free) for c in range(C)]
        self._theta_packing = Packing(variances + noises + scales + biases)
        values = {f"log_variance[{c}]": lv[c] for c in range(C)}
        values.update({f"log_noise[{c}]": ln[c] for c in range(C)})
        values.update({f"log_lengthscale[{c}]": log_ls_user[c] for c in range(C)})
        if log_bias is not None:
            values.update({f"log_bias_variance[{c}]": log_bias[c] for c in range(C)})
        self.theta_ = self._theta_packing.pack(values)

    def _hyper_at(self, theta, Z):
        """The model-unit :func:`pack_params` vector at ``theta`` (as ``theta_``) with the
        inducing inputs Z (C, M, D)."""
        C = np.shape(Z)[0]
        v = self._theta_packing.unpack(theta)
        log_ls = np.stack([v[f"log_lengthscale[{c}]"] for c in range(C)])
        log_bias = None
        if self._hyp.log_bias is not None:
            log_bias = np.concatenate([v[f"log_bias_variance[{c}]"] for c in range(C)])
        return pack_params([v[f"log_variance[{c}]"] for c in range(C)],
                           [v[f"log_noise[{c}]"] for c in range(C)],
                           log_ls - np.log(self._scaling.scale), Z, log_bias)

    def _theta_gradient(self, grad, C, D):
        """d/d ``theta_`` from a gradient of the :func:`pack_params` vector (log space: the
        units do not change it, and the packing's blocks are the logs themselves: an
        isotropic class's D entries add up)."""
        g = np.asarray(grad, dtype=np.float64)
        grads = {f"log_variance[{c}]": g[c] for c in range(C)}
        grads.update({f"log_noise[{c}]": g[C + c] for c in range(C)})
        grads.update({f"log_lengthscale[{c}]": g[2 * C + c * D:2 * C + (c + 1) * D]
                      for c in range(C)})
        if self._hyp.log_bias is not None:
            # v_c's entries follow Z in the packed vector
            grads.update({f"log_bias_variance[{c}]": g[g.size - C + c] for c in range(C)})
        return self._theta_packing.gradient(grads, {})

    def _training_rows(self, X, y_index):
        """Keep the model-unit training rows for ``log_marginal_likelihood(theta)``: only
        in-memory ones (a store read lazily, or rows on Dask workers, are not kept)."""
        in_memory = isinstance(X, np.ndarray) and not isinstance(X, np.memmap)
        self._lml_rows = (X, y_index) if in_memory else None

    def _rows_for_lml(self):
        """The kept training rows, or a ValueError saying why there are none."""
        rows = getattr(self, "_lml_rows", None)
        if rows is None:
            raise ValueError(
                f"{type(self).__name__}.log_marginal_likelihood(theta) needs the training "
                "rows, which this fit did not keep (X was read lazily from a store or lives "
                "on Dask workers); refit on an in-memory array, or call it with theta=None")
        return rows

    def decision_function(self, X):
        """Log predictive class probabilities, the scores whose argmax ``predict`` returns.

        Returns
        -------
        scores : ndarray of shape (n_samples, C), or (n_samples,) for two classes
            log p(y = classes_[c] | x) per column; with two classes, scikit-learn's binary
            convention: the log-odds of ``classes_[1]`` (positive predicts it). The latent
            means and variances are :meth:`predict_latent`.
        """
        # the floor keeps a probability that underflowed to 0 finite, as sparsegp.metrics does
        log_p = np.log(np.maximum(self.predict_proba(X), 1e-300))
        return log_p[:, 1] - log_p[:, 0] if log_p.shape[1] == 2 else log_p

    def predict(self, X):
        """Most probable class label for each row of X, shape (n_samples,)."""
        P = self.predict_proba(X)      # checks that the model is fitted
        return self.classes_[np.argmax(P, axis=1)]
