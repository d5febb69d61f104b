"""SparseGPRegressor with a stationary kernel plus a constant, in every approximation (issue 48).

``k(x, x') + v_b``: the constant summands' bias variance v_b is added to every covariance
entry, K_ff, K_fu, K_uu and k** alike, so each approximation's Q_ff = K_fu K_uu⁻¹ K_uf is
built from the Sum kernel. Each approximation's evidence (VFE: the bound) and predictions are
checked against dense references formed from the fitted ``kernel_`` object itself (which
computes the Sum by its own ``__call__``, in the user's units), the gradient by central
differences (log v_b included), and a fit shows what the constant is for: a large offset in
y that a zero-mean GP without it cannot follow away from the data.
"""
import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as skk

from sparsegp import SparseGPRegressor
from sparsegp.inducing import median_split_blocks
from sparsegp.kernels import ConstantKernel, Matern, SquaredExponential, Sum
from sparsegp.regression import _base

from reference import dense_regression as ref
from test_log_marginal_likelihood import STEP, _central_differences

METHODS = ["sod", "sor", "dtc", "fitc", "fic", "pitc", "vfe", "exact"]
SPARSE = ["sor", "dtc", "fitc", "fic", "pitc", "vfe"]


def _data(n=40, seed=0, offset=7.0):
    """Inputs in units far from the model's, targets with an offset and a scale."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2)) * np.array([3.0, 0.5]) + 4.0
    y = 2.0 * np.sin(X[:, 0] / 3.0) + X[:, 1] + offset + 0.1 * rng.normal(size=n)
    return X, y


def _fit(est, X, y):
    with warnings.catch_warnings():
        # the small fits stop at max_iter: their ConvergenceWarnings are not the subject here
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _kernel(i):
    """The three spellings: free v_b, a fixed constant beside a free one, scikit-learn's."""
    return [Matern(1.0, 0.8, nu=1.5) + ConstantKernel(0.5, (1e-3, 1e3)),
            ConstantKernel(0.2, (1e-3, 1e3)) + SquaredExponential(1.3, [1.0, 2.0])
            + ConstantKernel(0.3, (1e-3, 1e3)),
            skk.ConstantKernel(1.5, (1e-2, 1e2)) * skk.RBF(0.8, (1e-2, 1e2))
            + skk.ConstantKernel(0.4, (1e-2, 1e2))][i]


def _pieces(est, X, y):
    """What the dense references need, in the user's units: training rows, centred targets,
    Z, noise, the absolute K_uu jitter and the PITC blocks."""
    method = est.approximation
    Xf, yc = X, y - est.y_mean_
    if method == "sod":
        Xf, yc = X[est.subset_indices_], yc[est.subset_indices_]
    Z = getattr(est, "inducing_points_", None)
    jitter = est.jitter_ * est.variance_
    return Xf, yc, Z, est.noise_variance_, jitter, getattr(est, "blocks_", None)


@pytest.mark.parametrize("kernel", [0, 1, 2])
@pytest.mark.parametrize("method", METHODS)
def test_evidence_and_predictions_equal_dense_ones_of_the_kernel_object(method, kernel):
    X, y = _data()
    est = _fit(SparseGPRegressor(method, n_inducing=8, kernel=_kernel(kernel), max_iter=3,
                                 random_state=0), X, y)
    k = est.kernel_
    assert isinstance(k, Sum) and isinstance(k.k2, ConstantKernel)
    assert k.k2.constant_value > 0 and "bias_variance" in est.log_marginal_likelihood_gradient_
    Xf, yc, Z, noise, jitter, blocks = _pieces(est, X, y)
    dense = "exact" if method == "sod" else method          # SoD: the exact GP of its subset
    lml = ref.kernel_log_marginal_likelihood(dense, k, Xf, yc, Z, noise, jitter, blocks)
    # the same density formed two ways, from matrices with condition numbers up to ~1e6
    # (K_uu with its 1e-6 jitter): measured at most 2e-12 relative
    np.testing.assert_allclose(est.log_marginal_likelihood_, lml, rtol=1e-9)
    np.testing.assert_allclose(est.log_marginal_likelihood(est.theta_), lml, rtol=1e-9)
    Xs = np.random.default_rng(5).normal(size=(6, 2)) * np.array([4.0, 1.0]) + 4.0
    mean, cov = est.predict(Xs, return_cov=True)
    m_ref, c_ref = ref.kernel_predict(dense, k, Xf, yc, Z, Xs, noise, jitter, blocks)
    scale = np.max(np.abs(c_ref))
    # measured at most 4e-10 of the prior variance
    np.testing.assert_allclose(mean - est.y_mean_, m_ref, rtol=0, atol=1e-8 * scale ** 0.5)
    np.testing.assert_allclose(cov, c_ref, rtol=0, atol=1e-8 * scale)
    _, std = est.predict(Xs, return_std=True)
    np.testing.assert_allclose(std ** 2, np.diag(c_ref), rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("method", ["sor", "dtc", "vfe"])
def test_augmented_predictions_equal_dense_sor_with_the_test_point_added(method):
    X, y = _data(seed=1)
    est = _fit(SparseGPRegressor(method, n_inducing=8, kernel=_kernel(0), max_iter=3,
                                 random_state=0, jitter=1e-10), X, y)
    k = est.kernel_
    Xf, yc, Z, noise, jitter, _ = _pieces(est, X, y)
    Xs = np.random.default_rng(6).normal(size=(5, 2)) + 4.0
    mean, std = est.predict(Xs, return_std=True, augment=True)
    for t in range(Xs.shape[0]):
        Zt = np.vstack([Z, Xs[t:t + 1]])
        # the O(N M) formula puts no jitter on the added point (notes §4.6): 1e-10 here
        m_ref, c_ref = ref.kernel_predict("sor", k, Xf, yc, Zt, Xs[t:t + 1], noise, jitter)
        np.testing.assert_allclose(mean[t] - est.y_mean_, m_ref[0], rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(std[t] ** 2, c_ref[0, 0], rtol=1e-6)


@pytest.mark.parametrize("method", ["dtc", "fitc", "pitc"])
def test_transduction_equals_the_dense_posterior_of_the_test_values(method):
    X, y = _data(seed=2)
    est = _fit(SparseGPRegressor(method, n_inducing=8, kernel=_kernel(1), max_iter=3,
                                 random_state=0), X, y)
    Xf, yc, _, noise, _, blocks = _pieces(est, X, y)
    Xs = np.random.default_rng(7).normal(size=(5, 2)) + 4.0
    mean, cov = est.predict(Xs, return_cov=True, transduce=True)
    # the transduction's K_uu takes the jitter argument relative to the model's s²
    m_ref, c_ref = ref.kernel_bcm_predict(method, est.kernel_, Xf, yc, Xs, noise,
                                          est.jitter * est.variance_, blocks)
    np.testing.assert_allclose(mean - est.y_mean_, m_ref, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(cov, c_ref, rtol=0, atol=1e-8 * np.max(np.abs(c_ref)))


@pytest.mark.parametrize("kernel", [0, 2])
@pytest.mark.parametrize("method", METHODS)
def test_theta_gradient_by_central_differences(method, kernel):
    X, y = _data(seed=3)
    est = _fit(SparseGPRegressor(method, n_inducing=8, kernel=_kernel(kernel), max_iter=3,
                                 random_state=0), X, y)
    theta = est.theta_
    # [log s², log ℓ, log v_b, log σ²]: the constant's entry is the kernel's last
    assert theta.size == 4
    np.testing.assert_allclose(theta[2], np.log(est.kernel_.k2.constant_value), rtol=1e-12)
    lml, g = est.log_marginal_likelihood(theta, eval_gradient=True)
    fd = _central_differences(est.log_marginal_likelihood, theta)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    # the stored natural-parameter gradient is the same in the user's units
    np.testing.assert_allclose(
        est.log_marginal_likelihood_gradient_["bias_variance"] * est.kernel_.k2.constant_value,
        g[2], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("method", SPARSE + ["exact"])
def test_evidence_gradient_by_central_differences_with_the_inducing_inputs(method):
    """Every natural parameter, v_b and Z included, at a point away from any optimum; PITC
    with uneven blocks, so that its padding is covered."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(30, 2))
    y = np.sin(X[:, 0]) + 3.0 + 0.1 * rng.normal(size=30)
    Z = X[:6] + 0.05
    blocks = median_split_blocks(X, 7)
    ls = np.array([0.9, 1.4])
    p0 = {"variance": 1.3, "noise_variance": 0.2, "bias_variance": 2.5}

    def lml(p, ls_, Z_):
        if method == "exact":
            return _base.exact_lml(X, y, p["variance"], ls_, p["noise_variance"], False,
                                   bias_variance=p["bias_variance"])[0]
        return _base.sparse_lml(X, y, Z_, p["variance"], ls_, p["noise_variance"], method,
                                blocks, 1e-6, False, bias_variance=p["bias_variance"])[0]

    if method == "exact":
        _, g, _ = _base.exact_lml(X, y, 1.3, ls, 0.2, bias_variance=2.5)
    else:
        _, g, _ = _base.sparse_lml(X, y, Z, 1.3, ls, 0.2, method, blocks, 1e-6,
                                   bias_variance=2.5)
    for name in p0:
        up, down = dict(p0), dict(p0)
        up[name] += STEP
        down[name] -= STEP
        fd = (lml(up, ls, Z) - lml(down, ls, Z)) / (2 * STEP)
        np.testing.assert_allclose(g[name], fd, rtol=1e-6, atol=1e-7, err_msg=name)
    fd_ls = _central_differences(lambda v: lml(p0, v, Z), ls)
    np.testing.assert_allclose(g["lengthscale"], fd_ls, rtol=1e-6, atol=1e-7)
    if method != "exact":
        fd_Z = _central_differences(lambda v: lml(p0, ls, v.reshape(Z.shape)), Z.ravel())
        np.testing.assert_allclose(g["inducing_points"].ravel(), fd_Z, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("method", METHODS)
def test_a_constant_summand_learns_a_large_offset(method):
    """A zero-mean GP (``normalize_y=False``) of y = f(x) + 20: with the constant, v_b takes
    the offset's square and predictions away from the data stay near 20; without it they
    fall back towards 0."""
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(80, 1))
    y = np.sin(2 * X[:, 0]) + 20.0 + 0.1 * rng.normal(size=80)
    Xt = np.linspace(-6, 6, 13)[:, None]
    yt = np.sin(2 * Xt[:, 0]) + 20.0
    # the inducing inputs start at random rows, where the measurements below were made: from
    # k-means centres the fit with the constant is the same (evidence 47.9), but the one
    # without it stops at a line through the offset (length-scale 100, evidence -83 against
    # 42 from random rows), whose RMSE on these 13 points, 0.85, is no fall towards 0 (SoD's
    # rows are random by its own default)
    kw = dict(n_inducing=30 if method == "sod" else 12, normalize_y=False, random_state=0,
              **({} if method == "sod" else {"init": "random"}))
    with_c = _fit(SparseGPRegressor(method, kernel=SquaredExponential()
                                    + ConstantKernel(1.0), **kw), X, y)
    without = _fit(SparseGPRegressor(method, kernel=SquaredExponential(), **kw), X, y)

    def rmse(est):
        return np.sqrt(np.mean((est.predict(Xt) - yt) ** 2))

    assert 100.0 < with_c.kernel_.k2.constant_value < 1600.0
    assert with_c.log_marginal_likelihood_ > without.log_marginal_likelihood_
    # measured 0.63-0.80 against 0.81-3.5 (SoD's 30 points: both length-scales long)
    assert rmse(with_c) < 0.85 and rmse(with_c) < rmse(without)
    if method != "sod":
        assert rmse(with_c) < 0.5 * rmse(without)


@pytest.mark.parametrize("method", ["sod", "fitc", "pitc", "vfe", "exact"])
def test_a_fixed_constant_summand_stays_fixed(method):
    X, y = _data(seed=5)
    kw = dict(n_inducing=8, max_iter=5, random_state=0)
    plain = _fit(SparseGPRegressor(method, kernel=SquaredExponential(), **kw), X, y)
    for normalize_y in (False, True):
        est = _fit(SparseGPRegressor(method, kernel=SquaredExponential()
                                     + ConstantKernel(0.5, "fixed"), normalize_y=normalize_y,
                                     **kw), X, y)
        # no entry in theta_; v_b in the units of y², as the signal variance is: relative to
        # var(y) with normalize_y (model units), as given without
        assert est.theta_.size == plain.theta_.size
        assert est.kernel_.k2.constant_value_bounds == "fixed"
        assert est.kernel_.k2.constant_value == 0.5 * est.y_std_ ** 2
        assert est._vb == 0.5
        # the gradient by v_b is still reported (it is a derivative, not a search entry)
        assert np.isfinite(est.log_marginal_likelihood_gradient_["bias_variance"])
        # and the held v_b is what the evidence uses: the round trip through kernel_
        again = _fit(SparseGPRegressor(method, kernel=est.kernel_, optimizer=None,
                                       normalize_y=False, n_inducing=8, random_state=0,
                                       noise_variance=est.noise_variance_,
                                       inducing_points=getattr(est, "inducing_points_", None)
                                       if method != "sod" else None), X, y)
        if not normalize_y and method != "sod":
            np.testing.assert_allclose(again.log_marginal_likelihood_,
                                       est.log_marginal_likelihood_, rtol=1e-9)


def test_the_summand_moves_the_fit_only_through_v_b():
    """v_b = 0 held fixed is the kernel without the summand: the same evidence and gradient."""
    X, y = _data(seed=6)
    kw = dict(n_inducing=8, optimizer=None, random_state=0)
    for method in METHODS:
        a = _fit(SparseGPRegressor(method, kernel=SquaredExponential()
                                   + ConstantKernel(0.0, "fixed"), **kw), X, y)
        b = _fit(SparseGPRegressor(method, kernel=SquaredExponential(), **kw), X, y)
        np.testing.assert_allclose(a.log_marginal_likelihood_, b.log_marginal_likelihood_,
                                   rtol=1e-12)
        np.testing.assert_allclose(a.predict(X[:5]), b.predict(X[:5]), rtol=1e-12)


@pytest.mark.parametrize("kernel", [Matern() + Matern(), ConstantKernel(0.5),
                                    SquaredExponential() + ConstantKernel(-0.1)])
def test_unsupported_sums_raise(kernel):
    X, y = _data(20)
    with pytest.raises(ValueError, match="one stationary kernel|bias variance"):
        SparseGPRegressor(kernel=kernel, optimizer=None).fit(X, y)


def test_greedy_start_takes_the_constant_into_the_prior_variance():
    """The greedy start picks, each time, the largest Var[f(x) | u] under k + v_b: the same
    points as brute-force pivoting of the dense k(X, X) + v_b."""
    from sparsegp.regression._inducing import greedy_variance_selection

    rng = np.random.default_rng(8)
    X = rng.uniform(-2, 2, size=(40, 2))
    ls, vb = np.array([0.7, 1.1]), 3.0
    idx = greedy_variance_selection(X, 6, 1.2, ls, np.random.default_rng(0), 1e-10,
                                    bias_variance=vb)
    K = (SquaredExponential(1.2, ls) + ConstantKernel(vb))(X)
    chosen = [int(idx[0])]                          # the first point is drawn at random
    for _ in range(5):
        S = np.array(chosen)
        resid = np.diag(K) - np.einsum("ij,ji->i", K[:, S],
                                       np.linalg.solve(K[np.ix_(S, S)], K[S, :]))
        resid[S] = -np.inf
        chosen.append(int(np.argmax(resid)))
    np.testing.assert_array_equal(idx, chosen)
    # and without v_b the choice differs here (the constant is explained by the first point)
    plain = greedy_variance_selection(X, 6, 1.2, ls, np.random.default_rng(0), 1e-10)
    assert not np.array_equal(plain, idx)


@pytest.mark.parametrize("method", ["sod", "fitc"])
def test_greedy_starts_and_restarts_with_the_constant(method):
    X, y = _data(seed=9)
    greedy = {"subset" if method == "sod" else "init": "greedy"}     # SoD's rows: subset
    est = _fit(SparseGPRegressor(method, n_inducing=8, n_restarts=1, kernel=_kernel(0),
                                 max_iter=5, random_state=0, **greedy), X, y)
    assert np.isfinite(est.log_marginal_likelihood_)
    assert np.all(np.isfinite(est.predict(X)))
