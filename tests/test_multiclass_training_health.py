"""Multi-class training recovers from a degenerate start, and says so when it ends no better
than the class frequencies (issue: hyper-parameter learning from poor legal starts)."""

import numpy as np
import pytest
from sklearn.datasets import make_classification

import sparsegp
from sparsegp.exceptions import ConvergenceWarning
from sparsegp.kernels import SquaredExponential

ESTIMATORS = ["MultiClassEPClassifier", "MultiClassSVGPClassifier"]


def _many_features(n=600, seed=0):
    X, y = make_classification(n, n_features=30, n_informative=10, n_redundant=5, n_classes=3,
                               n_clusters_per_class=1, class_sep=2.0, random_state=seed)
    X = (X - X.mean(0)) / X.std(0)
    return X[: n // 2], y[: n // 2], X[n // 2:], y[n // 2:]


@pytest.mark.parametrize("init", ["random", "kmeans"])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_unit_lengthscales_in_many_dimensions_are_rescued(name, init):
    # standardised 30-D inputs: with l = 1 the kernel between typical points is exp(-30).
    # The check reads training rows, not the start's Z: k-means centres (the default) sit
    # nearer every row, about exp(-15), and a check of rows against them let EP end at 0.62
    # test error with no word
    X, y, Xt, yt = _many_features()
    kw = dict(n_inducing=10, max_iter=30, tol=None, random_state=0, init=init)
    with pytest.warns(ConvergenceWarning, match="vanish"):
        poor = getattr(sparsegp, name)(kernel=SquaredExponential(1.0, np.ones(X.shape[1])),
                                       **kw).fit(X, y)
    good = getattr(sparsegp, name)(**kw).fit(X, y)          # median heuristic
    err_poor = np.mean(poor.predict(Xt) != yt)
    err_good = np.mean(good.predict(Xt) != yt)
    assert err_poor <= err_good + 0.02
    assert err_poor < 0.5 * (1 - np.bincount(yt).max() / yt.size)   # far from chance


def test_a_sane_start_is_left_alone():
    X, y, _, _ = _many_features()
    held = SquaredExponential(1.0, np.full(X.shape[1], 8.0), "fixed", "fixed")
    est = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=10, max_iter=10, tol=None,
                                          kernel=held, latent_noise_variance_bounds="fixed",
                                          random_state=0).fit(X, y)
    np.testing.assert_allclose(est.lengthscale_, 8.0, rtol=1e-12)   # exp(log 8) round trip


@pytest.mark.parametrize("hold", ["optimizer", "bounds"])
def test_held_lengthscales_are_never_rescued(hold):
    # the rescue is for a start that gradient ascent cannot leave; length-scales the fit will
    # not move are the model asked for (e.g. a fitted kernel_ given back with optimizer=None),
    # so a vanishing kernel is kept and said to be, not silently replaced
    X, y, _, _ = _many_features()
    ls = np.ones(X.shape[1])
    if hold == "optimizer":
        kw = dict(kernel=SquaredExponential(1.0, ls), optimizer=None)
    else:
        kw = dict(kernel=SquaredExponential(1.0, ls, "fixed", "fixed"),
                  latent_noise_variance_bounds="fixed")
    # inducing inputs at training rows, where unit length-scales in 30-D vanish (see above)
    est = sparsegp.MultiClassEPClassifier(n_inducing=10, max_iter=5, tol=None, random_state=0,
                                          init="random", **kw)
    with pytest.warns(ConvergenceWarning, match="it is held"):
        est.fit(X, y)
    np.testing.assert_allclose(est.lengthscale_, 1.0, rtol=1e-12)


def test_a_fitted_kernel_given_back_with_optimizer_none_keeps_the_fit():
    X, y, _, _ = _many_features()
    fit = sparsegp.MultiClassEPClassifier(n_inducing=10, max_iter=40, tol=None, random_state=0).fit(X, y)
    again = sparsegp.MultiClassEPClassifier(
        inducing_points=fit.inducing_points_, kernel=fit.kernel_, latent_noise_variance=fit.noise_,
        optimizer=None, max_iter=40, tol=None, random_state=0).fit(X, y)
    np.testing.assert_allclose(again.lengthscale_, fit.lengthscale_, rtol=1e-12)
    np.testing.assert_allclose(again.variance_, fit.variance_, rtol=1e-12)


def test_training_no_better_than_the_class_frequencies_warns():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 2))
    y = rng.permutation(np.repeat([0, 1, 2], [110, 25, 15]))   # labels carry no signal
    est = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=5, max_iter=10, tol=None,
                                          latent_noise_variance=1e3, optimizer=None, random_state=0)
    with pytest.warns(ConvergenceWarning, match="no better than always predicting") as rec:
        est.fit(X, y)
    message = str([w for w in rec if "no better" in str(w.message)][0].message)
    # five inducing points a class: more of them is the first thing to try
    assert message.split("; try ")[1].startswith("more inducing points (n_inducing; 5 a class")
    assert "learning_rate" in message                  # a parameter of this estimator


def test_the_advice_names_only_the_estimators_own_parameters():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 2))
    y = rng.permutation(np.repeat([0, 1, 2], [110, 25, 15]))
    # held kernel and noise (with optimizer=None a fit runs no iterations and is not judged)
    est = sparsegp.MultiClassGFITCClassifier(
        n_inducing=10, max_iter=10, tol=None,
        kernel=SquaredExponential(1.0, 1.0, "fixed", "fixed"),
        latent_noise_variance=1e3, latent_noise_variance_bounds="fixed", random_state=0)
    with pytest.warns(ConvergenceWarning, match="no better than always predicting") as rec:
        est.fit(X, y)
    message = str([w for w in rec if "no better" in str(w.message)][0].message)
    assert "learning_rate" not in message              # GFITC has none
    assert message.endswith("more inducing points (n_inducing; 10 a class now)")
