"""Why SEP's test NLP falls behind EP's and GFITC's in seed 002 Tables 2-3 (the measurements
behind the SEP paragraph of ``figures/multiclass_readings.md``).

Three measurements on the grid's own cells (same split, start and seed as
``python -m sparsegp experiment multiclass``), one thread:

``swap``
    Fit EP and SEP (250 iterations), then refine each method's sites at the other's learnt
    hyper-parameters and inducing inputs with everything held (``optimizer=None``). Prints
    test NLP, error and the log evidence per training row of the four combinations: whether
    the gap lies in the posterior approximation at given hyper-parameters or in the
    hyper-parameters each method learns.
``budget``
    SEP with a longer budget: its log evidence per row after 250, 500 and ``--iters``
    iterations (``evidence_history_``) and the test NLP at the end.
``step``
    At SEP's (or EP's) fitted point after ``--iters`` iterations: the training step's
    gradient (eq. 10 at the method's cavities) against central finite differences of the
    method's log evidence, the sites re-converged at every perturbed point; kernel and noise
    coordinates only. Uses the engine's internals (``engine.converge_ep``,
    ``engine.batch_evidence``), as the library's gradient tests do.

Run e.g. ``python figures/readings/sep_vs_ep.py swap glass 0.2 --folds 10``.
"""
import argparse
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from sparsegp.classification import MultiClassEPClassifier
from sparsegp.classification.multiclass import engine as mce
from sparsegp.classification.multiclass import ep_state as mcs
from sparsegp.classification.multiclass import likelihood as mcl
from sparsegp.experiments.grid import Cell, _load_split, build_estimator
from sparsegp.metrics import error_rate, mean_nlp


def _fit(dataset, size, split, method, iters):
    """The grid cell's estimator fitted on its split, and the split."""
    cell = Cell(dataset, split, method, {"max_iter": iters}, size, seed=split)
    Xtr, ytr, Xte, yte = _load_split(cell)
    return build_estimator(cell, Xtr, ytr).fit(Xtr, ytr), (Xtr, ytr, Xte, yte)


def _score(est, X, y):
    p = est.predict_proba(X)
    return mean_nlp(y, p, classes=est.classes_), error_rate(y, est.classes_[p.argmax(1)])


def swap(dataset, size, folds):
    rows = []
    for k in range(folds):
        fits = {}
        for m in ("ep", "sep"):
            fits[m], (Xtr, ytr, Xte, yte) = _fit(dataset, size, k, m, 250)
        out = {}
        for method, hyper_of in (("ep", "ep"), ("sep", "ep"), ("ep", "sep"), ("sep", "sep")):
            f = fits[hyper_of]
            est = MultiClassEPClassifier(method=method, optimizer=None, max_iter=250,
                                         tol=None,
                                         inducing_points=f.inducing_points_, kernel=f.kernel_,
                                         latent_noise_variance=f.noise_,
                                         random_state=0).fit(Xtr, ytr)
            nlp, err = _score(est, Xte, yte)
            out[f"{method}@{hyper_of}"] = (nlp, err, est.log_evidence_ / len(ytr))
        rows.append(out)
        print(k, {a: tuple(round(float(v), 3) for v in b) for a, b in out.items()}, flush=True)
    print("(test NLP, test error, log Z per row) of method@hyper-parameters; mean ± s.e.:")
    for a in rows[0]:
        vals = np.array([r[a] for r in rows])
        se = vals.std(0, ddof=1) / np.sqrt(len(rows)) if len(rows) > 1 else np.zeros(3)
        print(f"  {a:8s}", "  ".join(f"{m:.3f} ± {s:.3f}" for m, s in zip(vals.mean(0), se)))
    sep_ep = [r["sep@ep"][2] > r["sep@sep"][2] for r in rows]
    print(f"SEP's own log Z is higher at EP's hyper-parameters than at SEP's on {sum(sep_ep)} "
          f"of {len(rows)} folds")


def budget(dataset, size, folds, iters):
    if iters < 500:
        raise ValueError(f"budget compares 250 and 500 iterations with --iters; got {iters}")
    for k in range(folds):
        est, (_, ytr, Xte, yte) = _fit(dataset, size, k, "sep", iters)
        h = est.evidence_history_ / len(ytr)
        print(k, f"log Z per row at 250 / 500 / {iters}: {h[249]:.3f} / {h[499]:.3f} / "
                 f"{h[-1]:.3f}; test NLP {_score(est, Xte, yte)[0]:.3f}; "
                 f"log variance {np.round(np.log(est.variance_), 2)}", flush=True)


def step(dataset, size, split, iters, method, h=1e-3):
    est, _ = _fit(dataset, size, split, method, iters)
    X, y = est._rows_for_lml()
    noise_in_kuu, jitter = est._nik
    hyp0 = est._hyp
    C, M, D = hyp0.Z.shape
    counts = mcl.class_counts_factors(y, C)

    def log_z(hyp, grad=False):
        state = mcs.EPState(method, X.shape[0], C, M, counts)
        mce.converge_ep(X, y, hyp, state, noise_in_kuu, jitter, tol=1e-8, max_sweeps=400)
        lz, g, _ = mce.batch_evidence(X, y, hyp, state, noise_in_kuu, jitter,
                                      compute_grad=grad)
        return lz, g

    t0 = time.process_time()
    lz0, g0 = log_z(hyp0, True)
    v0 = hyp0.pack()
    n = 2 * C + C * D                      # variances, noises, length-scales; not Z
    fd = np.empty(n)
    for i in range(n):
        vp, vm = v0.copy(), v0.copy()
        vp[i] += h
        vm[i] -= h
        fd[i] = (log_z(hyp0.like(vp))[0] - log_z(hyp0.like(vm))[0]) / (2 * h)
    g = g0[:n]
    cos = g @ fd / (np.linalg.norm(g) * np.linalg.norm(fd))
    its = f"{iters} iteration{'s' if iters != 1 else ''}"
    print(f"{method} after {its}: log Z per row {lz0 / len(y):.4f}; "
          f"cos(step, finite differences) {cos:.3f}; same sign in "
          f"{np.mean(np.sign(g) == np.sign(fd)):.2f} of the {n} coordinates "
          f"({time.process_time() - t0:.0f} CPU s)")
    print("  d log Z / d log variance: step", np.round(g[:C], 2), "finite differences",
          np.round(fd[:C], 2))
    print("  d log Z / d log noise:    step", np.round(g[C:2 * C], 2), "finite differences",
          np.round(fd[C:2 * C], 2))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("swap", "budget", "step"))
    ap.add_argument("dataset")
    ap.add_argument("size", type=float, help="M as a fraction of the training rows")
    ap.add_argument("--folds", type=int, default=10, help="splits 0 .. folds-1 (swap, budget)")
    ap.add_argument("--split", type=int, default=1, help="the split (step)")
    ap.add_argument("--iters", type=int, default=None,
                    help="iterations (budget: default 1000; step: default 250)")
    ap.add_argument("--method", choices=("sep", "ep"), default="sep", help="(step)")
    a = ap.parse_args(argv)
    numba.set_num_threads(1)
    with threadpool_limits(1):
        if a.what == "swap":
            swap(a.dataset, a.size, a.folds)
        elif a.what == "budget":
            budget(a.dataset, a.size, a.folds, a.iters or 1000)
        else:
            step(a.dataset, a.size, a.split, a.iters or 250, a.method)


if __name__ == "__main__":
    main()
