"""The batch training schedules of seed 002's Figure 1: EP-inner (approximate gradient, eq. 10),
EP-inner with the exact gradient at the current sites, and EP-outer."""
import numpy as np
import pytest

from sparsegp.classification import MultiClassEPClassifier
from sparsegp.classification.multiclass import engine as mce
from sparsegp.classification.multiclass import ep_state as mcs
from sparsegp.classification.multiclass import kernel as mck
from sparsegp.classification.multiclass import likelihood as mcl


def _problem(seed=0, N=40, C=3, M=5, D=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = rng.permutation(np.arange(N) % C)
    Z = X[rng.choice(N, M, replace=False)][None].repeat(C, 0) + 0.1 * rng.normal(size=(C, M, D))
    hyp = mck.ClassParams(np.log(rng.uniform(0.8, 1.5, C)), np.log(rng.uniform(0.1, 0.4, C)),
                    np.log(rng.uniform(0.7, 1.3, (C, D))), Z)
    state = mcs.EPState("ep", N, C, M, mcl.class_counts_factors(y, C))
    return X, y, hyp, state


def _log_z_sites_fixed(X, y, hyp, state, theta, nik=True, jitter=1e-10):
    """log Z_EP at ``theta`` with every site held fixed in u-space (natural parameters, totals
    (T, h) and the directions v° it was fitted with): the function EP-inner-exact ascends."""
    h = hyp.like(theta)
    prior = mcs.Prior(h, nik, jitter)
    Kfu, V, d = mcs.data_terms(X, h, prior)
    q = mcs.Gaussian(prior.L, state.T, state.h)
    res = mce.factor_pass(y, V, state.Vo, Kfu, d, q.S, q.m, state.sites, False, False)
    return (float(np.sum(res.log_z) + np.sum(res.delta))
            + float(np.sum(q.log_norm_minus_prior())))


def test_exact_gradient_matches_central_differences_away_from_convergence():
    X, y, hyp, state = _problem()
    for _ in range(3):  # three damped refinements: far from the fixed point
        mce.batch_refine(X, y, hyp, state, 0.5, True, 1e-10)
    log_z, g_approx, _ = mce.batch_evidence(X, y, hyp, state, True, 1e-10)
    log_z_exact, g_exact, _ = mce.batch_evidence(X, y, hyp, state, True, 1e-10, exact=True)
    theta = hyp.pack()
    assert log_z_exact == log_z
    assert _log_z_sites_fixed(X, y, hyp, state, theta) == pytest.approx(log_z, abs=1e-10)
    eps = 1e-5
    fd = np.array([(_log_z_sites_fixed(X, y, hyp, state, theta + eps * e)
                    - _log_z_sites_fixed(X, y, hyp, state, theta - eps * e)) / (2 * eps)
                   for e in np.eye(theta.size)])
    scale = np.max(np.abs(fd))
    np.testing.assert_allclose(g_exact, fd, atol=1e-7 * scale, rtol=0)
    # eq. (10) alone is not this gradient away from convergence: the test can tell them apart
    assert np.max(np.abs(g_approx - fd)) > 1e-3 * scale


def test_exact_and_approximate_gradients_agree_at_a_fixed_point():
    X, y, hyp, state = _problem(seed=1)
    mce.converge_ep(X, y, hyp, state, True, 1e-10, tol=1e-12)
    _, g_approx, _ = mce.batch_evidence(X, y, hyp, state, True, 1e-10)
    _, g_exact, _ = mce.batch_evidence(X, y, hyp, state, True, 1e-10, exact=True)
    np.testing.assert_allclose(g_exact, g_approx, atol=1e-8 * np.max(np.abs(g_approx)), rtol=0)


def _data(seed=0, N=90, C=3, D=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = np.argmax(np.c_[X[:, 0], X[:, 1], -X.sum(1)] + 0.3 * rng.normal(size=(N, C)), axis=1)
    return X, y


def test_outer_schedule_runs_ep_to_convergence_before_its_first_step():
    X, y = _data()
    est = MultiClassEPClassifier(training="outer", n_inducing=6, max_iter=1, tol=None, random_state=0)
    est.fit(X, y)
    # the same start, EP converged tightly at it
    ref = MultiClassEPClassifier(training="inner", n_inducing=6, max_iter=1, tol=None, random_state=0)
    ref.fit(X, y)
    assert est.log_evidence_ != pytest.approx(ref.log_evidence_, abs=1e-2)  # inner: one sweep
    C, M, D = 3, 6, 2
    scaled = est._scaling.transform(X)
    hyp = mck.ClassParams(np.log(est.variance_), np.log(est.noise_), np.log(est._ls), est._Z)
    state = mcs.EPState("ep", X.shape[0], C, M, mcl.class_counts_factors(y, C))
    mce.converge_ep(scaled, y, hyp, state, True, est.jitter, damping=0.5, tol=1e-10)
    log_z, _, _ = mce.batch_evidence(scaled, y, hyp, state, True, est.jitter)
    assert est.log_evidence_ == pytest.approx(log_z, abs=5e-3)


@pytest.mark.parametrize("training", ["inner", "inner_exact", "outer"])
def test_every_schedule_raises_the_evidence(training):
    X, y = _data(seed=2)
    est = MultiClassEPClassifier(training=training, n_inducing=6, max_iter=25, tol=None, random_state=0)
    est.fit(X, y)
    h = est.evidence_history_
    assert h.size == 25
    assert h[-1] > h[1] + 1.0
    assert np.mean(est.predict(X) == y) > 0.8


def test_schedule_options_are_validated():
    X, y = _data()
    with pytest.raises(ValueError, match="training"):
        MultiClassEPClassifier(training="exact").fit(X, y)
    with pytest.raises(ValueError, match="method='ep'"):
        MultiClassEPClassifier(method="sep", training="inner_exact").fit(X, y)
    with pytest.raises(ValueError, match="batch schedule"):
        MultiClassEPClassifier(training="outer", batch_size=10).fit(X, y)
