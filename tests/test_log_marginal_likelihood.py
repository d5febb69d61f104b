"""``log_marginal_likelihood(theta=None, eval_gradient=False)`` on all eight estimators, fitted
state only after a fit that succeeded, and IVM attribute types (issue 22, item 5).

The contract (:class:`sparsegp._base.LogMarginalLikelihoodMixin`): ``theta`` in the layout of
``theta_``; at ``theta_`` the value is ``log_marginal_likelihood_value_``; the gradient is that
of the method itself. It is checked by central differences with step ``STEP`` = 1e-5 in log
space, whose truncation error (~STEP^2 |f'''|) and rounding error (~1e-16 |f| / STEP) are both
below 1e-8 on these problems, against ``RTOL`` = 1e-5, ``ATOL`` = 1e-6; EP is run to 1e-10 where
it is re-run, so that its stopping error stays below that too. The gradients are checked away
from the fitted point (``theta_`` + ``OFFSET``), where they are O(1) rather than near zero,
and ``test_the_check_rejects_the_ep_inner_gradient`` shows the tolerance rejects a gradient
that misses one term (the multi-class EP's training gradient, 1e-2 off).
"""
import contextlib
import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process import kernels as sk_kernels

import sparsegp
from sparsegp.classification import _ep, _stagewise
from sparsegp.classification.multiclass import engine as mc_engine
from sparsegp.datasets import make_gp_classes, make_regression_1d, make_xor
from sparsegp.kernels import ConstantKernel, Matern, SquaredExponential

STEP = 1e-5
RTOL, ATOL = 1e-5, 1e-6
OFFSET = 0.2

# name -> (constructor kwargs, problem kind); small problems, EP converged tightly
CONFIGS = {
    "EPClassifier": (dict(max_iter=3, ep_tol=1e-10), "binary"),
    "GFITCClassifier": (dict(n_inducing=5, max_iter=3, ep_tol=1e-10, ep_schedule="sequential"),
                        "binary"),
    "GFITCClassifier-ard-parallel": (dict(n_inducing=5, max_iter=3, ep_tol=1e-10,
                                          kernel=SquaredExponential(1.0, np.ones(2))),
                                     "binary"),
    "IVMClassifier": (dict(n_active=12, optimizer="lbfgs", max_iter=2), "binary"),
    # v_b learnt (the kernel's constant summand is not fixed): theta_ ends in log v_b
    "IVMClassifier-bias-variance": (dict(n_active=12, optimizer="lbfgs", max_iter=2,
                                         kernel=SquaredExponential(1.0, 1.0)
                                         + ConstantKernel(0.5)), "binary"),
    "IVMClassifier-3-classes": (dict(n_active=12, optimizer="lbfgs", max_iter=1,
                                     kernel=SquaredExponential(1.0, np.ones(2))),
                                "multiclass"),
    "StagewiseGPClassifier": (dict(d_max=8, max_iter=2), "binary"),
    "MultiClassEPClassifier": (dict(n_inducing=4, max_iter=5), "multiclass"),
    "MultiClassEPClassifier-sep": (dict(method="sep", n_inducing=4, max_iter=5), "multiclass"),
    "MultiClassEPClassifier-minibatch": (dict(n_inducing=4, max_iter=2, batch_size=20),
                                         "multiclass"),
    "MultiClassGFITCClassifier": (dict(n_inducing=4, max_iter=2, ep_tol=1e-10,
                                       ep_schedule="sequential"), "multiclass"),
    "MultiClassGFITCClassifier-matern": (dict(n_inducing=4, max_iter=2, ep_tol=1e-10,
                                              ep_schedule="sequential",
                                              kernel=Matern(1.0, 0.8, nu=1.5)), "multiclass"),
    "MultiClassSVGPClassifier": (dict(n_inducing=4, max_iter=3), "multiclass"),
    "MultiClassSVGPClassifier-minibatch": (dict(n_inducing=4, max_iter=2, batch_size=20),
                                           "multiclass"),
    "SparseGPRegressor": (dict(n_inducing=6, max_iter=5), "regression"),
    "SparseGPRegressor-vfe-ard": (dict(approximation="vfe", n_inducing=6, max_iter=5,
                                       kernel=SquaredExponential(1.0, np.array([1.0, 2.0]))),
                                  "regression"),
}
# a constant times a kernel in every estimator (issue 48), in its three spellings: it is the
# stationary kernel with variance c s2 whose free scale is the constant's (_kernel_objects._scale)
_PRODUCTS = (lambda: ConstantKernel(1.5, (1e-2, 1e2)) * Matern(1.0, 0.8, nu=1.5),
             lambda: 2.0 * SquaredExponential(1.0, 0.9),
             lambda: (sk_kernels.ConstantKernel(1.5, (1e-2, 1e2))
                      * sk_kernels.RBF(0.8, (1e-2, 1e2))))
for _i, _key in enumerate(("EPClassifier", "GFITCClassifier", "IVMClassifier",
                           "StagewiseGPClassifier", "MultiClassEPClassifier",
                           "MultiClassGFITCClassifier", "MultiClassSVGPClassifier",
                           "SparseGPRegressor")):
    _kwargs, _kind = CONFIGS[_key]
    CONFIGS[f"{_key}-constant-product-{_i % 3}"] = (dict(_kwargs, kernel=_PRODUCTS[_i % 3]()),
                                                    _kind)
# a stationary kernel plus a constant (issue 48), the bias variance v_b added to every
# covariance entry (kernels.split_bias_variance): free (theta_ holds log v_b), fixed, and
# scikit-learn's spelling; the estimators that take one (the IVM's is configured above)
_SUMS = (lambda: Matern(1.0, 0.8, nu=1.5) + ConstantKernel(0.5, (1e-3, 1e3)),
         lambda: ConstantKernel(0.3, "fixed") + SquaredExponential(1.0, np.ones(2)),
         lambda: (sk_kernels.ConstantKernel(1.5, (1e-2, 1e2)) * sk_kernels.RBF(0.8, (1e-2, 1e2))
                  + sk_kernels.ConstantKernel(0.4, (1e-2, 1e2))))
for _key in ("EPClassifier", "GFITCClassifier", "GFITCClassifier-ard-parallel",
             "StagewiseGPClassifier"):
    _kwargs, _kind = CONFIGS[_key]
    for _i, _sum in enumerate(_SUMS):
        CONFIGS[f"{_key}-constant-sum-{_i}"] = (dict(_kwargs, kernel=_sum()), _kind)
# the regressor with a constant summand, in an approximation of each kind (every one is checked
# in tests/test_regression_constant_sum.py)
for _key, _method in (("SparseGPRegressor", "fitc"), ("SparseGPRegressor-vfe-ard", "vfe"),
                      ("SparseGPRegressor", "pitc"), ("SparseGPRegressor", "exact")):
    _kwargs, _kind = CONFIGS[_key]
    for _i, _sum in enumerate(_SUMS):
        CONFIGS[f"SparseGPRegressor-{_method}-constant-sum-{_i}"] = (
            dict(_kwargs, approximation=_method, kernel=_sum()), _kind)
ESTIMATORS = sorted(n for n in sparsegp.__all__ if n[0].isupper())


def _data(kind):
    """Small problems in units far from the model's (scaled and offset)."""
    if kind == "binary":
        X, y = make_xor(50, random_state=0)
    elif kind == "multiclass":
        X, y = make_gp_classes(45, n_classes=3, random_state=0)
    else:
        X, y = make_regression_1d(40, random_state=0)
        X = np.column_stack([X[:, 0], np.random.default_rng(0).normal(size=40)])
        y = 3.0 * y + 10.0
    return X * np.array([2.0, 0.5]) + 5.0, y


def _fitted(key):
    kwargs, kind = CONFIGS[key]
    est = getattr(sparsegp, key.split("-")[0])(random_state=0, **kwargs)
    X, y = _data(kind)
    with _quiet():
        return est.fit(X, y)


@contextlib.contextmanager
def _quiet():
    """The small fits stop at max_iter: their ConvergenceWarnings are not the subject here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _central_differences(f, theta):
    out = np.empty(theta.size)
    for i in range(theta.size):
        e = np.zeros(theta.size)
        e[i] = STEP
        out[i] = (f(theta + e) - f(theta - e)) / (2.0 * STEP)
    return out


def test_every_estimator_is_covered():
    assert {key.split("-")[0] for key in CONFIGS} == set(ESTIMATORS)


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_value_at_theta_and_gradient(key):
    est = _fitted(key)
    theta = est.theta_
    assert theta.ndim == 1 and theta.dtype == np.float64
    # at the fitted point: the value the fit reports (EP re-run from converged sites)
    value = est.log_marginal_likelihood(theta)
    np.testing.assert_allclose(value, est.log_marginal_likelihood_value_, rtol=1e-9, atol=1e-9)
    assert est.log_marginal_likelihood() == est.log_marginal_likelihood_value_
    # theta=None with the gradient: the fitted value and the gradient there
    v0, g0 = est.log_marginal_likelihood(None, eval_gradient=True)
    _, g_fit = est.log_marginal_likelihood(theta, eval_gradient=True)
    assert v0 == est.log_marginal_likelihood_value_
    np.testing.assert_allclose(g0, g_fit, rtol=1e-6, atol=1e-8)
    # away from the fit: the gradient is that of the method itself
    at = theta + OFFSET * np.where(np.arange(theta.size) % 2, -1.0, 1.0)
    v, g = est.log_marginal_likelihood(at, eval_gradient=True)
    assert v == pytest.approx(est.log_marginal_likelihood(at), rel=1e-12, abs=1e-12)
    assert g.shape == theta.shape
    fd = _central_differences(est.log_marginal_likelihood, at)
    np.testing.assert_allclose(g, fd, rtol=RTOL, atol=ATOL)


def test_the_check_rejects_the_ep_inner_gradient():
    # the multi-class EP's training gradient holds the cavities fixed and so leaves out the
    # factors' moment mismatch: exact only at an EP fixed point. The check above must see it.
    est = _fitted("MultiClassEPClassifier")
    X, y = est._lml_rows
    nik, jitter = est._nik
    hyp = est._hyp
    _, engine, _ = mc_engine.batch_evidence(X, y, hyp, est._ep_state.copy(), nik, jitter)
    exact = mc_engine.fixed_site_evidence(X, y, hyp, est._ep_state, nik, jitter)[1]
    fd = _central_differences(est.log_marginal_likelihood, est.theta_)
    C, _, D = hyp.Z.shape
    np.testing.assert_allclose(est._theta_gradient(exact, C, D), fd, rtol=RTOL, atol=ATOL)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(est._theta_gradient(engine, C, D), fd, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_wrong_size_not_fitted_and_pickled(name):
    key = next(k for k in sorted(CONFIGS) if k.split("-")[0] == name)
    kwargs, _ = CONFIGS[key]
    with pytest.raises(NotFittedError):
        getattr(sparsegp, name)(**kwargs).log_marginal_likelihood()
    est = _fitted(key)
    n = est.theta_.size
    for bad in (np.zeros(n + 1), np.zeros(n - 1), np.full(n, np.nan)):
        with pytest.raises(ValueError, match=f"theta must hold {n} finite values"):
            est.log_marginal_likelihood(bad)
    # what the method keeps from the fit pickles, and gives the same values after
    at = est.theta_ + 0.1
    copy = pickle.loads(pickle.dumps(est))
    assert copy.log_marginal_likelihood(at) == est.log_marginal_likelihood(at)


def test_theta_is_in_the_users_units():
    # GFITC fits on scaled inputs: theta_ holds the user's length-scales, and the evidence
    # at a theta does not depend on the units of X
    X, y = make_xor(50, random_state=1)
    # ARD starts in each fit's own units (ten times larger for 10 X), i.e. one model-unit start
    a = sparsegp.GFITCClassifier(n_inducing=5, max_iter=2, ep_tol=1e-10,
                                 kernel=SquaredExponential(1.0, np.ones(2)), random_state=0)
    b = sparsegp.GFITCClassifier(n_inducing=5, max_iter=2, ep_tol=1e-10,
                                 kernel=SquaredExponential(1.0, np.full(2, 10.0)),
                                 random_state=0)
    with _quiet():
        a.fit(X, y)
        b.fit(10.0 * X - 3.0, y)
    np.testing.assert_allclose(a.theta_[1:3], np.log(a.lengthscale_))
    np.testing.assert_allclose(b.theta_[1:3] - a.theta_[1:3], np.log(10.0), atol=1e-6)
    shift = np.zeros(a.theta_.size)
    shift[1:3] = np.log(10.0)
    np.testing.assert_allclose(b.log_marginal_likelihood(a.theta_ + shift),
                               a.log_marginal_likelihood(a.theta_), rtol=1e-8)


# --------------------------------------------------------------------------------------------
# fitted state only after a fit that succeeded


def _failing_fits(monkeypatch):
    """name -> (estimator, X, y) whose fit raises after it has set fitted attributes."""
    Xb, yb = make_xor(30, random_state=0)
    Xm, ym = make_gp_classes(30, n_classes=3, random_state=0)
    Xr, yr = make_regression_1d(30, random_state=0)

    def boom(*args, **kwargs):
        raise RuntimeError("failure late in fit")

    def callback(est, it):
        raise RuntimeError("a callback that raises")

    # EP: a failure after EP ran (classes_ and n_features_in_ are set by then)
    monkeypatch.setattr(_ep, "_gradients", boom)
    # stagewise: a failure after the attributes of the kept model are set
    monkeypatch.setattr(_stagewise, "_predictor", boom)
    return {
        "EPClassifier": (sparsegp.EPClassifier(optimizer=None), Xb, yb),
        # classes_ is set before the check of n_inducing against the rows
        "GFITCClassifier": (sparsegp.GFITCClassifier(n_inducing=100), Xb, yb),
        # too few rows left for the validation search, found after classes_ is set
        "IVMClassifier": (sparsegp.IVMClassifier(n_active=5, validation_fraction=0.97), Xb, yb),
        "StagewiseGPClassifier": (sparsegp.StagewiseGPClassifier(d_max=5, max_iter=1),
                                  Xb, yb),
        "MultiClassEPClassifier": (sparsegp.MultiClassEPClassifier(
            n_inducing=3, max_iter=2, tol=None, callback=callback), Xm, ym),
        "MultiClassGFITCClassifier": (sparsegp.MultiClassGFITCClassifier(
            n_inducing=3, max_iter=2, tol=None, callback=callback), Xm, ym),
        "MultiClassSVGPClassifier": (sparsegp.MultiClassSVGPClassifier(
            n_inducing=3, max_iter=2, callback=callback), Xm, ym),
        # "sod" refuses inducing_points only after X_train_ is set
        "SparseGPRegressor": (sparsegp.SparseGPRegressor(
            "sod", inducing_points=Xr[:3]), Xr, yr),
    }


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_failed_fit_leaves_no_fitted_state(name, monkeypatch):
    est, X, y = _failing_fits(monkeypatch)[name]
    before = dict(vars(est))
    with _quiet(), pytest.raises((ValueError, RuntimeError)):
        est.fit(X, y)
    assert vars(est).keys() == before.keys()
    assert not [k for k in vars(est) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        est.log_marginal_likelihood()


def test_a_failed_refit_keeps_the_previous_fit():
    X, y = make_xor(40, random_state=0)
    est = sparsegp.GFITCClassifier(n_inducing=5, max_iter=2, random_state=0)
    with _quiet():
        est.fit(X, y)
    state = dict(vars(est))
    proba = est.predict_proba(X)
    est.set_params(n_inducing=100)
    X3 = np.column_stack([X, X[:, 0]])
    with pytest.raises(ValueError, match="n_inducing"):
        est.fit(X3, y)
    # every attribute is the previous fit's (the parameter set_params changed excepted)
    assert {k: v for k, v in vars(est).items() if k != "n_inducing"} \
        == {k: v for k, v in state.items() if k != "n_inducing"}
    assert est.n_features_in_ == 2
    np.testing.assert_array_equal(est.predict_proba(X), proba)


# --------------------------------------------------------------------------------------------
# IVM: attribute types do not depend on the number of classes

IVM_ATTRIBUTES = ("active_set_", "site_precision_", "site_mean_", "log_evidence_",
                  "lengthscale_", "variance_", "kernel_", "bias_", "n_iter_", "theta_")


@pytest.mark.parametrize("ard", [False, True])
def test_ivm_attribute_types_do_not_depend_on_the_classes(ard):
    Xb, yb = make_xor(40, random_state=0)
    Xm, ym = make_gp_classes(45, n_classes=3, random_state=0)
    with _quiet():
        kernel = SquaredExponential(1.0, np.ones(2)) if ard else None
        two = sparsegp.IVMClassifier(n_active=8, kernel=kernel, random_state=0).fit(Xb, yb)
        three = sparsegp.IVMClassifier(n_active=8, kernel=kernel, random_state=0).fit(Xm, ym)
    for name in IVM_ATTRIBUTES:
        a, b = getattr(two, name), getattr(three, name)
        assert type(a) is type(b), name
        if isinstance(a, np.ndarray):
            assert a.ndim == b.ndim and a.dtype == b.dtype, name
    # a leading task axis: one task for two classes, one per class otherwise
    for est, n_tasks in ((two, 1), (three, 3)):
        assert est.active_set_.shape == (n_tasks, 8)
        assert est.site_precision_.shape == est.site_mean_.shape == (n_tasks, 8)
        for name in ("log_evidence_", "variance_", "bias_", "n_iter_"):
            assert getattr(est, name).shape == (n_tasks,), name
        assert est.lengthscale_.shape == ((n_tasks, 2) if ard else (n_tasks,))
        assert len(est.kernel_) == n_tasks
        assert est.theta_.size == n_tasks * (3 if ard else 2)
        assert est.log_marginal_likelihood_value_ == pytest.approx(est.log_evidence_.sum())
