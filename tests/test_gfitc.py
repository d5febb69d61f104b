"""GFITC-EP (seed 000): engine vs dense EP on the FITC covariance, evidence, gradients, estimator.

Dense checks use the independent textbook EP of ``tests/reference/dense_ep.py`` run on
K~ = Q + diag(K - Q) built with the same jitter (notes §5 items 5-12).
"""
import contextlib
import warnings

import numpy as np
import pytest
from conftest import assert_pinned_during_optimisation
from reference.dense_ep import (
    dense_ep, dense_ep_predict, fitc_covariance, fitc_test_covariance,
)

from sparsegp._numba import ep_fitc as E
from sparsegp.classification import EPClassifier, GFITCClassifier
from sparsegp.classification import _fitc_ep as G
from sparsegp.classification import _gfitc
from sparsegp.exceptions import ConvergenceWarning, JitterWarning
from sparsegp.kernels import SquaredExponential


def _xor(n, seed, noise=0.4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * 1.3
    y = np.where(X[:, 0] * X[:, 1] + noise * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _relerr(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ------------------------------------------------------------------------------------------
# engine against the dense reference
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("schedule", ["sequential", "parallel"])
@pytest.mark.parametrize("M, ard", [(1, False), (4, True), (12, False), (30, True)])
def test_engine_matches_dense_ep_on_fitc_covariance(schedule, M, ard):
    X, y = _xor(60, seed=M)
    rng = np.random.default_rng(100 + M)
    Z = rng.standard_normal((M, 2)) * 1.5
    ls = np.array([0.8, 1.4]) if ard else np.array([1.1, 1.1])
    s2, beta = 1.7, 0.35
    prior = G._FITCPrior(X, Z, s2, ls, 1e-6)
    res = G.run_ep(prior, y, beta, tol=1e-12, max_sweeps=2000, schedule=schedule,
                   rng=np.random.default_rng(0))
    assert res.converged
    lz, _, (diag_a, h) = G.log_evidence(prior, y, beta, res.tau, res.nu, res.post)
    ref = dense_ep(fitc_covariance(X, Z, s2, ls, 1e-6), y, bias=beta, tol=1e-13)
    assert abs(lz - ref.log_evidence) <= 1e-8 * abs(ref.log_evidence)
    assert _relerr(h, ref.mean) <= 1e-8
    assert _relerr(diag_a, ref.var) <= 1e-8
    assert _relerr(res.tau, ref.tau) <= 1e-8
    assert _relerr(res.nu, ref.nu) <= 1e-8


def test_predictions_match_dense_fitc_predictive():
    X, y = _xor(50, seed=3)
    Xs = np.random.default_rng(4).standard_normal((17, 2)) * 2
    Z = X[::7] + 0.05
    ls, s2, beta = np.array([0.9, 1.2]), 1.3, -0.4
    clf = GFITCClassifier(inducing_points=Z, kernel=SquaredExponential(s2, ls),
                          bias=beta, optimizer=None, ep_tol=1e-12, ep_max_sweeps=2000,
                          random_state=0).fit(X, y)
    ref = dense_ep(fitc_covariance(X, Z, s2, ls, 1e-6), y, bias=beta, tol=1e-13)
    Kcross, kdiag = fitc_test_covariance(X, Xs, Z, s2, ls, 1e-6)
    # FITC predictive (notes §1.7): cross covariance Q*f, prior variance the exact k** = s2.
    mean_ref, var_q, _ = dense_ep_predict(ref, Kcross, kdiag)
    mean, var = clf.predict_latent(Xs)
    assert _relerr(mean, mean_ref) <= 1e-8
    assert _relerr(var, var_q) <= 1e-8
    p = clf.predict_proba(Xs)
    from scipy.stats import norm
    assert np.allclose(p[:, 1], norm.cdf((mean + beta) / np.sqrt(1 + var)), rtol=1e-12)
    assert np.allclose(p.sum(axis=1), 1.0)


def test_incremental_representation_equals_refresh_after_each_site():
    """Notes §5 item 6: catches the nu-sign erratum and factor-orientation mix-ups."""
    X, y = _xor(40, seed=5)
    Z = X[:6] + 0.1
    prior = G._FITCPrior(X, Z, 1.2, np.array([1.0, 1.0]), 1e-6)
    tau, nu = np.zeros(40), np.zeros(40)
    post = G._refresh(prior, tau, nu)
    u, w = np.empty(6), np.empty(6)
    order = np.random.default_rng(1).permutation(40).astype(np.int64)
    for sweep in range(3):
        for pos in range(40):
            status, _, _ = E.ep_fitc_sweep(y, order[pos:pos + 1], 0, tau, nu, post.d, post.P,
                                           post.R, post.nn, post.gamma, 0.2, 1.0, u, w, -1)
            assert status == E.SWEEP_DONE
            a_inc, h_inc = G._marginals(post)
            fresh = G._refresh(prior, tau, nu, with_P=False)
            a_ref, h_ref = G._marginals(fresh)
            assert _relerr(a_inc, a_ref) <= 1e-12
            assert _relerr(h_inc, h_ref) <= 1e-11
            # R^T R is the same matrix; R itself is unique (upper, positive diagonal)
            assert _relerr(post.R, fresh.R) <= 1e-11
        post = G._refresh(prior, tau, nu)


@pytest.mark.parametrize("n_negative", [0, 3])
def test_refresh_equals_dense_posterior_also_with_negative_site_precisions(n_negative):
    """Both refresh branches (SYRK of diag(omega)^1/2 V^T; general product when some omega < 0)
    give the dense posterior (K~^-1 + diag tau)^-1 on the FITC covariance."""
    X, _ = _xor(30, seed=11)
    Z = X[:5] + 0.1
    s2, ls = 1.4, np.array([0.9, 1.2])
    prior = G._FITCPrior(X, Z, s2, ls, 1e-6)
    rng = np.random.default_rng(12)
    tau = rng.uniform(0.2, 2.0, 30)
    tau[:n_negative] = -0.05                  # small enough to keep the posterior proper
    nu = rng.standard_normal(30)
    diag_a, h = G._marginals(G._refresh(prior, tau, nu, with_P=False))
    K = fitc_covariance(X, Z, s2, ls, 1e-6)
    Sigma = np.linalg.inv(np.linalg.inv(K) + np.diag(tau))
    assert np.all(np.linalg.eigvalsh(Sigma) > 0)
    assert _relerr(diag_a, np.diag(Sigma)) <= 1e-9
    assert _relerr(h, Sigma @ nu) <= 1e-9


def test_a_one_thread_fit_calls_no_parallel_wrapper(monkeypatch, one_numba_thread):
    """With one Numba thread each row pass runs its serial kernel over all rows, so a small
    fit never compiles a parallel wrapper (issue 45: the first run's compile time)."""
    from sparsegp._numba import covfuncs, ep_fitc_gradient, ep_fitc_rows

    def refuse(*args):
        raise AssertionError("a parallel wrapper was called")

    for name in ("whiten_split", "parallel_apply_split", "parallel_targets_split",
                 "marginal_parts_split"):
        monkeypatch.setattr(ep_fitc_rows, name, refuse)
    monkeypatch.setattr(ep_fitc_gradient, "evidence_gradient_split", refuse)
    monkeypatch.setattr(covfuncs, "stationary_cross", refuse)
    X, y = _xor(80, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = GFITCClassifier(n_inducing=5, max_iter=3, tol=None, random_state=0).fit(X, y)
    assert clf.predict_proba(X).shape == (80, 2)


@pytest.mark.parametrize("n_parts, row_block", [(1, 1024), (4, 7)])
@pytest.mark.parametrize("delta, prev_change", [(1.0, np.inf), (0.6, 0.0)])
def test_fused_parallel_step_equals_targets_damping_and_refresh(delta, prev_change, n_parts,
                                                                row_block, monkeypatch):
    """One compiled parallel iteration = site targets + damped step + a fresh refresh, however
    the rows are split among threads and blocks (uneven ranges, blocks not dividing them)."""
    monkeypatch.setattr(G, "_n_parts", lambda: n_parts)
    monkeypatch.setattr(G, "ROW_BLOCK", row_block)
    X, y = _xor(50, seed=8)
    Z = X[:7] + 0.05
    prior = G._FITCPrior(X, Z, 1.1, np.array([0.9, 1.3]), 1e-6)
    rng = np.random.default_rng(3)
    tau0, nu0 = rng.uniform(0.0, 2.0, 50), rng.normal(size=50)
    tau0[:3] = 0.0
    post0 = G._refresh(prior, tau0, nu0, with_P=False)
    # reference, unfused: marginals, moment matching, step, clamp, refresh from scratch
    diag_a, h = G._marginals(post0)
    tau_new, nu_new = G._site_targets(y, tau0, nu0, diag_a, h, 0.3)[:2]
    change_ref = max(np.max(np.abs(tau_new - tau0)), np.max(np.abs(nu_new - nu0)))
    delta_ref = (max(0.5 * delta, G.PARALLEL_MIN_DAMPING) if change_ref > prev_change
                 else min(1.25 * delta, 1.0))
    tau_ref = np.maximum(tau0 + delta_ref * (tau_new - tau0), 0.0)
    nu_ref = nu0 + delta_ref * (nu_new - nu0)
    fresh = G._refresh(prior, tau_ref, nu_ref, with_P=False)

    tau, nu = tau0.copy(), nu0.copy()
    post = G._refresh(prior, tau, nu, with_P=False)
    change, used = G._parallel_step(prior, y, 0.3, tau, nu, post, G._ParallelWork(50, 7),
                                    delta, prev_change, 1.0)
    assert change == pytest.approx(change_ref, rel=1e-13)
    assert used == delta_ref
    assert _relerr(tau, tau_ref) <= 1e-14 and _relerr(nu, nu_ref) <= 1e-14
    for name in ("t", "omega", "btil", "d", "nn", "gamma", "R"):
        assert _relerr(getattr(post, name), getattr(fresh, name)) <= 1e-12, name
    assert post.logdet_S == pytest.approx(fresh.logdet_S, rel=1e-13)


def test_rank_one_update_and_downdate_of_upper_factor():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((7, 7))
    S = A @ A.T + 7 * np.eye(7)
    R = np.linalg.cholesky(S).T.copy()
    x = rng.standard_normal(7)
    R1 = R.copy()
    assert E.chol_update_upper(R1, x.copy(), 1.0)
    assert np.allclose(R1.T @ R1, S + np.outer(x, x), rtol=1e-12, atol=1e-12)
    assert np.allclose(np.tril(R1, -1), 0.0) and np.all(np.diag(R1) > 0)
    assert E.chol_update_upper(R1, x.copy(), -1.0)
    assert np.allclose(R1, R, rtol=1e-10, atol=1e-12)
    big = 10.0 * np.linalg.norm(R, 2) * np.ones(7)
    assert not E.chol_update_upper(R.copy(), big, -1.0)


def test_forced_downdate_failure_refreshes_and_reaches_same_fixed_point():
    X, y = _xor(60, seed=7)
    Z = X[:8] * 0.9
    prior = G._FITCPrior(X, Z, 1.0, np.array([0.9, 0.9]), 1e-6)
    base = G.run_ep(prior, y, 0.1, tol=1e-11, max_sweeps=1000, rng=np.random.default_rng(3))
    forced = G.run_ep(prior, y, 0.1, tol=1e-11, max_sweeps=1000, rng=np.random.default_rng(3),
                      fail_pos=5)
    assert base.n_aborts == 0
    assert forced.n_aborts == 1
    assert forced.converged
    assert _relerr(forced.tau, base.tau) <= 1e-8
    assert _relerr(forced.nu, base.nu) <= 1e-8
    lz_b = G.log_evidence(prior, y, 0.1, base.tau, base.nu, base.post)[0]
    lz_f = G.log_evidence(prior, y, 0.1, forced.tau, forced.nu, forced.post)[0]
    assert abs(lz_b - lz_f) <= 1e-9 * abs(lz_b)


def test_sweep_kernel_reports_failure_status_and_keeps_new_site():
    X, y = _xor(30, seed=8)
    prior = G._FITCPrior(X, X[:4], 1.0, np.array([1.0, 1.0]), 1e-6)
    tau, nu = np.zeros(30), np.zeros(30)
    post = G._refresh(prior, tau, nu)
    order = np.arange(30, dtype=np.int64)
    status, pos, change = E.ep_fitc_sweep(y, order, 0, tau, nu, post.d, post.P, post.R,
                                          post.nn, post.gamma, 0.0, 1.0, np.empty(4),
                                          np.empty(4), 2)
    assert status == E.SWEEP_DOWNDATE_FAILED and pos == 2
    assert tau[2] > 0 and np.all(tau[3:] == 0) and change > 0


# ------------------------------------------------------------------------------------------
# evidence
# ------------------------------------------------------------------------------------------
def test_zero_sites_evidence_and_textbook_form():
    X, y = _xor(30, seed=9)
    prior = G._FITCPrior(X, X[:5], 1.5, np.array([1.0, 1.0]), 1e-6)
    zero = np.zeros(30)
    lz0 = G.log_evidence(prior, y, 0.3, zero, zero, G._refresh(prior, zero, zero))[0]
    assert np.isclose(lz0, G.zero_site_log_evidence(y, 0.3, 1.5), rtol=1e-13)
    from reference.dense_ep import dense_ep_log_evidence_textbook
    res = G.run_ep(prior, y, 0.3, tol=1e-12)
    lz = G.log_evidence(prior, y, 0.3, res.tau, res.nu, res.post)[0]
    K = fitc_covariance(X, X[:5], 1.5, np.array([1.0, 1.0]), 1e-6)
    lz_tb = dense_ep_log_evidence_textbook(K, y, 0.3, res.tau, res.nu)
    assert abs(lz - lz_tb) <= 1e-9 * abs(lz_tb)


def test_inducing_equal_training_inputs_matches_full_ep_classifier():
    rng = np.random.default_rng(11)
    # 20 well-separated points keep K_uu well conditioned (notes §5 item 9)
    X = np.array([[i, j] for i in range(5) for j in range(4)], dtype=float) * 1.1
    X += 0.05 * rng.standard_normal(X.shape)
    y = np.where(np.sin(X[:, 0]) + np.cos(X[:, 1]) > 0.3, 1, -1)
    kw = dict(kernel=SquaredExponential(2.0, 1.3), bias=0.2, optimizer=None, ep_tol=1e-12,
              ep_max_sweeps=5000)
    g = GFITCClassifier(inducing_points=X, random_state=0, **kw).fit(X, y)
    ref = dense_ep(fitc_covariance(X, X, 2.0, np.array([1.3, 1.3]), 1e-6), np.where(y > 0, 1.0,
                   -1.0), bias=0.2, tol=1e-13)
    assert abs(g.log_evidence_ - ref.log_evidence) <= 1e-8 * abs(ref.log_evidence)
    # With Z = X the FITC prior is K up to the jitter on K_uu; the difference in log Z_EP
    # scales with it (1.6e-7 relative at 1e-6, 1.6e-13 at 1e-12), so compare at 1e-10.
    kw["jitter"] = 1e-10
    g = GFITCClassifier(inducing_points=X, random_state=0, **kw).fit(X, y)
    e = EPClassifier(random_state=0, **kw).fit(X, y)
    assert abs(g.log_evidence_ - e.log_evidence_) <= 1e-8 * abs(e.log_evidence_)
    m_g, v_g = g.predict_latent(X + 0.3)
    m_e, v_e = e.predict_latent(X + 0.3)
    assert np.allclose(m_g, m_e, rtol=1e-7, atol=1e-9)
    assert np.allclose(v_g, v_e, rtol=1e-7, atol=1e-9)


# ------------------------------------------------------------------------------------------
# gradients by central differences
# ------------------------------------------------------------------------------------------
def _fit_fixed(X, y, Z, s2, ls, beta, ard=True):
    ls = np.asarray(ls, dtype=float) if ard else float(ls)
    return GFITCClassifier(inducing_points=Z, kernel=SquaredExponential(s2, ls), bias=beta,
                           optimizer=None, ep_tol=1e-10, ep_max_sweeps=5000,
                           random_state=0).fit(X, y)


@pytest.mark.parametrize("ard", [True, False])
def test_log_evidence_gradient_matches_central_differences(ard):
    X, y = _xor(40, seed=12)
    Z = np.random.default_rng(13).standard_normal((4, 2)) * 1.2
    ls = np.array([0.8, 1.3]) if ard else 1.1
    s2, beta, h = 1.4, 0.25, 1e-5
    clf = _fit_fixed(X, y, Z, s2, ls, beta, ard)
    g = clf.log_evidence_gradient_
    f = lambda **kw: _fit_fixed(X, y, kw.get("Z", Z), kw.get("s2", s2), kw.get("ls", ls),
                                kw.get("beta", beta), ard).log_evidence_

    def check(analytic, plus, minus):
        fd = (plus - minus) / (2 * h)
        assert abs(analytic - fd) <= 1e-5 * max(abs(fd), 1e-3), (analytic, fd)

    check(g["variance"], f(s2=s2 + h), f(s2=s2 - h))
    check(g["bias"], f(beta=beta + h), f(beta=beta - h))
    if ard:
        assert g["lengthscale"].shape == (2,)
        for j in range(2):
            e = np.zeros(2)
            e[j] = h
            check(g["lengthscale"][j], f(ls=ls + e), f(ls=ls - e))
    else:
        check(g["lengthscale"], f(ls=ls + h), f(ls=ls - h))
    assert g["inducing_points"].shape == Z.shape
    for m in range(Z.shape[0]):
        for j in range(2):
            E_ = np.zeros_like(Z)
            E_[m, j] = h
            check(g["inducing_points"][m, j], f(Z=Z + E_), f(Z=Z - E_))


# ------------------------------------------------------------------------------------------
# estimator behaviour
# ------------------------------------------------------------------------------------------
def test_fit_any_two_labels_and_attributes():
    X, y = _xor(80, seed=14)
    labels = np.where(y > 0, "spam", "ham")
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        clf = GFITCClassifier(n_inducing=5, max_iter=4, random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["ham", "spam"]
    assert clf.inducing_points_.shape == (5, 2)
    assert isinstance(clf.lengthscale_, float) and clf.variance_ > 0
    assert np.isfinite(clf.log_evidence_) and clf.n_sweeps_ >= 1 and clf.n_features_in_ == 2
    assert clf.site_precision_.shape == (80,) and clf.site_mean_.shape == (80,)
    assert set(clf.log_evidence_gradient_) == {"variance", "lengthscale", "bias",
                                               "inducing_points"}
    proba = clf.predict_proba(X)
    assert proba.shape == (80, 2) and np.allclose(proba.sum(1), 1.0)
    pred = clf.predict(X)
    assert np.array_equal(pred, clf.classes_[(proba[:, 1] > 0.5).astype(int)])
    assert np.mean(pred == labels) > 0.7
    mean, var = clf.predict_latent(X[:3])
    assert mean.shape == var.shape == (3,) and np.all(var >= 0)
    assert np.allclose(clf.decision_function(X[:3]), (mean + clf.bias_) / np.sqrt(1 + var))


def test_optimisation_increases_evidence_and_is_reproducible():
    X, y = _xor(80, seed=15)
    kw = dict(n_inducing=4, random_state=3)
    fixed = GFITCClassifier(optimizer=None, **kw).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        a = GFITCClassifier(max_iter=6, **kw).fit(X, y)
        b = GFITCClassifier(max_iter=6, **kw).fit(X, y)
    assert a.log_evidence_ > fixed.log_evidence_ + 1.0
    assert a.log_evidence_ == b.log_evidence_
    assert np.array_equal(a.inducing_points_, b.inducing_points_)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        lb = GFITCClassifier(max_iter=6, optimizer="lbfgs", n_restarts=1, **kw).fit(X, y)
    assert lb.log_evidence_ > fixed.log_evidence_


@pytest.mark.parametrize("estimator", [GFITCClassifier, EPClassifier])
@pytest.mark.parametrize("chosen, other", [("cg", "lbfgs"), ("lbfgs", "cg"),
                                           ("l-bfgs-b", "cg")])
def test_max_iter_warning_advises_the_optimiser_not_chosen(estimator, chosen, other):
    # the advice used to say "try optimizer='lbfgs'" to a fit that had just run L-BFGS-B
    X, y = _xor(40, seed=15)
    kw = dict(n_inducing=3) if estimator is GFITCClassifier else {}
    # "l-bfgs-b" is the old spelling of "lbfgs", accepted for one release (issue 48)
    renamed = (pytest.warns(FutureWarning, match="optimizer='lbfgs'") if chosen == "l-bfgs-b"
               else contextlib.nullcontext())
    with pytest.warns(ConvergenceWarning, match="max_iter=") as rec, renamed:
        estimator(optimizer=chosen, max_iter=1, random_state=0, **kw).fit(X, y)
    text = " ".join(str(w.message) for w in rec if "max_iter=" in str(w.message))
    assert f"try optimizer='{other}'" in text
    assert f"optimizer='{chosen}'" not in text


def test_inexact_search_reports_the_evidence_at_ep_tol():
    # ep_search_rtol loosens EP only inside the optimiser's evaluations: the fitted state is
    # EP to ep_tol, so the reported evidence is the evidence at theta_ (EP from zero sites)
    X, y = _xor(300, seed=21)
    kw = dict(n_inducing=6, optimizer="lbfgs", max_iter=8, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fast = GFITCClassifier(ep_search_rtol=0.1, **kw).fit(X, y)
        exact = GFITCClassifier(ep_search_rtol=0.0, **kw).fit(X, y)
    np.testing.assert_allclose(fast.log_marginal_likelihood(fast.theta_), fast.log_evidence_,
                               rtol=1e-6)
    fixed = GFITCClassifier(optimizer=None, n_inducing=6, random_state=2).fit(X, y)
    assert fast.log_evidence_ > fixed.log_evidence_ + 1.0
    assert fast.log_evidence_ != exact.log_evidence_        # the option is live


def test_schedules_reach_the_same_posterior():
    X, y = _xor(70, seed=16)
    kw = dict(n_inducing=6, optimizer=None, ep_tol=1e-10, ep_max_sweeps=3000, random_state=0)
    s = GFITCClassifier(ep_schedule="sequential", **kw).fit(X, y)
    p = GFITCClassifier(ep_schedule="parallel", **kw).fit(X, y)
    assert abs(s.log_evidence_ - p.log_evidence_) <= 1e-8 * abs(s.log_evidence_)
    assert np.allclose(s.predict_proba(X), p.predict_proba(X), atol=1e-8)


def test_invariances_permutation_and_label_flip():
    X, y = _xor(50, seed=17)
    Z = X[:5] + 0.2
    kw = dict(inducing_points=Z, bias=0.3, optimizer=None, ep_tol=1e-11, ep_max_sweeps=3000,
              random_state=0)
    a = GFITCClassifier(**kw).fit(X, y)
    perm = np.random.default_rng(0).permutation(50)
    b = GFITCClassifier(**kw).fit(X[perm], y[perm])
    assert abs(a.log_evidence_ - b.log_evidence_) <= 1e-9 * abs(a.log_evidence_)
    kw_flip = dict(kw, bias=-0.3)
    c = GFITCClassifier(**kw_flip).fit(X, -y)
    ma, va = a.predict_latent(X)
    mc, vc = c.predict_latent(X)
    assert np.allclose(ma, -mc, atol=1e-9) and np.allclose(va, vc, atol=1e-9)
    assert abs(a.log_evidence_ - c.log_evidence_) <= 1e-9 * abs(a.log_evidence_)


def test_does_not_modify_inputs():
    X, y = _xor(40, seed=18)
    Z = X[:3].copy()
    X.setflags(write=False)
    y.setflags(write=False)
    Z.setflags(write=False)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        GFITCClassifier(inducing_points=Z, max_iter=2, random_state=0).fit(X, y)


@pytest.mark.parametrize("kwargs, X_y, match", [
    ({}, "one_class", "2 classes"),
    ({}, "nan", "NaN"),
    ({}, "inf", "NaN or infinite"),
    ({}, "length", "different lengths"),
    ({"n_inducing": 50}, None, "n_inducing"),
    ({"inducing_points": np.zeros((50, 2))}, None, "inducing_points"),
    ({"inducing_points": np.zeros((3, 3))}, None, "inducing_points"),
    ({"kernel": SquaredExponential(0.0, 1.0)}, None, "variance"),
    ({"kernel": SquaredExponential(-1.0, 1.0)}, None, "variance"),
    ({"kernel": SquaredExponential(1.0, 0.0)}, None, "lengthscale"),
    ({"kernel": SquaredExponential(1.0, -2.0)}, None, "lengthscale"),
    ({"ep_schedule": "random"}, None, "ep_schedule"),
    ({"init": "grid"}, None, "init"),
    ({"ep_damping": 0.0}, None, "ep_damping"),
    ({"ep_search_rtol": 1.0}, None, "ep_search_rtol"),
    ({"ep_search_rtol": -0.1}, None, "ep_search_rtol"),
])
def test_bad_input_raises_clear_value_error(kwargs, X_y, match):
    X, y = _xor(40, seed=19)
    if X_y == "one_class":
        y = np.ones(40)
    elif X_y == "nan":
        X[3, 1] = np.nan
    elif X_y == "inf":
        X[0, 0] = np.inf
    elif X_y == "length":
        y = y[:-1]
    with pytest.raises(ValueError, match=match):
        GFITCClassifier(**kwargs).fit(X, y)


def _fit_quiet(**kw):
    X, y = _xor(60, seed=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", JitterWarning)
        return GFITCClassifier(random_state=0, **kw).fit(X, y), X


@pytest.mark.parametrize("kw", [
    dict(inducing_points=np.array([[0.5, 0.5]] * 4), max_iter=3),
    dict(n_inducing=1, max_iter=3),
    dict(n_inducing=5, kernel=SquaredExponential(1.0, 1e-3), max_iter=3),
    dict(n_inducing=5, kernel=SquaredExponential(1.0, 1e3), max_iter=3),
    dict(n_inducing=5, kernel=SquaredExponential(1.0, 1e-3), optimizer=None),
    dict(n_inducing=5, kernel=SquaredExponential(1.0, 1e3), optimizer=None),
])
def test_degenerate_settings_fit_without_nan(kw):
    clf, X = _fit_quiet(**kw)
    assert np.isfinite(clf.log_evidence_)
    assert np.all(np.isfinite(clf.predict_proba(X)))
    for v in clf.log_evidence_gradient_.values():
        assert np.all(np.isfinite(v))


def test_not_converged_warns():
    X, y = _xor(60, seed=21)
    with pytest.warns(ConvergenceWarning, match="ep_max_sweeps"):
        GFITCClassifier(n_inducing=5, optimizer=None, ep_max_sweeps=1, ep_tol=1e-12,
                        random_state=0).fit(X, y)


def test_plot_decision_contours_draws_and_returns_axes():
    from sparsegp.plotting import plot_decision_contours
    from sparsegp.plotting._mpl import pyplot
    X, y = _xor(40, seed=22)
    Z0 = X[:3].copy()
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        clf = GFITCClassifier(inducing_points=Z0, max_iter=2, random_state=0).fit(X, y)
    ax = plot_decision_contours(clf, X, y, initial_inducing=Z0, grid_size=30)
    labels = ax.get_legend_handles_labels()[1]
    assert "pseudo-inputs" in labels and "initial pseudo-inputs" in labels
    assert len(ax.collections) > 0

    class ActiveSetModel:  # any binary classifier with predict_proba and active_set_
        classes_ = np.array([-1.0, 1.0])
        active_set_ = np.array([0, 5])

        def predict_proba(self, X):
            p = 1 / (1 + np.exp(-X[:, 0]))
            return np.column_stack([1 - p, p])

    ax2 = plot_decision_contours(ActiveSetModel(), X, y, grid_size=20)
    assert "active set" in ax2.get_legend_handles_labels()[1]
    with pytest.raises(ValueError, match="2-D"):
        plot_decision_contours(clf, np.zeros((5, 3)), np.ones(5))
    pyplot().close("all")


def test_memory_is_linear_in_n_no_n_by_n_matrix():
    """Fit plus evidence gradient at N = 4000 stays far below one N x N array (128 MB)."""
    import tracemalloc
    X, y = _xor(4000, seed=23)
    GFITCClassifier(n_inducing=10, optimizer=None, random_state=0).fit(X[:50], y[:50])
    tracemalloc.start()
    try:
        with pytest.warns(ConvergenceWarning, match="max_iter="):
            clf = GFITCClassifier(n_inducing=10, max_iter=1, random_state=0).fit(X, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.isfinite(clf.log_evidence_)
    assert peak < 8 * 4000 * 4000 / 20


def test_ard_fit_learns_irrelevant_dimension():
    rng = np.random.default_rng(24)
    X = rng.standard_normal((120, 2))
    X[:, 1] *= 3.0  # irrelevant, wide dimension
    y = np.where(X[:, 0] > 0, 1, -1)
    with pytest.warns(ConvergenceWarning) as record:
        # ARD from the data's spread per feature (what ard=True started from). On separable
        # labels the evidence climbs for ever as the variance grows, by less and less: the
        # default stopping rule ends that climb (variance 4.6e3, no warning), so this fit
        # turns the rule off (tol=0) and boxes the variance to see the climb reach the box
        kernel = SquaredExponential(lengthscale=X.std(0), variance_bounds=(1e-2, 1e3))
        clf = GFITCClassifier(n_inducing=5, kernel=kernel, max_iter=15, tol=0.0,
                              random_state=0).fit(X, y)
    messages = [str(w.message) for w in record]
    assert any("max_iter=" in m for m in messages)
    # separable labels: the signal variance runs to the kernel's upper bound, and the fit
    # says so (the bound warning of the training driver)
    assert any("theta[0] at its upper bound" in m for m in messages)
    assert clf.lengthscale_.shape == (2,)
    assert clf.lengthscale_[1] > 2 * clf.lengthscale_[0]
    assert clf.log_evidence_gradient_["lengthscale"].shape == (2,)


@pytest.mark.parametrize("schedule, pinned", [("parallel", True), ("sequential", False)])
def test_fit_holds_openblas_at_one_thread_and_restores_it(schedule, pinned,
                                                         blas_threads_at_calls,
                                                         openblas_at_two_threads):
    """The parallel schedule's optimiser runs with OpenBLAS at one thread throughout (its EP
    phases call BLAS on every Numba thread); the user's counts come back after fit."""
    # spied where the estimator looks it up
    seen = blas_threads_at_calls(_gfitc, "log_evidence_gradient")
    X, y = _xor(60, seed=5)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        GFITCClassifier(n_inducing=5, max_iter=3, ep_schedule=schedule, random_state=0).fit(X, y)
    assert_pinned_during_optimisation(seen, pinned, openblas_at_two_threads())
