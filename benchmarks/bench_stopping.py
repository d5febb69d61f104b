"""The stopping rule's tolerance and the optimiser behind it, measured (issue 45).

For each estimator whose search the rule governs, fits a set of ordinary problems at the old
fixed schedule and at candidate (optimizer, tol) settings and prints, per candidate, the test
NLP (classifiers) or test R² (regressor) against the old schedule's and the CPU time ratio.

* GFITC and EP: xor (N = 400 twice, 2 000, 4 000 twice, 16 000; 4 000 test rows), scikit-learn's
  breast cancer (raw and standardised, 70/30 split) and Rätsch realisations 0 (1 for banana
  and heart) of nine sets (their own test rows; needs ``SPARSEGP_DATA``, skipped without).
* SparseGPRegressor (FITC and VFE): diabetes (four 70/30 splits), Friedman #1 (N = 300,
  1 000, 3 000; noise s.d. 1; 1 000 test rows), the 1-D toy and an 8-D set (N = 2 000).

    python benchmarks/bench_stopping.py gfitc          # or ep, regression, all
    python benchmarks/bench_stopping.py gfitc --out results.jsonl   # keep every fit

Each line of the per-candidate summary: the median and mean of (candidate - old) test NLP
(regressor: old - candidate test R², so that positive is worse everywhere), the problems worse
by more than 0.01, and the median CPU time ratio candidate / old.
"""
import argparse
import json
import os
import statistics
import time
import warnings

import numpy as np

GFITC_CANDIDATES = {
    "old: cg, 30 steps": dict(optimizer="cg", max_iter=30, tol=None, ep_search_rtol=0.0),
    "cg, tol 1e-4": dict(optimizer="cg", tol=1e-4, ep_search_rtol=0.0),
    "cg, tol 3e-4": dict(optimizer="cg", tol=3e-4, ep_search_rtol=0.0),
    "cg, tol 1e-3": dict(optimizer="cg", tol=1e-3, ep_search_rtol=0.0),
    "lbfgs, tol 3e-4": dict(optimizer="lbfgs", tol=3e-4, ep_search_rtol=0.0),
    "lbfgs, rtol 0.1, tol 1e-4": dict(optimizer="lbfgs", tol=1e-4, ep_search_rtol=0.1),
    "lbfgs, rtol 0.1, tol 1e-3": dict(optimizer="lbfgs", tol=1e-3, ep_search_rtol=0.1),
    "default": {},
}
EP_CANDIDATES = {
    "old: cg, 20 steps": dict(optimizer="cg", max_iter=20, tol=None),
    "cg, tol 3e-4": dict(optimizer="cg", tol=3e-4),
    "lbfgs, tol 1e-3": dict(optimizer="lbfgs", tol=1e-3),
    "default": {},
}
REGRESSION_CANDIDATES = {
    "old: 200 steps": dict(max_iter=200, tol=None),
    "tol 3e-4": dict(tol=3e-4),
    "tol 1e-4": dict(tol=1e-4),
    "tol 1e-5": dict(tol=1e-5),
    "default": {},
}


def classification_problems(small=False):
    """``(name, X, y, X_test, y_test)``; ``small`` keeps the sets the dense EP can afford."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from sparsegp.datasets import list_datasets, load_dataset, make_xor
    Xt, yt = make_xor(4000, random_state=99)
    sizes = [(400, 0)] if small else [(400, 0), (400, 1), (2000, 0), (4000, 0), (4000, 1),
                                      (16000, 0)]
    for n, s in sizes:
        X, y = make_xor(n, random_state=s)
        yield f"xor{n}-s{s}", X, y, Xt, yt
    X, y = load_breast_cancer(return_X_y=True)
    a, b, c, d = train_test_split(X, y, test_size=0.3, random_state=0)
    yield "breast-cancer raw", a, c, b, d
    scaler = StandardScaler().fit(a)
    yield "breast-cancer std", scaler.transform(a), c, scaler.transform(b), d
    names = (["banana", "heart", "titanic", "breast_cancer", "german"] if small else
             ["banana", "titanic", "heart", "german", "image", "ringnorm", "twonorm",
              "waveform", "breast_cancer"])
    held = set(list_datasets())
    for name in names:
        if name not in held and f"raetsch_{name}" not in held:
            print(f"(Rätsch {name} skipped: no data; set SPARSEGP_DATA)")
            continue
        for r in ([0, 1] if name in ("banana", "heart") and not small else [0]):
            X, y, X2, y2 = load_dataset(name, split=r)
            yield f"{name}-r{r}", X, y, X2, y2


def regression_problems():
    from sklearn.datasets import load_diabetes, make_friedman1
    from sklearn.model_selection import train_test_split

    from sparsegp.datasets import make_regression_1d
    X, y = load_diabetes(return_X_y=True)
    for s in range(4):
        a, b, c, d = train_test_split(X, y, test_size=0.3, random_state=s)
        yield f"diabetes-s{s}", a, c, b, d
    for n in (300, 1000, 3000):
        X, y = make_friedman1(n + 1000, noise=1.0, random_state=0)
        yield f"friedman1-{n}", X[:n], y[:n], X[n:], y[n:]
    X, y = make_regression_1d(3000, random_state=0)
    yield "toy1d-2000", X[:2000], y[:2000], X[2000:], y[2000:]
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (3000, 8))
    f = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + X[:, 2] * X[:, 3] + 0.5 * np.sin(3 * X[:, 4])
    y = f + 0.1 * rng.standard_normal(3000)
    yield "kin8-2000", X[:2000], y[:2000], X[2000:], y[2000:]


def _fit(est, X, y):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = time.process_time()
        est.fit(X, y)
        return time.process_time() - t, len(w)


def run(kind, out=None):
    from sparsegp import EPClassifier, GFITCClassifier, SparseGPRegressor
    from sparsegp.metrics import mean_nlp
    rows = []
    if kind in ("gfitc", "ep"):
        cls, cands = ((GFITCClassifier, GFITC_CANDIDATES) if kind == "gfitc" else
                      (EPClassifier, EP_CANDIDATES))
        for name, X, y, Xt, yt in classification_problems(small=kind == "ep"):
            for cand, kw in cands.items():
                est = cls(random_state=0, **kw)
                cpu, n_warn = _fit(est, X, y)
                score = mean_nlp(yt, est.predict_proba(Xt), classes=est.classes_)
                rows.append(dict(kind=kind, problem=name, candidate=cand, score=float(score),
                                 cpu=cpu, n_iter=int(est.n_iter_), warnings=n_warn))
                print(f"{name:18s} {cand:28s} NLP {score:.4f} cpu {cpu:6.2f}s "
                      f"it {est.n_iter_:4d} warnings {n_warn}", flush=True)
    else:
        for name, X, y, Xt, yt in regression_problems():
            for approx in ("fitc", "vfe"):
                for cand, kw in REGRESSION_CANDIDATES.items():
                    est = SparseGPRegressor(approx, random_state=0, **kw)
                    cpu, n_warn = _fit(est, X, y)
                    # minus R², so that larger is worse as for an NLP
                    score = -est.score(Xt, yt)
                    rows.append(dict(kind=kind, problem=f"{name} {approx}", candidate=cand,
                                     score=float(score), cpu=cpu, n_iter=int(est.n_iter_),
                                     warnings=n_warn))
                    print(f"{name:14s} {approx:4s} {cand:16s} R² {-score:.4f} cpu {cpu:6.2f}s "
                          f"it {est.n_iter_:4d} warnings {n_warn}", flush=True)
    if out:
        with open(out, "a") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    summary(rows)


def summary(rows):
    by = {}
    for r in rows:
        by.setdefault(r["problem"], {})[r["candidate"]] = r
    cands = list(dict.fromkeys(r["candidate"] for r in rows))
    old = cands[0]
    print("\n| candidate | median difference | mean | worse by > 0.01 | median CPU ratio | "
          "fits warning |\n|---|---:|---:|---|---:|---:|")
    for c in cands:
        probs = [p for p in by if c in by[p] and old in by[p]]
        d = [by[p][c]["score"] - by[p][old]["score"] for p in probs]
        t = [by[p][c]["cpu"] / by[p][old]["cpu"] for p in probs]
        worse = ", ".join(f"{p} {x:+.3f}" for p, x in zip(probs, d) if x > 0.01) or "none"
        n_warn = sum(by[p][c]["warnings"] > 0 for p in probs)
        print(f"| {c} | {statistics.median(d):+.4f} | {statistics.mean(d):+.4f} | {worse} | "
              f"{statistics.median(t):.2f} | {n_warn} of {len(probs)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("which", choices=("gfitc", "ep", "regression", "all"))
    ap.add_argument("--out", help="append every fit as a JSON line to this file")
    args = ap.parse_args()
    os.environ.setdefault("SPARSEGP_DATA", os.path.join(os.path.dirname(__file__), "..", "..",
                                                        "shared", "datasets"))
    for kind in (("gfitc", "ep", "regression") if args.which == "all" else (args.which,)):
        run(kind, args.out)


if __name__ == "__main__":
    main()
