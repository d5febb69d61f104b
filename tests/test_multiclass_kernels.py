"""Multi-class classifiers with kernel=: every stationary family through the EP/SEP engine."""
import numpy as np
import pytest

from reference.dense_multiclass import dense_ep

from sparsegp import MultiClassEPClassifier
from sparsegp import kernels as K
from sparsegp._numba import covfuncs as cf
from sparsegp.classification.multiclass import engine as mce
from sparsegp.classification.multiclass import ep_state as mcs
from sparsegp.classification.multiclass import kernel as mck
from sparsegp.classification.multiclass import likelihood as mcl

FAMILIES = [cf.SE, cf.MATERN12, cf.MATERN32, cf.MATERN52]


def reference_kernel(family):
    """k(A, B) of a family written from its definition (not through the compiled switch)."""
    def k(A, B, variance, lengthscale):
        diff = (A[:, None, :] - B[None, :, :]) / lengthscale
        q = np.sum(diff * diff, axis=2)
        r = np.sqrt(q)
        if family == cf.SE:
            g = np.exp(-0.5 * q)
        elif family == cf.MATERN12:
            g = np.exp(-r)
        elif family == cf.MATERN32:
            g = (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)
        else:
            g = (1 + np.sqrt(5) * r + 5 * q / 3) * np.exp(-np.sqrt(5) * r)
        return variance * g
    return k


def _problem(seed, N, C, M, D):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = rng.permutation(np.arange(N) % C)
    var = rng.uniform(0.7, 1.5, size=C)
    noi = rng.uniform(0.2, 0.6, size=C)
    ls = rng.uniform(0.7, 1.5, size=(C, D))
    Z = rng.normal(size=(C, M, D))
    return X, y, var, noi, ls, Z


def _converged(X, y, var, noi, ls, Z, family, method="ep", tol=1e-13):
    C, M, D = Z.shape
    hyp = mck.ClassParams(np.log(var), np.log(noi), np.log(ls), Z, family)
    st = mcs.EPState(method, X.shape[0], C, M, mcl.class_counts_factors(y, C))
    mce.converge_ep(X, y, hyp, st, True, 1e-10, tol=tol)
    return hyp, st


# ------------------------------------------------------------------------------------------
# the engine: values against the dense reference, gradients against central differences
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_ep_evidence_matches_dense_reference_for_every_family(family):
    X, y, var, noi, ls, Z = _problem(3, 7, 3, 3, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, family, tol=1e-12)
    lz, _, q = mce.batch_evidence(X, y, hyp, st, True, 1e-10, compute_grad=False)
    ref, means, covs = dense_ep(X, y, var, ls, noi, Z, kernel=reference_kernel(family))
    assert lz == pytest.approx(ref, rel=1e-8, abs=1e-9)
    np.testing.assert_allclose(q.m, means, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(q.S, covs, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("family", FAMILIES)
def test_ep_gradient_matches_finite_differences_for_every_family(family):
    """At the EP fixed point the approximate gradient of log Z_EP is exact (notes §4): every
    log hyper-parameter and inducing coordinate against central differences."""
    X, y, var, noi, ls, Z = _problem(5, 6, 3, 2, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, family)
    _, grad, _ = mce.batch_evidence(X, y, hyp, st, True, 1e-10)
    theta = hyp.pack()
    C, M, D = Z.shape
    h = 1e-5
    for j in range(theta.size):
        vals = []
        for s in (1, -1):
            t = theta.copy()
            t[j] += s * h
            hp = mck.ClassParams.unpack(t, C, M, D, family)
            s2 = st.copy()
            mce.converge_ep(X, y, hp, s2, True, 1e-10, damping=1.0, tol=1e-13)
            vals.append(mce.batch_evidence(X, y, hp, s2, True, 1e-10, compute_grad=False)[0])
        fd = (vals[0] - vals[1]) / (2 * h)
        assert grad[j] == pytest.approx(fd, rel=1e-6, abs=1e-8), f"coordinate {j}"


@pytest.mark.parametrize("method", ["ep", "sep"])
@pytest.mark.parametrize("family", FAMILIES)
def test_kernel_part_of_the_gradient_matches_finite_differences(monkeypatch, family, method):
    """The evidence gradient is linear in the weights (W_uu, W_fu, w_kappa) of (K_c, K_fu,
    kappa_c), which the engine computes independently of the family; the family enters only
    through their contraction with dK. So for EP and SEP alike each contraction the engine
    makes is checked against central differences of <W_uu, K_c> + <W_fu, K_fu> + w kappa
    with the weights held, K from the reference formulas (SEP's gradient is not that of its
    evidence, so a whole-evidence difference would not test it)."""
    calls = []
    original = mck.kernel_grads

    def recording(*args, **kwargs):
        out = original(*args, **kwargs)
        calls.append((args, kwargs, out))
        return out

    monkeypatch.setattr(mck, "kernel_grads", recording)
    X, y, var, noi, ls, Z = _problem(8, 9, 3, 3, 2)
    hyp, st = _converged(X, y, var, noi, ls, Z, family, method=method, tol=1e-10)
    calls.clear()
    mce.batch_evidence(X, y, hyp, st, True, 1e-10)
    assert len(calls) == 2 * 3                         # rows part and K_c part, per class
    kern = reference_kernel(family)
    h = 1e-6
    for args, kwargs, out in calls:
        (Xc, Zc, s2, lsc, sn, _, _, W_uu, W_fu, w_kappa, nik, jit) = args[:12]
        assert jit == 1e-10
        assert kwargs.get("family", args[12] if len(args) > 12 else cf.SE) == family
        W_uu = 0.5 * (W_uu + W_uu.T)

        def objective(lv, ln, ll, Zv):
            v, n, l_ = np.exp(lv), np.exp(ln), np.exp(ll)
            Kuu = kern(Zv, Zv, v, l_) + ((n if nik else 0.0) + jit * v) * np.eye(Zv.shape[0])
            val = np.sum(W_uu * Kuu) + np.sum(w_kappa) * (v + n)
            if W_fu is not None:
                val += np.sum(W_fu * kern(Xc, Zv, v, l_))
            return val

        base = [np.log(s2), np.log(sn), np.log(lsc), Zc.copy()]
        fd = []
        for which in range(4):
            ref = np.atleast_1d(np.asarray(base[which], dtype=float))
            g = np.empty(ref.size)
            for j in range(ref.size):
                vals = []
                for s in (1, -1):
                    p = [np.array(b, dtype=float, copy=True) for b in base]
                    flat = p[which].reshape(-1)
                    flat[j] += s * h
                    p[which] = flat.reshape(np.shape(base[which]))
                    vals.append(objective(*p))
                g[j] = (vals[0] - vals[1]) / (2 * h)
            fd.append(g.reshape(np.shape(base[which])))
        for got, want in zip(out, fd):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------------------------------
# the estimator
# ------------------------------------------------------------------------------------------
def _data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.4).astype(int)
    return X, y


@pytest.mark.parametrize("method", ["ep", "sep"])
def test_sklearn_matern_kernel_fits_and_exposes_kernel_(method):
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern
    X, y = _data()
    kernel = ConstantKernel() * Matern(nu=1.5)
    est = MultiClassEPClassifier(method=method, kernel=kernel, n_inducing=6, max_iter=20, tol=None,
                                 random_state=0).fit(X, y)
    assert est.kernel is kernel                         # stored unchanged
    fitted = est.kernel_
    assert isinstance(fitted, list) and len(fitted) == 3
    for c, k in enumerate(fitted):
        assert isinstance(k, K.Matern) and k.nu == 1.5
        assert k.variance == pytest.approx(est.variance_[c], rel=1e-12)
        # the kernel is isotropic: each class keeps one length-scale
        assert np.ndim(k.lengthscale) == 0
        np.testing.assert_allclose(est.lengthscale_[c], k.lengthscale, rtol=1e-12)
    assert not np.allclose(est.lengthscale_, 1.0)      # learnt
    assert np.isfinite(est.log_evidence_)
    P = est.predict_proba(X[:20])
    assert P.shape == (20, 3) and np.allclose(P.sum(axis=1), 1.0, atol=1e-4)
    assert est.score(X, y) > 0.8
    # the estimator's predictions use the Matérn family
    Ks = mck.kernel_kfu(X[:5], est.inducing_points_[0], est.variance_[0], est.lengthscale_[0],
                       cf.MATERN32)
    ref = reference_kernel(cf.MATERN32)(X[:5], est.inducing_points_[0], est.variance_[0],
                                        est.lengthscale_[0])
    np.testing.assert_allclose(Ks, ref, rtol=1e-12)


def test_ard_se_kernel_steps_as_the_unbounded_one_and_as_a_list_of_it():
    """kernel=SquaredExponential(1, l * ones(D)) starts and steps exactly as the same kernel
    searched without bounds (wide bounds never bind) and as a list of it, one per class; the
    kernel_ is one SE-ARD kernel per class."""
    X, y = _data(seed=1)
    kw = dict(n_inducing=5, max_iter=10, tol=None, random_state=3)
    start = np.full(2, 1.3)
    unbounded = MultiClassEPClassifier(kernel=K.SquaredExponential(1.0, start, K.UNBOUNDED,
                                                                   K.UNBOUNDED), **kw).fit(X, y)
    given = MultiClassEPClassifier(kernel=K.SquaredExponential(1.0, start), **kw).fit(X, y)
    listed = MultiClassEPClassifier(kernel=[K.SquaredExponential(1.0, start)] * 3,
                                    **kw).fit(X, y)
    for other in (given, listed):
        assert other.log_evidence_ == pytest.approx(unbounded.log_evidence_, rel=1e-12,
                                                    abs=1e-12)
        np.testing.assert_allclose(other.predict_proba(X), unbounded.predict_proba(X),
                                   rtol=1e-10, atol=1e-12)
    for est in (unbounded, given, listed):
        assert [type(k) for k in est.kernel_] == [K.SquaredExponential] * 3
        np.testing.assert_allclose(np.stack([k.lengthscale for k in est.kernel_]),
                                   est.lengthscale_, rtol=1e-12)


def test_fixed_and_bounded_kernel_parameters_are_honoured():
    X, y = _data(seed=2)
    kernel = K.Matern(0.7, 1.1, nu=2.5, variance_bounds="fixed", lengthscale_bounds=(1.0, 1.2))
    est = MultiClassEPClassifier(method="sep", kernel=kernel, n_inducing=5, max_iter=40, tol=None,
                                 learning_rate=0.05, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.variance_, 0.7)
    assert np.all(est.lengthscale_ >= 1.0 - 1e-12) and np.all(est.lengthscale_ <= 1.2 + 1e-12)
    assert kernel.variance == 0.7 and kernel.lengthscale == 1.1    # the user's object untouched
    assert all(k.variance_bounds == "fixed" for k in est.kernel_)


def test_minibatch_fit_with_a_kernel():
    X, y = _data(seed=4)
    est = MultiClassEPClassifier(method="sep", kernel=K.Matern(nu=0.5, lengthscale=[1.0, 2.0]),
                                 n_inducing=5, batch_size=50, max_iter=3,
                                 random_state=0).fit(X, y)
    assert np.isfinite(est.log_evidence_)
    assert all(np.shape(k.lengthscale) == (2,) for k in est.kernel_)


@pytest.mark.parametrize("legacy", [dict(lengthscale=1.0), dict(variance=2.0),
                                    dict(noise=0.5), dict(learn_hyperparameters=False),
                                    dict(damping=0.5)])
def test_legacy_arguments_are_refused(legacy):
    # the covariance comes from one place, the kernel: the old names are refused
    with pytest.raises(TypeError, match=next(iter(legacy))):
        MultiClassEPClassifier(kernel=K.SquaredExponential(), max_iter=2, tol=None, **legacy)


def test_a_list_of_kernels_is_one_per_class():
    X, y = _data()
    se = K.SquaredExponential
    per_class = [se(1.0, [1.0, 1.2]), se(2.0, [0.8, 1.0]), se(0.5, [1.5, 1.5])]
    est = MultiClassEPClassifier(kernel=per_class, n_inducing=5, max_iter=1, tol=None,
                                 random_state=0).fit(X, y)
    np.testing.assert_allclose(est.variance_, [1.0, 2.0, 0.5], rtol=1e-12)   # not a step yet
    assert [k.variance for k in est.kernel_] == list(est.variance_)
    for kernel, match in ((per_class[:2], "2 kernels"), ([se(), K.Matern()], "one family"),
                          ([se(1.0, [1.0, 1.0]), se(), se()], "all ARD")):
        with pytest.raises(ValueError, match=match):
            MultiClassEPClassifier(kernel=kernel, max_iter=1, tol=None).fit(X, y)


def test_unsupported_kernels_are_value_errors():
    from sklearn.gaussian_process.kernels import RationalQuadratic
    X, y = _data()
    # a constant summand is supported (tests/test_multiclass_constant_sum.py); two
    # stationary summands are not
    for kernel in (K.SquaredExponential() + K.Matern(), RationalQuadratic(),
                   K.Matern(nu=3.5)):
        with pytest.raises(ValueError):
            MultiClassEPClassifier(kernel=kernel, max_iter=2, tol=None).fit(X, y)


# ------------------------------------------------------------------------------------------
# the baselines: VI (SVGP) and GFITC share ClassKernel (and ClassParams with EP)
# ------------------------------------------------------------------------------------------
def _baseline_problem(seed, family, N=8, D=2, C=3, M=2):
    from sparsegp.classification.multiclass.kernel import ClassParams
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = rng.permutation(np.arange(N) % C).astype(np.int64)
    hyp = ClassParams(np.log(rng.uniform(0.6, 1.6, C)), np.log(rng.uniform(0.1, 0.6, C)),
                 np.log(rng.uniform(0.6, 2.0, (C, D))), rng.normal(size=(C, M, D)), family)
    return X, y, hyp


@pytest.mark.parametrize("family", FAMILIES)
def test_svgp_elbo_gradient_matches_finite_differences_for_every_family(family):
    from sparsegp.classification.multiclass.kernel import ClassParams
    from sparsegp.classification.multiclass._svgp import _Variational, gauss_hermite, svgp_elbo
    X, y, hyp = _baseline_problem(1, family, N=9, M=3)
    C, M, D = hyp.Z.shape
    rng = np.random.default_rng(2)
    L = np.tril(rng.normal(size=(C, M, M)) * 0.3)
    L[:, np.arange(M), np.arange(M)] = rng.uniform(0.3, 1.0, (C, M))
    q = _Variational(rng.normal(size=(C, M)) * 0.5, L)
    x, w = gauss_hermite(60)
    _, gh, gq = svgp_elbo(X, y, hyp, q, 1e-3, 1e-10, True, x, w)
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
            vals.append(svgp_elbo(X, y, ClassParams.unpack(v[:nh], C, M, D, family),
                                  _Variational.unpack(v[nh:], C, M), 1e-3, 1e-10, True, x, w,
                                  with_grad=False)[0])
        fd[j] = (vals[0] - vals[1]) / (2 * h)
    err = np.abs(g - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, (err.max(), np.argmax(err))


@pytest.mark.parametrize("family", FAMILIES)
def test_gfitc_evidence_gradient_matches_finite_differences_for_every_family(family):
    from sparsegp.classification.multiclass.kernel import ClassParams
    from sparsegp.classification.multiclass.gfitc_ep import (
        _GFITCState, _Sites, gfitc_gradient, gfitc_log_evidence, gfitc_run_ep,
    )

    def converged(hyp, sites):
        state = _GFITCState(X, hyp, 1e-10, True)
        _, ok, _ = gfitc_run_ep(y, state, sites, 1e-13, 5000)
        assert ok
        return state, sites

    X, y, hyp = _baseline_problem(3, family)
    C, M, D = hyp.Z.shape
    state, sites = converged(hyp, _Sites(X.shape[0], C))
    g = gfitc_gradient(X, y, hyp, state, sites).pack()
    theta = hyp.pack()
    h = 1e-5
    fd = np.empty_like(theta)
    for j in range(theta.size):
        vals = []
        for sgn in (1.0, -1.0):
            t2 = theta.copy()
            t2[j] += sgn * h
            st2, s2 = converged(ClassParams.unpack(t2, C, M, D, family), sites.copy())
            vals.append(gfitc_log_evidence(y, st2, s2))
        fd[j] = (vals[0] - vals[1]) / (2 * h)
    err = np.abs(g - fd) / np.maximum(np.abs(fd), 1e-2)
    assert err.max() < 1e-6, (err.max(), np.argmax(err))


@pytest.mark.parametrize("name", ["MultiClassSVGPClassifier", "MultiClassGFITCClassifier"])
def test_baselines_fit_a_sklearn_matern_kernel(name):
    import sparsegp
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern
    X, y = _data()
    kernel = ConstantKernel() * Matern(nu=1.5)
    # fifteen iterations as a budget (tol=None), not a cap
    est = getattr(sparsegp, name)(kernel=kernel, n_inducing=6, max_iter=15, tol=None,
                                  random_state=0).fit(X, y)
    assert est.kernel is kernel
    assert est._kernel_family() == cf.MATERN32
    fitted = est.kernel_
    assert len(fitted) == 3 and all(isinstance(k, K.Matern) and k.nu == 1.5 for k in fitted)
    # isotropic: one length-scale per class, shared by the features
    np.testing.assert_allclose(est.lengthscale_, est.lengthscale_[:, :1].repeat(2, axis=1),
                               rtol=1e-12)
    for c, k in enumerate(fitted):
        assert k.variance == pytest.approx(est.variance_[c], rel=1e-12)
        assert k.lengthscale == pytest.approx(est.lengthscale_[c, 0], rel=1e-12)
    assert est.score(X, y) > 0.8
    with pytest.raises(TypeError, match="lengthscale"):
        getattr(sparsegp, name)(kernel=kernel, lengthscale=1.0, max_iter=1)


def test_svgp_minibatch_with_fixed_variance():
    from sparsegp import MultiClassSVGPClassifier
    X, y = _data(seed=5)
    est = MultiClassSVGPClassifier(kernel=K.Matern(0.8, [1.0, 1.5], nu=2.5,
                                                   variance_bounds="fixed"),
                                   n_inducing=5, batch_size=50, max_iter=3, learning_rate=0.05,
                                   random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.variance_, 0.8)
    assert all(np.shape(k.lengthscale) == (2,) for k in est.kernel_)


@pytest.mark.parametrize("method", ["ep", "sep"])
def test_dask_fit_with_a_matern_kernel_equals_the_in_memory_fit(method):
    """The workers evaluate the kernel from the ClassParams they receive, family included."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    X, y = _data(n=200, seed=6)
    kw = dict(method=method, kernel=K.Matern(nu=2.5, lengthscale=[1.0, 1.4]), n_inducing=5,
              max_iter=4, tol=None, random_state=0)
    ref = MultiClassEPClassifier(**kw).fit(X, y)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client, client.as_current():
        est = MultiClassEPClassifier(**kw).fit(da.from_array(X, chunks=(50, 2)), y)
    np.testing.assert_allclose(est.evidence_history_, ref.evidence_history_, rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(est.lengthscale_, ref.lengthscale_, rtol=1e-10)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=1e-10)
    assert all(isinstance(k, K.Matern) for k in est.kernel_)


# ------------------------------------------------------------------------------------------
# K_c factorisation: the library's one jitter ladder (sparsegp._linalg.cholesky_jitter)
# ------------------------------------------------------------------------------------------
def _coincident_hyper(C=2, M=4, D=2):
    """Noise-free K_c of M coincident inducing inputs per class: rank one at jitter 0."""
    rng = np.random.default_rng(5)
    Z = np.repeat(rng.normal(size=(C, 1, D)), M, axis=1)
    return mck.ClassParams(np.log([1.3, 0.7][:C]), np.log([0.2, 0.4][:C]), np.zeros((C, D)), Z)


def test_chol_kuu_leaves_a_factorable_k_alone():
    rng = np.random.default_rng(6)
    A = rng.normal(size=(5, 5))
    Kc = A @ A.T + 5 * np.eye(5)
    before = Kc.copy()
    L = mck.chol_kuu(Kc)
    assert np.array_equal(Kc, before)
    np.testing.assert_allclose(L @ L.T, Kc, rtol=1e-13, atol=1e-13)
    # Fortran order keeps SciPy's triangular solves on the path (and rounding) they always had
    assert L.flags.f_contiguous


def test_prior_and_class_kernel_factor_a_singular_k_with_the_jitter_added_to_k():
    # both engines' K_c go through the ladder: a singular K_c gains a jitter relative to its
    # mean diagonal, is factored, and K holds that jitter too (the plain Cholesky of
    # ep_state.Prior raised here before)
    hyp = _coincident_hyper()
    C, M, _ = hyp.shape
    prior = mcs.Prior(hyp, False, 0.0)
    for c in range(C):
        kc = mck.ClassKernel(None, hyp, c, 0.0, False)
        with pytest.raises(np.linalg.LinAlgError):
            np.linalg.cholesky(prior.K_se[c])
        for K_c, L in ((prior.K[c], prior.L[c]), (kc.K, kc.LK)):
            added = K_c[0, 0] - prior.K_se[c][0, 0]
            assert 1e-10 * prior.variance[c] <= added <= 1e-6 * prior.variance[c]
            np.testing.assert_allclose(np.diag(K_c) - np.diag(prior.K_se[c]), added, rtol=1e-12)
            np.testing.assert_allclose(L @ L.T, K_c, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("nik", [True, False])
def test_jitter_is_relative_to_the_class_variance_and_its_gradient_follows(nik):
    # issue 48: jitter means jitter x variance in every estimator; the multi-class K_c held an
    # absolute 1e-10 before. A jitter large enough to matter shows the term and its share of
    # d/dlog variance (at 1e-10 a missing term would hide below the difference's round-off).
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(4, 2))
    ls = np.array([0.8, 1.7])
    var, noise, jit = 250.0, 0.1, 1e-2
    K, K_se = mck.kernel_kuu(Z, var, ls, noise, nik, jit)
    np.testing.assert_allclose(np.diag(K - K_se), (noise if nik else 0.0) + jit * var,
                               rtol=1e-12)
    A = rng.normal(size=(4, 4))
    W = A + A.T

    def objective(log_var):
        return np.sum(W * mck.kernel_kuu(Z, np.exp(log_var), ls, noise, nik, jit)[0])

    g_var = mck.kernel_grads(None, Z, var, ls, noise, K_se, None, W, None, 0.0, nik, jit)[0]
    h = 1e-6
    fd = (objective(np.log(var) + h) - objective(np.log(var) - h)) / (2 * h)
    assert g_var == pytest.approx(fd, rel=1e-7)
    # the jitter's own share is a thousand times the tolerance: without it the test above fails
    assert abs(np.trace(W) * jit * var) > 1e-4 * abs(fd)
