"""Print the measured agreement of the GFITC and sparse-regression checks (issues 3 and 4).

The tests assert tolerances; this prints the figures themselves, for closing notes and
reviews, on the same small problems the tests use: GFITC against dense EP on the FITC
covariance Q + diag(K - Q) and against ``EPClassifier`` with Z = X; every gradient entry
against central differences; every regression approximation against the exact GP on its
effective covariance. Run from the repository root::

    python tests/report_agreement.py
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import dense_regression  # noqa: E402
from reference.dense_ep import dense_ep, fitc_covariance  # noqa: E402

from sparsegp.classification import EPClassifier, GFITCClassifier  # noqa: E402
from sparsegp.classification import _fitc_ep as G  # noqa: E402
from sparsegp.kernels import SquaredExponential  # noqa: E402
from sparsegp.regression import _base  # noqa: E402

GRADIENT_KEYS = ("variance", "lengthscale", "noise_variance", "inducing_points")


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def xor(n, seed, noise=0.4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2)) * 1.3
    return X, np.where(X[:, 0] * X[:, 1] + noise * rng.standard_normal(n) > 0, 1.0, -1.0)


def central_difference_errors(analytic, evaluate, x, h, floor):
    """Relative gaps between ``analytic`` (shape of x) and central differences of evaluate."""
    errs = []
    for i in np.ndindex(np.shape(x)):
        step = np.zeros(np.shape(x))
        step[i] = h
        fd = (evaluate(x + step) - evaluate(x - step)) / (2 * h)
        errs.append(abs(np.asarray(analytic)[i] - fd) / max(abs(fd), floor))
    return errs


def gfitc_dense_check():
    worst = 0.0
    for schedule in ("sequential", "parallel"):
        for M, ard in ((1, False), (4, True), (12, False), (30, True), (60, True)):
            X, y = xor(60, seed=M)
            Z = np.random.default_rng(100 + M).standard_normal((M, 2)) * 1.5
            ls = np.array([0.8, 1.4]) if ard else np.array([1.1, 1.1])
            prior = G._FITCPrior(X, Z, 1.7, ls, 1e-6)
            res = G.run_ep(prior, y, 0.35, tol=1e-12, max_sweeps=5000, schedule=schedule,
                           rng=np.random.default_rng(0))
            lz, _, (diag_a, h) = G.log_evidence(prior, y, 0.35, res.tau, res.nu, res.post)
            ref = dense_ep(fitc_covariance(X, Z, 1.7, ls, 1e-6), y, bias=0.35, tol=1e-13)
            worst = max(worst, abs(lz - ref.log_evidence) / abs(ref.log_evidence),
                        rel(h, ref.mean), rel(diag_a, ref.var))
    print(f"GFITC vs dense EP on Q + diag(K - Q) (N = 60, M in 1..60, both schedules): "
          f"log Z, mean, variance worst rel {worst:.1e}")

    rng = np.random.default_rng(11)
    X = np.array([[i, j] for i in range(5) for j in range(4)], float) * 1.1
    X += 0.05 * rng.standard_normal(X.shape)
    y = np.where(np.sin(X[:, 0]) + np.cos(X[:, 1]) > 0.3, 1, -1)
    kw = dict(kernel=SquaredExponential(2.0, 1.3), bias=0.2, optimizer=None, ep_tol=1e-12,
              ep_max_sweeps=5000, jitter=1e-10, random_state=0)
    g = GFITCClassifier(inducing_points=X, **kw).fit(X, y)
    e = EPClassifier(**kw).fit(X, y)
    print(f"GFITC with Z = X vs EPClassifier (jitter 1e-10): log Z rel "
          f"{abs(g.log_evidence_ - e.log_evidence_) / abs(e.log_evidence_):.1e}")


def gfitc_gradient_check():
    X, y = xor(40, seed=12)
    Z = np.random.default_rng(13).standard_normal((4, 2)) * 1.2
    theta = dict(Z=Z, s2=1.4, ls=np.array([0.8, 1.3]), beta=0.25)

    def log_z(**change):
        p = {**theta, **change}
        return GFITCClassifier(inducing_points=p["Z"],
                               kernel=SquaredExponential(p["s2"], np.asarray(p["ls"])),
                               bias=p["beta"], optimizer=None, ep_tol=1e-10,
                               ep_max_sweeps=5000, random_state=0).fit(X, y)

    grad = log_z().log_evidence_gradient_
    h, errs = 1e-5, []
    for name, key in (("s2", "variance"), ("beta", "bias"), ("ls", "lengthscale"),
                      ("Z", "inducing_points")):
        errs += central_difference_errors(
            grad[key], lambda v, name=name: log_z(**{name: v}).log_evidence_, theta[name], h,
            1e-3)
    print(f"GFITC gradient vs central differences ({len(errs)} entries, ARD, EP tol 1e-10): "
          f"worst rel {max(errs):.1e}")


def regression_checks():
    rng = np.random.default_rng(0)
    N, D, M = 40, 2, 6
    X = rng.normal(size=(N, D))
    y = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, -1]) + 0.1 * rng.normal(size=N)
    Z = rng.normal(size=(M, D))
    ls = np.linspace(0.9, 1.4, D)
    blocks = [np.sort(b) for b in np.array_split(rng.permutation(N), 3)]
    s2, sn2, jitter = 1.3, 0.2, 1e-6
    for method in ("sor", "dtc", "fitc", "fic", "pitc", "vfe"):
        def lml(s2=s2, ls=ls, sn2=sn2, Z=Z, method=method):
            return _base.sparse_lml(X, y, Z, s2, ls, sn2, method, blocks, jitter,
                                    eval_gradient=False)[0]

        value, grad, _ = _base.sparse_lml(X, y, Z, s2, ls, sn2, method, blocks, jitter)
        ref_value = dense_regression.log_marginal_likelihood(method, X, y, Z, s2, ls, sn2,
                                                             jitter, blocks)
        ref_grad = dense_regression.gradient(method, X, y, Z, s2, ls, sn2, jitter, blocks)
        h = 1e-6
        errs = (central_difference_errors(grad["variance"], lambda v: lml(s2=v), s2, h, 1e-2)
                + central_difference_errors(grad["noise_variance"], lambda v: lml(sn2=v), sn2,
                                            h, 1e-2)
                + central_difference_errors(grad["lengthscale"], lambda v: lml(ls=v), ls, h,
                                            1e-2)
                + central_difference_errors(grad["inducing_points"], lambda v: lml(Z=v), Z, h,
                                            1e-2))
        print(f"{method:5s} vs exact GP on its effective covariance: evidence rel "
              f"{abs(value - ref_value) / abs(ref_value):.1e}, gradient rel "
              f"{max(rel(grad[k], ref_grad[k]) for k in GRADIENT_KEYS):.1e}; gradient vs "
              f"central differences ({len(errs)} entries) worst rel {max(errs):.1e}")


if __name__ == "__main__":
    gfitc_dense_check()
    gfitc_gradient_check()
    regression_checks()
