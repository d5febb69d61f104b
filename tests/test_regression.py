"""Sparse GP regression family (issue 4, notes §4-§5): dense equivalences, gradients, inputs."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import assert_pinned_during_optimisation

from sparsegp import SparseGPRegressor
from sparsegp.exceptions import ConvergenceWarning, JitterWarning
from sparsegp.inducing import median_split_blocks
from sparsegp.kernels import SquaredExponential
from sparsegp.regression import _base
from sparsegp.regression._inducing import greedy_variance_selection

from reference import dense_regression as ref

SPARSE = ["sor", "dtc", "fitc", "fic", "pitc", "vfe"]
S2, SN2, JIT = 1.3, 0.2, 1e-6


def _problem(seed=0, N=40, D=2, M=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, -1]) + 0.1 * rng.normal(size=N)
    Z = rng.normal(size=(M, D))
    ls = np.linspace(0.9, 1.4, D)
    blocks = np.array_split(rng.permutation(N), 3)
    return X, y, Z, ls, [np.sort(b) for b in blocks]


def _fixed(method, Z, ls, blocks, ard=True, jitter=JIT):
    # the dense references are zero-mean GPs of y as given
    kernel = SquaredExponential(S2, np.asarray(ls, dtype=float) if ard else float(ls))
    return SparseGPRegressor(method, inducing_points=Z, kernel=kernel, noise_variance=SN2,
                             jitter=jitter, optimizer=None,
                             blocks=blocks if method == "pitc" else None, normalize_y=False)


def _rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)


# ---------------------------------------------------------------- dense equivalences (§5 13)
@pytest.mark.parametrize("method", SPARSE + ["exact"])
def test_matches_exact_gp_on_effective_covariance(method):
    X, y, Z, ls, blocks = _problem()
    gp = _fixed(method, Z, ls, blocks).fit(X, y)
    lml = ref.log_marginal_likelihood(method, X, y, Z, S2, ls, SN2, JIT, blocks)
    assert abs(gp.log_marginal_likelihood_ - lml) <= 1e-8 * abs(lml)
    g_ref = ref.gradient(method, X, y, Z, S2, ls, SN2, JIT, blocks)
    g = gp.log_marginal_likelihood_gradient_
    for key in ("variance", "lengthscale", "noise_variance", "inducing_points"):
        if g_ref[key] is None:
            assert g[key] is None
            continue
        assert _rel(g[key], g_ref[key]) <= 1e-8, key
    Xs = np.random.default_rng(1).normal(size=(7, X.shape[1]))
    m_ref, c_ref = ref.predict(method, X, y, Z, Xs, S2, ls, SN2, JIT, blocks)
    mean, std = gp.predict(Xs, return_std=True)
    assert _rel(mean, m_ref) <= 1e-8
    assert _rel(std ** 2, np.diag(c_ref)) <= 1e-8
    mean_c, cov = gp.predict(Xs, return_cov=True)
    assert _rel(mean_c, m_ref) <= 1e-8
    assert _rel(cov, c_ref) <= 1e-8


def test_isotropic_lengthscale_gradient_is_sum_of_ard():
    X, y, Z, _, blocks = _problem()
    ls = np.full(2, 1.1)
    iso = _fixed("fitc", Z, 1.1, blocks, ard=False).fit(X, y)
    g_ref = ref.gradient("fitc", X, y, Z, S2, ls, SN2, JIT)
    assert isinstance(iso.lengthscale_, float)
    assert abs(iso.log_marginal_likelihood_gradient_["lengthscale"] - g_ref["lengthscale"].sum()) \
        <= 1e-8 * abs(g_ref["lengthscale"].sum())


# ---------------------------------------------------------------- special cases (§5 14-15, 19)
@pytest.mark.parametrize("method", ["fitc", "pitc"])
def test_inducing_equal_to_training_inputs_gives_exact_gp(method):
    # well separated points so K_uu is well conditioned; tiny jitter so Q_ff = K_ff to 1e-10
    X = np.linspace(-4, 4, 20)[:, None]
    y = np.sin(X[:, 0])
    blocks = [np.arange(0, 7), np.arange(7, 20)]
    gp = _fixed(method, X, np.array([0.8]), blocks, jitter=1e-12).fit(X, y)
    ex = _fixed("exact", None, np.array([0.8]), None).fit(X, y)
    assert abs(gp.log_marginal_likelihood_ - ex.log_marginal_likelihood_) \
        <= 1e-8 * abs(ex.log_marginal_likelihood_)
    for key in ("variance", "lengthscale", "noise_variance"):
        assert _rel(gp.log_marginal_likelihood_gradient_[key],
                    ex.log_marginal_likelihood_gradient_[key]) <= 1e-8
    Xs = np.linspace(-5, 5, 9)[:, None]
    m1, c1 = gp.predict(Xs, return_cov=True)
    m2, c2 = ex.predict(Xs, return_cov=True)
    assert _rel(m1, m2) <= 1e-8 and _rel(c1, c2) <= 1e-8


def test_pitc_one_block_is_exact_gp_and_ignores_Z():
    X, y, Z, ls, _ = _problem()
    gp = _fixed("pitc", Z, ls, [np.arange(len(y))]).fit(X, y)
    ex = _fixed("exact", None, ls, None).fit(X, y)
    assert abs(gp.log_marginal_likelihood_ - ex.log_marginal_likelihood_) \
        <= 1e-8 * abs(ex.log_marginal_likelihood_)
    g, ge = gp.log_marginal_likelihood_gradient_, ex.log_marginal_likelihood_gradient_
    for key in ("variance", "lengthscale", "noise_variance"):
        assert _rel(g[key], ge[key]) <= 1e-8
    assert np.max(np.abs(g["inducing_points"])) <= 1e-8 * np.max(np.abs(g["lengthscale"]))


def test_pitc_singleton_blocks_equal_fitc():
    X, y, Z, ls, _ = _problem()
    p = _fixed("pitc", Z, ls, [np.array([i]) for i in range(len(y))]).fit(X, y)
    f = _fixed("fitc", Z, ls, None).fit(X, y)
    assert abs(p.log_marginal_likelihood_ - f.log_marginal_likelihood_) \
        <= 1e-10 * abs(f.log_marginal_likelihood_)
    for key in ("variance", "lengthscale", "noise_variance", "inducing_points"):
        assert _rel(p.log_marginal_likelihood_gradient_[key],
                    f.log_marginal_likelihood_gradient_[key]) <= 1e-8
    Xs = np.random.default_rng(2).normal(size=(6, 2))
    assert _rel(p.predict(Xs, return_cov=True)[1], f.predict(Xs, return_cov=True)[1]) <= 1e-8


def test_dtc_mean_equals_sor_and_variance_never_smaller():
    X, y, Z, ls, _ = _problem()
    sor = _fixed("sor", Z, ls, None).fit(X, y)
    dtc = _fixed("dtc", Z, ls, None).fit(X, y)
    Xs = np.random.default_rng(3).normal(scale=3.0, size=(50, 2))
    ms, ss = sor.predict(Xs, return_std=True)
    md, sd = dtc.predict(Xs, return_std=True)
    np.testing.assert_allclose(md, ms, rtol=1e-12, atol=1e-14)
    assert np.all(sd >= ss - 1e-12)
    assert np.any(sd > ss + 0.1)      # far from Z, SoR collapses, DTC does not
    assert sor.log_marginal_likelihood_ == dtc.log_marginal_likelihood_


def test_fitc_and_fic_differ_only_off_the_diagonal():
    X, y, Z, ls, _ = _problem()
    Xs = np.random.default_rng(4).normal(size=(8, 2))
    mf, cf = _fixed("fitc", Z, ls, None).fit(X, y).predict(Xs, return_cov=True)
    mi, ci = _fixed("fic", Z, ls, None).fit(X, y).predict(Xs, return_cov=True)
    np.testing.assert_allclose(mf, mi, rtol=1e-12)
    np.testing.assert_allclose(np.diag(cf), np.diag(ci), rtol=1e-12)
    off = ~np.eye(8, dtype=bool)
    assert np.max(np.abs(cf[off] - ci[off])) > 1e-3


def test_vfe_is_dtc_evidence_minus_trace_term():
    X, y, Z, ls, _ = _problem()
    vfe = _fixed("vfe", Z, ls, None).fit(X, y)
    dtc = _fixed("dtc", Z, ls, None).fit(X, y)
    Kuu = ref.se(Z, Z, S2, ls) + JIT * S2 * np.eye(len(Z))
    Kfu = ref.se(X, Z, S2, ls)
    trace = (len(y) * S2 - np.trace(Kfu @ np.linalg.solve(Kuu, Kfu.T))) / (2 * SN2)
    assert trace > 0
    assert abs(vfe.log_marginal_likelihood_ - (dtc.log_marginal_likelihood_ - trace)) \
        <= 1e-10 * abs(vfe.log_marginal_likelihood_)
    Xs = np.random.default_rng(5).normal(size=(5, 2))
    np.testing.assert_allclose(vfe.predict(Xs, return_std=True),
                               dtc.predict(Xs, return_std=True), rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), M=st.integers(1, 12),
       log_ls=st.floats(-1.5, 1.5), log_noise=st.floats(-4.0, 1.0))
def test_vfe_bound_never_exceeds_exact_evidence(seed, M, log_ls, log_noise):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(25, 2))
    y = np.sin(X.sum(axis=1)) + 0.2 * rng.normal(size=25)
    Z = X[rng.choice(25, size=M, replace=False)]
    ls = np.full(2, np.exp(log_ls))
    noise = float(np.exp(log_noise))
    F, _, _ = _base.sparse_lml(X, y, Z, 1.0, ls, noise, "vfe", jitter=1e-8,
                               eval_gradient=False)
    E, _, _ = _base.exact_lml(X, y, 1.0, ls, noise, eval_gradient=False)
    assert F <= E + 1e-9 * abs(E)


# ---------------------------------------------------------------- finite differences (§5 16)
def _fd_check(method, ard=True, seed=0):
    X, y, Z, ls, blocks = _problem(seed=seed, N=30, D=2, M=5)
    if not ard:
        ls = np.full(2, 1.2)
    args = dict(blocks=blocks if method == "pitc" else None, jitter=JIT)

    def f(s2, ls_, sn2, Z_):
        if method == "exact":
            return _base.exact_lml(X, y, s2, ls_, sn2, eval_gradient=False)[0]
        return _base.sparse_lml(X, y, Z_, s2, ls_, sn2, method, eval_gradient=False,
                                **args)[0]

    if method == "exact":
        _, g, _ = _base.exact_lml(X, y, S2, ls, SN2)
    else:
        _, g, _ = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, **args)
    checks = []
    h = 1e-5
    checks.append((g["variance"], (f(S2 + h, ls, SN2, Z) - f(S2 - h, ls, SN2, Z)) / (2 * h)))
    checks.append((g["noise_variance"],
                   (f(S2, ls, SN2 + h, Z) - f(S2, ls, SN2 - h, Z)) / (2 * h)))
    for j in range(2):
        e = np.zeros(2)
        e[j] = h
        checks.append((g["lengthscale"][j], (f(S2, ls + e, SN2, Z) - f(S2, ls - e, SN2, Z))
                       / (2 * h)))
    if method != "exact":
        for m in range(Z.shape[0]):
            for j in range(2):
                E = np.zeros_like(Z)
                E[m, j] = h
                checks.append((g["inducing_points"][m, j],
                               (f(S2, ls, SN2, Z + E) - f(S2, ls, SN2, Z - E)) / (2 * h)))
    an, fd = np.array(checks).T
    return an, fd


@pytest.mark.parametrize("method", SPARSE + ["exact"])
def test_gradient_matches_central_differences(method):
    an, fd = _fd_check(method)
    # relative per entry, with the floor at 1e-3 of the largest entry for entries near zero
    scale = np.maximum(np.abs(fd), 1e-3 * np.max(np.abs(fd)))
    assert np.max(np.abs(an - fd) / scale) <= 1e-6


def test_estimator_theta_gradient_matches_central_differences():
    X, y, Z, ls, _ = _problem()
    gp = _fixed("fitc", Z, ls, None).fit(X, y)
    theta = np.log([S2, *ls, SN2]) + 0.1
    _, g = gp.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-6
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd = (gp.log_marginal_likelihood(theta + e) - gp.log_marginal_likelihood(theta - e)) / (2 * h)
        assert abs(g[i] - fd) <= 1e-6 * max(abs(fd), 1e-3)
    assert gp.log_marginal_likelihood() == pytest.approx(gp.log_marginal_likelihood_, rel=1e-14)


# ---------------------------------------------------------------- augmentation, transduction
def test_augmented_prediction_matches_dense_sor_with_added_inducing_point():
    X, y, Z, ls, _ = _problem()
    Xs = np.vstack([np.random.default_rng(6).normal(size=(6, 2)), Z[:1]])
    jit = 1e-10     # the O(NM) formula ignores the jitter on the added point (notes §4.6)
    for method in ("sor", "dtc", "vfe"):
        gp = _fixed(method, Z, ls, None, jitter=jit).fit(X, y)
        mean, std = gp.predict(Xs, return_std=True, augment=True)
        m_ref, v_ref = ref.augmented_predict(X, y, Z, Xs, S2, ls, SN2, jit)
        assert _rel(mean, m_ref) <= 1e-8
        assert _rel(std ** 2, v_ref) <= 1e-7
    with pytest.raises(ValueError, match="augment"):
        _fixed("fitc", Z, ls, None).fit(X, y).predict(Xs, augment=True)


def test_bcm_matches_dense_posterior_of_test_values():
    X, y, Z, ls, blocks = _problem()
    Xs = np.random.default_rng(7).normal(size=(5, 2))
    gp = _fixed("pitc", Z, ls, blocks).fit(X, y)
    mean, cov = gp.predict(Xs, return_cov=True, transduce=True)
    m_ref, c_ref = ref.bcm_predict(X, y, Xs, S2, ls, SN2, JIT, blocks)
    assert _rel(mean, m_ref) <= 1e-8 and _rel(cov, c_ref) <= 1e-8
    _, std = gp.predict(Xs, return_std=True, transduce=True)
    np.testing.assert_allclose(std ** 2, np.diag(c_ref), rtol=1e-8)


# ---------------------------------------------------------------- sparsity is real
def test_no_n_by_n_factorisation(monkeypatch):
    rng = np.random.default_rng(8)
    X = rng.normal(size=(300, 2))
    y = np.sin(X[:, 0])
    sizes = []
    real = np.linalg.cholesky

    def spy(A, *a, **k):
        sizes.append(A.shape[-1])
        return real(A, *a, **k)

    monkeypatch.setattr(np.linalg, "cholesky", spy)
    for method in ("fitc", "dtc", "vfe", "pitc"):
        with pytest.warns(ConvergenceWarning, match="max_iter="):
            SparseGPRegressor(method, n_inducing=10, blocks=12, random_state=0,
                              max_iter=2).fit(X, y)
    assert sizes and max(sizes) < 100


# ---------------------------------------------------------------- estimator behaviour
@pytest.mark.parametrize("method", ["sod", "fitc", "pitc", "vfe", "exact"])
def test_optimisation_improves_evidence(method):
    rng = np.random.default_rng(9)
    X = rng.uniform(-3, 3, size=(60, 1))
    y = np.sin(2 * X[:, 0]) + 0.1 * rng.normal(size=60)
    kw = dict(n_inducing=8, kernel=SquaredExponential(1.0, 3.0), noise_variance=0.5,
              random_state=0)
    start = SparseGPRegressor(method, optimizer=None, **kw).fit(X, y)
    # enough iterations to converge (FITC moving Z needs ~380), so no ConvergenceWarning
    fit = SparseGPRegressor(method, max_iter=500, **kw).fit(X, y)
    assert fit.log_marginal_likelihood_ > start.log_marginal_likelihood_ + 1.0
    assert fit.n_iter_ > 0
    assert np.all(np.isfinite(fit.predict(X)))


def test_cg_restarts_greedy_kmeans_and_reproducibility():
    rng = np.random.default_rng(10)
    X = rng.uniform(-3, 3, size=(50, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1])
    for init in ("random", "kmeans", "greedy"):
        with pytest.warns(ConvergenceWarning, match="max_iter="):
            a = SparseGPRegressor("dtc", n_inducing=6, init=init, optimizer="cg", max_iter=5,
                                  n_restarts=1, random_state=3).fit(X, y)
            b = SparseGPRegressor("dtc", n_inducing=6, init=init, optimizer="cg", max_iter=5,
                                  n_restarts=1, random_state=3).fit(X, y)
        np.testing.assert_array_equal(a.inducing_points_, b.inducing_points_)
        assert a.log_marginal_likelihood_ == b.log_marginal_likelihood_
    sod = SparseGPRegressor("sod", n_inducing=10, subset="greedy", optimizer=None,
                            random_state=0).fit(X, y)
    assert sod.subset_indices_.size == 10 and np.unique(sod.subset_indices_).size == 10


def test_greedy_selection_picks_worst_explained_point():
    X = np.array([[0.0], [0.1], [5.0], [5.1], [10.0]])
    idx = greedy_variance_selection(X, 3, 1.0, np.array([1.0]), np.random.default_rng(0))
    # three well separated clusters: one point from each
    assert sorted(np.round(X[idx, 0] / 5).astype(int).tolist()) == [0, 1, 2]


# ---------------------------------------------------------------- bad input, jitter
def test_bad_input_raises_clear_value_errors():
    X, y, Z, ls, _ = _problem()
    gp = SparseGPRegressor("fitc", n_inducing=5, optimizer=None)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gp.fit(Xn, y)
    yn = y.copy()
    yn[1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        gp.fit(X, yn)
    with pytest.raises(ValueError, match="length"):
        gp.fit(X, y[:-2])
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="noise_variance"):
            SparseGPRegressor(noise_variance=bad, n_inducing=5).fit(X, y)
    with pytest.raises(ValueError, match="approximation"):
        SparseGPRegressor("nystrom").fit(X, y)
    with pytest.raises(ValueError, match="n_inducing"):
        SparseGPRegressor(n_inducing=100).fit(X, y)
    with pytest.raises(ValueError, match="columns"):
        SparseGPRegressor(inducing_points=np.zeros((3, 5))).fit(X, y)
    N = len(y)
    for blocks, msg in ([[np.arange(10), np.arange(5, N)], "overlap"],
                        [[np.arange(10), np.arange(12, N)], "cover"],
                        [[np.arange(N + 1)], "outside"],
                        [[np.arange(N) + 0.5], "integer"]):
        with pytest.raises(ValueError, match=msg):
            SparseGPRegressor("pitc", n_inducing=5, blocks=blocks).fit(X, y)


def test_duplicate_inducing_inputs_are_handled_by_jitter():
    X, y, Z, ls, _ = _problem()
    Zd = np.vstack([Z, Z[:3]])
    with pytest.warns(JitterWarning, match="jitter"):
        gp = SparseGPRegressor("fitc", inducing_points=Zd, kernel=SquaredExponential(1.0, ls),
                               jitter=0.0, optimizer=None).fit(X, y)
    assert gp.jitter_ > 0
    assert np.isfinite(gp.log_marginal_likelihood_)
    assert np.all(np.isfinite(gp.predict(X[:5], return_std=True)))
    # the default jitter copes with duplicates silently
    SparseGPRegressor("fitc", inducing_points=Zd, kernel=SquaredExponential(1.0, ls),
                      optimizer=None).fit(X, y)


# ---------------------------------------------------------------- plotting and figure
def test_plot_regression_1d_draws_band_data_and_inducing():
    from sparsegp.plotting import plot_regression_1d
    from sparsegp.plotting._mpl import pyplot

    rng = np.random.default_rng(11)
    X = rng.uniform(0, 6, size=(30, 1))
    y = np.sin(X[:, 0])
    gp = SparseGPRegressor("dtc", inducing_points=X[:4], kernel=SquaredExponential(1.0, 0.5),
                           optimizer=None).fit(X, y)
    ax = plot_regression_1d(gp, X, y, n_points=50, augment=True)
    labels = [line.get_label() for line in ax.get_lines()]
    assert {"data", "mean", "± 2σ", "inducing"} <= set(labels)
    mean_line = ax.get_lines()[labels.index("mean")]
    np.testing.assert_allclose(mean_line.get_ydata(),
                               gp.predict(mean_line.get_xdata()[:, None], augment=True))
    pyplot().close(ax.figure)
    with pytest.raises(ValueError, match="one input dimension"):
        plot_regression_1d(gp, np.zeros((3, 2)), np.zeros(3))


@pytest.mark.slow
def test_figure5_script_runs_quick(tmp_path):
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "figures" / "regression_fig5_uncertainty.py"
    spec = importlib.util.spec_from_file_location("fig5", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = mod.main(["--quick", "--out", str(tmp_path)])
    assert Path(path).stat().st_size > 10_000


@pytest.mark.parametrize("method", ["fitc", "dtc", "vfe", "pitc"])
def test_parallel_kernels_agree_with_serial(method, monkeypatch):
    X, y, Z, ls, blocks = _problem(N=60)
    monkeypatch.setattr(_base, "_n_parts", lambda: 1)
    serial = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks)
    monkeypatch.setattr(_base, "_PARALLEL_SIZE", 0)      # force the threaded code paths
    # uneven row ranges, more of them than rows per block, and blocks that do not divide them
    monkeypatch.setattr(_base, "_n_parts", lambda: 4)
    monkeypatch.setattr(_base, "ROW_BLOCK", 7)
    parallel = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks)
    assert parallel[0] == pytest.approx(serial[0], rel=1e-13)
    for key in ("variance", "lengthscale", "noise_variance", "inducing_points"):
        np.testing.assert_allclose(parallel[1][key], serial[1][key], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["dtc", "fitc", "pitc"])
def test_whitened_adjoint_of_alpha_is_gamma(method):
    """Vtᵀ α = γ (= L_uᵀ w): the gradient passes use γ for p and never sum Vtᵀ α over rows.

    α = (Q + Λ)⁻¹ y and Vt = K_fu L_u⁻ᵀ come from the dense effective covariance here.
    """
    X, y, Z, ls, blocks = _problem(seed=2, N=50, M=7)
    _, _, post = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks, jitter=JIT)
    Kuu = ref.se(Z, Z, S2, ls) + JIT * S2 * np.eye(len(Z))
    Lu = np.linalg.cholesky(Kuu)
    Vt = np.linalg.solve(Lu, ref.se(Z, X, S2, ls)).T
    alpha = np.linalg.solve(ref.effective_covariances(method, X, Z, S2, ls, SN2, JIT, blocks),
                            y)
    assert _rel(Lu.T @ post.w, Vt.T @ alpha) < 1e-10


@pytest.mark.parametrize("method", ["sor", "dtc", "fitc", "pitc", "vfe"])
def test_nearly_coincident_inducing_inputs_keep_dense_accuracy(method):
    """κ(K_uu) ≈ 1e10: the whitened algebra keeps the 1e-8 agreement with the dense reference.

    (Forming S from K_uf K_fu, as a faster variant did, squares that conditioning: its DTC
    gradient was off by 2e-7 here.)
    """
    X, y, Z, ls, blocks = _problem(seed=4, N=80, D=3, M=12)
    Z[1] = Z[0] + 1e-5
    lml, grad, _ = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks, jitter=1e-8)
    assert lml == pytest.approx(ref.log_marginal_likelihood(method, X, y, Z, S2, ls, SN2, 1e-8,
                                                            blocks), rel=1e-8)
    g_ref = ref.gradient(method, X, y, Z, S2, ls, SN2, 1e-8, blocks)
    for key in ("variance", "lengthscale", "noise_variance", "inducing_points"):
        scale = np.max(np.abs(g_ref[key]))
        np.testing.assert_allclose(grad[key], g_ref[key], rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("method", ["fitc", "dtc", "vfe", "pitc"])
def test_workspace_reuse_changes_nothing(method):
    """Reused buffers give the same results, and nothing returned aliases them."""
    X, y, Z, ls, blocks = _problem(N=60)
    fresh = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks)
    ws = _base.Workspace()
    first = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks, workspace=ws)
    kept = (first[0], {k: np.copy(v) for k, v in first[1].items()}, first[2].w.copy())
    _base.sparse_lml(X, y, Z + 0.3, 2.0 * S2, ls, SN2, method, blocks, workspace=ws)
    again = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks, workspace=ws)
    for res in (first, again):
        assert res[0] == fresh[0]
        for key in ("variance", "lengthscale", "noise_variance", "inducing_points"):
            np.testing.assert_array_equal(res[1][key], fresh[1][key])
    # the first call's outputs survived two later calls on the same workspace
    assert kept[0] == first[0]
    np.testing.assert_array_equal(first[2].w, kept[2])
    for key, val in kept[1].items():
        np.testing.assert_array_equal(first[1][key], val)


@pytest.mark.parametrize("method, family", [("fitc", 0), ("dtc", 0), ("vfe", 2),
                                            ("pitc", 0), ("pitc", 3), ("sor", 1)])
def test_fitted_mean_is_k_fu_w(method, family):
    """``fitted_mean=True`` returns the mean at the training inputs, K_fu w, bit for bit."""
    X, y, Z, ls, blocks = _problem(N=60)
    _, _, post = _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks, family=family,
                                  fitted_mean=True)
    np.testing.assert_array_equal(post.fitted_mean,
                                  _base.cross_cov(X, Z, S2, ls, family=family) @ post.w)
    assert _base.sparse_lml(X, y, Z, S2, ls, SN2, method, blocks)[2].fitted_mean is None


@pytest.mark.parametrize("method, warning, objective", [
    ("fitc", "no better than their mean", "auto"), ("pitc", "no better than their mean", "auto"),
    ("vfe", "no better than their mean", "auto"), ("dtc", "no better than their mean", "auto"),
    ("sor", "no better than their mean", "auto"),
    ("dtc", "far more certain than its kernel", "evidence"),
    ("sor", "far more certain than its kernel", "evidence")])
def test_fit_checks_reuse_the_final_evaluation(method, warning, objective, monkeypatch):
    """Targets independent of X trip the training-fit checks, which read K_fu w and
    tr(K_ff − Q_ff) off the final evaluation: outside ``sparse_lml`` the fit forms no
    covariance over the training rows, and SoR/DTC evaluate no VFE bound after it. SoR and
    DTC fit the noise as signal only when their own evidence moves the inducing inputs
    (``inducing_objective="evidence"``); placed by the VFE bound, they find no signal."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 2)), rng.normal(size=200)
    rows, methods, inside = [], [], [0]
    cross_cov, sparse_lml = _base.cross_cov, _base.sparse_lml

    def counted_cross_cov(A, B, *args, **kwargs):
        if not inside[0]:
            rows.append(A.shape[0])
        return cross_cov(A, B, *args, **kwargs)

    def counted_lml(*args, **kwargs):
        methods.append(args[6])
        inside[0] += 1
        try:
            return sparse_lml(*args, **kwargs)
        finally:
            inside[0] -= 1

    monkeypatch.setattr(_base, "cross_cov", counted_cross_cov)
    monkeypatch.setattr(_base, "sparse_lml", counted_lml)
    Z = X[:10].copy()
    with pytest.warns(ConvergenceWarning) as record:
        gp = SparseGPRegressor(method, inducing_points=Z, inducing_objective=objective,
                               random_state=0).fit(X, y)
    assert any(warning in str(w.message) for w in record)
    assert methods[-1] == method                       # the final evaluation is the last
    assert X.shape[0] not in rows
    assert gp._post.fitted_mean is None                 # not kept in the fitted model


def test_median_split_blocks_partition_and_balance():
    X = np.random.default_rng(12).normal(size=(1000, 3))
    blocks = median_split_blocks(X, 64)
    assert np.array_equal(np.sort(np.concatenate(blocks)), np.arange(1000))
    sizes = np.array([b.size for b in blocks])
    assert sizes.max() <= 64 and sizes.min() >= 32
    gp = SparseGPRegressor("pitc", n_inducing=20, optimizer=None, random_state=0).fit(
        X[:200], np.sin(X[:200, 0]))
    assert all(10 <= b.size <= 20 for b in gp.blocks_)


@pytest.mark.parametrize("method, pinned", [("fitc", True), ("vfe", True), ("pitc", True)])
def test_fit_holds_openblas_at_one_thread_and_restores_it(method, pinned,
                                                         blas_threads_at_calls,
                                                         openblas_at_two_threads):
    """The row-split methods run every evaluation with OpenBLAS at one thread (one switch per
    optimisation, not two per evaluation), and so does PITC, whose fit would otherwise
    depend on the thread count (issue 23 item 6); the user's thread counts come back after
    fit."""
    seen = blas_threads_at_calls(_base, "sparse_lml")
    X, y, Z, ls, blocks = _problem(N=50)
    with pytest.warns(ConvergenceWarning, match="max_iter="):
        SparseGPRegressor(method, inducing_points=Z, max_iter=3,
                          blocks=blocks if method == "pitc" else None).fit(X, y)
    assert_pinned_during_optimisation(seen, pinned, openblas_at_two_threads())
