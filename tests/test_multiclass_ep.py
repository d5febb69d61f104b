"""Multi-class EP / SEP with inducing points (seed 002): the checks of notes multiclass_ep.md §8.3."""
import copy

import numpy as np
import pytest
from scipy import integrate, special, stats

from reference.dense_multiclass import brute_force_log_evidence, dense_ep

from sparsegp._numba import multiclass as nbmc
from sparsegp.classification.multiclass import engine as mce
from sparsegp.classification.multiclass import ep_state as mcs
from sparsegp.classification.multiclass import kernel as mck
from sparsegp.classification.multiclass import likelihood as mcl
from sparsegp.kernels import SquaredExponential


def _problem(seed, N, C, M, D, noise=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = rng.permutation(np.arange(N) % C)
    var = rng.uniform(0.7, 1.5, size=C)
    noi = rng.uniform(0.2, 0.6, size=C) if noise is None else np.full(C, noise)
    ls = rng.uniform(0.7, 1.5, size=(C, D))
    Z = rng.normal(size=(C, M, D))
    return X, y, var, noi, ls, Z


def _converged(X, y, var, noi, ls, Z, method="ep", nik=True, jitter=1e-10, tol=1e-12):
    C, M, D = Z.shape
    hyp = mck.ClassParams(np.log(var), np.log(noi), np.log(ls), Z)
    st = mcs.EPState(method, X.shape[0], C, M, mcl.class_counts_factors(y, C))
    mce.converge_ep(X, y, hyp, st, nik, jitter, tol=tol)
    return hyp, st


# ------------------------------------------------------------------------------------------
# 1-2. site update = moment matching of the tilted distribution; sites positive
# ------------------------------------------------------------------------------------------
def _one_factor(rng, M, tau=(0.3, 0.6), stale=True):
    """Random posterior, one existing site per side with a stale direction, current v."""
    C = 2
    S = np.empty((C, M, M))
    for c in range(C):
        A = rng.normal(size=(M, M))
        S[c] = A @ A.T / M + 0.3 * np.eye(M)
    m = rng.normal(size=(C, M))
    V = rng.normal(size=(C, 1, M))
    Vo = V + (0.3 * rng.normal(size=(C, 1, M)) if stale else 0.0)
    d = rng.uniform(0.1, 0.8, size=(1, C))
    sites = [np.zeros((1, C)) for _ in range(4)]
    sites[0][0, 1], sites[1][0, 1] = tau[0], rng.normal()
    sites[2][0, 1], sites[3][0, 1] = tau[1], rng.normal()
    return S, m, np.ascontiguousarray(V), np.ascontiguousarray(Vo), d, sites


def _run_pass(y, V, Vo, d, S, m, sites, same_dirs=False, compute_grad=False, Kfu=None):
    B, C, M = y.shape[0], S.shape[0], S.shape[1]
    new = [np.zeros((B, C)) for _ in range(4)]
    log_z, delta, status = np.zeros(B), np.zeros(B), np.zeros(B, dtype=np.int64)
    GV = np.zeros((C, B, M))
    wsum = np.zeros((B, C))
    Kfu = np.zeros((C, B, M)) if Kfu is None else Kfu
    nbmc.factor_pass_serial(y, V, Vo, Kfu, d, S, m, *sites, *new, log_z, delta, GV, wsum,
                            status, same_dirs, compute_grad)
    return new, log_z, delta, GV, wsum, status


def test_site_update_matches_tilted_moments_monte_carlo():
    rng = np.random.default_rng(0)
    M = 2
    S, m, V, Vo, d, sites = _one_factor(rng, M)
    new, log_z, _, _, _, status = _run_pass(np.array([0]), V, Vo, d, S, m, sites)
    assert status[0] == 0
    n = 1_000_000
    post = []
    for c, (tau, eta) in enumerate([(sites[0][0, 1], sites[1][0, 1]),
                                    (sites[2][0, 1], sites[3][0, 1])]):
        # explicit cavity: remove the old site (stale direction v°) in natural parameters
        Lam = np.linalg.inv(S[c]) - tau * np.outer(Vo[c, 0], Vo[c, 0])
        h = np.linalg.solve(S[c], m[c]) - eta * Vo[c, 0]
        Sc = np.linalg.inv(Lam)
        mc_ = Sc @ h
        samples = rng.multivariate_normal(mc_, Sc, size=n)
        post.append((samples, Lam, h))
    u0, u1 = post[0][0], post[1][0]
    w = stats.norm.cdf((u0 @ V[0, 0] - u1 @ V[1, 0]) / np.sqrt(d[0, 0] + d[0, 1]))
    assert np.log(w.mean()) == pytest.approx(log_z[0], abs=4 * w.std() / w.mean() / np.sqrt(n))
    for c, (samples, Lam, h) in enumerate(post):
        mean_mc = (w[:, None] * samples).sum(0) / w.sum()
        cen = samples - mean_mc
        cov_mc = (w[:, None] * cen).T @ cen / w.sum()
        # tilted projection = cavity x new rank-one site along the *current* v
        tau_new = new[0][0, 1] if c == 0 else new[2][0, 1]
        eta_new = new[1][0, 1] if c == 0 else new[3][0, 1]
        Lq = Lam + tau_new * np.outer(V[c, 0], V[c, 0])
        Sq = np.linalg.inv(Lq)
        mq = Sq @ (h + eta_new * V[c, 0])
        assert np.allclose(mq, mean_mc, atol=6e-3)
        assert np.allclose(Sq, cov_mc, atol=6e-3)


def test_site_update_matches_quadrature_projected_moments():
    """Z, mean and variance of the projections (v_y^T u_y, v_k^T u_k) by 2-D quadrature."""
    rng = np.random.default_rng(1)
    for _ in range(5):
        S, m, V, Vo, d, sites = _one_factor(rng, 3, tau=(0.02, 0.03), stale=False)
        new, log_z, _, _, _, _ = _run_pass(np.array([0]), V, V, d, S, m, sites, True)
        cav = []
        for c, (tau, eta) in enumerate([(sites[0][0, 1], sites[1][0, 1]),
                                        (sites[2][0, 1], sites[3][0, 1])]):
            v = V[c, 0]
            s, mu = v @ S[c] @ v, v @ m[c]
            cav.append((s / (1 - tau * s), (mu - eta * s) / (1 - tau * s), tau, eta))
        x, wts = np.polynomial.hermite_e.hermegauss(120)
        wts = wts / wts.sum()
        a = cav[0][1] + np.sqrt(cav[0][0]) * x[:, None]
        b = cav[1][1] + np.sqrt(cav[1][0]) * x[None, :]
        W = wts[:, None] * wts[None, :] * special.ndtr((a - b) / np.sqrt(d[0, 0] + d[0, 1]))
        Z = W.sum()
        assert np.log(Z) == pytest.approx(log_z[0], abs=1e-7)  # quadrature accuracy
        for c, A in enumerate((a + 0 * b, b + 0 * a)):
            mean = (W * A).sum() / Z
            var = (W * (A - mean) ** 2).sum() / Z
            s_cav, mu_cav = cav[c][0], cav[c][1]
            tau_new = new[2 * c][0, 1]
            eta_new = new[2 * c + 1][0, 1]
            # product of the projected cavity and the new site along v
            prec = 1 / s_cav + tau_new
            assert 1 / prec == pytest.approx(var, rel=1e-6)
            assert (mu_cav / s_cav + eta_new) / prec == pytest.approx(mean, rel=1e-6, abs=1e-8)


def test_new_sites_are_positive_for_random_cavities():
    rng = np.random.default_rng(2)
    for trial in range(200):
        B, C, M = 4, 3, 3
        S = np.empty((C, M, M))
        for c in range(C):
            A = rng.normal(size=(M, M)) * rng.uniform(0.1, 3)
            S[c] = A @ A.T + 1e-3 * np.eye(M)
        m = rng.normal(size=(C, M)) * rng.uniform(0.1, 20)
        V = rng.normal(size=(C, B, M))
        d = rng.uniform(0.0, 1.0, size=(B, C))
        y = rng.integers(0, C, size=B)
        new, log_z, _, _, _, status = _run_pass(y, V, V, d, S, m,
                                                [np.zeros((B, C)) for _ in range(4)], True)
        assert np.all(status == 0)
        assert np.all(np.isfinite(log_z))
        mask = np.ones((B, C), bool)
        mask[np.arange(B), y] = False
        assert np.all(new[0][mask] > 0) and np.all(new[2][mask] > 0)


# ------------------------------------------------------------------------------------------
# 3-4. evidence: Seeger's identity with explicit matrices; brute force
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("nik", [True, False])
def test_ep_fixed_point_and_evidence_match_dense_reference(nik):
    X, y, var, noi, ls, Z = _problem(3, 6, 3, 2, 2)
    jitter = 1e-10 if nik else 1e-8
    hyp, st = _converged(X, y, var, noi, ls, Z, nik=nik, jitter=jitter)
    lz, _, q = mce.batch_evidence(X, y, hyp, st, nik, jitter, compute_grad=False)
    lz_ref, m_ref, S_ref = dense_ep(X, y, var, ls, noi, Z, nik, jitter, tol=1e-11)
    assert lz == pytest.approx(lz_ref, abs=1e-9)
    assert np.allclose(q.m, m_ref, atol=1e-8)
    assert np.allclose(q.S, S_ref, atol=1e-8)


def test_evidence_close_to_brute_force_on_tiny_problem():
    """N = 5, C = 3, M = 2: EP's factorised q is an approximation. Measured EP - MC = -0.020
    (MC s.e. 0.001) here, and between -0.017 and -0.054 on four other random problems (notes
    §8.3 item 4 quotes ~0.01 for its own example)."""
    X, y, var, noi, ls, Z = _problem(2, 5, 3, 2, 1, noise=1.0)
    hyp, st = _converged(X, y, var, noi, ls, Z)
    lz, _, _ = mce.batch_evidence(X, y, hyp, st, True, 1e-10, compute_grad=False)
    bf, se = brute_force_log_evidence(X, y, var, ls, noi, Z, n_samples=400_000)
    assert se < 2e-3
    assert abs(lz - bf) < 0.03


# ------------------------------------------------------------------------------------------
# 5. gradient of log Z_EP at convergence vs central finite differences (EP, not SEP)
# ------------------------------------------------------------------------------------------
def _fd_check(nik, coords=None):
    X, y, var, noi, ls, Z = _problem(5, 6, 3, 2, 2)
    jitter = 1e-10 if nik else 1e-8
    hyp, st = _converged(X, y, var, noi, ls, Z, nik=nik, jitter=jitter, tol=1e-13)
    _, grad, _ = mce.batch_evidence(X, y, hyp, st, nik, jitter)
    theta = hyp.pack()
    C, M, D = Z.shape
    coords = range(theta.size) if coords is None else coords
    h = 1e-5
    for j in coords:
        vals = []
        for s in (1, -1):
            t = theta.copy()
            t[j] += s * h
            hp = mck.ClassParams.unpack(t, C, M, D)
            s2 = st.copy()
            mce.converge_ep(X, y, hp, s2, nik, jitter, damping=1.0, tol=1e-13)
            vals.append(mce.batch_evidence(X, y, hp, s2, nik, jitter, compute_grad=False)[0])
        fd = (vals[0] - vals[1]) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-8), f"coordinate {j}"


def test_gradient_matches_finite_differences_every_coordinate():
    _fd_check(True)


def test_gradient_matches_finite_differences_noise_free_kuu():
    _fd_check(False)


# ------------------------------------------------------------------------------------------
# 6, 9-11. minibatch estimate, pairwise bound, prediction quadrature, class symmetry
# ------------------------------------------------------------------------------------------
def test_minibatch_likelihood_terms_average_to_full_value():
    X, y, var, noi, ls, Z = _problem(6, 12, 3, 2, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, tol=1e-8)
    full, gfull, _ = mce.batch_evidence(X, y, hyp, st, True, 1e-10)
    parts = np.split(np.arange(12), 3)
    vals, grads = [], []
    for idx in parts:
        sub = mcs.EPState("ep", idx.size, 3, 2, st.n_factors)
        sub.T, sub.h = st.T, st.h
        sub.sites = tuple(s[idx] for s in st.sites)
        lz, g, _ = mce.batch_evidence(X[idx], y[idx], hyp, sub, True, 1e-10, scale=12 / 4)
        vals.append(lz)
        grads.append(g)
    assert np.mean(vals) == pytest.approx(full, rel=1e-12)
    assert np.allclose(np.mean(grads, axis=0), gfull, rtol=1e-10, atol=1e-12)


def test_pairwise_product_is_a_lower_bound_of_the_exact_likelihood():
    rng = np.random.default_rng(7)
    mean = rng.normal(size=(300, 4))
    var = rng.uniform(0.05, 3, size=(300, 4))
    P = mcl.true_class_probability(mean, var, np.zeros(300, dtype=np.int64))
    prod = np.ones(300)
    for k in range(1, 4):
        prod *= special.ndtr((mean[:, 0] - mean[:, k]) / np.sqrt(var[:, 0] + var[:, k]))
    assert np.all(prod <= P + 1e-12)


def test_class_probabilities_quadrature_accuracy():
    rng = np.random.default_rng(8)
    mean = rng.normal(size=(3, 4)) * 2
    var = np.exp(rng.uniform(np.log(0.01), np.log(10), size=(3, 4)))
    P = mcl.class_probabilities(mean, var)
    assert np.allclose(P.sum(1), 1, atol=1e-8)
    for i in range(3):
        sd = np.sqrt(var[i])
        for c in range(4):
            def f(x):
                out = stats.norm.pdf(x, mean[i, c], sd[c])
                for j in range(4):
                    if j != c:
                        out *= stats.norm.cdf((x - mean[i, j]) / sd[j])
                return out
            ref = integrate.quad(f, mean[i, c] - 12 * sd[c], mean[i, c] + 12 * sd[c],
                                 points=sorted(mean[i]), limit=400, epsabs=1e-13)[0]
            assert abs(P[i, c] - ref) < 1e-6
    # C = 2 closed form (notes §6)
    m2, v2 = mean[:, :2], var[:, :2]
    P2 = mcl.class_probabilities(m2, v2)
    ref = special.ndtr((m2[:, 0] - m2[:, 1]) / np.sqrt(v2.sum(1)))
    assert np.allclose(P2[:, 0], ref, atol=1e-8)


def test_permuting_classes_permutes_everything():
    X, y, var, noi, ls, Z = _problem(9, 9, 3, 2, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, tol=1e-11)
    lz, g, q = mce.batch_evidence(X, y, hyp, st, True, 1e-10)
    perm = np.array([2, 0, 1])
    inv = np.argsort(perm)
    hyp2, st2 = _converged(X, inv[y], var[perm], noi[perm], ls[perm], Z[perm], tol=1e-11)
    lz2, g2, q2 = mce.batch_evidence(X, inv[y], hyp2, st2, True, 1e-10)
    assert lz2 == pytest.approx(lz, abs=1e-9)
    assert np.allclose(q2.m, q.m[perm], atol=1e-8)


# ------------------------------------------------------------------------------------------
# SEP
# ------------------------------------------------------------------------------------------
def test_sep_state_is_independent_of_n_and_tied_sites_psd():
    X, y, var, noi, ls, Z = _problem(10, 30, 3, 3, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, method="sep", tol=1e-10)
    assert st.sites is None and st.Vo is None
    assert st.T.shape == (3, 3, 3) and st.h.shape == (3, 3)
    for c in range(3):
        assert np.linalg.eigvalsh(st.T[c]).min() > -1e-10
    lz_sep, _, _ = mce.batch_evidence(X, y, hyp, st, True, 1e-10, compute_grad=False)
    hyp, st_ep = _converged(X, y, var, noi, ls, Z, tol=1e-10)
    lz_ep, _, _ = mce.batch_evidence(X, y, hyp, st_ep, True, 1e-10, compute_grad=False)
    # SEP averages natural parameters: close to EP, slightly higher (notes §2.7)
    assert lz_ep - 0.05 * 30 < lz_sep < lz_ep + 0.1 * 30


# ------------------------------------------------------------------------------------------
# 7-8. C = 2, Z_c = X, noise-free K_uu: EP = multi-class GFITC (= binary dense EP when the
# second class has zero amplitude, notes §8.3 items 7-8)
# ------------------------------------------------------------------------------------------
def test_two_classes_z_equals_x_matches_gfitc_and_dense_binary_ep():
    import sparsegp
    rng = np.random.default_rng(0)
    N, D = 10, 2
    X = rng.normal(size=(N, D))
    y = np.r_[np.zeros(5, int), np.ones(5, int)][rng.permutation(N)]
    ls = np.array([[0.9, 1.1], [1.3, 0.8]])
    noi = np.array([0.4, 0.6])  # sums to 1: the binary probit's unit noise when sigma_2 = 0
    jit = 1e-12
    Z = np.stack([X, X])

    def ep_log_z(var):
        hyp, st = _converged(X, y, var, noi, ls, Z, nik=False, jitter=jit, tol=1e-13)
        return mce.batch_evidence(X, y, hyp, st, False, jit, compute_grad=False)[0]

    def gfitc_log_z(var):
        est = sparsegp.MultiClassGFITCClassifier(
            inducing_points=Z, kernel=[SquaredExponential(v, l) for v, l in zip(var, ls)],
            latent_noise_variance=noi, noise_in_kuu=False, jitter=jit, max_iter=0, ep_tol=1e-12)
        return est.fit(X, y).log_evidence_

    var = np.array([1.3, 0.7])
    assert ep_log_z(var) == pytest.approx(gfitc_log_z(var), abs=1e-8)
    var0 = np.array([1.3, 1e-300])  # class 2 has no signal: q(u_2) stays at its prior
    binary = sparsegp.EPClassifier(kernel=SquaredExponential(1.3, ls[0]), jitter=0.0,
                                   optimizer=None, ep_tol=1e-12, ep_max_sweeps=1000).fit(X, y)
    lz0 = ep_log_z(var0)
    assert lz0 == pytest.approx(binary.log_evidence_, abs=1e-8)
    assert lz0 == pytest.approx(gfitc_log_z(var0), abs=1e-8)


def test_gemm_covariance_paths_match_compiled_loops():
    """Large-D covariances and gradient contractions by matrix products (_covariance)."""
    from sparsegp import _covariance, kernels
    rng = np.random.default_rng(11)
    for N, M, D in [(300, 40, 20), (100, 30, 200)]:
        X = rng.normal(size=(N, D)) * 0.3
        Z = rng.normal(size=(M, D)) * 0.3
        ls = np.exp(rng.normal(size=D) * 0.2) * 2
        K = kernels.se_kernel(X, Z, 1.3, ls)
        assert np.allclose(mck.kernel_kfu(X, Z, 1.3, ls), K, rtol=1e-12, atol=1e-15)
        W = rng.normal(size=(N, M))
        fast = _covariance.grad_by_size(X, Z, K, W, 0, 1.3, ls)
        ref = kernels.se_grad_contract(X, Z, K, W, ls)
        for a, b in zip(fast, ref):
            assert np.allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(b).max())
        Kz = kernels.se_kernel(Z, Z, 1.3, ls)
        Wz = rng.normal(size=(M, M))
        Wz = Wz + Wz.T
        fast = _covariance.grad_by_size(Z, Z, Kz, Wz, 0, 1.3, ls, symmetric=True)
        ref = kernels.se_grad_contract(Z, Z, Kz, Wz, ls, symmetric=True)
        for a, b in zip(fast, ref):
            # x = z on the diagonal: |x|^2 - 2 x.z + |z|^2 cancels to rounding level
            assert np.allclose(a, b, rtol=1e-7, atol=1e-7 * np.abs(b).max())


def test_minibatch_in_place_site_totals_equal_recomputation():
    """EP minibatch mode updates T_c, h_c by removing old and adding new contributions; after
    several minibatches (with hyper-parameter steps between them) they must equal the totals
    rebuilt from the stored sites and directions."""
    X, y, var, noi, ls, Z = _problem(12, 20, 3, 3, 2)
    hyp = mck.ClassParams(np.log(var), np.log(noi), np.log(ls), Z)
    st = mcs.EPState("ep", 20, 3, 3, mcl.class_counts_factors(y, 3))
    rng = np.random.default_rng(0)
    for step in range(6):
        idx = np.sort(rng.choice(20, 7, replace=False))
        prior = mcs.Prior(hyp, True, 1e-10)
        data = mcs.data_terms(X[idx], hyp, prior)
        _, grad, _ = mce.minibatch_update(X[idx], y[idx], idx, hyp, st, prior, data, 20 / 7,
                                          True, 1e-10)
        hyp = mck.ClassParams.unpack(hyp.pack() + 1e-3 * np.sign(grad), 3, 3, 2)
    w_tau, w_eta = mcs.site_totals(None, y, 3, *st.sites)
    T, h = mcs.u_space(st.Vo, w_tau, w_eta)
    assert np.allclose(st.T, T, atol=1e-12)
    assert np.allclose(st.h, h, atol=1e-12)
    assert np.any(st.sites[0] > 0)


# ------------------------------------------------------------------------------------------
# row sums: the pieces a distributed fit adds chunk by chunk give the whole-data values
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["ep", "sep"])
def test_row_parts_summed_over_chunks_give_the_evidence_and_gradient(method):
    X, y, var, noi, ls, Z = _problem(7, 30, 3, 4, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, method=method)
    prior = mcs.Prior(hyp, True, 1e-10)
    whole_lz, whole_grad, q = mce.batch_evidence(X, y, hyp, st, True, 1e-10, prior=prior)
    cav = None if method == "ep" else mcs.sep_cavity(prior, st)
    sums = [0.0, 0.0, 0.0]
    for rows in np.array_split(np.arange(30), 3):
        part = copy.copy(st)
        if method == "ep":
            part.sites = tuple(s[rows] for s in st.sites)
        data = mcs.data_terms(X[rows], hyp, prior)
        got = mce.row_evidence(X[rows], y[rows], hyp, prior, data, part, q, cav, True, 1.0,
                               True)
        sums = [a + b for a, b in zip(sums, got)]
    lz, grad = mce.evidence_from_rows(hyp, prior, st, q, cav, *sums, True)
    assert lz == pytest.approx(whole_lz, rel=1e-12)
    np.testing.assert_allclose(grad, whole_grad, rtol=1e-10, atol=1e-12)
    # and the fresh SEP site totals of a refinement are sums over rows too
    if method == "sep":
        cav = mcs.sep_cavity(prior, st)
        T, h = mce.sep_row_totals(y, mcs.data_terms(X, hyp, prior), cav, 3)
        parts = [mce.sep_row_totals(y[r], mcs.data_terms(X[r], hyp, prior), cav, 3)
                 for r in np.array_split(np.arange(30), 3)]
        np.testing.assert_allclose(sum(p[0] for p in parts), T, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(sum(p[1] for p in parts), h, rtol=1e-12, atol=1e-13)
