"""Kernel objects: values against scikit-learn, gradients against central differences, the
parameter protocol, translation, and the regressor on every family."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk

from sparsegp import SparseGPRegressor
from sparsegp.kernels import (ConstantKernel, Matern, SquaredExponential, Sum, as_kernel,
                              stationary_spec)

FAMILIES = [("se", None), ("matern", 0.5), ("matern", 1.5), ("matern", 2.5)]


def _ours(name, nu, variance, lengthscale, **kw):
    if name == "se":
        return SquaredExponential(variance, lengthscale, **kw)
    return Matern(variance, lengthscale, nu, **kw)


def _sklearns(name, nu, variance, lengthscale):
    base = sk.RBF(lengthscale) if name == "se" else sk.Matern(lengthscale, nu=nu)
    return sk.ConstantKernel(variance) * base


def _data(seed=0, n=30, m=7, d=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.normal(size=(m, d))


@pytest.mark.parametrize("name,nu", FAMILIES)
@pytest.mark.parametrize("ard", [False, True])
def test_values_match_sklearn(name, nu, ard):
    X, Z = _data()
    ls = np.array([0.7, 1.3, 2.1]) if ard else 0.9
    ours = _ours(name, nu, 1.7, ls)
    theirs = _sklearns(name, nu, 1.7, ls)
    np.testing.assert_allclose(ours(X, Z), theirs(X, Z), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours(X), theirs(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.diag(X), theirs.diag(X), rtol=1e-14)
    # translated from scikit-learn, the same matrix
    np.testing.assert_allclose(as_kernel(theirs)(X, Z), theirs(X, Z), rtol=1e-12, atol=1e-14)



@pytest.mark.parametrize("name,nu", FAMILIES)
@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 97])
def test_compiled_cross_fills_every_row_block(name, nu, n):
    # the compiled pass hands rows to threads in blocks (covfuncs.CROSS_BLOCK_ROWS): every
    # row of a partial last block, and no row past the end, must be written
    from sparsegp._numba import covfuncs
    rng = np.random.default_rng(5)
    X, Z = rng.normal(size=(n, 3)), rng.normal(size=(5, 3))
    ls = np.array([0.7, 1.3, 2.1])
    family = _ours(name, nu, 1.7, ls).family
    out = np.full((n + 1, 5), np.nan)          # one row beyond the matrix, to stay untouched
    covfuncs.stationary_cross(X, Z, family, 1.7, ls, False, out[:n])
    if n:
        np.testing.assert_allclose(out[:n], _sklearns(name, nu, 1.7, ls)(X, Z), rtol=1e-12,
                                   atol=1e-14)
    assert np.all(np.isnan(out[n]))


@pytest.mark.parametrize("name,nu", FAMILIES)
@pytest.mark.parametrize("deriv", [False, True])
@pytest.mark.parametrize("D", [1, 2, 37])
def test_compiled_cross_equals_the_per_pair_sum_bit_for_bit(name, nu, deriv, D,
                                                           one_numba_thread):
    # the cross pass runs its inner loop over Z's rows so that it vectorises; each entry must
    # still be the same ordered sum of ((x_d - z_d) / l_d)^2 as the per-pair helper, so that
    # committed grid cells refit to the same numbers
    from sparsegp._numba import covfuncs
    from sparsegp.kernels import kernel_matrix
    rng = np.random.default_rng(D)
    X, Z = rng.normal(size=(70, D)), rng.normal(size=(41, D))
    ls = rng.uniform(0.3, 3.0, size=D)
    family = _ours(name, nu, 1.7, 1.0).family
    out = covfuncs.stationary_cross(X, Z, family, 1.7, ls, deriv, np.empty((70, 41)))
    ref = np.array([[covfuncs.stationary_value(covfuncs.scaled_sqdist(X, i, Z, j, ls),
                                               family, 1.7, deriv) for j in range(41)]
                    for i in range(70)])
    assert np.array_equal(out, ref)
    # on one thread kernel_matrix runs the serial rows pass itself: the same bits
    assert np.array_equal(kernel_matrix(X, Z, family, 1.7, ls, deriv=deriv), out)

@pytest.mark.parametrize("name,nu", FAMILIES)
def test_covariance_from_formed_distances(name, nu):
    # callers that form squared distances by BLAS (IVM column, multi-class GEMM) take g from
    # covfuncs: it must give scikit-learn's values and read a cancellation-negative distance
    # as a coincident pair (k = s2), not as a NaN or a covariance above s2
    from sparsegp._numba import covfuncs
    X, Z = _data(seed=3)
    ls = np.array([0.7, 1.3, 2.1])
    family = _ours(name, nu, 1.7, ls).family
    d2 = (((X[:, None, :] - Z[None, :, :]) / ls) ** 2).sum(-1).ravel()
    d2[:3] = [-1e-15, 0.0, -0.0]
    out = np.empty_like(d2)
    covfuncs.stationary_from_sqdist(d2, family, 1.7, out)
    expected = _sklearns(name, nu, 1.7, ls)(X, Z).ravel()
    # q reaches both sides through different sums: a few ulps of q (<= ~30 here) move
    # s2 g(q) by ~q/2 * 1e-16 relative, a few 1e-15 (observed 3.7e-15); no atol: k >= 2e-7
    np.testing.assert_allclose(out[3:], expected[3:], rtol=1e-13, atol=0)
    assert np.all(out[:3] == 1.7)


def _central(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("name,nu", FAMILIES)
@pytest.mark.parametrize("ard", [False, True])
def test_gradient_matches_central_differences(name, nu, ard):
    X, Z = _data(1)
    rng = np.random.default_rng(2)
    W = rng.normal(size=(X.shape[0], Z.shape[0]))
    ls = np.array([0.7, 1.3, 2.1]) if ard else 0.9
    k = _ours(name, nu, 1.7, ls) + ConstantKernel(0.4)
    g_theta, g_Z, g_X = k.gradient(X, Z, W, wrt_X=True)

    def L_theta(t):
        return float(np.sum(W * k.clone_with_theta(t)(X, Z)))

    def L_Z(z):
        return float(np.sum(W * k(X, z)))

    def L_X(x):
        return float(np.sum(W * k(x, Z)))

    np.testing.assert_allclose(g_theta, _central(L_theta, k.theta), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_Z, _central(L_Z, Z), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_X, _central(L_X, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name,nu", FAMILIES)
def test_symmetric_gradient_counts_both_arguments(name, nu):
    X, _ = _data(3, n=12)
    rng = np.random.default_rng(4)
    W = rng.normal(size=(12, 12))
    W = W + W.T
    k = _ours(name, nu, 0.8, np.array([0.5, 1.0, 1.5]))
    g_theta, g_none, g_X = k.gradient(X, None, W, wrt_X=True)
    assert g_none is None
    np.testing.assert_allclose(
        g_X, _central(lambda x: float(np.sum(W * k(x))), X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        g_theta, _central(lambda t: float(np.sum(W * k.clone_with_theta(t)(X))), k.theta),
        rtol=1e-6, atol=1e-8)


def test_parameters_nest_and_clone():
    k = Matern(2.0, [1.0, 2.0], nu=2.5) + ConstantKernel(0.5, "fixed")
    p = k.get_params()
    assert p["k1__nu"] == 2.5 and p["k2__constant_value"] == 0.5
    k.set_params(k1__variance=3.0)
    assert k.k1.variance == 3.0
    assert k.n_dims == 3                                     # variance + two ARD ℓ
    np.testing.assert_allclose(k.theta, np.log([3.0, 1.0, 2.0]))
    np.testing.assert_allclose(k.bounds, np.log([[1e-5, 1e5]] * 3))
    k2 = k.clone_with_theta(np.log([1.5, 0.5, 0.25]))
    assert k.k1.variance == 3.0 and k2.k1.variance == 1.5
    np.testing.assert_allclose(k2.k1.lengthscale, [0.5, 0.25])
    assert clone(SparseGPRegressor(kernel=k)).kernel == k
    with pytest.raises(ValueError, match="invalid parameter 'nope'"):
        k.set_params(nope=1)


def test_scale_folds_into_the_variance():
    k = 3.0 * SquaredExponential(2.0, 1.0)
    assert isinstance(k, SquaredExponential) and k.variance == 6.0
    k = ConstantKernel(2.0, (1e-2, 1e2)) * Matern(1.0, 0.5, nu=0.5)
    assert isinstance(k, Matern) and k.variance == 2.0 and k.variance_bounds == (1e-2, 1e2)
    assert isinstance(SquaredExponential() + 1.0, Sum)


def test_unsupported_kernels_are_named():
    with pytest.raises(ValueError, match="RationalQuadratic is not supported"):
        as_kernel(sk.RationalQuadratic())
    with pytest.raises(ValueError, match="nu = 0.5, 1.5 or 2.5"):
        as_kernel(sk.Matern(nu=0.7))
    with pytest.raises(ValueError, match="one stationary kernel"):
        stationary_spec(SquaredExponential() + ConstantKernel(), 2, "SparseGPRegressor")
    with pytest.raises(ValueError, match="kernel must be"):
        as_kernel("rbf")
    with pytest.raises(ValueError, match="lengthscale must be positive"):
        stationary_spec(SquaredExponential(1.0, -1.0), 2, "X")


def _toy(seed=0, n=40, d=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("name,nu", FAMILIES)
def test_exact_regressor_equals_sklearn_gp(name, nu):
    """Fixed hyper-parameters, ARD: log marginal likelihood, mean and s.d. agree to 1e-8."""
    X, y = _toy()
    Xs = np.random.default_rng(5).uniform(-2, 2, size=(15, 2))
    ls, s2, sn2 = np.array([0.8, 1.6]), 1.3, 0.05
    theirs = GaussianProcessRegressor(_sklearns(name, nu, s2, ls) + sk.WhiteKernel(sn2),
                                      alpha=0.0, optimizer=None).fit(X, y)
    ours = SparseGPRegressor("exact", kernel=_sklearns(name, nu, s2, ls), noise_variance=sn2,
                             optimizer=None, normalize_y=False).fit(X, y)
    assert abs(ours.log_marginal_likelihood_ - theirs.log_marginal_likelihood_value_) < 1e-8
    m1, s1 = ours.predict(Xs, return_std=True)
    m2, s2_ = theirs.predict(Xs, return_std=True)
    np.testing.assert_allclose(m1, m2, rtol=0, atol=1e-8)
    # sklearn's std includes the WhiteKernel's noise; ours is the latent f's
    np.testing.assert_allclose(np.sqrt(s1 ** 2 + sn2), s2_, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name,nu", FAMILIES)
@pytest.mark.parametrize("method", ["fitc", "vfe", "dtc", "pitc"])
def test_sparse_with_z_equal_x_is_the_exact_gp(name, nu, method):
    X, y = _toy(1, n=25)
    kernel = _ours(name, nu, 1.1, np.array([0.9, 1.4]))
    exact = SparseGPRegressor("exact", kernel=kernel, noise_variance=0.1, optimizer=None)
    sparse = SparseGPRegressor(method, kernel=kernel, noise_variance=0.1, optimizer=None,
                               inducing_points=X, jitter=0.0)
    exact.fit(X, y)
    sparse.fit(X, y)
    assert abs(exact.log_marginal_likelihood_ - sparse.log_marginal_likelihood_) < 1e-6
    np.testing.assert_allclose(sparse.predict(X[:5]), exact.predict(X[:5]), atol=1e-6)


@pytest.mark.parametrize("name,nu", FAMILIES)
@pytest.mark.parametrize("method", ["fitc", "vfe", "pitc", "exact"])
def test_regressor_gradient_matches_central_differences(name, nu, method):
    """d log ML / d(log θ, Z) by central differences, for every family."""
    from sparsegp.inducing import median_split_blocks
    from sparsegp.regression import _base

    X, y = _toy(2, n=30)
    Z = X[::5].copy() + 0.05
    ls, s2, sn2 = np.array([0.9, 1.4]), 1.2, 0.15
    fam = _ours(name, nu, s2, ls).family
    blocks = median_split_blocks(X, 6) if method == "pitc" else None

    def lml(s2_, ls_, sn2_, Z_):
        if method == "exact":
            return _base.exact_lml(X, y, s2_, ls_, sn2_, False, family=fam)[0]
        return _base.sparse_lml(X, y, Z_, s2_, ls_, sn2_, method, blocks, 1e-6, False,
                                family=fam)[0]

    if method == "exact":
        _, g, _ = _base.exact_lml(X, y, s2, ls, sn2, family=fam)
    else:
        _, g, _ = _base.sparse_lml(X, y, Z, s2, ls, sn2, method, blocks, 1e-6, family=fam)
    h = 1e-6
    num_s2 = (lml(s2 + h, ls, sn2, Z) - lml(s2 - h, ls, sn2, Z)) / (2 * h)
    num_sn2 = (lml(s2, ls, sn2 + h, Z) - lml(s2, ls, sn2 - h, Z)) / (2 * h)
    num_ls = _central(lambda l: lml(s2, l, sn2, Z), ls)
    np.testing.assert_allclose(g["variance"], num_s2, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g["noise_variance"], num_sn2, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g["lengthscale"], num_ls, rtol=1e-5, atol=1e-7)
    if method != "exact":
        num_Z = _central(lambda z: lml(s2, ls, sn2, z), Z)
        np.testing.assert_allclose(g["inducing_points"], num_Z, rtol=1e-5, atol=1e-6)


def test_regressor_fits_sklearn_constant_times_matern():
    X, y = _toy(3, n=60)
    gp = SparseGPRegressor("fitc", n_inducing=10, random_state=0, max_iter=300,
                           kernel=sk.ConstantKernel() * sk.Matern(nu=1.5)).fit(X, y)
    assert isinstance(gp.kernel_, Matern) and gp.kernel_.nu == 1.5
    assert gp.kernel_.variance == gp.variance_
    assert gp.score(X, y) > 0.8


def test_fixed_hyperparameters_stay_fixed():
    X, y = _toy(4, n=50)
    gp = SparseGPRegressor("vfe", n_inducing=8, random_state=0, max_iter=100,
                           kernel=Matern(2.0, 0.7, nu=2.5, lengthscale_bounds="fixed")).fit(X, y)
    assert gp.kernel_.lengthscale == 0.7
    assert gp.log_marginal_likelihood(None, eval_gradient=True)[1].shape == (2,)


def test_legacy_covariance_arguments_are_refused():
    # the covariance comes from one place, the kernel: the old names are refused
    for legacy in ("lengthscale", "variance", "ard", "optimize"):
        with pytest.raises(TypeError, match=legacy):
            SparseGPRegressor("exact", kernel=SquaredExponential(), **{legacy: 2.0})


def test_cross_pass_benchmark_runs_quick(capsys):
    # benchmarks/bench_kernels.py --cross: the timing script checks the two forms agree bit
    # for bit before it times them
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_kernels.py"
    spec = importlib.util.spec_from_file_location("bench_kernels", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    bench.cross_pass(quick=True, repeats=1)
    rows = capsys.readouterr().out.strip().splitlines()[1:]
    assert len(rows) == 4 and all(r.rstrip().endswith("x") for r in rows)


def _fitted_stationary_kernels(est):
    """Every stationary part of ``est.kernel_``: a list per class in the multi-class models,
    per task in the IVM, and a Sum's terms (the IVM's bias variance) each on its own."""
    out = []
    for k in (est.kernel_ if isinstance(est.kernel_, list) else [est.kernel_]):
        out.extend(k.terms() if isinstance(k, Sum) else [k])
    return out


def _small_estimators(kernel=None):
    """One small fit of each estimator that exposes ``kernel_`` (binary or multi-class data
    as it needs), all with the same ``kernel``."""
    from sparsegp import (EPClassifier, GFITCClassifier, IVMClassifier, MultiClassEPClassifier,
                          MultiClassGFITCClassifier, MultiClassSVGPClassifier,
                          StagewiseGPClassifier)
    kw = {} if kernel is None else {"kernel": kernel}
    return [
        (SparseGPRegressor(n_inducing=5, max_iter=3, random_state=0, **kw), "regression"),
        (EPClassifier(max_iter=2, **kw), "binary"),
        (GFITCClassifier(n_inducing=4, max_iter=2, random_state=0, **kw), "binary"),
        (IVMClassifier(n_active=10, random_state=0, **kw), "binary"),
        (StagewiseGPClassifier(d_max=5, max_iter=2, random_state=0, **kw), "binary"),
        (MultiClassEPClassifier(n_inducing=4, max_iter=2, random_state=0, **kw), "classes"),
        (MultiClassGFITCClassifier(n_inducing=4, max_iter=2, random_state=0, **kw), "classes"),
        (MultiClassSVGPClassifier(n_inducing=4, max_iter=2, random_state=0, **kw), "classes"),
    ]


def _unit_data(kind):
    """Rows whose two features have very different units (3.7 and 0.11), so that every
    estimator that standardises its inputs converts length-scales between units."""
    rng = np.random.default_rng(3)
    U = rng.normal(size=(60, 2))
    X = U * np.array([3.7, 0.11]) + 5.0
    f = U[:, 0] - U[:, 1]
    if kind == "regression":
        return X, 2.3 * f + 0.1 * rng.normal(size=60)
    if kind == "binary":
        return X, (f > 0).astype(int)
    return X, np.digitize(f, [-0.5, 0.5])


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("index", range(8))
def test_fitted_kernel_carries_the_default_box_as_written(index):
    # issue 48: the regressor's default box came back through exp(log 1e6) and printed as
    # (1.0000000000000004e-06, 999999.9999999995); every default box is a short literal
    est, kind = _small_estimators()[index]
    est.fit(*_unit_data(kind))
    for k in _fitted_stationary_kernels(est):
        for name in ("variance_bounds", "lengthscale_bounds"):
            low, high = getattr(k, name)
            assert float(f"{low:.3g}") == low and float(f"{high:.3g}") == high, (name, k)
            assert "0000000" not in repr(k) and "9999999" not in repr(k), repr(k)
    if isinstance(est, SparseGPRegressor):
        assert est.kernel_.variance_bounds == (1e-6, 1e6)
        assert est.kernel_.lengthscale_bounds == (1e-6, 1e6)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("index", range(8))
@pytest.mark.parametrize("form", ["ours", "ours-ard", "sklearn"])
def test_fitted_kernel_carries_the_bounds_as_given(index, form):
    # bounds the user gave come back as given, whatever units the fit converts them to
    # (the inputs here are standardised per feature by every estimator that scales them)
    if form == "sklearn":
        kernel = sk.ConstantKernel(1.0, (0.3, 30.0)) * sk.RBF([1.0, 2.0], (0.07, 70.0))
    else:
        kernel = SquaredExponential(1.0, [1.0, 2.0] if form == "ours-ard" else 1.0,
                                    variance_bounds=(0.3, 30.0), lengthscale_bounds=(0.07, 70.0))
    est, kind = _small_estimators(kernel)[index]
    est.fit(*_unit_data(kind))
    for k in _fitted_stationary_kernels(est):
        assert tuple(k.variance_bounds) == (0.3, 30.0)
        assert tuple(k.lengthscale_bounds) == (0.07, 70.0)
        assert "variance_bounds=(0.3, 30.0), lengthscale_bounds=(0.07, 70.0)" in repr(k)
