"""Multi-class SVGP (robust-max VI) baseline (notes multiclass_ep.md §7.2): ELBO against an
independent dense computation, analytic gradients against finite differences, minibatch
unbiasedness, the bound on the marginal likelihood, estimator behaviour and input checks."""
import numpy as np
import pytest

from reference.dense_multiclass_baselines import log_marginal_mc, svgp_elbo_dense
from sparsegp import MultiClassSVGPClassifier
from sparsegp.kernels import SquaredExponential
from sparsegp.metrics import mean_nlp
from sparsegp.classification.multiclass.kernel import ClassParams
from sparsegp.classification.multiclass._svgp import _Variational, gauss_hermite, svgp_elbo

EPS = 1e-3
JITTER = 1e-10


def _problem(seed, N=9, D=2, C=3, M=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = (np.arange(N) % C).astype(np.int64)
    hyp = ClassParams(np.log(rng.uniform(0.6, 1.6, C)), np.log(rng.uniform(0.1, 0.6, C)),
                 np.log(rng.uniform(0.6, 2.0, (C, D))), rng.normal(size=(C, M, D)))
    L = np.tril(rng.normal(size=(C, M, M)) * 0.3)
    L[:, np.arange(M), np.arange(M)] = rng.uniform(0.3, 1.0, (C, M))
    q = _Variational(rng.normal(size=(C, M)) * 0.5, L)
    return X, y, hyp, q


def _dense(X, y, hyp, q, nik):
    return svgp_elbo_dense(X, y, q.m, q.L, hyp.Z, np.exp(hyp.log_variance),
                           np.exp(hyp.log_noise), np.exp(hyp.log_lengthscale), EPS, JITTER, nik)


@pytest.mark.parametrize("nik", [True, False])
def test_elbo_matches_dense_adaptive_quadrature(nik):
    X, y, hyp, q = _problem(0)
    x, w = gauss_hermite(100)
    elbo = svgp_elbo(X, y, hyp, q, EPS, JITTER, nik, x, w, with_grad=False)[0]
    ref = _dense(X, y, hyp, q, nik)
    assert abs(elbo - ref) < 1e-8 * abs(ref)


@pytest.mark.parametrize("nik", [True, False])
def test_gradient_matches_finite_differences(nik):
    X, y, hyp, q = _problem(1)
    C, M, D = hyp.Z.shape
    x, w = gauss_hermite(60)
    _, gh, gq = svgp_elbo(X, y, hyp, q, EPS, JITTER, nik, x, w)
    vec = np.concatenate([hyp.pack(), q.pack()])
    g = np.concatenate([gh.pack(), gq.pack()])
    nh = hyp.pack().size
    h = 1e-5
    fd = np.empty_like(vec)
    for j in range(vec.size):
        vals = []
        for sgn in (1.0, -1.0):
            v = vec.copy()
            v[j] += sgn * h
            vals.append(svgp_elbo(X, y, ClassParams.unpack(v[:nh], C, M, D),
                                  _Variational.unpack(v[nh:], C, M), EPS, JITTER, nik, x, w,
                                  with_grad=False)[0])
        fd[j] = (vals[0] - vals[1]) / (2 * h)
    # m, every L entry, log variance, log noise, every log length-scale, every Z coordinate
    err = np.abs(g - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, (err.max(), np.argmax(err))


def test_minibatch_estimates_are_unbiased():
    """Average over a partition of the N/|B|-scaled minibatch ELBO (and gradient) = full."""
    X, y, hyp, q = _problem(2, N=12)
    x, w = gauss_hermite(40)
    full, gh, gq = svgp_elbo(X, y, hyp, q, EPS, JITTER, True, x, w)
    gfull = np.concatenate([gh.pack(), gq.pack()])
    parts = np.random.default_rng(0).permutation(12).reshape(3, 4)
    vals, grads = [], []
    for idx in parts:
        e, a, b = svgp_elbo(X[idx], y[idx], hyp, q, EPS, JITTER, True, x, w, scale=3.0)
        vals.append(e)
        grads.append(np.concatenate([a.pack(), b.pack()]))
    assert abs(np.mean(vals) - full) < 1e-10 * abs(full)
    np.testing.assert_allclose(np.mean(grads, axis=0), gfull, rtol=1e-9, atol=1e-11)


def test_elbo_bounds_monte_carlo_marginal_likelihood():
    """After fitting q(u) and Z (hyper-parameters fixed), ELBO <= log p(y) estimated by brute
    force Monte Carlo over the exact GP prior of the noisy latents."""
    rng = np.random.default_rng(3)
    N, D, C = 5, 1, 3
    X = np.linspace(-2, 2, N)[:, None]
    y = np.array([0, 0, 1, 2, 2])
    est = MultiClassSVGPClassifier(n_inducing=3, latent_noise_variance=0.1,
                                   kernel=SquaredExponential(2.0, np.ones(D), "fixed", "fixed"),
                                   latent_noise_variance_bounds="fixed", max_iter=100,
                                   random_state=0)
    est.fit(X, y)
    logp = log_marginal_mc(X, y, np.full(C, 2.0), np.full(C, 0.1), np.ones((C, D)), EPS,
                           n_samples=400000, rng=rng)
    assert est.elbo_ < logp
    # the bound was actually optimised (its gap stays large: E_q log p(y|f) pays log(eps/(C-1))
    # on the mass of q that misclassifies, whereas log E p(y|f) barely notices it)
    assert est.elbo_ > est.elbo_history_[0] + 1.0


# ------------------------------------------------------------------------------------------
# estimator
# ------------------------------------------------------------------------------------------
def _toy(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 2))
    y = np.where(X[:, 0] > 1, 2, np.where(X[:, 1] > 0, 1, 0))
    return X, np.array([10, 20, 30])[y]


def test_estimator_batch_fit_predict():
    X, y = _toy()
    calls = []
    est = MultiClassSVGPClassifier(n_inducing=5, max_iter=25, random_state=0,
                                   callback=lambda e, it: calls.append(it))
    est.fit(X, y)
    assert list(est.classes_) == [10, 20, 30]
    assert est.inducing_points_.shape == (3, 5, 2)
    assert est.q_sqrt_.shape == (3, 5, 5) and np.allclose(est.q_sqrt_, np.tril(est.q_sqrt_))
    assert len(calls) == est.n_iter_ > 0
    assert est.elbo_history_.shape == (est.n_iter_ + 1,)
    assert est.elbo_ > est.elbo_history_[0]
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    assert np.all(P >= EPS / 2 - 1e-12)
    assert np.mean(est.predict(X) == y) > 0.85
    with pytest.raises(ValueError, match="not in classes"):
        mean_nlp(np.where(y == 10, 99, y), P, classes=est.classes_)
    assert -mean_nlp(y, P, classes=est.classes_) == pytest.approx(
        np.mean(np.log(P[np.arange(len(y)), np.searchsorted(est.classes_, y)])))
    assert est.score(X, y) == np.mean(est.predict(X) == y)
    est2 = MultiClassSVGPClassifier(n_inducing=5, max_iter=25, random_state=0).fit(X, y)
    assert est2.elbo_ == est.elbo_



def test_expected_log_likelihood_is_the_elbo_data_term_and_below_log_predictive():
    X, y = _toy()
    est = MultiClassSVGPClassifier(n_inducing=5, max_iter=25, random_state=0).fit(X, y)
    ell = est.expected_log_likelihood(X, y)
    assert ell.shape == (len(y),)
    y_idx = np.searchsorted(est.classes_, y).astype(np.int64)
    nik, jitter = est._nik
    Xm = est._scaling.transform(X)                      # the fitted state is in model units
    elbo = [svgp_elbo(Xm, y_idx, est._hyp, est._q, EPS, jitter, nik, *est._gh, scale=s,
                      with_grad=False)[0] for s in (1.0, 0.0)]
    # the ELBO is sum_i E_q[log p(y_i | f_i)] - KL, and at scale 0 it is -KL
    assert ell.sum() == pytest.approx(elbo[0] - elbo[1], rel=1e-12, abs=1e-10)
    # Jensen: E_q[log p] <= log E_q[p], row by row
    P = est.predict_proba(X)
    assert np.all(ell <= np.log(P[np.arange(len(y)), y_idx]) + 1e-9)
    with pytest.raises(ValueError, match="not in classes"):
        est.expected_log_likelihood(X, np.where(y == 10, 99, y))
    with pytest.raises(ValueError, match="rows"):
        est.expected_log_likelihood(X[:-1], y)

def test_estimator_minibatch_from_memmap(tmp_path):
    X, y = _toy(80, seed=1)
    mm = np.lib.format.open_memmap(tmp_path / "X.npy", mode="w+", dtype=np.float64,
                                   shape=X.shape)
    mm[:] = X
    mm.flush()
    Xr = np.load(tmp_path / "X.npy", mmap_mode="r")
    calls = []
    est = MultiClassSVGPClassifier(n_inducing=5, batch_size=20, max_iter=30, learning_rate=0.02,
                                   random_state=0, callback=lambda e, it: calls.append(it))
    est.fit(Xr, y)
    assert len(calls) == 30 * 4
    assert est.elbo_history_.shape == (30,)
    assert est.elbo_history_[-1] > est.elbo_history_[0]
    x, w = gauss_hermite(100)
    # the private state is in the fit's model units (sparsegp._scaling)
    full = svgp_elbo(est._scaling.transform(X), np.searchsorted(est.classes_, y), est._hyp,
                     est._q, EPS, JITTER, True,
                     x, w, with_grad=False)[0]
    assert abs(est.elbo_ - full) < 1e-9 * abs(full)
    assert np.mean(est.predict(X) == y) > 0.8


@pytest.mark.parametrize("kwargs, X_mod, y_mod, match", [
    ({}, None, "single", "at least 2 classes"),
    ({}, "nan", None, "NaN"),
    ({"batch_size": 0}, None, None, "batch_size"),
    ({"n_inducing": 25, "init": "subset"}, None, None, "smallest class"),
    ({"epsilon": 1.5}, None, None, "epsilon"),
    ({"batch_size": 10}, "nan", None, "NaN"),
])
def test_bad_input(kwargs, X_mod, y_mod, match):
    X, y = _toy()
    if X_mod == "nan":
        X = X.copy()
        X[3, 1] = np.nan
    if y_mod == "single":
        y = np.full(len(y), 10)
    with pytest.raises(ValueError, match=match):
        MultiClassSVGPClassifier(**{"max_iter": 1, **kwargs}).fit(X, y)


@pytest.mark.slow
@pytest.mark.data
@pytest.mark.parametrize("name", ["wine", "new_thyroid"])
def test_uci_first_five_folds_near_paper(name):
    """Test NLL within 0.05 and error within 0.03 of the paper's VI column (M = 10%)."""
    from test_multiclass_gfitc import PAPER_10PCT, uci_folds_scores
    nll, err = uci_folds_scores(MultiClassSVGPClassifier, name, range(5))
    paper_nll, paper_err = PAPER_10PCT["VI"][name]
    assert abs(nll - paper_nll) < 0.05, (nll, paper_nll)
    assert abs(err - paper_err) < 0.03, (err, paper_err)


@pytest.mark.slow
@pytest.mark.data
def test_uci_glass_vi_nll_much_worse_than_gfitc():
    """The paper's finding on Glass: VI's test NLL is several times GFITC's (2.18 vs 0.58)."""
    from test_multiclass_gfitc import uci_folds_scores
    nll, err = uci_folds_scores(MultiClassSVGPClassifier, "glass", range(5))
    assert nll > 1.2 and err > 0.3, (nll, err)


def test_predict_latent_matches_dense_marginals():
    from reference.dense_multiclass_baselines import svgp_marginals_dense
    X, y = _toy(40, seed=2)
    est = MultiClassSVGPClassifier(n_inducing=4, max_iter=5, random_state=0).fit(X, y)
    Xt = np.random.default_rng(3).uniform(-3, 3, size=(9, 2))
    mean, var = est.predict_latent(Xt)
    rm, rv = svgp_marginals_dense(Xt, est.q_mean_, est.q_sqrt_, est.inducing_points_,
                                  est.variance_, est.noise_, est.lengthscale_, JITTER, True)
    np.testing.assert_allclose(mean, rm, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(var, rv, rtol=1e-7, atol=1e-9)
