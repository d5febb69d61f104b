"""IVMClassifier: selection against an independent dense implementation, predictions (eq. 5),
approximate marginal likelihood and its gradient, randomized greedy, multi-class, bad input."""
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import log_ndtr, ndtri

from reference.dense_ivm import dense_greedy_entropy, se_bias_kernel
from sparsegp import IVMClassifier, MultiClassEPClassifier
from sparsegp.exceptions import ConvergenceWarning
from sparsegp._scaling import data_lengthscale
from sparsegp.classification._ivm_model import approx_log_likelihood
from sparsegp.classification._ivm_search import LATENT_VARIANCE_MAX, _noise_rescale
from sparsegp.classification._ivm_select import select_active_set
from sparsegp.datasets import make_gp_classes, make_xor
from sparsegp.kernels import ConstantKernel, SquaredExponential
from sparsegp.metrics import error_rate


def _xor(n=60, seed=0):
    X, y = make_xor(n, random_state=seed)
    return np.ascontiguousarray(X, dtype=float), np.asarray(y)


def test_entropy_selection_matches_dense_greedy():
    X, y = _xor(60, seed=1)
    clf = IVMClassifier(n_active=20, kernel=SquaredExponential(2.0, 1.3) + ConstantKernel(0.1),
                        bias=0.2, random_state=3).fit(X, y)
    ypm = np.where(y == clf.classes_[1], 1.0, -1.0)
    K = se_bias_kernel(X, X, 2.0, 1.3, 0.1)
    # the first pick is a random tie-break (all scores tie per class at the prior); give it
    ref = dense_greedy_entropy(K, ypm, 0.2, 20, first=clf.active_set_[0, :1])
    np.testing.assert_array_equal(clf.active_set_, [ref])   # one task: (1, n_active)


def test_randomized_with_full_index_reproduces_full_greedy():
    X, y = _xor(80, seed=2)
    ypm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    ls = np.full(2, 1.2)
    full = select_active_set(X, ypm, 1.5, ls, 0.0, 0.0, 25, "infogain", None,
                             np.random.default_rng(5))
    rand = select_active_set(X, ypm, 1.5, ls, 0.0, 0.0, 25, "infogain",
                             dict(n_random=0, n_greedy=3, size=200, retain=1.0),
                             np.random.default_rng(5))
    np.testing.assert_array_equal(full.active, rand.active)
    np.testing.assert_allclose(full.sqrt_p, rand.sqrt_p, rtol=1e-10)


def test_randomized_greedy_is_valid_and_deterministic():
    X, y = _xor(300, seed=4)
    kw = dict(n_active=40, randomized=dict(n_random=2, n_greedy=8, size=30, retain=0.5),
              kernel=SquaredExponential(1.0, 2.0), random_state=7)
    a = IVMClassifier(**kw).fit(X, y)
    b = IVMClassifier(**kw).fit(X, y)
    np.testing.assert_array_equal(a.active_set_, b.active_set_)
    assert np.unique(a.active_set_).size == 40
    assert np.all(a.site_precision_ >= 0)
    Xt, yt = _xor(500, seed=40)
    assert error_rate(yt, a.predict(Xt)) < 0.3


def test_plain_randomized_fit_computes_the_training_marginals_once(monkeypatch):
    # with fixed hyper-parameters and bias nothing reads the selection's criterion, and its
    # eq. 5 marginals over every training row cost as much as the selection (MNIST)
    from sparsegp.classification import _ivm_search

    calls = []
    real = _ivm_search._marginals
    monkeypatch.setattr(_ivm_search, "_marginals", lambda *a: calls.append(1) or real(*a))
    X, y = _xor(300, seed=4)
    kw = dict(n_active=40, randomized=dict(n_random=2, n_greedy=8, size=30, retain=0.5),
              kernel=SquaredExponential(1.0, 2.0), random_state=7)
    IVMClassifier(**kw).fit(X, y)
    assert len(calls) == 1              # the fitted model's training diagnostics
    calls.clear()
    IVMClassifier(bias="fit", **kw).fit(X, y)
    assert len(calls) == 3              # two bias fits, then the diagnostics


def test_end_of_fit_check_reads_the_judged_rows_only(monkeypatch):
    # the randomized scheme's eq. 5 marginals cost O(d^2) a row: the collapse check reads the
    # binary estimators' evenly spaced sample, and its numbers are those rows' exactly
    from sparsegp.classification import _binary, _ivm_model, _ivm_search

    seen = []
    real = _ivm_search._marginals

    def spy(*a):
        out = real(*a)
        if len(a) > 7:
            seen.append((a[7], out, real(*a[:7])))
        return out

    monkeypatch.setattr(_ivm_search, "_marginals", spy)
    X, y = _xor(700, seed=4)
    clf = IVMClassifier(n_active=40, randomized=dict(n_random=2, n_greedy=8, size=30,
                                                     retain=0.5),
                        kernel=SquaredExponential(1.0, 2.0), random_state=7).fit(X, y)
    (rows, (f, A), (f_all, A_all)), = seen
    assert len(rows) == _binary.JUDGED_SAMPLE < len(y)
    np.testing.assert_array_equal(rows, _binary.judged_rows(len(y)))
    # row by row the same products (equal bit for bit here); a few ulps for BLAS blocking
    np.testing.assert_allclose(f, f_all[rows], rtol=4e-15, atol=0)
    np.testing.assert_allclose(A, A_all[rows], rtol=4e-15, atol=0)
    model = clf.models_[0]
    y_pm = np.where(y == clf.classes_[1], 1.0, -1.0)
    assert model.train_log_loss == pytest.approx(_ivm_model._mean_nlp(f, A, y_pm[rows], model.bias))
    q = np.mean(y_pm[rows] > 0)          # the entropy of the judged rows' class frequencies
    assert model.class_entropy == pytest.approx(-q * np.log(q) - (1 - q) * np.log(1 - q))


def test_predictions_equal_dense_formula(rng):
    X, y = _xor(50, seed=5)
    clf = IVMClassifier(n_active=15, kernel=SquaredExponential(1.7, 1.1) + ConstantKernel(0.2),
                        bias=-0.3, random_state=0).fit(X, y)
    I = clf.active_set_[0]
    p, m = clf.site_precision_[0], clf.site_mean_[0]
    Xt = rng.normal(size=(30, 2)) * 2
    KII = se_bias_kernel(X[I], X[I], 1.7, 1.1, 0.2)
    KtI = se_bias_kernel(Xt, X[I], 1.7, 1.1, 0.2)
    G = KII + np.diag(1.0 / p)
    mean_ref = KtI @ np.linalg.solve(G, m)
    var_ref = 1.7 + 0.2 - np.einsum("ij,ji->i", KtI, np.linalg.solve(G, KtI.T))
    mean, var = clf.predict_latent(Xt)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(var, var_ref, rtol=1e-9, atol=1e-12)
    proba = clf.predict_proba(Xt)
    np.testing.assert_allclose(proba[:, 1], stats.norm.cdf((mean_ref - 0.3) /
                                                           np.sqrt(1 + var_ref)), rtol=1e-9)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(Xt), clf.classes_[(mean_ref - 0.3 > 0) * 1])
    # log_evidence_ is the approximate marginal likelihood at the final sites
    ref = stats.multivariate_normal(np.zeros(15), G).logpdf(m)
    np.testing.assert_allclose(clf.log_evidence_, [ref], rtol=1e-10)


@pytest.mark.parametrize("ard", [False, True])
def test_approx_log_likelihood_gradient(rng, ard):
    Xa = rng.normal(size=(12, 2))
    p = rng.uniform(0.2, 2.0, 12)
    m = rng.normal(size=12)
    ls = np.array([0.9, 1.4]) if ard else np.full(2, 1.1)
    v, gv, gl, gvb, gn = approx_log_likelihood(Xa, p, m, 1.3, ls, 0.1, grad=True)
    K = se_bias_kernel(Xa, Xa, 1.3, ls, 0.1)
    ref = stats.multivariate_normal(np.zeros(12), K + np.diag(1 / p)).logpdf(m)
    np.testing.assert_allclose(v, ref, rtol=1e-12)
    e = 1e-6
    fd_v = (approx_log_likelihood(Xa, p, m, 1.3 + e, ls, 0.1)
            - approx_log_likelihood(Xa, p, m, 1.3 - e, ls, 0.1)) / (2 * e)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-6)
    fd_vb = (approx_log_likelihood(Xa, p, m, 1.3, ls, 0.1 + e)
             - approx_log_likelihood(Xa, p, m, 1.3, ls, 0.1 - e)) / (2 * e)
    np.testing.assert_allclose(gvb, fd_vb, rtol=1e-6)
    # g_noise: a common term added to the site variances 1/p_i
    fd_n = (approx_log_likelihood(Xa, 1 / (1 / p + e), m, 1.3, ls, 0.1)
            - approx_log_likelihood(Xa, 1 / (1 / p - e), m, 1.3, ls, 0.1)) / (2 * e)
    np.testing.assert_allclose(gn, fd_n, rtol=1e-6)
    for j in range(2):
        dl = np.zeros(2)
        dl[j] = e
        fd = (approx_log_likelihood(Xa, p, m, 1.3, ls + dl, 0.1)
              - approx_log_likelihood(Xa, p, m, 1.3, ls - dl, 0.1)) / (2 * e)
        np.testing.assert_allclose(gl[j], fd, rtol=1e-6, atol=1e-9)


def test_optimize_improves_approximate_likelihood():
    X, y = _xor(120, seed=6)
    clf = IVMClassifier(n_active=30, optimizer="lbfgs", max_iter=2,
                        kernel=SquaredExponential(1.0, 1.0), random_state=0).fit(X, y)
    assert clf.n_iter_.tolist() == [2]
    assert clf.variance_[0] != 1.0 and clf.lengthscale_[0] != 1.0
    assert np.all(np.isfinite(clf.log_evidence_))


def test_evidence_learns_the_bias_variance_unless_fixed():
    X, y = _xor(120, seed=6)
    kw = dict(n_active=30, optimizer="lbfgs", max_iter=2, random_state=0)
    free = IVMClassifier(kernel=SquaredExponential(1.0, 1.0) + ConstantKernel(0.5, (1e-3, 1e3)),
                         **kw).fit(X, y)
    vb = free.kernel_[0].k2.constant_value
    assert vb != 0.5 and 1e-3 <= vb <= 1e3
    assert free.kernel_[0].k2.constant_value_bounds == (1e-3, 1e3)
    # theta_ = [log s2, log l, log v_b], and the model predicts with the learnt v_b
    assert free.theta_.shape == (3,)
    np.testing.assert_allclose(free.theta_[-1], np.log(vb), rtol=1e-12)
    np.testing.assert_allclose(free.models_[0].bias_variance, vb, rtol=1e-12)
    fixed = IVMClassifier(kernel=SquaredExponential(1.0, 1.0) + ConstantKernel(0.5, "fixed"),
                          **kw).fit(X, y)
    assert fixed.theta_.shape == (2,) and fixed.kernel_[0].k2.constant_value == 0.5
    # v_b is the sum of the constant summands; one fixed summand fixes it
    both = IVMClassifier(kernel=SquaredExponential(1.0, 1.0) + ConstantKernel(0.2, "fixed")
                         + ConstantKernel(0.3), **kw).fit(X, y)
    assert both.theta_.shape == (2,) and both.kernel_[0].k2.constant_value == 0.5


def test_learn_noise_rescales_the_kernel_towards_the_noise_free_probit():
    # separable clusters: the approximate likelihood prefers less probit noise than the
    # unit noise of the sites, so the learnt noise rescales the kernel upwards (measured:
    # s2 8.3 without, 4e4 with)
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 60)
    X = rng.normal(size=(120, 2)) + np.where(y[:, None] == 1, 2.5, -2.5)
    kernel = SquaredExponential(1.0, 1.0) + ConstantKernel(1.0)
    kw = dict(n_active=30, optimizer="lbfgs", max_iter=3, kernel=kernel, random_state=0)
    plain = IVMClassifier(**kw).fit(X, y)
    noisy = IVMClassifier(learn_noise=True, **kw).fit(X, y)
    assert noisy.variance_[0] > 100 * plain.variance_[0]
    assert noisy.score(X, y) == plain.score(X, y) == 1.0
    # the fitted model is an ordinary unit-noise IVM: log_evidence_ is its likelihood at theta_
    np.testing.assert_allclose(noisy.log_marginal_likelihood(noisy.theta_),
                               noisy.log_evidence_.sum(), rtol=1e-10)
    # other optimizers ignore it
    a = IVMClassifier(n_active=20, kernel=kernel, learn_noise=True, random_state=0).fit(X, y)
    b = IVMClassifier(n_active=20, kernel=kernel, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_noise_rescale_keeps_bounds_and_the_latent_variance_cap():
    free_box = np.array([[np.log(1e-5), np.log(1e5)], [0.0, 0.0], [np.log(1e-5), np.log(1e5)]])
    assert _noise_rescale(0.5, 2.0, 1.0, free_box) == 0.5
    # s2 / noise would pass the variance's upper bound: the noise is raised to meet it
    np.testing.assert_allclose(_noise_rescale(1e-6, 2.0, 1.0, free_box), 2.0 / 1e5)
    # and s2 + v_b never passes LATENT_VARIANCE_MAX
    wide = np.array([[-700.0, 700.0], [0.0, 0.0], [-700.0, 700.0]])
    np.testing.assert_allclose(_noise_rescale(1e-12, 2.0, 1.0, wide), 3.0 / LATENT_VARIANCE_MAX)


@pytest.mark.parametrize("kernel", [SquaredExponential(1.0, 1.0, "fixed") + ConstantKernel(1.0),
                                    SquaredExponential(1.0, 1.0) + ConstantKernel(1.0, "fixed")])
def test_learn_noise_needs_free_variances(kernel):
    X, y = _xor(40, seed=1)
    with pytest.raises(ValueError, match="neither may be fixed"):
        IVMClassifier(n_active=10, optimizer="lbfgs", learn_noise=True,
                      kernel=kernel).fit(X, y)


def test_bias_auto_and_selection_modes():
    X, y = _xor(80, seed=7)
    y = np.where(np.arange(80) < 20, 1, 0)
    # labels unrelated to X: a fit no better than their frequencies says so (issue 49)
    with pytest.warns(ConvergenceWarning, match="no better than the class frequencies"):
        clf = IVMClassifier(n_active=10, bias="auto", random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.bias_, ndtri(0.25))
    for sel in ("entropy", "infogain", "random"):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            c = IVMClassifier(n_active=10, selection=sel, random_state=1).fit(X, y)
        assert np.unique(c.active_set_).size == 10
        assert all("no better than the class frequencies" in str(w.message) for w in seen)


def test_multiclass_one_vs_rest():
    X, y = make_gp_classes(90, n_classes=3, random_state=0)
    # the default kernel's start (a data-scaled length-scale) plus the bias variance 0.1
    start = SquaredExponential(1.0, float(data_lengthscale(X, False)[0]))
    clf = IVMClassifier(n_active=20, bias="auto", kernel=start + ConstantKernel(0.1),
                        optimizer="grid", random_state=0).fit(X, y)
    assert clf.active_set_.shape == (3, 20) and clf.bias_.shape == (3,)
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    logp = clf.decision_function(X)
    # each column is log Phi((mu_c + b_c) / sqrt(1 + var_c)) of the c-vs-rest IVM
    mean, var = clf.predict_latent(X)
    np.testing.assert_allclose(logp, log_ndtr((mean + clf.bias_) / np.sqrt(1 + var)),
                               rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(logp, axis=1)])
    assert error_rate(y, clf.predict(X)) < 0.5


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_active=61), "n_active"),
    (dict(n_active=0), "n_active"),
    (dict(kernel=SquaredExponential() + ConstantKernel(-0.1)), "bias variance"),
    (dict(kernel=SquaredExponential() + SquaredExponential()), "one stationary kernel"),
    (dict(bias="half"), "bias"),
    (dict(selection="best"), "selection"),
    (dict(randomized=dict(size=0)), "size"),
    (dict(randomized=dict(foo=1)), "unknown"),
    (dict(kernel=SquaredExponential(1.0, -1.0)), "lengthscale"),
    (dict(optimizer=True), "optimizer"),
])
def test_bad_arguments(kwargs, match):
    X, y = _xor(60)
    with pytest.raises(ValueError, match=match):
        IVMClassifier(**{"n_active": 10, **kwargs}).fit(X, y)


def test_bad_data():
    X, y = _xor(60)
    with pytest.raises(ValueError, match="2 classes"):
        IVMClassifier(n_active=5).fit(X, np.ones(60))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        IVMClassifier(n_active=5).fit(Xn, y)
    # a fixed draw: with random_state=None, 6 of 40 draws of five active points on this xor
    # end no better than the class frequencies and warn, which this test is not about
    clf = IVMClassifier(n_active=5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(Xn)


@pytest.mark.slow
def test_xor_400_sixty_active_points():
    errs = []
    for s in range(5):
        X, y = make_xor(400, random_state=s)
        Xt, yt = make_xor(2000, random_state=100 + s)
        clf = IVMClassifier(n_active=60, optimizer="lbfgs", max_iter=4,
                            random_state=s).fit(X, y)
        errs.append(error_rate(yt, clf.predict(Xt)))
    print("xor N=400 d=60 test errors", errs, "mean", np.mean(errs))
    assert np.mean(errs) < 0.16


def test_one_vs_rest_probabilities_condition_on_one_positive_task():
    from scipy.special import ndtr
    from sparsegp.classification._ivm_model import one_vs_rest_proba
    rng = np.random.default_rng(3)
    Z = rng.normal(scale=2.0, size=(50, 4))
    P = one_vs_rest_proba(Z)
    # P(c) = P_c(+) prod_{k != c} P_k(-) / sum over c of the same, written out
    joint = np.stack([ndtr(Z[:, c]) * np.prod(np.delete(ndtr(-Z), c, axis=1), axis=1)
                      for c in range(4)], axis=1)
    np.testing.assert_allclose(P, joint / joint.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(np.argmax(P, axis=1), np.argmax(Z, axis=1))
    # tails: every task sure of -1, or two sure of +1, stay finite and sum to one
    far = one_vs_rest_proba(np.array([[-40.0, -38.0, -45.0], [40.0, 39.0, -45.0]]))
    assert np.all(np.isfinite(far)) and np.allclose(far.sum(axis=1), 1.0)
    assert far[0, 1] > 0.99 and far[1, 0] > 0.99


def test_multiclass_probabilities_are_sharper_than_normalised_task_probabilities():
    # standardised digits: the normalised P_c(+1) had a median largest probability of 0.25
    # and log loss 1.41 at 0.965 accuracy (issue 49); coupling the tasks keeps the argmax
    from sklearn.datasets import load_digits
    from sklearn.metrics import log_loss
    X, y = load_digits(return_X_y=True)
    X = (X - X.mean(axis=0)) / np.maximum(X.std(axis=0), 1e-12)
    Xtr, ytr, Xte, yte = X[:600], y[:600], X[600:900], y[600:900]
    clf = IVMClassifier(n_active=60, random_state=0).fit(Xtr, ytr)
    P = clf.predict_proba(Xte)
    logp = clf.decision_function(Xte)
    old = np.exp(logp - logp.max(axis=1, keepdims=True))
    old /= old.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(clf.predict(Xte), clf.classes_[np.argmax(P, axis=1)])
    assert np.mean(clf.predict(Xte) == yte) > 0.85         # measured 0.883
    assert log_loss(yte, P) < log_loss(yte, old) - 0.2
    assert np.median(P.max(axis=1)) > np.median(old.max(axis=1)) + 0.1


@pytest.mark.parametrize("seed", [1, 5, 7])
def test_validation_search_keeps_honest_probabilities_on_every_split(seed):
    # scored by error, one held-out split in twelve chose a nearly flat model (0 errors in
    # 80, NLP 0.633, against 1 error and NLP 0.082) and the test log loss was 0.653 (seed
    # 5); seeds 1 and 7 chose l = 21.9 and scored 0.152. By held-out NLP: 0.093-0.101
    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics import log_loss
    from sklearn.model_selection import train_test_split
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    clf = IVMClassifier(random_state=seed).fit(Xtr, ytr)       # raw features
    assert log_loss(yte, clf.predict_proba(Xte)) < 0.12
    assert clf.score(Xte, yte) > 0.95


def test_digits_probabilities_are_as_honest_as_multiclass_ep():
    # issue 49: standardised digits, IVM 0.965 accurate with log loss 1.41 against
    # MultiClassEPClassifier's 0.151. Coupled tasks, held-out NLP and the wider variance
    # grid: 0.114-0.120. EP is fitted here (5 s; it took 32 s when this test was written and
    # held 0.1507 for it then; 0.1343 since its k-means start)
    from sklearn.datasets import load_digits
    from sklearn.metrics import log_loss
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    clf = IVMClassifier(random_state=0).fit(scaler.transform(Xtr), ytr)
    P = clf.predict_proba(scaler.transform(Xte))
    ep = MultiClassEPClassifier(random_state=0).fit(scaler.transform(Xtr), ytr)
    assert log_loss(yte, P) < log_loss(yte, ep.predict_proba(scaler.transform(Xte))) + 0.05
    assert np.mean(clf.classes_[np.argmax(P, axis=1)] == yte) > 0.96
