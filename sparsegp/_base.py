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
  ``parametrize_with_checks``.

The hyper-parameters shared by the inducing-point estimators are validated and initialised in
:mod:`sparsegp._inducing_base`.
"""
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from . import _threads


class SparseGPEstimator(BaseEstimator):
    """Base of every public estimator: validation, thread policy, tags.

    Subclasses store their constructor arguments unchanged (scikit-learn's rule) and validate
    them at the top of ``fit``.
    """

    #: the pool that does the parallel work of fit/predict (:data:`sparsegp._threads.POOLS`)
    _thread_pool = "numba"

    #: scikit-learn check name -> why this estimator cannot pass it
    _expected_failed_checks = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
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
