"""Non-GP baselines the papers compare against, as scikit-learn classifiers for the grids.

:class:`SVMBaseline` is the support vector machine of seed 000 Table 1 and seed 003 Table 1:
an RBF ``SVC`` whose C and gamma are chosen by stratified k-fold cross-validation on the
training data only, refitted on the training data, with Platt's sigmoid for probabilities.
Baselines are named in :data:`sparsegp.experiments.grid.METHODS` by their dotted path, so the
grid validates their parameters like those of the public sparsegp estimators.
"""
import time

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import (GridSearchCV, StratifiedKFold, cross_val_predict,
                                     train_test_split)
from sklearn.svm import SVC
from sklearn.utils.multiclass import unique_labels
from sklearn.utils.validation import check_is_fitted, validate_data

# The usual coarse log2 grid for an RBF SVM on standardised inputs (Hsu, Chang and Lin's
# practical guide to SVM classification): C = 2^-5, 2^-3, ..., 2^15 and
# gamma = 2^-15, 2^-13, ..., 2^3, i.e. 11 x 10 = 110 pairs.
DEFAULT_C_GRID = tuple(2.0 ** k for k in range(-5, 16, 2))
DEFAULT_GAMMA_GRID = tuple(2.0 ** k for k in range(-15, 4, 2))


class SVMBaseline(ClassifierMixin, BaseEstimator):
    """Binary RBF support vector machine with (C, gamma) chosen by cross-validation.

    ``fit`` runs a grid search (``GridSearchCV`` over ``SVC(kernel="rbf")``, scored by
    accuracy, stratified ``cv``-fold splits shuffled by ``random_state``) on the training data,
    optionally on a random stratified subset of it, then fits the chosen SVC on all training
    rows (less a calibration hold-out, see ``calibration``). Labels are the sign of the SVC's
    margin; probabilities come from Platt's sigmoid of the margin, used only to score a
    predictive NLP (seed 000 Table 1 prints no NLP for its SVM).

    Parameters
    ----------
    C_grid : sequence of float, optional
        Values of the regularisation constant C searched; default :data:`DEFAULT_C_GRID`
        (2^-5, 2^-3, ..., 2^15).
    gamma_grid : sequence of float, optional
        Values of the RBF inverse width gamma in exp(-gamma |x - x'|^2); default
        :data:`DEFAULT_GAMMA_GRID` (2^-15, 2^-13, ..., 2^3).
    cv : int, default=5
        Folds of the stratified cross-validation.
    cv_subsample : int, optional
        Run the grid search on a random stratified subset of this many training rows (the
        final SVC still sees all of them). For large sets such as MNIST, where 5-fold CV of
        the whole grid on 60 000 rows is out of reach; seed 003 likewise selected its
        parameters on random 5 000-point subsets. None: search on all training rows.
    calibration : "cv" or int, default="cv"
        How Platt's sigmoid is fitted. "cv": on out-of-fold margins of a stratified 5-fold
        cross-validation of the chosen SVC (five extra SVC fits; what libsvm's probability mode,
        ``SVC(probability=True)``, does; that flag is deprecated since scikit-learn 1.9). An
        int n: hold out a random stratified n training rows, fit the final SVC on the rest and
        the sigmoid on the held-out margins (no extra SVC fit; for large sets). The labels
        never depend on the sigmoid.
    cache_size : float, default=500
        Kernel cache of libsvm in MB.
    random_state : int, optional
        Seeds the CV splits, ``cv_subsample``, the calibration hold-out and libsvm's internal
        folds, so that a fit is reproducible.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    n_features_in_ : int
    C_, gamma_ : float
        The chosen parameters.
    cv_accuracy_ : float
        Mean CV accuracy of the chosen pair.
    svc_ : sklearn.svm.SVC
        The final SVC.
    n_support_vectors_ : int
        Support vectors of the final SVC (its "active set" size).
    refit_time_ : float
        CPU seconds of the final SVC's training alone, without the grid search and the
        calibration (the papers' SVM training times leave out model selection).
    sigmoid_ : tuple of float
        Platt's (A, B) with P(y = classes_[1] | x) = 1 / (1 + exp(A f(x) + B)).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(80, 2)); y = np.where(X[:, 0] * X[:, 1] > 0, 1, -1)
    >>> svm = SVMBaseline(C_grid=[1, 10], gamma_grid=[0.5, 2], random_state=0).fit(X, y)
    >>> svm.predict_proba(X).shape
    (80, 2)
    """

    def __init__(self, C_grid=None, gamma_grid=None, cv=5, cv_subsample=None,
                 calibration="cv", cache_size=500, random_state=None):
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.cv = cv
        self.cv_subsample = cv_subsample
        self.calibration = calibration
        self.cache_size = cache_size
        self.random_state = random_state

    def _grid(self, values, default, name):
        values = default if values is None else values
        arr = np.asarray(values, dtype=float).ravel()
        if arr.size == 0 or not np.all(np.isfinite(arr) & (arr > 0)):
            raise ValueError(f"{name} must be a non-empty sequence of positive numbers; "
                             f"got {values!r}")
        return arr.tolist()

    def _check_count(self, value, name, low):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
                or value < low:
            raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
        return int(value)

    def fit(self, X, y):
        """Choose (C, gamma) by cross-validation, fit the SVC and Platt's sigmoid.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Two classes.

        Returns
        -------
        self
        """
        X, y = validate_data(self, X, y)
        self.classes_ = unique_labels(y)
        if self.classes_.size != 2:
            raise ValueError(f"SVMBaseline is binary; got {self.classes_.size} classes")
        C_grid = self._grid(self.C_grid, DEFAULT_C_GRID, "C_grid")
        gamma_grid = self._grid(self.gamma_grid, DEFAULT_GAMMA_GRID, "gamma_grid")
        folds = self._check_count(self.cv, "cv", 2)
        seed = None if self.random_state is None else int(self.random_state)
        # one generator, drawn in a fixed order, so every random choice follows from the seed
        rng = np.random.default_rng(seed)

        fit_rows = np.arange(len(y))
        margins = None
        if isinstance(self.calibration, str) and self.calibration == "cv":
            held = None
        else:
            if isinstance(self.calibration, str):
                raise ValueError(f"calibration must be 'cv' or an integer >= 2 (rows held out "
                                 f"for Platt's sigmoid); got {self.calibration!r}")
            n_held = self._check_count(self.calibration, "calibration", 2)
            fit_rows, held = train_test_split(
                fit_rows, test_size=n_held, stratify=y,
                random_state=int(rng.integers(2 ** 31)))
        search_rows = fit_rows
        if self.cv_subsample is not None:
            n_sub = self._check_count(self.cv_subsample, "cv_subsample", 2 * folds)
            if n_sub < len(fit_rows):
                search_rows, _ = train_test_split(
                    fit_rows, train_size=n_sub, stratify=y[fit_rows],
                    random_state=int(rng.integers(2 ** 31)))

        search = GridSearchCV(
            SVC(kernel="rbf", cache_size=self.cache_size),
            {"C": C_grid, "gamma": gamma_grid}, scoring="accuracy",
            cv=StratifiedKFold(folds, shuffle=True, random_state=int(rng.integers(2 ** 31))),
            refit=False, n_jobs=None)
        search.fit(X[search_rows], y[search_rows])
        self.C_ = float(search.best_params_["C"])
        self.gamma_ = float(search.best_params_["gamma"])
        self.cv_accuracy_ = float(search.best_score_)

        self.svc_ = SVC(kernel="rbf", C=self.C_, gamma=self.gamma_, cache_size=self.cache_size)
        if held is None:
            # margins each row gets from an SVC that did not see it, as libsvm's Platt step
            platt_folds = StratifiedKFold(5, shuffle=True,
                                          random_state=int(rng.integers(2 ** 31)))
            margins = cross_val_predict(self.svc_, X, y, cv=platt_folds,
                                        method="decision_function")
            held = fit_rows
        t0 = time.thread_time()      # libsvm trains on this thread
        self.svc_.fit(X[fit_rows], y[fit_rows])
        self.refit_time_ = time.thread_time() - t0
        if margins is None:
            margins = self.svc_.decision_function(X[held])
        self.sigmoid_ = _platt_sigmoid(margins, y[held] == self.classes_[1])
        self.n_support_vectors_ = int(self.svc_.n_support_.sum())
        return self

    def decision_function(self, X):
        """Margin f(x) of the SVC, positive for ``classes_[1]``, shape (n_samples,)."""
        check_is_fitted(self, "svc_")
        return self.svc_.decision_function(validate_data(self, X, reset=False))

    def predict(self, X):
        """Sign of the margin as a class label (not the argmax of :meth:`predict_proba`)."""
        return self.classes_[(self.decision_function(X) > 0).astype(np.int64)]

    def predict_proba(self, X):
        """Platt probabilities, shape (n_samples, 2), columns in ``classes_`` order."""
        A, B = self.sigmoid_
        z = A * self.decision_function(X) + B
        return np.column_stack([expit(z), expit(-z)])


def _platt_sigmoid(f, positive):
    """Platt's (A, B) maximising sum log sigma(-(A f + B)) on the positives, with his targets.

    Targets are (N+ + 1) / (N+ + 2) and 1 / (N- + 2) rather than 1 and 0 (Platt, 1999), which
    keeps the fit finite when the hold-out is separable by the margin.
    """
    f = np.asarray(f, dtype=float)
    n_pos = int(np.count_nonzero(positive))
    n_neg = positive.size - n_pos
    t = np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))

    def loss(ab):
        z = ab[0] * f + ab[1]
        # P(positive) = sigma(-z): cross-entropy -t log sigma(-z) - (1 - t) log sigma(z)
        value = -np.sum(t * log_expit(-z) + (1.0 - t) * log_expit(z))
        p = expit(-z)
        r = t - p                       # d value / d z
        return value, np.array([np.sum(r * f), np.sum(r)])

    start = np.array([0.0, np.log((n_neg + 1.0) / (n_pos + 1.0))])
    res = minimize(loss, start, jac=True, method="L-BFGS-B")
    return float(res.x[0]), float(res.x[1])
