"""A stationary kernel plus a constant in the three multi-class classifiers (issue 48).

``k_c(x, x') + v_c``: each class's ``ConstantKernel`` summands add a bias variance v_c to
every entry of K_c, K_fu and kappa_c (:mod:`sparsegp.classification.multiclass.kernel`).
For EP (and SEP), GFITC and VI:

* the evidence or bound, the posterior and the predictions equal dense references built
  from the fitted ``kernel_`` objects themselves (their own ``__call__`` forms the Sum);
* the gradient, log v_c included, equals central differences, for ``theta_`` through
  ``log_marginal_likelihood`` and for the whole packed vector (Z too) in the engines;
* a "fixed" constant stays where it was put, and a free one is learnt (a data set whose
  classes differ by an offset only).
"""
import warnings

import numpy as np
import pytest

from reference.dense_multiclass import dense_ep
from reference.dense_multiclass_baselines import class_prob_quad, dense_multiclass_ep

from sparsegp import (MultiClassEPClassifier, MultiClassGFITCClassifier,
                      MultiClassSVGPClassifier)
from sparsegp.kernels import ConstantKernel, Matern, SquaredExponential, Sum
from sparsegp._numba import covfuncs as cf
from sparsegp.classification.multiclass import engine as mce
from sparsegp.classification.multiclass import ep_state as mcs
from sparsegp.classification.multiclass import kernel as mck
from sparsegp.classification.multiclass.likelihood import class_counts_factors

JITTER = 1e-10


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * [1.5, 0.7] + [3.0, -1.0]
    y = rng.permutation(np.arange(n) % 3)
    return X, y


def _kernels():
    """One kernel per class: each its own v_c (and SE, SE, Matérn 5/2 to show the family
    does not matter)."""
    return [SquaredExponential(1.2, 0.9) + ConstantKernel(0.4),
            SquaredExponential(0.8, 1.1) + ConstantKernel(0.9),
            SquaredExponential(1.0, 1.3) + ConstantKernel(0.2)]


def _fit(est, X, y):
    with warnings.catch_warnings():
        # small fits stop at max_iter and may be no better than the class frequencies:
        # those warnings are not the subject here
        warnings.simplefilter("ignore")
        return est.fit(X, y)


def _sums(est):
    """The fitted kernel_ objects, checked to be Sums with a constant; and their v_c."""
    ks = est.kernel_
    assert len(ks) == 3
    for k in ks:
        assert isinstance(k, Sum) and isinstance(k.k2, ConstantKernel)
    return ks, np.array([k.k2.constant_value for k in ks])


def _kuu(k, Z, noise, variance, jitter):
    """K_c from the kernel object: its own k(Z, Z) (with the constant) + (noise + jitter
    variance) I, the jitter relative to the signal variance."""
    return k(Z) + (noise + jitter * variance) * np.eye(Z.shape[0])


def _class_probabilities(mean, var):
    """p(y = c) for every row by adaptive quadrature (the reference's)."""
    return np.array([[class_prob_quad(m, v, c) for c in range(m.size)]
                     for m, v in zip(mean, var)])


# ------------------------------------------------------------------------------------------
# (a) dense references from the fitted kernel objects
# ------------------------------------------------------------------------------------------
def test_ep_evidence_posterior_and_predictions_equal_the_dense_reference():
    X, y = _data()
    est = _fit(MultiClassEPClassifier(kernel=_kernels(), n_inducing=3, max_iter=5,
                                      jitter=JITTER, random_state=0), X, y)
    ks, vb = _sums(est)
    # the five steps moved every v_c from its start
    assert np.all(np.abs(vb - [0.4, 0.9, 0.2]) > 1e-4)
    np.testing.assert_allclose(np.exp(est._hyp.log_bias), vb, rtol=1e-15)
    Z = est.inducing_points_
    # EP to convergence at the fitted parameters, in the fit's model units
    Xm = est._scaling.transform(X)
    state = mcs.EPState("ep", X.shape[0], 3, 3, class_counts_factors(y, 3))
    mce.converge_ep(Xm, y, est._hyp, state, True, JITTER, tol=1e-12)
    lz, _, q = mce.batch_evidence(Xm, y, est._hyp, state, True, JITTER, compute_grad=False)
    # the dense reference: full-matrix sites over the kernel objects' own covariances
    kern = [lambda A, B, v, l, k=k: k(A, B) for k in ks]
    ref, means, covs = dense_ep(X, y, est.variance_, est.lengthscale_, est.noise_, Z, True,
                                JITTER, tol=1e-12, kernel=kern)
    # as tests/test_multiclass_kernels.py's dense comparison of every family
    assert lz == pytest.approx(ref, rel=1e-8, abs=1e-9)
    np.testing.assert_allclose(q.m, means, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(q.S, covs, rtol=1e-6, atol=1e-8)
    # predictions from the fit's q(u) (posterior_mean_, posterior_cov_), densely:
    # mean k*^T K^-1 m, variance k** + noise - k*^T K^-1 k* + k*^T K^-1 S K^-1 k*
    Xt = X[:5] + 0.4
    mean, var = est.predict_latent(Xt)
    for c, k in enumerate(ks):
        K = _kuu(k, Z[c], est.noise_[c], est.variance_[c], JITTER)
        A = np.linalg.solve(K, k(Z[c], Xt))
        S = est.posterior_cov_[c]
        # solves of a K with cond ~1e3 on both sides, the user and model units (measured
        # 4e-15 relative)
        np.testing.assert_allclose(mean[:, c], A.T @ est.posterior_mean_[c], rtol=1e-9,
                                   atol=1e-11)
        np.testing.assert_allclose(var[:, c], k.diag(Xt) + est.noise_[c]
                                   - np.einsum("ji,ji->i", k(Z[c], Xt), A)
                                   + np.einsum("ji,jk,ki->i", A, S, A), rtol=1e-9, atol=1e-11)
    # the class probabilities of those latents by adaptive quadrature; the estimator's
    # quadrature is within 1e-13 (likelihood.QUAD_TOL)
    np.testing.assert_allclose(est.predict_proba(Xt), _class_probabilities(mean, var),
                               rtol=0, atol=1e-10)


def _fitc_prior(k, X, Z, noise, variance, jitter):
    """K^F = Q + diag(k(x, x) + noise - diag Q), Q = K_fu K_c^-1 K_uf, all from the kernel
    object (each with the constant), and K_c."""
    Kuu = _kuu(k, Z, noise, variance, jitter)
    P = k(X, Z)
    Q = P @ np.linalg.solve(Kuu, P.T)
    Q = 0.5 * (Q + Q.T)
    return Q + np.diag(k.diag(X) + noise - np.diag(Q)), Kuu


def test_gfitc_evidence_sites_and_predictions_equal_the_dense_reference():
    X, y = _data(14, seed=1)
    est = _fit(MultiClassGFITCClassifier(kernel=_kernels(), n_inducing=3, max_iter=4,
                                         jitter=JITTER, ep_tol=1e-12, ep_max_sweeps=5000,
                                         random_state=0), X, y)
    ks, vb = _sums(est)
    assert np.all(np.abs(vb - [0.4, 0.9, 0.2]) > 1e-4)
    Z = est.inducing_points_
    priors = [_fitc_prior(k, X, Z[c], est.noise_[c], est.variance_[c], JITTER)
              for c, k in enumerate(ks)]
    ref = dense_multiclass_ep(np.array([p[0] for p in priors]), y, tol=1e-12)
    assert ref["converged"]
    # the same EP fixed point, the FITC matrices formed two ways (user units and the fit's
    # model units)
    assert est.log_evidence_ == pytest.approx(ref["log_evidence"], rel=1e-9)
    np.testing.assert_allclose(est.site_precision_, ref["tau"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(est.site_mean_, ref["nu"], rtol=1e-7, atol=1e-9)
    # FITC predictions of the noisy latents: mean Q_*f (nu - tau mu), variance
    # k** + noise - Q_*f (T - T S T) Q_f*
    Xt = X[:6] - 0.3
    mean, var = est.predict_latent(Xt)
    for c, k in enumerate(ks):
        Qsf = k(Xt, Z[c]) @ np.linalg.solve(priors[c][1], k(Z[c], X))
        t, nu, mu, S = ref["tau"][c], ref["nu"][c], ref["mean"][c], ref["cov"][c]
        A = np.diag(t) - t[:, None] * S * t[None, :]
        np.testing.assert_allclose(mean[:, c], Qsf @ (nu - t * mu), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(var[:, c], k.diag(Xt) + est.noise_[c]
                                   - np.einsum("ij,jk,ik->i", Qsf, A, Qsf),
                                   rtol=1e-7, atol=1e-9)
    P = _class_probabilities(mean, var)
    np.testing.assert_allclose(est.predict_proba(Xt), P / P.sum(1, keepdims=True), rtol=0,
                               atol=1e-10)


def _vi_marginals(ks, X, Z, m, L, noise, variance, jitter):
    """(mu, var) of q(f_c) (eqs. 16-17) by explicit inverses over the kernel objects."""
    mu = np.empty((X.shape[0], len(ks)))
    var = np.empty_like(mu)
    for c, k in enumerate(ks):
        Ki = np.linalg.inv(_kuu(k, Z[c], noise[c], variance[c], jitter))
        P = k(X, Z[c])
        S = L[c] @ L[c].T
        mu[:, c] = P @ Ki @ m[c]
        var[:, c] = (k.diag(X) + noise[c] - np.einsum("ij,jk,ik->i", P, Ki, P)
                     + np.einsum("ij,jk,ik->i", P, Ki @ S @ Ki, P))
    return mu, var


def test_vi_bound_and_predictions_equal_the_dense_reference():
    X, y = _data(15, seed=2)
    est = _fit(MultiClassSVGPClassifier(kernel=_kernels(), n_inducing=3, max_iter=6,
                                        jitter=JITTER, random_state=0), X, y)
    ks, vb = _sums(est)
    assert np.all(np.abs(vb - [0.4, 0.9, 0.2]) > 1e-4)
    Z, m, L = est.inducing_points_, est.q_mean_, est.q_sqrt_
    mu, var = _vi_marginals(ks, X, Z, m, L, est.noise_, est.variance_, JITTER)
    eps, C = est.epsilon, 3
    P = np.array([class_prob_quad(mu[i], var[i], y[i]) for i in range(X.shape[0])])
    data = np.sum(P * np.log(1 - eps) + (1 - P) * np.log(eps / (C - 1)))
    kl = 0.0
    for c, k in enumerate(ks):
        K = _kuu(k, Z[c], est.noise_[c], est.variance_[c], JITTER)
        S = L[c] @ L[c].T
        kl += 0.5 * (np.trace(np.linalg.solve(K, S)) + m[c] @ np.linalg.solve(K, m[c]) - 3
                     + np.linalg.slogdet(K)[1] - np.linalg.slogdet(S)[1])
    # 100 Gauss-Hermite nodes against adaptive quadrature, as test_multiclass_svgp.py's
    # dense comparison
    assert abs(est.elbo_ - (data - kl)) < 1e-8 * abs(data - kl)
    Xt = X[:5] * 0.9
    mean, v = est.predict_latent(Xt)
    rm, rv = _vi_marginals(ks, Xt, Z, m, L, est.noise_, est.variance_, JITTER)
    np.testing.assert_allclose(mean, rm, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(v, rv, rtol=1e-9, atol=1e-11)
    Pt = _class_probabilities(rm, rv)
    Pt /= Pt.sum(1, keepdims=True)
    np.testing.assert_allclose(est.predict_proba(Xt),
                               (1 - eps) * Pt + eps / (C - 1) * (1 - Pt), rtol=0, atol=1e-10)


# ------------------------------------------------------------------------------------------
# (b) gradients by central differences, log v_c included
# ------------------------------------------------------------------------------------------
def _central(f, theta, h=1e-5):
    out = np.empty(theta.size)
    for j in range(theta.size):
        t = theta.copy()
        t[j] += h
        up = f(t)
        t[j] -= 2 * h
        out[j] = (up - f(t)) / (2 * h)
    return out


@pytest.mark.parametrize("make", [
    lambda k: MultiClassEPClassifier(kernel=k, n_inducing=3, max_iter=4, jitter=JITTER,
                                     random_state=0),
    lambda k: MultiClassEPClassifier(method="sep", kernel=k, n_inducing=3, max_iter=4,
                                     jitter=JITTER, random_state=0),
    lambda k: MultiClassGFITCClassifier(kernel=k, n_inducing=3, max_iter=3, jitter=JITTER,
                                        ep_tol=1e-12, ep_max_sweeps=5000, random_state=0),
    lambda k: MultiClassSVGPClassifier(kernel=k, n_inducing=3, max_iter=4, jitter=JITTER,
                                       random_state=0),
], ids=["ep", "sep", "gfitc", "vi"])
def test_theta_gradient_with_the_bias_variances_matches_central_differences(make):
    X, y = _data(12, seed=3)
    plain = _fit(make([SquaredExponential(1.0, [1.0, 1.5])]), X, y)
    est = _fit(make([SquaredExponential(1.0, [1.0, 1.5]) + ConstantKernel(0.5)]), X, y)
    # theta_ gains the C log v_c, last
    assert est.theta_.size == plain.theta_.size + 3
    _, vb = _sums(est)
    np.testing.assert_allclose(est.theta_[-3:], np.log(vb), rtol=1e-15)
    value, grad = est.log_marginal_likelihood(est.theta_, eval_gradient=True)
    assert value == pytest.approx(est.log_marginal_likelihood_value_, rel=1e-10)
    fd = _central(est.log_marginal_likelihood, est.theta_.copy())
    # as the multi-class gradient checks of test_multiclass_kernels.py
    err = np.abs(grad - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, (err.max(), np.argmax(err))
    assert np.all(np.abs(grad[-3:]) > 1e-6)          # the v_c entries are really tested


def _hyp(seed, family=cf.SE, C=3, M=2, D=2, log_bias=(np.log(0.3), np.log(1.1), 0.2)):
    rng = np.random.default_rng(seed)
    return mck.ClassParams(np.log(rng.uniform(0.6, 1.6, C)), np.log(rng.uniform(0.1, 0.6, C)),
                           np.log(rng.uniform(0.6, 2.0, (C, D))), rng.normal(size=(C, M, D)),
                           family, log_bias=np.array(log_bias))


def _problem(seed, N=8):
    rng = np.random.default_rng(seed + 100)
    X = rng.normal(size=(N, 2))
    return X, rng.permutation(np.arange(N) % 3).astype(np.int64)


@pytest.mark.parametrize("family", [cf.SE, cf.MATERN32])
def test_ep_engine_gradient_over_the_whole_vector(family):
    """At the EP fixed point the training gradient is exact (notes §4): every log
    hyper-parameter, the inducing inputs and log v_c against central differences."""
    X, y = _problem(0)
    hyp = _hyp(1, family)

    def converged(h, state=None):
        st = state or mcs.EPState("ep", X.shape[0], 3, 2, class_counts_factors(y, 3))
        mce.converge_ep(X, y, h, st, True, JITTER, damping=1.0, tol=1e-13)
        return st

    st = converged(hyp)
    _, grad, _ = mce.batch_evidence(X, y, hyp, st, True, JITTER)
    theta = hyp.pack()
    assert theta.size == grad.size == 3 + 3 + 6 + 12 + 3

    def value(t):
        h = hyp.like(t)
        return mce.batch_evidence(X, y, h, converged(h, st.copy()), True, JITTER,
                                  compute_grad=False)[0]

    fd = _central(value, theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


def test_sep_fixed_site_gradient_over_the_whole_vector():
    """SEP's fixed-site evidence (log_marginal_likelihood's) and its exact gradient."""
    X, y = _problem(2)
    hyp = _hyp(3)
    st = mcs.EPState("sep", X.shape[0], 3, 2, class_counts_factors(y, 3))
    mce.converge_ep(X, y, hyp, st, True, JITTER, tol=1e-12)
    _, grad = mce.fixed_site_evidence(X, y, hyp, st, True, JITTER)
    fd = _central(lambda t: mce.fixed_site_evidence(X, y, hyp.like(t), st, True, JITTER,
                                                    compute_grad=False)[0], hyp.pack())
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("family", [cf.SE, cf.MATERN52])
def test_gfitc_and_vi_engine_gradients_over_the_whole_vector(family):
    from sparsegp.classification.multiclass._svgp import _Variational, gauss_hermite, svgp_elbo
    from sparsegp.classification.multiclass.gfitc_ep import (
        _GFITCState, _Sites, gfitc_gradient, gfitc_log_evidence, gfitc_run_ep,
    )
    X, y = _problem(4, N=9)
    hyp = _hyp(5, family)

    def converged(h, sites):
        state = _GFITCState(X, h, JITTER, True)
        assert gfitc_run_ep(y, state, sites, 1e-13, 5000)[1]
        return state, sites

    state, sites = converged(hyp, _Sites(X.shape[0], 3))
    g = gfitc_gradient(X, y, hyp, state, sites).pack()
    fd = _central(lambda t: gfitc_log_evidence(y, *converged(hyp.like(t), sites.copy())),
                  hyp.pack())
    err = np.abs(g - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, ("gfitc", err.max(), np.argmax(err))

    rng = np.random.default_rng(6)
    L = np.tril(rng.normal(size=(3, 2, 2)) * 0.3)
    L[:, np.arange(2), np.arange(2)] = rng.uniform(0.3, 1.0, (3, 2))
    q = _Variational(rng.normal(size=(3, 2)) * 0.5, L)
    x, w = gauss_hermite(60)
    _, gh, gq = svgp_elbo(X, y, hyp, q, 1e-3, JITTER, True, x, w)
    nh = hyp.pack().size
    vec = np.concatenate([hyp.pack(), q.pack()])
    g = np.concatenate([gh.pack(), gq.pack()])
    fd = _central(lambda v: svgp_elbo(X, y, hyp.like(v[:nh]), _Variational.unpack(v[nh:], 3, 2),
                                      1e-3, JITTER, True, x, w, with_grad=False)[0], vec)
    err = np.abs(g - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, ("vi", err.max(), np.argmax(err))


# ------------------------------------------------------------------------------------------
# (c) a fixed constant stays fixed; (d) a free one is learnt
# ------------------------------------------------------------------------------------------
ESTIMATORS = {
    "ep": lambda **kw: MultiClassEPClassifier(n_inducing=4, random_state=0, **kw),
    "gfitc": lambda **kw: MultiClassGFITCClassifier(n_inducing=4, random_state=0, **kw),
    "vi": lambda **kw: MultiClassSVGPClassifier(n_inducing=4, random_state=0, **kw),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_fixed_constant_stays_fixed(name):
    X, y = _data(40, seed=4)
    kernel = ConstantKernel(0.2, "fixed") + Matern(1.0, 1.0, nu=1.5) + ConstantKernel(0.1)
    est = _fit(ESTIMATORS[name](kernel=kernel, max_iter=5), X, y)
    plain = _fit(ESTIMATORS[name](kernel=Matern(1.0, 1.0, nu=1.5), max_iter=5), X, y)
    ks, vb = _sums(est)
    # the constants' sum, held (no entry of theta_), and reported as "fixed"
    assert np.all(vb == 0.2 + 0.1)
    assert all(k.k2.constant_value_bounds == "fixed" for k in ks)
    assert est.theta_.size == plain.theta_.size
    # ... while the kernel's own parameters moved
    assert not np.allclose(est.variance_, 1.0)
    assert np.all(np.isfinite(est.predict_proba(X)))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_free_constant_learns_the_classes_offsets(name):
    """Labels that do not depend on X, one class far more frequent: with the stationary
    part held short and small, only v_c can carry the offsets, so the fit must raise v_c
    from its small start, and its objective must beat the same fit with v_c held there.
    EP and GFITC (the exact likelihood) then predict the class frequencies better; VI's
    robust-max likelihood (eps = 1e-3) predicts the argmax class, not frequencies."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(150, 2))
    y = rng.choice(3, size=150, p=[0.8, 0.1, 0.1])
    stationary = SquaredExponential(0.05, 0.2, "fixed", "fixed")
    fits = [_fit(ESTIMATORS[name](kernel=stationary + ConstantKernel(0.01, bounds),
                                  latent_noise_variance=0.1, max_iter=60), X, y)
            for bounds in ((1e-4, 1e3), "fixed")]
    free, held = fits
    _, vb = _sums(free)
    assert vb.max() > 10 * 0.01, vb             # ten times its start
    assert free.log_marginal_likelihood_value_ > held.log_marginal_likelihood_value_ + 1.0
    if name != "vi":
        Xt = rng.normal(size=(200, 2))
        freq = np.array([0.8, 0.1, 0.1])
        err_free = np.abs(free.predict_proba(Xt).mean(0) - freq).max()
        err_held = np.abs(held.predict_proba(Xt).mean(0) - freq).max()
        assert err_free < 0.5 * err_held, (err_free, err_held)


def test_a_zero_constant_is_held_at_zero():
    X, y = _data(30, seed=5)
    est = _fit(MultiClassEPClassifier(kernel=SquaredExponential() + ConstantKernel(0.0),
                                      n_inducing=3, max_iter=3, random_state=0), X, y)
    plain = _fit(MultiClassEPClassifier(kernel=SquaredExponential(), n_inducing=3,
                                        max_iter=3, random_state=0), X, y)
    _, vb = _sums(est)
    assert np.all(vb == 0.0)
    assert est.theta_.size == plain.theta_.size
    # the same fit as without the constant: v_c = 0 adds nothing
    np.testing.assert_allclose(est.predict_proba(X), plain.predict_proba(X), rtol=1e-12)


def test_a_list_of_kernels_with_and_without_a_constant_is_a_value_error():
    X, y = _data(12)
    kernel = [SquaredExponential() + ConstantKernel(0.3), SquaredExponential(),
              SquaredExponential()]
    with pytest.raises(ValueError, match="constant summand or none"):
        MultiClassEPClassifier(kernel=kernel, max_iter=1).fit(X, y)


@pytest.mark.parametrize("method", ["ep", "sep"])
def test_dask_fit_with_a_constant_equals_the_in_memory_fit(method):
    """The workers form K_fu with each class's v_c from the ClassParams they receive."""
    da = pytest.importorskip("dask.array", reason="needs dask (the 'distributed' extra)")
    distributed = pytest.importorskip("distributed", reason="needs dask.distributed")
    X, y = _data(120, seed=8)
    kw = dict(method=method, kernel=SquaredExponential(1.0, [1.0, 1.4]) + ConstantKernel(0.3),
              n_inducing=4, max_iter=4, random_state=0)
    ref = _fit(MultiClassEPClassifier(**kw), X, y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client, client.as_current():
        est = _fit(MultiClassEPClassifier(**kw), da.from_array(X, chunks=(30, 2)), y)
    # the same steps, the rows' sums added in another order (as the Matérn test's bounds)
    np.testing.assert_allclose(est.evidence_history_, ref.evidence_history_, rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(est.theta_, ref.theta_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-10)
    assert np.all(_sums(est)[1] != 0.3)


@pytest.mark.parametrize("make", [
    lambda k: MultiClassEPClassifier(kernel=k, n_inducing=3, batch_size=10, max_iter=3,
                                     learning_rate=0.05, random_state=0),
    lambda k: MultiClassEPClassifier(method="sep", kernel=k, n_inducing=3, batch_size=10,
                                     max_iter=3, learning_rate=0.05, random_state=0),
    lambda k: MultiClassSVGPClassifier(kernel=k, n_inducing=3, batch_size=10, max_iter=3,
                                       learning_rate=0.05, random_state=0),
], ids=["ep", "sep", "vi"])
def test_minibatch_fits_step_v_c_and_their_theta_gradient_is_exact(make):
    X, y = _data(30, seed=9)
    est = _fit(make(SquaredExponential(1.0, 1.2) + ConstantKernel(0.5)), X, y)
    _, vb = _sums(est)
    assert np.all(np.abs(vb - 0.5) > 1e-3)             # ADAM moved every v_c
    # log_marginal_likelihood is over all rows (EP/SEP: the fitted sites held; VI: q held)
    value, grad = est.log_marginal_likelihood(est.theta_, eval_gradient=True)
    fd = _central(est.log_marginal_likelihood, est.theta_.copy())
    err = np.abs(grad - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, (err.max(), np.argmax(err))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_model_pickled_before_the_constant_existed_still_predicts(name):
    """A fitted model pickled before v_c existed has no ``log_bias`` on its ClassParams
    (nor ``bias`` on GFITC's per-class kernels): they read the class defaults, no constant."""
    import pickle

    X, y = _data(30, seed=10)
    est = _fit(ESTIMATORS[name](max_iter=3), X, y)
    old = pickle.loads(pickle.dumps(est))
    for obj in [old._hyp] + list(getattr(getattr(old, "_state", None), "kernels", [])):
        for attr in ("log_bias", "bias"):
            obj.__dict__.pop(attr, None)
    assert "log_bias" not in old._hyp.__dict__
    np.testing.assert_array_equal(old.predict_proba(X), est.predict_proba(X))
    assert len(old.kernel_) == 3
