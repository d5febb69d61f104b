"""GFITC engine internals of one evaluation: Anderson-accelerated parallel EP, shared passes.

The reformulated evidence gradient itself is checked against central differences and the
dense reference in ``test_gfitc.py`` and ``test_binary_kernels.py``; here: the acceleration
reaches the parallel schedule's fixed point, and the marginal pieces the evidence leaves on a
posterior are the ones a fresh computation gives (and go stale with the next refresh).
"""
import numpy as np
import pytest

from sparsegp.classification import _fitc_ep as G


def _xor(n, seed, noise=0.4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * 1.3
    y = np.where(X[:, 0] * X[:, 1] + noise * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


def _prior(n, M, seed, variance=1.3, lengthscale=0.9):
    X, y = _xor(n, seed)
    Z = X[np.random.default_rng(seed + 1).choice(n, M, replace=False)]
    return G._FITCPrior(X, Z, variance, np.full(2, lengthscale), 1e-6), y


@pytest.mark.parametrize("warm", [False, True])
@pytest.mark.parametrize("memory", [1, 3])
def test_anderson_reaches_the_parallel_fixed_point(warm, memory):
    prior, y = _prior(120, 9, seed=4)
    tau0 = nu0 = None
    if warm:  # sites converged at a 20% shorter length-scale, as inside the optimiser
        other = G._FITCPrior(prior.X, prior.Z, 1.3, np.full(2, 0.72), 1e-6)
        start = G.run_ep(other, y, 0.2, tol=1e-8, schedule="parallel")
        tau0, nu0 = start.tau, start.nu
    kw = dict(tol=1e-11, max_sweeps=2000, schedule="parallel")
    plain = G.run_ep(prior, y, 0.2, tau0, nu0, anderson=0, **kw)
    fast = G.run_ep(prior, y, 0.2, tau0, nu0, anderson=memory, **kw)
    assert plain.converged and fast.converged
    np.testing.assert_allclose(fast.tau, plain.tau, rtol=0, atol=1e-9)
    np.testing.assert_allclose(fast.nu, plain.nu, rtol=0, atol=1e-9)
    lz_p = G.log_evidence(prior, y, 0.2, plain.tau, plain.nu, plain.post)[0]
    lz_f = G.log_evidence(prior, y, 0.2, fast.tau, fast.nu, fast.post)[0]
    assert abs(lz_f - lz_p) <= 1e-10 * abs(lz_p)


def test_anderson_needs_fewer_iterations_from_a_warm_start():
    prior, y = _prior(1500, 25, seed=7)
    other = G._FITCPrior(prior.X, prior.Z, 1.2, np.full(2, 0.95), 1e-6)
    start = G.run_ep(other, y, 0.1, tol=1e-8, schedule="parallel")
    n = {m: G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-8, schedule="parallel",
                     anderson=m).n_sweeps for m in (0, 3)}
    assert n[3] < 0.8 * n[0], n


def test_anderson_converges_where_the_damped_iteration_stalls():
    # a large signal variance: the plain map contracts very slowly (over 1000 iterations)
    prior, y = _prior(400, 30, seed=2, variance=1e4, lengthscale=2.0)
    kw = dict(tol=1e-6, max_sweeps=150, schedule="parallel")
    assert not G.run_ep(prior, y, 0.0, anderson=0, **kw).converged
    assert G.run_ep(prior, y, 0.0, anderson=3, **kw).converged


def test_anderson_step_solves_an_affine_map_and_starts_as_the_damped_step():
    # x = (tau, nu) with N = 1: an affine contraction x -> A x + b is solved after
    # memory + 1 = 3 proposals (AA is GMRES on a linear residual), its first step damped
    A = np.array([[0.6, 0.3], [-0.4, 0.5]])
    b = np.array([0.8, -0.2])
    x_star = np.linalg.solve(np.eye(2) - A, b)
    acc = G._Anderson(1, 2)
    x = np.array([0.5, 0.1])
    for k in range(3):
        target = A @ x + b
        tau_t, nu_t = target[:1].copy(), target[1:].copy()
        acc.propose(x[:1], x[1:], tau_t, nu_t, 0.5)
        if k == 0:
            np.testing.assert_allclose([tau_t[0], nu_t[0]], x + 0.5 * (target - x), rtol=1e-15)
        x = np.array([tau_t[0], nu_t[0]])
    # exact but for the ridge of the normal equations (1e-12 of their largest entry)
    np.testing.assert_allclose(x, x_star, rtol=1e-9)


def test_anderson_proposal_keeps_precisions_feasible():
    acc = G._Anderson(3, 2)
    tau, nu = np.array([0.1, 0.0, 2.0]), np.zeros(3)
    tau_t, nu_t = np.array([-0.5, 0.3, 1.0]), np.ones(3)   # an infeasible target
    acc.propose(tau, nu, tau_t, nu_t, 1.0)
    assert np.all(tau_t >= 0.0)


def test_gradient_reuses_the_evidence_marginals_and_a_refresh_clears_them():
    prior, y = _prior(300, 12, seed=9)
    res = G.run_ep(prior, y, 0.3, tol=1e-9, schedule="parallel")
    fresh = G._refresh(prior, res.tau, res.nu, with_P=False)
    assert fresh.c2 is None
    g_fresh = G.log_evidence_gradient(prior, res.tau, res.nu, fresh)
    G.log_evidence(prior, y, 0.3, res.tau, res.nu, res.post)
    assert res.post.c2 is not None
    g_shared = G.log_evidence_gradient(prior, res.tau, res.nu, res.post)
    for a, b in zip(g_shared, g_fresh):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # one more parallel step refreshes the posterior in place: the cached pieces must go
    work = G._ParallelWork(*prior.Vt.shape)
    G._parallel_step(prior, y, 0.3, res.tau.copy(), res.nu.copy(), res.post, work, 1.0,
                     np.inf, 1.0)
    assert res.post.c2 is None and res.post.vg is None


def test_relative_ep_tolerance_stops_at_a_fraction_of_the_first_residual():
    prior, y = _prior(800, 12, seed=3)
    other = G._FITCPrior(prior.X, prior.Z, 1.3, np.full(2, 0.8), 1e-6)
    start = G.run_ep(other, y, 0.1, tol=1e-9, schedule="parallel")
    kw = dict(schedule="parallel", max_sweeps=500)
    exact = G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-9, **kw)
    first = G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-9, max_sweeps=1,
                     schedule="parallel").max_change
    loose = G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-9, rtol=0.01, **kw)
    assert loose.converged and 1 < loose.n_sweeps < exact.n_sweeps
    assert loose.max_change < 0.01 * first
    # the cap: no looser than tol_max; and a warm start already within tol stops at once
    capped = G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-9, rtol=0.5,
                      tol_max=0.1 * first, **kw)
    assert capped.max_change < 0.1 * first
    again = G.run_ep(prior, y, 0.1, exact.tau, exact.nu, tol=1e-9, rtol=0.1, **kw)
    assert again.n_sweeps == 1
    # sequential schedule: the same rule on its sweeps
    seq = G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-9, rtol=0.01,
                   schedule="sequential", max_sweeps=500, rng=np.random.default_rng(0))
    seq_exact = G.run_ep(prior, y, 0.1, start.tau, start.nu, tol=1e-9, schedule="sequential",
                         max_sweeps=500, rng=np.random.default_rng(0))
    assert seq.converged and seq.n_sweeps < seq_exact.n_sweeps
