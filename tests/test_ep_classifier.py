"""EPClassifier (dense EP) against the textbook reference, finite differences and the API rules."""
import warnings

import numpy as np
import pytest

from conftest import readonly, require_data
from reference.dense_ep import dense_ep, dense_ep_predict, se_kernel_dense
from sklearn.base import clone
from sparsegp.classification import EPClassifier
from sparsegp._optimize import maximize
from sparsegp.classification._binary import pack_theta, unpack_theta
from sparsegp.exceptions import ConvergenceWarning
from sparsegp.kernels import SquaredExponential


def _data(n=40, d=2, seed=0, labels=("neg", "pos")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = np.sin(1.5 * X[:, 0]) + 0.5 * X[:, -1] + 0.3 * rng.normal(size=n)
    y = np.where(score > 0, labels[1], labels[0])
    return X, y


def _se(variance=1.0, lengthscale=1.0, ard=False):
    """The SE kernel of a case's numbers (an array of length-scales with ``ard``)."""
    ls = np.asarray(lengthscale, dtype=float) if ard else float(lengthscale)
    return SquaredExponential(variance, ls)


def _fixed(lengthscale=None, variance=None, ard=False, **kw):
    """EP at fixed hyper-parameters: the SE kernel of the numbers given, else the default."""
    params = dict(optimizer=None, ep_tol=1e-10, random_state=0)
    if lengthscale is not None or variance is not None:
        params["kernel"] = _se(1.0 if variance is None else variance,
                               1.0 if lengthscale is None else lengthscale, ard)
    params.update(kw)
    return EPClassifier(**params)


CASES = [
    dict(lengthscale=0.8, variance=2.0, bias=0.3, ard=False),
    dict(lengthscale=[0.6, 1.7], variance=1.3, bias=-0.5, ard=True),
    dict(lengthscale=1.1, variance=4.0, bias=0.0, ard=False, jitter=0.0),
]


@pytest.mark.parametrize("case", CASES)
def test_matches_dense_reference(case):
    X, y = _data(45)
    est = _fixed(**case).fit(X, y)
    y_pm = np.where(y == est.classes_[1], 1.0, -1.0)
    jitter = case.get("jitter", 1e-6)
    K = se_kernel_dense(X, X, case["variance"], case["lengthscale"])
    K += jitter * case["variance"] * np.eye(len(X))
    ref = dense_ep(K, y_pm, bias=case["bias"], tol=1e-12)
    assert ref.converged and est.converged_
    np.testing.assert_allclose(est.site_precision_, ref.tau, rtol=1e-8)
    np.testing.assert_allclose(est.site_nu_, ref.nu, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(est.site_mean_, ref.nu / ref.tau, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(est.posterior_mean_, ref.mean, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(est.posterior_var_, ref.var, rtol=1e-8)
    assert est.log_evidence_ == pytest.approx(ref.log_evidence, rel=1e-8)

    Xs = np.random.default_rng(1).normal(size=(30, 2)) * 1.5
    mean, var = est.predict_latent(Xs)
    m_ref, v_ref, p_ref = dense_ep_predict(
        ref, se_kernel_dense(X, Xs, case["variance"], case["lengthscale"]),
        np.full(len(Xs), case["variance"]))
    np.testing.assert_allclose(mean, m_ref, rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(var, v_ref, rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(est.predict_proba(Xs)[:, 1], p_ref, rtol=1e-8, atol=1e-12)


def _fd_check(est_kw, X, y, h=1e-5, rtol=1e-5):
    est = _fixed(**est_kw).fit(X, y)
    g = est.log_evidence_gradient_

    def logz(**change):
        return _fixed(**{**est_kw, **change}).fit(X, y).log_evidence_

    s2, b = est_kw["variance"], est_kw["bias"]
    fd = (logz(variance=s2 + h) - logz(variance=s2 - h)) / (2 * h)
    assert g["variance"] == pytest.approx(fd, rel=rtol)
    fd = (logz(bias=b + h) - logz(bias=b - h)) / (2 * h)
    assert g["bias"] == pytest.approx(fd, rel=rtol)
    ls = np.asarray(est_kw["lengthscale"], dtype=float)
    if est_kw["ard"]:
        assert g["lengthscale"].shape == ls.shape
        for j in range(ls.size):
            e = np.zeros_like(ls)
            e[j] = h
            fd = (logz(lengthscale=ls + e) - logz(lengthscale=ls - e)) / (2 * h)
            assert g["lengthscale"][j] == pytest.approx(fd, rel=rtol)
    else:
        assert isinstance(g["lengthscale"], float)
        fd = (logz(lengthscale=float(ls) + h) - logz(lengthscale=float(ls) - h)) / (2 * h)
        assert g["lengthscale"] == pytest.approx(fd, rel=rtol)


@pytest.mark.parametrize("case", CASES[:2])
def test_gradient_vs_finite_differences(case):
    X, y = _data(30, seed=2)
    _fd_check(case, X, y)


def test_gradient_ard_three_dims():
    X, y = _data(25, d=3, seed=3)
    _fd_check(dict(lengthscale=[0.7, 1.4, 2.5], variance=0.8, bias=0.4, ard=True), X, y)


def test_log_marginal_likelihood_theta_interface():
    X, y = _data(30, seed=4)
    est = _fixed(lengthscale=[0.9, 1.2], variance=1.5, bias=0.2, ard=True).fit(X, y)
    assert est.log_marginal_likelihood() == est.log_evidence_
    lz, grad = est.log_marginal_likelihood(est.theta_, eval_gradient=True)
    assert lz == pytest.approx(est.log_evidence_, rel=1e-9)
    _, grad0 = est.log_marginal_likelihood(eval_gradient=True)
    np.testing.assert_allclose(grad, grad0, rtol=1e-7, atol=1e-10)
    h = 1e-5
    for k in range(est.theta_.size):
        e = np.zeros_like(est.theta_)
        e[k] = h
        fd = (est.log_marginal_likelihood(est.theta_ + e)
              - est.log_marginal_likelihood(est.theta_ - e)) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-8)


def test_optimisation_improves_evidence_and_zeroes_gradient():
    X, y = _data(30, seed=5)
    start = _fixed(lengthscale=1.0, variance=1.0, bias=0.0).fit(X, y).log_evidence_
    for optimizer in ("cg", "lbfgs"):
        # tol=0: no gain-based stop, so the search runs to scipy's own stationarity test
        est = EPClassifier(optimizer=optimizer, max_iter=40, tol=0.0, random_state=0).fit(X, y)
        assert est.log_evidence_ > start
        g = est.log_evidence_gradient_
        # near a stationary point of the evidence (log-space gradient small)
        assert abs(g["variance"] * est.variance_) < 1e-2
        assert abs(g["lengthscale"] * est.lengthscale_) < 1e-2
        assert abs(g["bias"]) < 1e-2
        assert est.n_iter_ > 0


def test_restarts_keep_best_and_reproducible():
    X, y = _data(20, seed=6)
    kw = dict(max_iter=3, n_restarts=2, random_state=11)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        a = EPClassifier(**kw).fit(X, y)
        b = EPClassifier(**kw).fit(X, y)
    assert a.log_evidence_ == b.log_evidence_
    np.testing.assert_array_equal(a.site_precision_, b.site_precision_)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        single = EPClassifier(max_iter=3, random_state=11).fit(X, y)
    assert a.log_evidence_ >= single.log_evidence_ - 1e-6


def test_labels_probabilities_and_predict():
    X, y = _data(40, seed=7, labels=(3, 7))
    est = _fixed(lengthscale=0.9, variance=2.0, bias=0.1).fit(X, y)
    np.testing.assert_array_equal(est.classes_, [3, 7])
    Xs = np.random.default_rng(8).normal(size=(25, 2)) * 3
    P = est.predict_proba(Xs)
    assert P.shape == (25, 2)
    assert np.all((P >= 0) & (P <= 1))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(est.predict(Xs), est.classes_[np.argmax(P, axis=1)])
    d = est.decision_function(Xs)
    np.testing.assert_array_equal(d > 0, P[:, 1] > 0.5)
    # training accuracy on this smooth problem is far above chance
    assert np.mean(est.predict(X) == y) > 0.8


def test_label_flip_negates_latent():
    X, y = _data(30, seed=9)
    a = _fixed(lengthscale=0.9, variance=2.0, bias=0.4).fit(X, y)
    flipped = np.where(y == "pos", "a_neg", "b_pos")  # classes_ order is now reversed
    b = _fixed(lengthscale=0.9, variance=2.0, bias=-0.4).fit(X, flipped)
    assert b.log_evidence_ == pytest.approx(a.log_evidence_, rel=1e-9)
    np.testing.assert_allclose(b.posterior_mean_, -a.posterior_mean_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(b.posterior_var_, a.posterior_var_, rtol=1e-7)


def test_attributes_shapes():
    X, y = _data(20, d=3, seed=10)
    est = _fixed(lengthscale=[1.0, 2.0, 3.0], ard=True).fit(X, y)
    assert est.lengthscale_.shape == (3,)
    assert est.log_evidence_gradient_["lengthscale"].shape == (3,)
    assert set(est.log_evidence_gradient_) == {"variance", "lengthscale", "bias"}
    assert est.n_features_in_ == 3 and est.n_sweeps_ >= 1
    assert est.site_precision_.shape == est.site_mean_.shape == (20,)
    assert np.all(est.site_precision_ > 0)
    iso = _fixed().fit(X, y)
    assert isinstance(iso.lengthscale_, float) and isinstance(iso.variance_, float)


def test_readonly_inputs_untouched():
    X, y = _data(25, seed=11)
    X0, y0 = X.copy(), y.copy()
    readonly(X, y)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        est = EPClassifier(max_iter=2, random_state=0).fit(X, y)
    Xs = readonly(X[:5].copy())
    est.predict_proba(Xs)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_params_round_trip_and_clone():
    est = EPClassifier(kernel=SquaredExponential(1.0, 2.0), ep_damping=0.7, optimizer="lbfgs")
    params = est.get_params()
    assert params["ep_damping"] == 0.7 and params["ep_max_sweeps"] == 200
    assert params["kernel__lengthscale"] == 2.0
    other = EPClassifier().set_params(**params)
    assert other.get_params() == params
    assert clone(est).get_params() == params
    with pytest.raises(ValueError, match="(?i)invalid parameter"):
        est.set_params(n_inducing=3)


@pytest.mark.parametrize("kw, X_change, y_change, match", [
    ({}, None, "one", "at least 2 classes"),
    ({}, None, "three", "exactly 2 classes"),
    ({}, "nan", None, "NaN"),
    ({}, "inf", None, "NaN or infinite"),
    ({}, "short", None, "different lengths"),
    ({"kernel": _se(0.0)}, None, None, "variance"),
    ({"kernel": _se(-1.0)}, None, None, "variance"),
    ({"kernel": _se(1.0, -0.5)}, None, None, "lengthscale"),
    ({"kernel": _se(1.0, [1.0, 0.0], ard=True)}, None, None, "lengthscale"),
    ({"kernel": _se(1.0, [1.0, 2.0, 3.0], ard=True)}, None, None, "3 length-scales"),
    ({"optimizer": "bfgs"}, None, None, "optimizer"),
    ({"ep_damping": 0.0}, None, None, "ep_damping"),
    ({"ep_damping": 1.5}, None, None, "ep_damping"),
    ({"ep_tol": 0}, None, None, "ep_tol"),
    ({"ep_max_sweeps": 0}, None, None, "ep_max_sweeps"),
    ({"max_iter": -1}, None, None, "max_iter"),
    ({"n_restarts": 1.5}, None, None, "n_restarts"),
    ({"jitter": -1e-6}, None, None, "jitter"),
    ({"bias": np.nan}, None, None, "bias"),
])
def test_bad_input_raises(kw, X_change, y_change, match):
    X, y = _data(20, seed=12)
    if X_change == "nan":
        X[3, 1] = np.nan
    elif X_change == "inf":
        X[0, 0] = np.inf
    elif X_change == "short":
        X = X[:-1]
    if y_change == "one":
        y = np.full(len(y), "pos")
    elif y_change == "three":
        y = y.copy().astype(object)
        y[0] = "other"
    with pytest.raises(ValueError, match=match):
        EPClassifier(**kw).fit(X, y)


@pytest.mark.parametrize("old", ["lengthscale", "variance", "ard", "optimize", "max_sweeps",
                                 "damping"])
def test_old_argument_names_are_refused(old):
    with pytest.raises(TypeError, match=old):
        EPClassifier(**{old: 1.0})


def test_predict_checks():
    X, y = _data(20, seed=13)
    with pytest.raises(ValueError, match="not fitted"):
        EPClassifier().predict(X)
    est = _fixed().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :1])


def test_convergence_warning():
    X, y = _data(30, seed=14)
    with pytest.warns(ConvergenceWarning, match="ep_max_sweeps"):
        _fixed(ep_max_sweeps=1).fit(X, y)


def test_damping_reaches_same_fixed_point():
    X, y = _data(30, seed=15)
    a = _fixed(lengthscale=0.7, variance=3.0, bias=0.2).fit(X, y)
    b = _fixed(lengthscale=0.7, variance=3.0, bias=0.2, ep_damping=0.5).fit(X, y)
    assert b.n_sweeps_ > a.n_sweeps_
    np.testing.assert_allclose(a.site_precision_, b.site_precision_, rtol=1e-8)
    assert a.log_evidence_ == pytest.approx(b.log_evidence_, rel=1e-10)


def test_theta_packing_round_trip():
    for ard, ls in ((True, np.array([0.5, 2.0, 3.0])), (False, np.full(3, 0.7))):
        theta = pack_theta(1.7, ls, -0.3, ard, extra=np.arange(4.0))
        s2, ls2, b, extra = unpack_theta(theta, 3, ard)
        assert s2 == pytest.approx(1.7) and b == -0.3
        np.testing.assert_allclose(ls2, ls)
        np.testing.assert_array_equal(extra, np.arange(4.0))


def test_driver_treats_failures_as_minus_inf():
    centre = np.array([3.0, -1.0, 0.5])

    def evaluate(theta, state):
        if theta[0] > 2.5:
            raise np.linalg.LinAlgError("not positive definite")
        d = theta - centre
        return -np.sum(d**4), -4 * d**3, (state or 0) + 1

    for optimizer in ("cg", "lbfgs"):
        res = maximize(evaluate, np.zeros(3), method=optimizer, max_iter=30, n_restarts=1,
                       random_state=np.random.default_rng(0), warm=True, warn_at_cap=False)
        assert np.isfinite(res.value) and res.theta[0] <= 2.5
        assert res.value == max(res.start_values)
        assert res.state >= 2  # warm state threaded through the evaluations

    def always_fails(theta, state):
        raise np.linalg.LinAlgError("no")

    res = maximize(always_fails, np.zeros(3), method="cg", max_iter=5, warm=True)
    assert res.value == -np.inf


@pytest.mark.slow
@pytest.mark.data
def test_ripley_synth_error():
    require_data("synth")
    from sparsegp.datasets import load_dataset
    from sparsegp.metrics import error_rate, mean_nlp

    X, y, Xt, yt = load_dataset("synth")
    est = EPClassifier(max_iter=20, random_state=0).fit(X, y)
    err = error_rate(yt, est.predict(Xt))
    nlp = mean_nlp(yt, est.predict_proba(Xt), classes=est.classes_)
    print(f"synth EPClassifier: error {err:.4f}, NLP {nlp:.4f}, log Z {est.log_evidence_:.3f}, "
          f"s2 {est.variance_:.3f}, l {est.lengthscale_:.3f}, b {est.bias_:.3f}")
    # seed 000 Table 1, GPC column: 0.097 / 0.227
    assert err <= 0.10
    assert nlp <= 0.24


@pytest.mark.parametrize("damping", [1.0, 0.6])
def test_sweep_rank_one_updates_match_recomputation(damping):
    from sparsegp._numba.ep_dense import ep_dense_sweep
    from sparsegp.classification._ep import _refresh

    X, y = _data(35, seed=16)
    y_pm = np.where(y == "pos", 1.0, -1.0)
    K = se_kernel_dense(X, X, 2.5, 0.8) + 1e-6 * np.eye(35)
    tau, nu = np.zeros(35), np.zeros(35)
    Sigma, mu = K.copy(), np.zeros(35)
    order = np.random.default_rng(0).permutation(35).astype(np.int64)
    for _ in range(2):
        change, skipped = ep_dense_sweep(Sigma, mu, tau, nu, y_pm, 0.3, damping, order,
                                         np.empty(35))
        assert change > 0 and skipped == 0
        np.testing.assert_array_equal(Sigma, Sigma.T)
        S_ref, m_ref, _ = _refresh(K, tau, nu)
        np.testing.assert_allclose(Sigma, S_ref, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(mu, m_ref, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kw, flat", [(dict(lengthscale=1e-3), False),
                                      (dict(lengthscale=1e3), True),
                                      (dict(variance=1e4), False), (dict(variance=1e-6), False),
                                      (dict(bias=8.0), True)])
def test_extreme_hyperparameters_stay_finite(kw, flat):
    X, y = _data(25, seed=17)
    # l = 1e3 makes f constant on the data, and b = 8 predicts one class everywhere: those
    # fits are no better than the class frequencies, and say so
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        est = _fixed(ep_tol=1e-6, **kw).fit(X, y)      # the default ep_tol
    assert len(seen) == int(flat)
    assert all("no better than the class frequencies" in str(w.message) for w in seen)
    assert np.isfinite(est.log_evidence_)
    assert all(np.all(np.isfinite(v)) for v in est.log_evidence_gradient_.values())
    P = est.predict_proba(X)
    assert np.all(np.isfinite(P)) and np.all((P >= 0) & (P <= 1))
