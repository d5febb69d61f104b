"""Right answers on the data users bring (issue 23, "Done when").

* **Units.** Every estimator at its defaults, fitted on ``X diag(a) + b`` with per-column
  scales ``a`` from 1e-4 to 1e4 and offset b = 1e6, predicts within 0.02 (probabilities) or
  2 % of y's s.d. (regression) what it predicts fitted on standardised X; the regressor also
  with y -> 1e6 y + 1e6.
* **Raw scikit-learn data sets** at the defaults: breast cancer (each binary estimator against
  its own StandardScaler pipeline) and diabetes (each approximation against scikit-learn's
  GaussianProcessRegressor).
* **No silent failure**: the training driver's warning for a parameter on its bound (also for
  the stagewise classifier's kept model), the regressor's for a fit no better than the mean of
  y and for SoR/DTC fits more certain than their kernel.
* **Thread counts**: a PITC fit is the same with one BLAS thread as with two.

The units cases compare two fits whose model-unit inputs differ only by the rounding of
``X diag(a) + b`` itself, about 1.2e-6 of the 1e-4 column's spread. A fit that is a function of
the data carries that through unchanged (measured below); a long optimiser path that has not
converged amplifies it: perturbing standardised X by a relative 1e-6 moved the multi-class
GFITC/SVGP fits at their full 250-iteration budgets by 0.018 in a probability, and FITC/PITC
regressors at 200 iterations with 50 inducing inputs on 100 rows by 2-4 % of y's s.d. So the
multi-class and regression cases run short budgets (as ``test_invariance.py`` does): the
question here is the units, not the optimiser's path.
"""
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.metrics import log_loss, r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsegp import (EPClassifier, GFITCClassifier, IVMClassifier, MultiClassEPClassifier,
                      MultiClassGFITCClassifier, MultiClassSVGPClassifier, SparseGPRegressor,
                      StagewiseGPClassifier)
from sparsegp import _threads
from sparsegp._optimize import maximize
from sparsegp.datasets import make_xor
from sparsegp.exceptions import ConvergenceWarning
from sparsegp.kernels import SquaredExponential

from conftest import require_data

#: per-column scales (1e-4 ... 1e4) and the offset of the units cases
D = 5
SCALES = np.geomspace(1e-4, 1e4, D)
OFFSET = 1e6
#: the issue's bounds: a probability, and a fraction of y's standard deviation
PROBA_TOL = 0.02
REGRESSION_TOL = 0.02


def _standardised(X, Xt):
    centre, spread = X.mean(axis=0), X.std(axis=0)
    return (X - centre) / spread, (Xt - centre) / spread


def _binary_data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + 40, D))
    f = np.sin(2.0 * X[:, 0]) + X[:, 1] - 0.5 * X[:, -1]
    y = (f + 0.3 * rng.standard_normal(n + 40) > 0).astype(int)
    return X[:n], y[:n], X[n:]


def _multiclass_data(n=60, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + 30, D))
    y = np.digitize(X[:, 0] + X[:, -1], [-0.7, 0.7])
    return X[:n], y[:n], X[n:]


def _proba_gap(make, data):
    """Largest |p(standardised X) - p(X diag(a) + b)| over the test rows and classes."""
    X, y, Xt = data
    Xs, Xts = _standardised(X, Xt)
    with warnings.catch_warnings():
        # budgets end before convergence on purpose (module docstring)
        warnings.simplefilter("ignore", ConvergenceWarning)
        p0 = make().fit(Xs, y).predict_proba(Xts)
        p1 = make().fit(X * SCALES + OFFSET, y).predict_proba(Xt * SCALES + OFFSET)
    return float(np.max(np.abs(p0 - p1)))


#: Every binary classifier's default covariance is an isotropic kernel on standardised inputs
#: (the shared layer's per-feature scaling of the default, sparsegp._scaling.scaling_for(...,
#: standardise_default=True)), the same model whatever each column's units. Measured
#: differences in the comments.
BINARY = [
    # measured EP 4.9e-7, GFITC 6.5e-3 (30 CG steps, not converged), IVM 2.2e-7, stagewise
    # 9.1e-7 (its default box keeps eq. 4's search from running away along s2: unbounded, 0.73)
    pytest.param(lambda: EPClassifier(random_state=0), id="ep"),
    pytest.param(lambda: GFITCClassifier(random_state=0), id="gfitc"),
    pytest.param(lambda: IVMClassifier(n_active=40, random_state=0), id="ivm"),
    pytest.param(lambda: StagewiseGPClassifier(d_max=30, random_state=0), id="stagewise"),
]

#: short budgets (module docstring); measured differences in the comments
MULTICLASS = [
    pytest.param(lambda: MultiClassEPClassifier(n_inducing=6, max_iter=30, tol=None, random_state=0),
                 id="mc-ep"),
    pytest.param(lambda: MultiClassGFITCClassifier(n_inducing=6, max_iter=30, tol=None,
                                                   random_state=0),
                 id="mc-gfitc"),
    pytest.param(lambda: MultiClassSVGPClassifier(n_inducing=6, max_iter=30, random_state=0),
                 id="mc-svgp"),
]


@pytest.mark.parametrize("make", BINARY)
def test_binary_defaults_ignore_per_column_units(make):
    assert _proba_gap(make, _binary_data()) <= PROBA_TOL


@pytest.mark.parametrize("make", [
    pytest.param(lambda: EPClassifier(random_state=0), id="ep"),
    pytest.param(lambda: GFITCClassifier(max_iter=10, random_state=0), id="gfitc"),
    pytest.param(lambda: StagewiseGPClassifier(d_max=30, optimizer=None, random_state=0),
                 id="stagewise"),
])
def test_binary_default_fit_is_reported_in_the_users_units(make):
    # the two fits differ by the rounding of X diag(a) + b carried along the optimiser's path
    # (measured: theta_ 2.1e-6 EP, 7.9e-5 GFITC; inducing inputs 9.7e-5, their gradient 3.1e-4
    # relative), so the comparisons allow 1e-3; a unit left unconverted is a factor 1e-4..1e4
    X, y, Xt = _binary_data()
    Xs, _ = _standardised(X, Xt)
    spread = SCALES * X.std(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        c0 = make().fit(Xs, y)
        c1 = make().fit(X * SCALES + OFFSET, y)
    # one length-scale, in standard deviations of each feature: the same number
    assert isinstance(c1.lengthscale_, float)
    assert abs(c1.lengthscale_ - c0.lengthscale_) <= 1e-3 * c0.lengthscale_
    np.testing.assert_allclose(c1.theta_, c0.theta_, rtol=1e-3, atol=1e-3)
    # the kernel in the units of X: one length-scale per feature (measured 8.5e-9)
    np.testing.assert_allclose(c1.kernel_.lengthscale, c1.lengthscale_ * spread, rtol=1e-7)
    # log_marginal_likelihood reads theta_ in the reported units
    assert abs(c1.log_marginal_likelihood(c1.theta_) - c1.log_marginal_likelihood_value_) \
        <= 1e-8 * abs(c1.log_marginal_likelihood_value_)
    if hasattr(c1, "log_evidence_gradient_"):
        g0, g1 = c0.log_evidence_gradient_, c1.log_evidence_gradient_
        assert abs(g1["lengthscale"] - g0["lengthscale"]) <= 1e-3 * (1 + abs(g0["lengthscale"]))
    if hasattr(c1, "inducing_points_"):
        np.testing.assert_allclose((c1.inducing_points_ - OFFSET) / SCALES,
                                   c0.inducing_points_ * X.std(axis=0) + X.mean(axis=0),
                                   atol=1e-3)
        # d/dZ_user = d/dZ_std / spread_j
        gz0, gz1 = g0["inducing_points"], g1["inducing_points"]
        np.testing.assert_allclose(gz1 * spread, gz0, atol=5e-3 * np.max(np.abs(gz0)))


@pytest.mark.parametrize("make", MULTICLASS)
def test_multiclass_defaults_ignore_per_column_units(make):
    assert _proba_gap(make, _multiclass_data()) <= PROBA_TOL


def _regression_data(n, seed=0, noise=0.3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + 40, D))
    y = np.sin(2.0 * X[:, 0]) + X[:, 1] - 0.5 * X[:, -1] + noise * rng.standard_normal(n + 40)
    return X[:n], y[:n], X[n:]


def _regression_gaps(make, data):
    """Largest prediction differences, in s.d. of y, of the raw-unit fits from the
    standardised one: (X diag(a) + b, y) and (X diag(a) + b, 1e6 y + 1e6)."""
    X, y, Xt = data
    Xs, Xts = _standardised(X, Xt)
    Xr, Xtr = X * SCALES + OFFSET, Xt * SCALES + OFFSET
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m0 = make().fit(Xs, y).predict(Xts)
        m1 = make().fit(Xr, y).predict(Xtr)
        m2 = (make().fit(Xr, 1e6 * y + 1e6).predict(Xtr) - 1e6) / 1e6
    sd = y.std()
    return np.max(np.abs(m1 - m0)) / sd, np.max(np.abs(m2 - m0)) / sd


@pytest.mark.parametrize("approximation",
                         ["sod", "sor", "dtc", "fitc", "fic", "pitc", "vfe", "exact"])
def test_regressor_ignores_the_units_of_X_and_y(approximation):
    # 10 inducing inputs on 100 rows, 30 optimiser steps: measured at most 1.1e-4 (SoR/DTC),
    # 3.2e-5 (FITC), 1.7e-6 (exact)
    gaps = _regression_gaps(lambda: SparseGPRegressor(
        approximation, n_inducing=10, max_iter=30, random_state=0), _regression_data(100))
    assert max(gaps) <= REGRESSION_TOL


def test_regressor_at_its_very_defaults_ignores_the_units():
    # every argument at its default (FITC, 200 steps, n_inducing="auto" = all 40 rows, a
    # determined fit: it converges in 12 steps); measured 6.4e-7
    gaps = _regression_gaps(lambda: SparseGPRegressor(random_state=0),
                            _regression_data(40, noise=0.5))
    assert max(gaps) <= REGRESSION_TOL


def test_regressor_reports_the_default_fit_in_the_users_units():
    X, y, Xt = _regression_data(40, noise=0.5)
    Xs, _ = _standardised(X, Xt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        g0 = SparseGPRegressor(random_state=0).fit(Xs, y)
        g1 = SparseGPRegressor(random_state=0).fit(X * SCALES + OFFSET, y)
    # one length-scale, in standard deviations of each feature: the same number
    assert isinstance(g1.lengthscale_, float)
    assert abs(g1.lengthscale_ - g0.lengthscale_) <= 1e-5 * g0.lengthscale_
    # the kernel and the inducing inputs in the units of X
    np.testing.assert_allclose(g1.kernel_.lengthscale, g1.lengthscale_ * SCALES * X.std(axis=0),
                               rtol=1e-5)
    np.testing.assert_allclose((g1.inducing_points_ - OFFSET) / SCALES,
                               g0.inducing_points_ * X.std(axis=0) + X.mean(axis=0),
                               rtol=1e-5, atol=1e-5)
    # the gradient by the inducing inputs follows them: d/dZ_user = d/dZ_std / spread_j
    gz0 = g0.log_marginal_likelihood_gradient_["inducing_points"]
    gz1 = g1.log_marginal_likelihood_gradient_["inducing_points"]
    np.testing.assert_allclose(gz1 * SCALES * X.std(axis=0), gz0,
                               atol=1e-4 * np.max(np.abs(gz0)))
    # log_marginal_likelihood reads theta in the reported units
    theta = np.log([g1.variance_, g1.lengthscale_, g1.noise_variance_])
    assert abs(g1.log_marginal_likelihood(theta) - g1.log_marginal_likelihood_) \
        <= 1e-8 * abs(g1.log_marginal_likelihood_)


# ------------------------------------------------------------------ raw breast cancer

@pytest.fixture(scope="module")
def breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0)


@pytest.mark.slow
@pytest.mark.parametrize("make", [
    pytest.param(lambda: EPClassifier(random_state=0), id="ep"),
    pytest.param(lambda: GFITCClassifier(random_state=0), id="gfitc"),
    pytest.param(lambda: IVMClassifier(random_state=0), id="ivm"),
    pytest.param(lambda: StagewiseGPClassifier(random_state=0), id="stagewise"),
    pytest.param(lambda: MultiClassEPClassifier(random_state=0), id="mc-ep"),
    pytest.param(lambda: MultiClassGFITCClassifier(random_state=0), id="mc-gfitc"),
    pytest.param(lambda: MultiClassSVGPClassifier(random_state=0), id="mc-svgp"),
])
def test_raw_breast_cancer_matches_the_standard_scaler_pipeline(make, breast_cancer):
    # measured (raw / pipeline accuracy, log loss): EP 0.953/0.953, 0.080/0.080; GFITC
    # 0.982/0.982, 0.072/0.072; stagewise 0.971/0.971, 0.068/0.068; IVM 0.977/0.977,
    # 0.098/0.098 (probabilities equal to 1.2e-5, 6.9e-8, 7.9e-9: the default covariance
    # standardises X); multi-class EP, GFITC, SVGP equal to 0.001
    Xtr, Xte, ytr, yte = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        raw = make().fit(Xtr, ytr)
        pipe = make_pipeline(StandardScaler(), make()).fit(Xtr, ytr)
    assert raw.score(Xte, yte) >= pipe.score(Xte, yte) - 0.03
    assert log_loss(yte, raw.predict_proba(Xte)) <= log_loss(yte, pipe.predict_proba(Xte)) + 0.05


# ------------------------------------------------------------------ raw diabetes

@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0)


@pytest.fixture(scope="module")
def sklearn_diabetes_r2(diabetes):
    """Test R² of scikit-learn's GP with normalize_y=True and an ARD kernel (0.378)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    Xtr, Xte, ytr, yte = diabetes
    kernel = ConstantKernel() * RBF(np.ones(Xtr.shape[1])) + WhiteKernel()
    gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=0).fit(Xtr, ytr)
    return r2_score(yte, gp.predict(Xte))


@pytest.mark.slow
@pytest.mark.parametrize("approximation", ["sod", "vfe", "exact", "fitc", "fic", "pitc"])
def test_raw_diabetes_reaches_sklearns_gp(approximation, diabetes, sklearn_diabetes_r2):
    # measured test R2 (k-means start, e500052): VFE 0.394, exact 0.383, FITC/FIC 0.363
    # (random_state 0-4: 0.350-0.364), PITC 0.374 (scikit-learn 0.378), SoD 0.359 (0.211
    # when the stopping rule took a plateau for the top: test below)
    # The FITC family's inducing inputs are placed by the VFE bound (inducing_objective=
    # "auto"); the papers' joint search of their own evidence gives FITC 0.300, PITC 0.332
    # (test below)
    Xtr, Xte, ytr, yte = diabetes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gp = SparseGPRegressor(approximation, random_state=0).fit(Xtr, ytr)
    assert r2_score(yte, gp.predict(Xte)) >= sklearn_diabetes_r2 - 0.05


def test_sod_search_crosses_the_plateau_of_raw_diabetes(diabetes):
    # the search gains 1e-3 nats over iterations 3-7 while its gradient grows; a rule on the
    # gain alone stopped there, 2 nats below the top (benchmarks/DEFAULTS.md, "A plateau the
    # rule takes for the top"). The default rule now climbs on to scipy's own optimum
    Xtr, Xte, ytr, yte = diabetes
    default = SparseGPRegressor("sod", random_state=0).fit(Xtr, ytr)
    to_scipy = SparseGPRegressor("sod", tol=1e-12, random_state=0).fit(Xtr, ytr)
    assert default.converged_ and default.n_iter_ > 7
    assert default.log_marginal_likelihood_value_ == pytest.approx(
        to_scipy.log_marginal_likelihood_value_, abs=1e-6)
    assert r2_score(yte, default.predict(Xte)) > 0.35


def test_fitc_evidence_over_the_inducing_inputs_overfits_raw_diabetes(diabetes):
    # issue 23: the joint search of FITC's evidence over theta and Z (the papers' fit, still
    # inducing_objective="evidence") fits the noise to the training targets through
    # diag(K - Q): measured noise 5.4e-5 var(y), training R2 0.663, test 0.300. With Z placed
    # by the VFE bound (the default) the noise stays 0.38 var(y) (exact GP 0.42), test R2
    # 0.363
    Xtr, Xte, ytr, yte = diabetes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        joint = SparseGPRegressor("fitc", inducing_objective="evidence",
                                  random_state=0).fit(Xtr, ytr)
        default = SparseGPRegressor("fitc", random_state=0).fit(Xtr, ytr)
    assert joint.noise_variance_ < 1e-3 * ytr.var() < 0.1 * ytr.var() < default.noise_variance_
    assert r2_score(yte, default.predict(Xte)) > r2_score(yte, joint.predict(Xte)) + 0.01


def test_inducing_objective_moves_the_inducing_inputs_as_documented():
    # "vfe" (the FITC family's default): Z where VFE's own fit puts them, then FITC's evidence
    # stationary in theta (measured gradient 3e-6) but not in Z (measured 3.9); None: Z at
    # their start, theta fitted. Measured from random rows, pinned here: from the k-means
    # default, Z held, the search over theta ends by L-BFGS-B's relative-decrease test at a
    # gradient of 1.7e-3 (2.1e-3 at tol=0), this start's conditioning rather than the
    # inducing objective's meaning (every other claim below holds from either start)
    X, y, _ = _regression_data(100)
    kw = dict(n_inducing=10, init="random", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitc = SparseGPRegressor("fitc", **kw).fit(X, y)
        vfe = SparseGPRegressor("vfe", **kw).fit(X, y)
        joint = SparseGPRegressor("fitc", inducing_objective="evidence", **kw).fit(X, y)
        held = SparseGPRegressor("fitc", inducing_objective=None, **kw).fit(X, y)
        start = SparseGPRegressor("fitc", optimizer=None, **kw).fit(X, y)
    np.testing.assert_array_equal(fitc.inducing_points_, vfe.inducing_points_)
    assert np.max(np.abs(joint.inducing_points_ - vfe.inducing_points_)) > 0.1
    for gp in (fitc, held):
        _, grad = gp.log_marginal_likelihood(gp.theta_, eval_gradient=True)
        assert np.max(np.abs(grad)) < 1e-3
        assert np.max(np.abs(gp.log_marginal_likelihood_gradient_["inducing_points"])) > 0.1
    np.testing.assert_array_equal(held.inducing_points_, start.inducing_points_)
    assert np.max(np.abs(held.theta_ - start.theta_)) > 0.1


# ------------------------------------------------------------------ no silent failure

def test_driver_warns_when_the_best_point_is_on_a_bound():
    def rising(theta, _):                  # increases without limit in theta[0]
        return theta[0] - theta[1] ** 2, np.array([1.0, -2.0 * theta[1]]), None

    bounds = np.array([[-1.0, 1.0], [-1.0, 1.0]])
    with pytest.warns(ConvergenceWarning, match=r"variance at its upper bound"):
        res = maximize(rising, np.array([0.0, 0.5]), bounds=bounds,
                       names=["variance", "lengthscale"], label="test")
    assert res.theta[0] == 1.0
    # an interior optimum says nothing; nor does a round of a larger scheme
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        maximize(lambda t, _: (-np.sum(t * t), -2.0 * t, None), np.array([0.5, 0.5]),
                 bounds=bounds)
        maximize(rising, np.array([0.0, 0.5]), bounds=bounds, warn_at_cap=False)
        # a coordinate named None is left out (the regressor's noise floor)
        maximize(rising, np.array([0.0, 0.5]), bounds=bounds, names=[None, "lengthscale"])


def test_stagewise_warns_when_its_kept_model_is_on_the_default_box(monkeypatch):
    # the outer loop's searches are rounds of Algorithm 1 and do not warn; the kept model
    # does, with the driver's message. Every point twice, with opposite labels: a site's
    # prediction at its twin is always wrong, so eq. 4 shrinks the variance (to 0.007-0.07
    # in the default box over six seeds, 20 CG steps a round); in a box with floor 0.1 it
    # ends there on every seed (measured), length-scale 622 here. (Labels independent of X
    # reached the default floor on one seed's path only, and a 1e-13 change of eq. 4's
    # gradient moved that path: random labels make Algorithm 1's choices chaotic.)
    from sparsegp.classification import _stagewise
    rng = np.random.default_rng(0)
    X0, y0 = rng.standard_normal((40, 3)), rng.integers(0, 2, 40)
    X, y = np.vstack([X0, X0]), np.concatenate([y0, 1 - y0])
    monkeypatch.setattr(_stagewise, "DEFAULT_BOUNDS", (0.1, 1e3))
    # (on such twins no predictor beats the class frequencies, and the fit says that too)
    with pytest.warns(ConvergenceWarning, match="no better than the class frequencies"), \
            pytest.warns(ConvergenceWarning,
                         match=r"StagewiseGPClassifier: the fit ended with variance at its "
                               r"lower bound .* not the data's: pass a kernel with wider bounds"):
        clf = StagewiseGPClassifier(d_max=20, random_state=0).fit(X, y)
    assert clf.variance_ == pytest.approx(0.1)
    # a label that is the sign of one feature: in the default box the variance runs to its
    # ceiling (the guard of eq. 4's run-away along s2, not reported) and the length-scale
    # ends at 4.8; in a box [0.5, 1.5] both end on the ceiling and only the length-scale is
    # reported (in [0.1, 2]: 1.85, no warning)
    X = np.random.default_rng(0).standard_normal((80, 3))
    monkeypatch.setattr(_stagewise, "DEFAULT_BOUNDS", (0.5, 1.5))
    with pytest.warns(ConvergenceWarning) as record:
        clf = StagewiseGPClassifier(d_max=20, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    assert clf.variance_ == pytest.approx(1.5) and clf.lengthscale_ == pytest.approx(1.5)
    messages = [str(w.message) for w in record]
    assert len(messages) == 1 and "with lengthscale at its upper bound" in messages[0]
    assert "variance" not in messages[0].split(". The objective")[0]


def test_regressor_fit_no_better_than_the_mean_warns(diabetes):
    # issue 23: raw diabetes targets (25-346) without normalize_y: a zero-mean GP fits them
    # with a length-scale on its upper bound, a constant; both warnings say so
    Xtr, _, ytr, _ = diabetes
    with pytest.warns(ConvergenceWarning) as record:
        SparseGPRegressor("exact", normalize_y=False).fit(Xtr, ytr)
    messages = " | ".join(str(w.message) for w in record)
    assert "no better than their mean" in messages
    assert "lengthscale at its upper bound" in messages


def test_regressor_healthy_fit_does_not_warn(diabetes):
    Xtr, _, ytr, _ = diabetes
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SparseGPRegressor("exact").fit(Xtr, ytr)


@pytest.mark.parametrize("approximation", ["sor", "dtc"])
def test_sor_dtc_more_certain_than_their_kernel_warn(approximation, diabetes):
    # issue 23: training R2 0.96, test R2 -6.6; the unexplained prior variance averages 5e5
    # var(y) (healthy fits: at most 1.3). Their own evidence over the inducing inputs, the
    # papers' fit, still ends there; the default places them by the VFE bound (below)
    Xtr, Xte, ytr, yte = diabetes
    with pytest.warns(ConvergenceWarning) as record:
        gp = SparseGPRegressor(approximation, inducing_objective="evidence",
                               random_state=0).fit(Xtr, ytr)
    assert any("far more certain than its kernel supports" in str(w.message) for w in record)
    assert r2_score(yte, gp.predict(Xte)) < 0.0 < r2_score(ytr, gp.predict(Xtr)) - 0.5


@pytest.mark.parametrize("approximation", ["sor", "dtc"])
def test_sor_dtc_defaults_are_continuous_in_the_data(approximation, diabetes):
    # issue 49: with the inducing inputs moved by SoR/DTC's own evidence, standardised
    # diabetes ran the signal variance to its bound 1e6 var(y) (test R2 -9.1) and a 1e-12
    # relative change to X moved the predictions by 26 s.d. of y. Placed by the VFE bound:
    # test R2 0.360, moves of 3.1e-12 s.d. of y (random_state 1, 2: 1.4e-12, 2.3e-10; k-means
    # start, e500052)
    Xtr, Xte, ytr, yte = diabetes
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    mean = {}
    for eps in (0.0, 1e-12, -1e-12):
        gp = SparseGPRegressor(approximation, random_state=0).fit(Xtr * (1.0 + eps), ytr)
        assert gp.converged_
        mean[eps] = gp.predict(Xte)
    assert r2_score(yte, mean[0.0]) > 0.3
    for eps in (1e-12, -1e-12):
        assert np.max(np.abs(mean[eps] - mean[0.0])) <= 1e-6 * np.std(ytr)


def test_healthy_dtc_does_not_warn():
    # 50 inducing inputs on a 1-D problem: unexplained prior variance 0.004 var(y)
    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, size=(200, 1))
    y = np.sin(2.0 * X[:, 0]) + 0.2 * rng.standard_normal(200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", ".*stopped at max_iter", ConvergenceWarning)
        SparseGPRegressor("dtc", n_inducing=20, max_iter=100, random_state=0).fit(X, y)


# ------------------------------------------------------------------ thread counts

def test_pitc_fit_is_the_same_with_one_and_two_blas_threads(monkeypatch,
                                                            openblas_at_two_threads):
    # OpenBLAS's dgemm rounds differently at two threads; PITC now holds BLAS to one
    # (issue 23 item 6). A quiet machine, so that the load policy does not lower the count
    from threadpoolctl import threadpool_limits

    monkeypatch.setattr(_threads, "_recent_busy_cores", lambda: 0.0)
    X, y = load_diabetes(return_X_y=True)
    out = []
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp = SparseGPRegressor("pitc", max_iter=5, random_state=0).fit(X, y)
        out.append(gp.predict(X, return_std=True))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


# -- many features: the default start, and the end-of-fit check for a constant predictor -------

def test_default_start_grows_beyond_21_features():
    from sparsegp._scaling import FLAT_START_FEATURES, start_lengthscale
    assert FLAT_START_FEATURES == 21
    assert start_lengthscale(1) == start_lengthscale(21) == 1.0
    assert start_lengthscale(84) == 2.0                 # sqrt(4), exact in binary
    X = np.random.default_rng(0).standard_normal((60, 84)) * 7.0 + 3.0
    y = np.where(X[:, 0] > 3.0, 1, -1)
    # 84 features at the start, held, and 5 inducing points: flat, which the fit says
    with pytest.warns(ConvergenceWarning, match="no better than the class frequencies"):
        est = GFITCClassifier(n_inducing=5, optimizer=None, random_state=0).fit(X, y)
    # the default isotropic kernel reports its length-scale in standard deviations
    assert est.lengthscale_ == 2.0


def _mnist_3_vs_5(n):
    require_data("mnist")
    from sparsegp.datasets import load_dataset
    X, y, _, _ = load_dataset("mnist", split="official")
    keep = np.flatnonzero((y == 3) | (y == 5))
    keep = keep[np.random.default_rng(0).permutation(keep.size)[:n]]
    return X[keep].astype(np.float64) / 255.0, np.where(y[keep] == 3, 3, 5)


@pytest.mark.parametrize("make", [lambda: GFITCClassifier(random_state=0),
                                  lambda: EPClassifier(random_state=0)],
                         ids=["gfitc", "ep"])
def test_raw_pixels_at_the_defaults_are_not_a_constant(make):
    """784 grey values: from l = 1 standard deviation the kernel vanished between any two
    images and GFITC/EP stopped at the majority vote (accuracy ~0.54, constant p)."""
    X, y = _mnist_3_vs_5(700)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*max_iter", category=ConvergenceWarning)
        est = make().fit(X[:400], y[:400])
    assert np.mean(est.predict(X[400:]) == y[400:]) >= 0.9
    assert np.std(est.predict_proba(X[400:])[:, 1]) > 0.2


def test_binary_fit_at_a_constant_predictor_warns():
    X, y = make_xor(300, random_state=0)
    flat = SquaredExponential(1.0, 1e-4)          # k vanishes between the inducing inputs and X
    with pytest.warns(ConvergenceWarning, match="no better than the class frequencies.*a "
                      "constant predictor.*n_restarts > 0, or more iterations"):
        GFITCClassifier(n_inducing=10, kernel=flat, optimizer=None, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        GFITCClassifier(n_inducing=10, random_state=0).fit(X, y)
    assert not [w for w in seen if "no better than the class" in str(w.message)]


def test_the_constant_predictor_advice_names_only_the_estimators_own_parameters():
    # labels without signal, a kernel of variance 1e-8: the latent is ~0 everywhere
    from sparsegp import StagewiseGPClassifier
    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 2))
    y = np.where(rng.random(300) < 0.7, 1, -1)
    tiny = SquaredExponential(1e-8, 1.0)
    with pytest.warns(ConvergenceWarning, match="constant predictor") as rec:
        StagewiseGPClassifier(d_max=5, kernel=tiny, optimizer=None, random_state=0).fit(X, y)
    message = str([w for w in rec if "constant predictor" in str(w.message)][0].message)
    assert "n_restarts" not in message                 # the stagewise fit has no restarts
    assert message.endswith("or more iterations (max_iter)")
