"""Seeded fits of every estimator under two checkouts, and the largest differences between them.

A refactor that should not change numerics is checked by dumping the same seeded fits (all eight
estimators; the regressor's approximations, optimisers and restarts; batch and minibatch
multi-class) with each checkout first on the path, then comparing: objective, predictions and
fitted parameters, max abs difference per fit. Issue 22 asks for 1e-10.

    PYTHONPATH=/path/to/old python benchmarks/compare_fits.py dump old.npz
    PYTHONPATH=/path/to/new python benchmarks/compare_fits.py dump new.npz
    python benchmarks/compare_fits.py compare old.npz new.npz
"""
import sys
import warnings

import numpy as np


def _ivm_evidence_search():
    """The IVM's ``optimizer`` for its evidence search in the checkout on the path: "lbfgs"
    since issue 48 made the vocabulary one, "evidence" before; the two checkouts compared
    may lie on either side of the rename."""
    from sparsegp.classification import _ivm_search
    return "lbfgs" if hasattr(_ivm_search, "OPTIMIZER_RENAMED") else "evidence"


def cases():
    from sparsegp import (EPClassifier, GFITCClassifier, IVMClassifier,
                          MultiClassEPClassifier, MultiClassGFITCClassifier,
                          MultiClassSVGPClassifier, SparseGPRegressor, StagewiseGPClassifier)
    from sparsegp.datasets import make_gp_classes, make_regression_1d, make_xor

    Xr, yr = make_regression_1d(300, random_state=0)
    Xb, yb = make_xor(200, random_state=0)
    Xm, ym = make_gp_classes(300, n_classes=3, random_state=0)
    out = []
    for a in ("fitc", "vfe", "dtc", "sor", "pitc", "sod", "exact"):
        out.append((f"SparseGPRegressor-{a}", lambda a=a: SparseGPRegressor(
            a, n_inducing=15, random_state=0), Xr, yr))
    out.append(("SparseGPRegressor-fitc-cg", lambda: SparseGPRegressor(
        "fitc", n_inducing=15, optimizer="cg", random_state=0), Xr, yr))
    out.append(("SparseGPRegressor-fitc-restarts2", lambda: SparseGPRegressor(
        "fitc", n_inducing=15, n_restarts=2, random_state=0), Xr, yr))
    out.append(("SparseGPRegressor-fitc-fixed", lambda: SparseGPRegressor(
        "fitc", n_inducing=15, optimizer=None, random_state=0), Xr, yr))
    out.append(("EPClassifier", lambda: EPClassifier(random_state=0), Xb, yb))
    out.append(("EPClassifier-lbfgs", lambda: EPClassifier(optimizer="lbfgs", random_state=0),
                Xb, yb))
    out.append(("EPClassifier-restarts2", lambda: EPClassifier(n_restarts=2, random_state=0),
                Xb, yb))
    out.append(("GFITCClassifier", lambda: GFITCClassifier(n_inducing=6, random_state=0),
                Xb, yb))
    out.append(("GFITCClassifier-restarts1", lambda: GFITCClassifier(
        n_inducing=6, n_restarts=1, random_state=0), Xb, yb))
    out.append(("IVMClassifier", lambda: IVMClassifier(n_active=30, random_state=0), Xb, yb))
    out.append(("IVMClassifier-evidence", lambda: IVMClassifier(
        n_active=30, optimizer=_ivm_evidence_search(), max_iter=3, random_state=0), Xb, yb))
    out.append(("StagewiseGPClassifier", lambda: StagewiseGPClassifier(
        d_max=20, max_iter=5, random_state=0), Xb, yb))
    out.append(("MultiClassEPClassifier-batch", lambda: MultiClassEPClassifier(
        n_inducing=8, max_iter=30, tol=None, random_state=0), Xm, ym))
    out.append(("MultiClassEPClassifier-sep-minibatch", lambda: MultiClassEPClassifier(
        "sep", n_inducing=8, batch_size=50, max_iter=4, random_state=0), Xm, ym))
    out.append(("MultiClassEPClassifier-ep-minibatch", lambda: MultiClassEPClassifier(
        "ep", n_inducing=8, batch_size=50, max_iter=4, random_state=0), Xm, ym))
    out.append(("MultiClassSVGPClassifier-batch", lambda: MultiClassSVGPClassifier(
        n_inducing=8, max_iter=30, random_state=0), Xm, ym))
    out.append(("MultiClassSVGPClassifier-minibatch", lambda: MultiClassSVGPClassifier(
        n_inducing=8, batch_size=50, max_iter=4, learning_rate=1e-2, random_state=0), Xm, ym))
    out.append(("MultiClassGFITCClassifier", lambda: MultiClassGFITCClassifier(
        n_inducing=8, max_iter=20, tol=None, random_state=0), Xm, ym))
    return out


def dump(path):
    res = {}
    for name, make, X, y in cases():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            est = make().fit(X, y)
        res[name + "/objective"] = np.atleast_1d(est.log_marginal_likelihood_value_)
        res[name + "/n_iter"] = np.atleast_1d(getattr(est, "n_iter_", -1))
        if hasattr(est, "predict_proba"):
            res[name + "/predict"] = est.predict_proba(X[:50])
        else:
            m, s = est.predict(X[:50], return_std=True)
            res[name + "/predict"] = np.concatenate([m, s])
        for attr in ("variance_", "lengthscale_", "noise_variance_", "bias_",
                     "inducing_points_", "noise_"):
            if hasattr(est, attr):
                res[name + "/" + attr] = np.atleast_1d(np.asarray(getattr(est, attr), float))
        cats = sorted({f"{x.category.__name__}: {str(x.message)[:70]}" for x in w})
        print(f"{name}: objective {float(est.log_marginal_likelihood_value_):.10g} "
              f"n_iter {getattr(est, 'n_iter_', -1)} warnings {cats}", flush=True)
    np.savez(path, **res)


def compare(a, b):
    A, B = np.load(a), np.load(b)
    names = sorted({k.split("/")[0] for k in A.files})
    for n in names:
        parts = []
        for k in sorted(x for x in A.files if x.startswith(n + "/")):
            if k not in B.files:
                parts.append(f"{k.split('/')[1]}: missing")
                continue
            x, y = A[k], B[k]
            d = np.max(np.abs(x - y)) if x.shape == y.shape else np.inf
            parts.append(f"{k.split('/')[1]} {d:.2e}")
        print(f"{n:40s} " + ", ".join(parts))


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        compare(sys.argv[2], sys.argv[3])
