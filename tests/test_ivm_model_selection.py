"""IVMClassifier model selection (issue 23, item 3): a start scaled to the data, the guard
against the approximate likelihood's degenerate limits, seed 003's validation search and the
warning for fits that predict no better than the class frequencies."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sparsegp import GFITCClassifier, IVMClassifier
from sparsegp._scaling import data_lengthscale
from sparsegp.classification._ivm_search import LENGTHSCALE_RANGE
from sparsegp.exceptions import ConvergenceWarning
from sparsegp.kernels import SquaredExponential


def _data_start(X, variance=1.0):
    """The default kernel's start (a data-scaled length-scale) at another variance."""
    return SquaredExponential(variance, float(data_lengthscale(X, False)[0]))


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), ytr, sc.transform(Xte), yte


def _fit_quiet(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, y)


def test_optimize_does_not_end_at_flat_probabilities(cancer):
    Xtr, ytr, Xte, yte = cancer
    clf = IVMClassifier(optimizer="lbfgs", random_state=0).fit(Xtr, ytr)
    ll = log_loss(yte, clf.predict_proba(Xte))
    assert ll < 0.3 < np.log(2)
    assert clf.lengthscale_[0] > 1.0         # not the l -> 0 limit (old fit: 0.34)


def test_defaults_match_a_sensible_reference(cancer):
    Xtr, ytr, Xte, yte = cancer
    ref = GFITCClassifier(random_state=0).fit(Xtr, ytr)    # converges on its rule, silently
    ref_ll = log_loss(yte, ref.predict_proba(Xte))
    clf = IVMClassifier(random_state=0).fit(Xtr, ytr)
    assert log_loss(yte, clf.predict_proba(Xte)) < ref_ll + 0.05


def test_start_is_scaled_to_the_data_and_explicit_start_is_kept(cancer):
    Xtr, ytr, _, _ = cancer
    D = Xtr.shape[1]
    np.testing.assert_allclose(data_lengthscale(Xtr, False), np.sqrt(D), rtol=1e-12)
    np.testing.assert_allclose(data_lengthscale(3.0 * Xtr, True), 3.0 * np.sqrt(D),
                               rtol=1e-12)
    clf = IVMClassifier(n_active=30, optimizer=None, random_state=0).fit(Xtr, ytr)
    assert clf.lengthscale_[0] == pytest.approx(np.sqrt(D)) and clf.variance_[0] == 1.0
    given = IVMClassifier(n_active=30, kernel=SquaredExponential(3.0, 2.5),
                          random_state=0).fit(Xtr, ytr)
    assert (given.lengthscale_.tolist(), given.variance_.tolist(), given.n_iter_.tolist()) \
        == ([2.5], [3.0], [0])


def test_guard_keeps_the_fit_away_from_the_degenerate_limits(cancer):
    Xtr, ytr, _, _ = cancer
    ls0 = np.sqrt(Xtr.shape[1])
    # the guard box is the default kernel's, around its data-scaled start (a start of one's
    # own comes with a kernel, whose own bounds box the search instead)
    clf = IVMClassifier(n_active=60, optimizer="lbfgs", max_iter=3,
                        random_state=0).fit(Xtr, ytr)
    lo, hi = LENGTHSCALE_RANGE
    assert lo * ls0 * (1 - 1e-9) <= clf.lengthscale_[0] <= hi * ls0 * (1 + 1e-9)
    assert clf.variance_[0] >= 1e-2 * (1 - 1e-9)
    p = clf.predict_proba(Xtr)[:, 1]
    assert np.ptp(p) > 0.5                    # not the flat p = 1/2 of the old fit


def test_validation_search_is_reproducible_and_informative(cancer):
    Xtr, ytr, Xte, yte = cancer
    kw = dict(n_active=40, optimizer="grid", random_state=3,
              validation_grid={"variance": [1.0, 10.0], "lengthscale": [0.5, 1.0, 2.0]})
    a = IVMClassifier(**kw).fit(Xtr, ytr)
    b = IVMClassifier(**kw).fit(Xtr, ytr)
    assert a.n_iter_.tolist() == [6]
    assert a.variance_ == b.variance_ and a.lengthscale_ == b.lengthscale_
    np.testing.assert_array_equal(a.active_set_, b.active_set_)
    assert log_loss(yte, a.predict_proba(Xte)) < 0.3


@pytest.mark.parametrize("kwargs, match", [
    (dict(optimizer="sometimes"), "optimizer"),
    (dict(validation_fraction=1.0), "validation_fraction"),
    (dict(validation_grid={"noise": [1.0]}), "validation_grid"),
    (dict(validation_grid={"variance": [-1.0]}), "validation_grid"),
    (dict(bias="learn"), "bias"),
])
def test_bad_model_selection_arguments(cancer, kwargs, match):
    Xtr, ytr, _, _ = cancer
    with pytest.raises(ValueError, match=match):
        IVMClassifier(n_active=10, **kwargs).fit(Xtr, ytr)


def test_bias_fit_is_finite_and_used(cancer):
    Xtr, ytr, Xte, yte = cancer
    clf = IVMClassifier(n_active=40, bias="fit", optimizer=None,
                        kernel=_data_start(Xtr, 10.0), random_state=0).fit(Xtr, ytr)
    assert np.isfinite(clf.bias_[0]) and clf.bias_[0] != 0.0
    assert log_loss(yte, clf.predict_proba(Xte)) < 0.3


def test_warning_when_no_better_than_class_frequencies():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (rng.random(120) < 0.3).astype(int)          # labels unrelated to X
    with pytest.warns(ConvergenceWarning, match="class frequencies"):
        # a vanishing signal variance: the collapse of the old defaults, flat probabilities
        IVMClassifier(n_active=10, kernel=_data_start(X, 1e-10), optimizer=None,
                      random_state=0).fit(X, y)
    # an informative fit stays silent
    X2 = rng.normal(size=(200, 2))
    y2 = (X2[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        IVMClassifier(n_active=30, random_state=0).fit(X2, y2)


def test_default_fit_is_reported_in_the_users_units():
    # issue 23 item 1: the default covariance is an isotropic kernel on standardised inputs,
    # so per-column units and offsets give the same fit; its one length-scale is reported
    # in standard deviations of each feature, the kernel in the user's units
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 3))
    y = (np.sin(2.0 * X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(80) > 0).astype(int)
    scales, offset = np.array([1e-3, 1.0, 1e3]), 1e6
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    kw = dict(n_active=30, optimizer="lbfgs", max_iter=2, random_state=0)
    std = IVMClassifier(**kw).fit(Xs, y)
    raw = IVMClassifier(**kw).fit(X * scales + offset, y)
    assert raw.lengthscale_.shape == (1,)
    np.testing.assert_allclose(raw.lengthscale_, std.lengthscale_, rtol=1e-6)
    np.testing.assert_allclose(raw.variance_, std.variance_, rtol=1e-6)
    np.testing.assert_allclose(raw.kernel_[0].lengthscale,
                               raw.lengthscale_[0] * scales * X.std(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(raw.active_set_, std.active_set_)
    # theta_ is in the reported units and round-trips, gradient included
    value, grad = raw.log_marginal_likelihood(raw.theta_, eval_gradient=True)
    assert value == pytest.approx(raw.log_marginal_likelihood_value_, rel=1e-10)
    np.testing.assert_allclose(grad, std.log_marginal_likelihood(std.theta_, True)[1],
                               rtol=1e-5, atol=1e-8)


def test_given_ard_kernel_is_reported_in_the_users_units():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((80, 2))
    y = (X[:, 0] - X[:, 1] + 0.3 * rng.standard_normal(80) > 0).astype(int)
    scales = np.array([1e-2, 1e2])
    kw = dict(n_active=25, optimizer="lbfgs", max_iter=2, random_state=0)
    a = IVMClassifier(kernel=SquaredExponential(1.0, [1.0, 1.0]), **kw).fit(X, y)
    b = IVMClassifier(kernel=SquaredExponential(1.0, scales), **kw).fit(X * scales, y)
    np.testing.assert_allclose(b.lengthscale_, a.lengthscale_ * scales, rtol=1e-6)
    np.testing.assert_allclose(b.kernel_[0].lengthscale, b.lengthscale_[0], rtol=1e-12)
    np.testing.assert_allclose(b.theta_[1:], np.log(b.lengthscale_[0]), rtol=1e-12)
    assert b.log_marginal_likelihood(b.theta_) == pytest.approx(
        b.log_marginal_likelihood_value_, rel=1e-10)
