"""Pieces shared by the binary probit GP classifiers (``EPClassifier``, ``GFITCClassifier``).

What lives here, and how a classifier uses it:

``_BinaryGPClassifierMixin``
    Mix into a :class:`sparsegp._base.BaseEstimator` subclass whose constructor has the shared
    arguments ``kernel, bias, jitter, optimizer, max_iter, tol, n_restarts, ep_tol,
    ep_max_sweeps, ep_damping, random_state, verbose``.  It provides

    * ``_validate_binary_fit(X, y)`` -> ``(X, y_pm, hyper)``: call first thing in ``fit``.  Checks
      X/y and every shared constructor argument (clear ``ValueError`` naming the argument), sets
      ``classes_`` and ``n_features_in_``, maps labels to y_pm in {-1, +1} with ``classes_[1]`` ->
      +1, and returns a :class:`HyperParams` (``variance`` float, ``lengthscale`` ndarray (D,) —
      isotropic models repeat one value —, ``bias``, ``ard``, ``rng`` the estimator's Generator,
      ``spec`` the covariance as a :class:`sparsegp.kernels.StationarySpec`).  The covariance
      is the ``kernel`` argument, or for None the default isotropic squared exponential with
      unbounded log-parameters (the search these classifiers have always done), whose start
      ``_input_scaling`` sets from the data.
    * Model units (:mod:`sparsegp._scaling`): ``_input_scaling(X, hyper)`` (or
      ``_spec_scaling(X, spec)``) gives the fit's ``InputScaling``, one scale per feature
      for an ARD kernel and for the default covariance (an isotropic kernel on standardised
      inputs, so that the fit does not depend on each column's units), one common scale for
      an isotropic kernel the user gave; ``_to_model_units`` moves X, the spec and inducing
      inputs there.  The fit runs in model units and reports in the user's.
    * ``_set_hyper_attributes(variance, lengthscale, bias, spec, scaling=None)``: sets
      ``variance_``, ``bias_``, ``lengthscale_`` (a float for an isotropic kernel, an ndarray
      (D,) with ARD) and ``kernel_``, the fitted copy of the kernel; with the fit's
      ``scaling``, from model-unit length-scales, and ``theta_`` too.
    * ``_gradient_dict(g_variance, g_lengthscale, g_bias, ard, scaling=None, **extra)``: the
      ``log_evidence_gradient_`` dict in natural parameters; ``g_lengthscale`` (D,) is summed for
      isotropic models (with ``scaling``, converted from model units first); extra keys (e.g.
      ``inducing_points=...``) are added as given.
    * ``_warn_ep_not_converged(n_sweeps, max_change)``: the ``ConvergenceWarning`` text.
    * Prediction: the subclass implements ``_predict_latent(X)`` on a checked float64 array and
      returns ``(mean, var)`` of f*; the mixin supplies ``predict_latent``, ``decision_function``
      (the probit argument (mean + bias_) / sqrt(1 + var), positive -> ``classes_[1]``),
      ``predict_proba`` ((n, 2), columns ordered as ``classes_``) and ``predict``.

Parameter packing (log space for the optimiser): ``theta = [log s2, log l (1 value, or D with
ARD), (log v_b,) bias, *extra]`` (log v_b, the bias variance, only for a kernel with a
``ConstantKernel`` summand and a classifier that takes one) where ``extra`` is an optional
flat block (GFITC: the inducing inputs ``Z.ravel()``), the packing of :mod:`sparsegp._params`
(``theta_packing``).  ``pack_theta``,
``unpack_theta`` and ``theta_gradient`` (chain rule from the natural-parameter gradient:
d/dlog p = p d/dp) convert between the two.  Given a ``spec``, a
hyper-parameter the kernel holds fixed is left out of theta (and its value comes from the
spec); ``search_box(spec, D, n_extra)`` gives the matching bounds for the training driver
(:mod:`sparsegp._optimize`) and the entries its restarts re-draw.  The probit bias is a
likelihood parameter, not part of the kernel: it is always in theta and never bounded.

Training: the classifiers call :func:`sparsegp._optimize.maximize` with ``warm=True`` (each EP
run starts from the previous evaluation's sites); ``optimizer=None`` holds every
hyper-parameter at its start.

Probabilities: ``probit_proba(mean, var, bias)`` = Phi((mean + bias) / sqrt(1 + var)) (notes
§1.7, with the erratum that the bias belongs inside).
"""
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._validation import (
    check_binary_labels,
    check_int,
    check_optimizer,
    check_positive,
    check_random_state,
    check_tol,
    plain,
)
from .._optimize import METHODS
from .._params import (Block, Packing, bias_variance_blocks, cached_packing, kernel_blocks,
                       spec_key)
from .._scaling import scaling_for
from ..exceptions import ConvergenceWarning, warn
from ..kernels import ConstantKernel, StationarySpec, kernel_spec
# the end-of-fit check's names, imported from here by older callers
from ._frequencies import FLAT_PROBA, JUDGED_SAMPLE, FrequencyCheckMixin, judged_rows  # noqa: F401

__all__ = [
    "HyperParams",
    "_BinaryGPClassifierMixin",
    "theta_packing",
    "pack_theta",
    "unpack_theta",
    "unpack_theta_vb",
    "theta_gradient",
    "theta_to_model",
    "probit_proba",
    "search_box",
    "optimizer_advice",
    "OPTIMIZER_NAMES",
    "OPTIMIZER_RENAMED",
]

#: The ``optimizer`` names of EP, GFITC and the stagewise classifier
#: (:data:`sparsegp._validation.OPTIMIZERS`), and the spelling they also took before the
#: vocabulary was one, accepted for one release with a ``FutureWarning``.
OPTIMIZER_NAMES = ("lbfgs", "cg")
OPTIMIZER_RENAMED = {"l-bfgs-b": "lbfgs"}

@dataclass
class HyperParams:
    """Validated shared hyper-parameters (natural scale) and options of a binary classifier."""

    variance: float
    lengthscale: np.ndarray  # (D,)
    bias: float
    ard: bool
    jitter: float
    optimizer: str  # None: every hyper-parameter held at its start
    max_iter: int
    tol: float  # nats per training row; None: max_iter steps (a paper's fixed schedule)
    n_restarts: int
    ep_tol: float
    ep_max_sweeps: int
    ep_damping: float
    rng: np.random.Generator
    spec: StationarySpec = None  # the covariance; None only for callers that bypass validation


# ----------------------------------------------------------------------------------------------
# parameter packing


def theta_packing(n_features, ard, spec=None, n_extra=0, n_extra_of=None):
    """The :class:`sparsegp._params.Packing` of ``[log s2, log l (1 or D), bias, *extra]``.

    Parameters
    ----------
    n_features : int
    ard : bool
        One length-scale per feature; otherwise one shared by all (without a spec).
    spec : StationarySpec, optional
        The kernel's blocks (:func:`sparsegp._params.kernel_blocks`: its log bounds, and its
        "fixed" parameters held at its values, left out of theta). Default: both free,
        unbounded.
    n_extra : int or None
        Size of the unconstrained block after the bias (GFITC: the inducing inputs); None:
        what ``n_extra_of`` (a packed vector) holds beyond the kernel's entries and the bias.
    n_extra_of : ndarray, optional

    Returns
    -------
    Packing
        Blocks ``log_variance``, ``log_lengthscale``, ``log_bias_variance`` when the spec has
        a constant summand (:func:`sparsegp._params.bias_variance_blocks`), ``bias``
        (unbounded: a likelihood parameter, not the kernel's) and ``extra``.
    """
    if n_extra is None:
        # the rest of ``n_extra_of``: what the kernel's entries and the bias leave
        n_kernel = theta_packing(n_features, ard, spec).slices["bias"].start
        n_extra = np.size(n_extra_of) - n_kernel - 1

    def build():
        if spec is None:
            kernel = [Block("log_variance", 1, log=True),
                      Block("log_lengthscale", n_features, log=True, shared=not ard)]
        else:
            kernel = kernel_blocks(spec, n_features) + bias_variance_blocks(spec)
        return Packing(kernel + [Block("bias", 1), Block("extra", int(n_extra))])

    return cached_packing(("binary", int(n_features), bool(ard), spec_key(spec),
                           int(n_extra)), build)


def pack_theta(variance, lengthscale, bias, ard, extra=None, spec=None, bias_variance=None):
    """Log-space parameter vector ``[log s2, log l..., bias, *extra]`` (:func:`theta_packing`).

    Parameters
    ----------
    variance : float
    lengthscale : ndarray of shape (D,)
        Only the first entry is used when ``ard`` is False.
    bias : float
    ard : bool
    extra : ndarray, optional
        Unconstrained block appended as is (flattened).
    spec : StationarySpec, optional
        Leaves out ``log s2`` when ``spec.free_variance`` is False and the length-scale block
        when ``spec.free_lengthscale`` is False.  Default: both free.
    bias_variance : float, optional
        v_b, packed when the spec has a free constant summand.

    Returns
    -------
    theta : ndarray of shape (n_log + 1 + extra.size,)
        ``n_log`` = the spec's free log parameters (1 + (D if ard else 1) without a spec).
    """
    n_extra = 0 if extra is None else np.size(extra)
    packing = theta_packing(_n_features(spec, lengthscale), ard, spec, n_extra)
    return packing.pack_natural({"log_variance": variance, "log_lengthscale": lengthscale,
                                 "bias": bias, "extra": extra,
                                 "log_bias_variance": bias_variance})


def unpack_theta(theta, n_features, ard, spec=None, with_bias_variance=False):
    """Inverse of :func:`pack_theta`.

    Parameters
    ----------
    theta : ndarray
    n_features : int
    ard : bool
    spec : StationarySpec, optional
        The same spec as given to :func:`pack_theta`; fixed hyper-parameters take its values.
    with_bias_variance : bool, default=False
        Also return v_b (0.0 for a spec without a constant summand).

    Returns
    -------
    variance : float
    lengthscale : ndarray of shape (D,)
        Isotropic models repeat the single value.
    bias : float
    extra : ndarray
        The remaining (flat) entries, possibly empty; reshape it yourself.
    bias_variance : float
        Only with ``with_bias_variance``.
    """
    theta = np.asarray(theta, dtype=np.float64)
    v = theta_packing(n_features, ard, spec, None, theta).natural(theta)
    out = (float(v["log_variance"][0]), v["log_lengthscale"], float(v["bias"][0]), v["extra"])
    if with_bias_variance:
        out += (float(v["log_bias_variance"][0]) if "log_bias_variance" in v else 0.0,)
    return out


def unpack_theta_vb(theta, n_features, spec):
    """:func:`unpack_theta` and v_b: ``(variance, lengthscale, bias, extra, bias_variance)``,
    the last None for a spec without a constant summand (``spec.bias_term``)."""
    *out, vb = unpack_theta(theta, n_features, spec.ard, spec, with_bias_variance=True)
    return (*out, None if spec.bias_term is None else vb)


def theta_gradient(g_variance, g_lengthscale, g_bias, variance, lengthscale, ard, g_extra=None,
                   spec=None, g_bias_variance=None, bias_variance=None):
    """Gradient w.r.t. :func:`pack_theta`'s vector from natural-parameter derivatives.

    ``g_lengthscale`` is the per-dimension derivative (D,) (summed here for isotropic models,
    whose single l is shared by every dimension); log parameters get p * d/dp.  With ``spec``,
    the entries of fixed hyper-parameters are left out, as in :func:`pack_theta`;
    ``g_bias_variance`` is d/dv_b at ``bias_variance`` (for a spec with a constant summand).
    """
    n_extra = 0 if g_extra is None else np.size(g_extra)
    packing = theta_packing(_n_features(spec, g_lengthscale), ard, spec, n_extra)
    return packing.gradient({"log_variance": g_variance, "log_lengthscale": g_lengthscale,
                             "bias": g_bias, "extra": g_extra,
                             "log_bias_variance": g_bias_variance},
                            {"log_variance": variance, "log_lengthscale": lengthscale,
                             "log_bias_variance": bias_variance})


def _n_features(spec, lengthscale):
    """D of the packing: the spec's, else the length of the length-scales given (which an
    isotropic caller may give as one value: its packing takes one entry either way)."""
    return np.size(spec.lengthscale) if spec is not None else np.size(lengthscale)


def theta_to_model(theta, scaling, spec):
    """:func:`pack_theta`'s vector with its log length-scales in model units (a new array).

    ``scaling`` is the fit's :class:`~sparsegp._scaling.InputScaling` and ``spec`` the
    (model-unit) spec the vector was packed with; its length-scales are in the units
    ``lengthscale_`` reports (:meth:`~sparsegp._scaling.InputScaling.lengthscale_unit`).
    Gradients need no conversion back: in log space the change of units is a shift, whose
    derivative is one.
    """
    out = np.array(theta, dtype=np.float64)
    ard = spec is None or spec.ard
    ls = theta_packing(scaling.n_features, ard, spec).slices["log_lengthscale"]
    # an isotropic kernel's unit is one value (a common scale, or model units)
    out[ls] -= np.log(scaling.lengthscale_unit(ard)[:ls.stop - ls.start])
    return out


def search_box(spec, n_features, n_extra=0):
    """Bounds and restart mask of :func:`pack_theta`'s vector for the training driver.

    Returns
    -------
    bounds : ndarray of shape (len(theta), 2)
        The kernel's log bounds on its free parameters (:func:`theta_packing`); the bias and
        the extra block are unbounded.
    restart_mask : ndarray of shape (len(theta),), bool
        True on the kernel's log parameters: restarts re-draw those, not the bias (nor the
        extra block, which a caller's ``restart`` hook may re-draw).
    """
    packing = theta_packing(n_features, spec.ard, spec, n_extra)
    bounds = packing.bounds()
    restart_mask = np.zeros(bounds.shape[0], dtype=bool)
    restart_mask[:packing.slices["bias"].start] = True
    return bounds, restart_mask


def optimizer_advice(optimizer):
    """What the max_iter ``ConvergenceWarning`` suggests besides more iterations: the
    optimiser the fit did not use (``optimizer`` a key of :data:`sparsegp._optimize.METHODS`),
    never the one that just stopped."""
    other = "cg" if METHODS[optimizer] == METHODS["lbfgs"] else "lbfgs"
    return f", or try optimizer={other!r}"


# ----------------------------------------------------------------------------------------------
# predictions


def probit_proba(mean, var, bias):
    """p(y* = +1 | x*) = Phi((mean + bias) / sqrt(1 + var)), shape of ``mean``."""
    return special.ndtr((np.asarray(mean) + bias) / np.sqrt(1.0 + np.asarray(var)))


class _BinaryGPClassifierMixin(FrequencyCheckMixin):
    """Label handling, shared validation, hyper-parameter attributes and predictions.

    See the module docstring for the contract; subclasses implement ``_predict_latent``.
    """

    #: The classifier adds a bias variance v_b to every covariance entry, so its ``kernel``
    #: may hold ``ConstantKernel`` summands (the spec's ``bias_term``)
    _takes_bias_variance = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # one latent function with a probit link: two classes only (IVM overrides this)
        tags.classifier_tags.multi_class = False
        return tags

    # -- fit helpers -----------------------------------------------------------------------

    def _validate_binary_fit(self, X, y):
        """Check X, y and the shared constructor arguments; return ``(X, y_pm, HyperParams)``."""
        X, y = self._validate_fit_data(X, y, classifier=True)
        classes, y_pm = check_binary_labels(y)
        spec = self._binary_kernel_spec(X.shape[1])
        bias = self.bias
        if isinstance(bias, (bool, np.bool_)) or not np.isscalar(bias) \
                or not np.isfinite(float(bias)):
            raise ValueError(f"bias must be a finite real number; got {plain(bias)!r}")
        jitter = self.jitter
        if isinstance(jitter, (bool, np.bool_)) or not np.isscalar(jitter) \
                or not np.isfinite(float(jitter)) or float(jitter) < 0:
            raise ValueError(f"jitter must be a non-negative finite number; got {plain(jitter)!r}")
        # optimizer=None holds every hyper-parameter fixed, as in scikit-learn's GPs
        optimizer = check_optimizer(self.optimizer, OPTIMIZER_NAMES, OPTIMIZER_RENAMED)
        max_iter = check_int(self.max_iter, "max_iter", minimum=0)
        tol = check_tol(self.tol)
        n_restarts = check_int(self.n_restarts, "n_restarts", minimum=0)
        ep_tol = float(check_positive(self.ep_tol, "ep_tol", allow_array=False))
        ep_max_sweeps = check_int(self.ep_max_sweeps, "ep_max_sweeps", minimum=1)
        damping = self.ep_damping
        if isinstance(damping, (bool, np.bool_)) or not np.isscalar(damping) \
                or not (0.0 < float(damping) <= 1.0):
            raise ValueError(f"ep_damping must be a number in (0, 1]; got {plain(damping)!r}")
        rng = check_random_state(self.random_state)
        self.classes_ = classes
        hyper = HyperParams(spec.variance, spec.lengthscale.copy(), float(bias), bool(spec.ard),
                            float(jitter), optimizer, max_iter, tol, n_restarts,
                            ep_tol, ep_max_sweeps, float(damping), rng, spec)
        return X, y_pm, hyper

    def _binary_kernel_spec(self, n_features):
        """The covariance as a :class:`~sparsegp.kernels.StationarySpec`.

        ``kernel`` with its own values, bounds and fixed parts; for None the default
        squared exponential, searched without bounds as it always was, whose length-scale
        :meth:`_input_scaling` sets from the data (:func:`sparsegp.kernels.kernel_spec`).
        """
        return kernel_spec(self.kernel, n_features, type(self).__name__,
                           bias=self._takes_bias_variance)

    def _input_scaling(self, X, hyper):
        """The :class:`~sparsegp._scaling.InputScaling` of the training X (user units).

        With ``kernel=None``, ``hyper``'s start (spec and ``lengthscale``) becomes the
        data-following one, in the user's units (see :meth:`_spec_scaling`).
        """
        scaling = self._spec_scaling(X, hyper.spec)
        hyper.lengthscale = hyper.spec.lengthscale.copy()
        return scaling

    def _spec_scaling(self, X, spec):
        """:meth:`_input_scaling` for a bare ``spec`` (changed in place with ``kernel=None``).

        The default covariance (``kernel=None``) is scaled per feature: an isotropic kernel
        on standardised inputs, whose fit does not depend on each column's units (issue 23);
        a kernel the user gave is scaled per feature when ARD, else by one common scale.
        """
        return scaling_for(X, spec, self.kernel is None, standardise_default=True)

    @staticmethod
    def _to_model_units(scaling, X, hyper, Z=None):
        """X, ``hyper`` (spec, lengthscale) and optional inducing inputs Z in model units.

        Returns ``(X, Z)`` as new arrays (Z None stays None); ``hyper`` is changed in place,
        its spec replaced by a model-unit copy whose ``fitted`` still builds the user's
        kernel (call it with user-unit values). The default covariance keeps its box, which
        is one in model units (:meth:`~sparsegp._scaling.InputScaling.spec_to_model`).
        """
        hyper.spec = scaling.spec_to_model(hyper.spec)
        hyper.lengthscale = hyper.spec.lengthscale.copy()
        return scaling.transform(X), (None if Z is None else scaling.transform(Z))

    def _set_hyper_attributes(self, variance, lengthscale, bias, spec, scaling=None,
                              bias_variance=None):
        """Set ``variance_``, ``lengthscale_`` (float if isotropic, (D,) if ARD), ``bias_``
        and ``kernel_``, the fitted copy of ``spec``'s kernel
        (:class:`~sparsegp.kernels.StationarySpec`).

        With ``scaling``, the fit's :class:`~sparsegp._scaling.InputScaling`, ``lengthscale``
        (D,) is in model units and ``spec`` the model-unit spec: ``kernel_`` is reported in
        the user's units (the default covariance with one length-scale per feature),
        ``lengthscale_`` in :meth:`~sparsegp._scaling.InputScaling.lengthscale_unit`, and
        ``theta_`` (:func:`pack_theta`, the vector of ``log_marginal_likelihood``) is set
        from them. With a spec's constant summand, ``kernel_`` is the Sum with the constant
        at ``bias_variance`` (v_b), and ``theta_`` holds its log when it is free.
        """
        self.variance_ = float(variance)
        ls = np.asarray(lengthscale, dtype=np.float64)
        if scaling is None:
            self.kernel_ = spec.fitted(variance, ls)
        else:
            self.kernel_ = scaling.kernel_to_user(spec, variance, ls)
            ls = scaling.reported_lengthscale(spec, ls)
        if spec.bias_term is not None:
            self.kernel_ = self.kernel_ + ConstantKernel(float(bias_variance),
                                                         spec.bias_term.constant_value_bounds)
        self.lengthscale_ = ls.copy() if spec.ard else float(ls.ravel()[0])
        self.bias_ = float(bias)
        if scaling is not None:
            self.theta_ = pack_theta(variance, ls, bias, spec.ard, spec=spec,
                                     bias_variance=bias_variance)

    def _gradient_dict(self, g_variance, g_lengthscale, g_bias, ard, scaling=None, **extra):
        """``log_evidence_gradient_`` in natural parameters (isotropic l: summed over dims).

        ``ard`` is the kernel's. Fixed hyper-parameters are reported too: the derivative
        exists even if it is not used. With ``scaling`` (the fit's
        :class:`~sparsegp._scaling.InputScaling`), ``g_lengthscale`` is by the model-unit
        length-scales and is reported by ``lengthscale_`` (divided by its unit).
        """
        ard = bool(ard)
        g_ls = np.asarray(g_lengthscale, dtype=np.float64)
        if scaling is not None:
            g_ls = g_ls / scaling.lengthscale_unit(ard)
        out = {
            "variance": float(g_variance),
            "lengthscale": g_ls.copy() if ard else float(np.sum(g_ls)),
            "bias": float(g_bias),
        }
        out.update(extra)
        return out

    def _judged_proba(self, X, rows):
        """Probabilities (len(rows), 2) of the training rows ``rows`` of the validated X (user
        units), for the end-of-fit check (:mod:`sparsegp.classification._frequencies`)."""
        mean, var = self._predict_latent(X[rows])
        d = (mean + self.bias_) / np.sqrt(1.0 + np.maximum(var, 0.0))
        return np.column_stack([special.ndtr(-d), special.ndtr(d)])

    def _frequency_advice(self):
        """What to try after a fit no better than the class frequencies, naming only this
        estimator's parameters."""
        advice = ["kernel=None (a start scaled to the data) or a longer starting "
                  "length-scale"]
        # the stagewise and IVM fits have no restarts
        if "n_restarts" in self.get_params():
            advice.append("n_restarts > 0")
        return advice + ["more iterations (max_iter)"]

    def _warn_ep_not_converged(self, n_sweeps, max_change):
        warn(
            f"EP did not converge in {n_sweeps} sweeps (largest site change {max_change:.3g} > "
            f"ep_tol={self.ep_tol}); increase ep_max_sweeps or use ep_damping < 1 (e.g. 0.5)",
            ConvergenceWarning,
        )

    # -- prediction ------------------------------------------------------------------------

    def _check_predict_input(self, X):
        return self._validate_predict_data(X)

    def predict_latent(self, X):
        """Mean and variance of the latent f* (bias excluded).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        var : ndarray of shape (n_samples,)
            p(y* = classes_[1] | x*) = Phi((mean + bias_) / sqrt(1 + var)).
        """
        X = self._check_predict_input(X)
        mean, var = self._predict_latent(X)
        return mean, np.maximum(var, 0.0)

    def decision_function(self, X):
        """Probit argument (mean + bias_) / sqrt(1 + var), shape (n_samples,).

        Positive values predict ``classes_[1]``; Phi of it is that class's probability.
        """
        mean, var = self.predict_latent(X)
        return (mean + self.bias_) / np.sqrt(1.0 + var)

    def predict_proba(self, X):
        """Class probabilities, shape (n_samples, 2), columns ordered as ``classes_``."""
        d = self.decision_function(X)
        # Phi(-d) rather than 1 - Phi(d) keeps tiny probabilities accurate
        return np.column_stack([special.ndtr(-d), special.ndtr(d)])

    def predict(self, X):
        """Most probable class label for each row of X, shape (n_samples,): the argmax of
        :meth:`predict_proba`, as in scikit-learn, so that the two never disagree (an exact
        tie at probability 1/2 goes to ``classes_[0]``)."""
        proba = self.predict_proba(X)      # checks that the model is fitted
        return self.classes_[np.argmax(proba, axis=1)]
