"""The scikit-learn foundation under every public sparsegp estimator.

``SparseGPEstimator`` (a :class:`sklearn.base.BaseEstimator`) gives each estimator

* data validation through :func:`sklearn.utils.validation.validate_data`: ``n_features_in_``,
  ``feature_names_in_`` from DataFrames, a private float64 C-contiguous copy of X (nothing a
  user passed in is ever written to), and the GP-specific messages the library has always
  given (mismatched lengths, non-numeric DataFrame columns, too few classes);
* the thread policy (:mod:`sparsegp._threads`): every public fit/predict method a subclass
  defines runs with the pool named by ``_parallel_pool()`` doing the parallel work;
* honest ``__sklearn_tags__`` and the list of scikit-learn checks each estimator cannot pass,
  with the reason (``_expected_failed_checks``), used by the test suite's
  ``parametrize_with_checks``;
* fitted state only once ``fit`` has succeeded: a ``fit`` that raises leaves the estimator as
  it was before the call (no new ``*_`` attributes, the previous fit's untouched);
* ``log_marginal_likelihood(theta=None, eval_gradient=False)``, as scikit-learn's Gaussian
  processes define it (:class:`LogMarginalLikelihoodMixin`).

The hyper-parameters shared by the inducing-point estimators are validated and initialised in
:mod:`sparsegp._inducing_base`.
"""
import functools

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from . import _threads
from ._optimize import NUMERICAL_ERRORS


#: ``log_marginal_likelihood``'s docstring; ``{objective}`` and ``{notes}`` come from the
#: estimator's ``_lml_objective`` and ``_lml_notes``
_LML_DOC = """{objective} at ``theta``, optionally with its gradient.

The signature and meaning of scikit-learn's ``GaussianProcessClassifier`` /
``GaussianProcessRegressor.log_marginal_likelihood``: the objective the fit maximised, as a
function of the model's free hyper-parameters in log space.

Parameters
----------
theta : array-like of shape (n_theta,), optional
    Free hyper-parameters in the layout of ``theta_`` (see the class's Attributes), in the
    units of the training data. None: the fitted point, returning
    ``log_marginal_likelihood_value_``.
eval_gradient : bool, default=False
    Also return the gradient with respect to ``theta``.

Returns
-------
log_likelihood : float
    -inf where the model cannot be evaluated at ``theta`` (a failed factorisation, an
    improper EP cavity), as in scikit-learn.
log_likelihood_gradient : ndarray of shape (n_theta,)
    Only when ``eval_gradient`` is True (zeros where the value is -inf).

Raises
------
sklearn.exceptions.NotFittedError
    Before ``fit``.
ValueError
    When ``theta`` does not hold ``theta_.size`` finite values.

Notes
-----
{notes}
"""


class LogMarginalLikelihoodMixin:
    """``log_marginal_likelihood(theta=None, eval_gradient=False)`` for a fitted estimator.

    One contract for every estimator (issue 22 item 5): ``theta`` is a log-space vector of
    the free hyper-parameters in the layout of the fitted ``theta_``, in the user's units;
    ``log_marginal_likelihood(theta_)`` equals ``log_marginal_likelihood_value_`` (to
    round-off, or EP's tolerance where EP is re-run), and the gradient is that of the
    method itself, so that central differences of the method check it. Inducing inputs,
    active sets and variational parameters stay at their fitted values.

    A subclass sets, in ``fit``, ``theta_`` and ``log_marginal_likelihood_value_`` and
    implements

    * ``_log_marginal_likelihood(theta, eval_gradient)`` -> ``value`` or ``(value, grad)``
      at ``theta`` (a checked float64 copy of the right size);
    * optionally ``_log_marginal_likelihood_gradient()``, the gradient at the fitted point
      when it is known without a new evaluation (default: evaluated at ``theta_``);

    and states in ``_lml_objective`` (one line: what the objective is) and ``_lml_notes``
    (what is held fixed, how EP is started) the text of its docstring.
    """

    _lml_objective = "The log marginal likelihood"
    _lml_notes = "Nothing beyond the hyper-parameters in ``theta`` is changed."

    def __init_subclass__(cls, **kwargs):
        # each estimator gets its own documented method; the thread policy wraps it after
        # this (SparseGPEstimator.__init_subclass__ calls here first)
        if ("_lml_notes" in cls.__dict__ or "_lml_objective" in cls.__dict__) \
                and "log_marginal_likelihood" not in cls.__dict__:
            def log_marginal_likelihood(self, theta=None, eval_gradient=False):
                return LogMarginalLikelihoodMixin.log_marginal_likelihood(self, theta,
                                                                          eval_gradient)

            log_marginal_likelihood.__doc__ = _LML_DOC.format(objective=cls._lml_objective,
                                                              notes=cls._lml_notes)
            log_marginal_likelihood.__qualname__ = f"{cls.__qualname__}.log_marginal_likelihood"
            log_marginal_likelihood.__module__ = cls.__module__
            cls.log_marginal_likelihood = log_marginal_likelihood
        super().__init_subclass__(**kwargs)

    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        check_is_fitted(self)
        if theta is None:
            value = float(self.log_marginal_likelihood_value_)
            if not eval_gradient:
                return value
            return value, np.asarray(self._log_marginal_likelihood_gradient(), dtype=np.float64)
        theta = np.array(theta, dtype=np.float64).ravel()
        size = self.theta_.size
        if theta.size != size or not np.all(np.isfinite(theta)):
            bad = "" if np.all(np.isfinite(theta)) else ", not all finite"
            raise ValueError(f"theta must hold {size} finite values (the layout of theta_); "
                             f"got {theta.size}{bad}")
        try:
            return self._log_marginal_likelihood(theta, bool(eval_gradient))
        except NUMERICAL_ERRORS:
            # as scikit-learn's GPs: a point where the model cannot be evaluated (a failed
            # factorisation, an improper EP cavity) has log likelihood -inf
            return (-np.inf, np.zeros(size)) if eval_gradient else -np.inf

    log_marginal_likelihood.__doc__ = _LML_DOC.format(objective=_lml_objective,
                                                      notes=_lml_notes)

    def _log_marginal_likelihood_gradient(self):
        """The gradient at the fitted point (default: evaluated at ``theta_``)."""
        return self._log_marginal_likelihood(np.array(self.theta_, dtype=np.float64), True)[1]


def _restore_on_failure(fit):
    """Wrap ``fit`` so that an exception leaves the estimator as it was before the call.

    Attributes are only ever assigned, never mutated in place, by a fit (its arrays are new),
    so a shallow copy of ``__dict__`` is the whole state to restore.
    """
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except Exception:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    wrapper._restores_on_failure = True
    return wrapper


class SparseGPEstimator(LogMarginalLikelihoodMixin, BaseEstimator):
    """Base of every public estimator: validation, thread policy, tags, failed fits.

    Subclasses store their constructor arguments unchanged (scikit-learn's rule) and validate
    them at the top of ``fit``; attributes a ``fit`` sets before it raises are taken back
    (:func:`_restore_on_failure`), so fitted state exists only after a fit that succeeded.
    """

    #: the pool that does the parallel work of fit/predict (:data:`sparsegp._threads.POOLS`)
    _thread_pool = "numba"

    #: scikit-learn check name -> why this estimator cannot pass it
    _expected_failed_checks = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fit = cls.__dict__.get("fit")
        if callable(fit) and not getattr(fit, "_restores_on_failure", False):
            cls.fit = _restore_on_failure(fit)
        # wrap here so that no public fit/predict method, whether the class defines it or a
        # mixin does (ClassifierMixin.score, the binary classifiers' predictions), can forget
        # the thread policy
        for name in _threads.MANAGED_METHODS:
            method = getattr(cls, name, None)
            if callable(method) and not getattr(method, "_thread_managed", False):
                setattr(cls, name, _threads.managed(method))

    def _parallel_pool(self, X=None):
        """Which pool runs the parallel work of a method called with ``X`` (may be None).

        Must not raise: parameters are validated by ``fit`` itself.
        """
        return self._thread_pool

    def _parallel_rows(self, method, X=None):
        """Rows of data that ``method`` (a name in :data:`sparsegp._threads.MANAGED_METHODS`),
        called with ``X``, splits among threads; None where unknown (then large work).

        Below :data:`sparsegp._config.PARALLEL_MIN_ROWS` the call runs on one Numba thread
        without a load probe (:func:`sparsegp._threads.load_aware_threads`). By default the
        rows of a 2-D ``X``; an estimator whose passes stay serial below a size of its own
        says so here. Must not raise.
        """
        return _threads.rows_of(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.sparse = False
        return tags

    # -- data ------------------------------------------------------------------------------

    def _validate_fit_data(self, X, y, *, classifier, min_samples=2):
        """Check a training pair and record ``n_features_in_``/``feature_names_in_``.

        Returns X as a new float64 C-contiguous array and y as a new 1-D array (float64 for
        regressors, the labels as given for classifiers).
        """
        _check_numeric_frame(X, "X")
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None")
        n_x, n_y = _num_samples(X), _num_samples(y)
        if n_x != n_y:
            raise ValueError(f"X and y have different lengths: X has {n_x} rows, y has {n_y}")
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", copy=True,
                             ensure_min_samples=min_samples, y_numeric=not classifier,
                             ensure_all_finite=False)
        _check_finite(X, "X")
        if classifier:
            check_classification_targets(y)
            y = np.array(y, copy=True)
        else:
            y = np.array(y, dtype=np.float64, copy=True)
        return X, y

    def _record_features(self, X):
        """``n_features_in_``/``feature_names_in_`` of a row-sliceable X that is not read."""
        validate_data(self, X, skip_check_array=True, reset=True)

    def _validate_predict_data(self, X):
        """Check that the model is fitted and X matches the training features."""
        check_is_fitted(self)
        _check_numeric_frame(X, "X")
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C",
                          ensure_all_finite=False)
        _check_finite(X, "X")
        return X


def _check_finite(X, name):
    # our own message (scikit-learn's names NaN or infinity, not both, nor how many); y keeps
    # scikit-learn's check, which validate_data runs
    if not np.all(np.isfinite(X)):
        bad = int(np.sum(~np.isfinite(X)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); remove or impute "
                         "them")


def _check_numeric_frame(X, name):
    """A DataFrame with non-numeric columns is refused, naming the columns."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return
    # numpy dtypes and pandas' extension dtypes (nullable Int64, boolean, ...) both carry .kind
    bad = [str(col) for col, dt in zip(X.columns, dtypes)
           if getattr(dt, "kind", "O") not in "iufb"]
    if bad:
        raise ValueError(
            f"{name} has non-numeric column(s) {bad[:10]}; sparsegp needs numbers: encode "
            f"categories first (e.g. sklearn.preprocessing.OneHotEncoder in a Pipeline)")
