"""Which optimiser and inexact-EP setting should ``GFITCClassifier`` use by default? (issue 25)

Fits ``GFITCClassifier`` at its defaults (``max_iter=30``, ``n_inducing="auto"``, k-means
start) except for ``optimizer`` and ``ep_search_rtol``, which run through :data:`CANDIDATES`,
on

* xor (``sparsegp.datasets.make_xor``) at N = 2 000, 4 000, 8 000, 16 000, several seeds (the
  data and the estimator share the seed);
* the Rätsch sets with their own realisations (training rows only; 150 to 1 300 rows);
* the larger binary tables in ``$SPARSEGP_DATA``: twonorm, ringnorm, banana and waveform with
  every row (5 000-7 400), USPS digit 4 against the rest (official training rows, 7 291, as in
  seed 000's table 1), USPS even against odd digits (all 9 298 rows), MNIST 3 against 5
  (training rows, 11 552, grey values / 255) and the same on its first 50 principal
  components;
* the same with ``n_inducing=50`` (and 25 on xor), where EP's O(N M^2) dominates the cost;
* the T1 setup of ``benchmarks/bench_peers.py``: xor, given Z (50 random training rows), an
  SE-ARD kernel from unit values, bias 0, 20 iterations, N = 4 000 and 16 000; seed 0 is
  T1 itself (``/work/runs/bench/s32/t1cg.py``), seeds 1-4 redraw the data and Z.

Every fit of one problem runs in this one process, one after the other, so the time ratios
against ``(cg, 0)`` are measured under the same load (the machine is shared: the absolute
times are not quiet-machine numbers). Compilation is done before anything is timed.

    export SPARSEGP_DATA=/path/to/datasets
    nice -n 5 python benchmarks/gfitc_optimizer_study.py run study.jsonl      # all problems
    python benchmarks/gfitc_optimizer_study.py run study.jsonl --only xor-16000
    python benchmarks/gfitc_optimizer_study.py table study.jsonl              # markdown tables

``run`` appends one JSON line per fit and skips (problem, candidate) pairs already in the
file, so an interrupted run resumes. ``table`` prints, per problem, each candidate's final log
evidence minus that of ``(cg, 0)`` (today's default) and its wall-clock time over
``(cg, 0)``'s, then per candidate and size class the worst and best evidence difference.
"""
import argparse
import json
import os
import time
import warnings

import numpy as np

#: (optimizer, ep_search_rtol) pairs; the first is today's default, the reference.
CANDIDATES = (("cg", 0.0), ("lbfgs", 0.0), ("lbfgs", 0.1), ("lbfgs", 0.01), ("cg", 0.1),
              ("cg", 0.01))
RAETSCH = ("banana", "breast_cancer", "german", "heart", "image", "ringnorm", "titanic",
           "twonorm", "waveform")


def _xor(n, seed):
    from sparsegp.datasets import make_xor
    return make_xor(n, random_state=seed)


def _raetsch(name, split):
    from sparsegp.datasets import load_dataset
    X, y, _, _ = load_dataset(name, split=split)
    return X, y


def _full(name):
    from sparsegp.datasets import load_table
    X, y, _ = load_table(name)
    return X, y


def _usps_4_vs_rest():
    from sparsegp.datasets import load_dataset
    X, y, _, _ = load_dataset("usps", split="official", dtype=np.float64)
    return X, np.where(y == 4, 1, -1)


def _mnist_3_vs_5():
    from sparsegp.datasets import load_dataset
    X, y, _, _ = load_dataset("mnist", split="official")
    keep = (y == 3) | (y == 5)
    return X[keep].astype(np.float64) / 255.0, np.where(y[keep] == 3, 1, -1)


def _usps_even_vs_odd():
    from sparsegp.datasets import load_table
    X, y, _ = load_table("usps", dtype=np.float64)
    return X, np.where(y % 2 == 0, 1, -1)


def _mnist_3_vs_5_pca50():
    # the grey values as they are leave the default kernel flat (784 standardised pixels,
    # one standard deviation each: k(x, x') ~ 0), so the fit stops at its start; 50
    # principal components (of these training rows) are a problem the fit can learn
    X, y = _mnist_3_vs_5()
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ Vt[:50].T, y


def problems():
    """``(name, group, loader, seed, setup)``: ``seed`` seeds the estimator (and the data and Z
    where they are drawn); ``setup`` is None (the defaults), ``"M<k>"`` (n_inducing=k) or
    ``"T1"`` (bench_peers' setup: given Z, SE-ARD, 20 iterations)."""
    out = []
    for n, seeds in ((2000, 5), (4000, 5), (8000, 3), (16000, 3)):
        for s in range(seeds):
            out.append((f"xor-{n}-s{s}", "xor", lambda n=n, s=s: _xor(n, s), s, None))
    for name in RAETSCH:
        for r in range(5 if name != "twonorm" else 1):
            out.append((f"{name}-r{r}", "raetsch", lambda name=name, r=r: _raetsch(name, r), 0,
                        None))
    for name in ("twonorm", "ringnorm", "banana", "waveform"):
        out.append((f"{name}-full", "large", lambda name=name: _full(name), 0, None))
    out.append(("usps-4-vs-rest", "large", _usps_4_vs_rest, 0, None))
    out.append(("mnist-3-vs-5", "large", _mnist_3_vs_5, 0, None))
    out.append(("usps-even-vs-odd", "large", _usps_even_vs_odd, 0, None))
    out.append(("mnist-3-vs-5-pca50", "large", _mnist_3_vs_5_pca50, 0, None))
    for n in (8000, 16000):
        for s in range(3):
            out.append((f"xorM50-{n}-s{s}", "xor M=50", lambda n=n, s=s: _xor(n, s), s,
                        "M50"))
    for m, n in ((50, 2000), (50, 4000), (25, 8000), (25, 16000)):
        for s in range(3):
            out.append((f"xorM{m}-{n}-s{s}", f"xor M={m}", lambda n=n, s=s: _xor(n, s), s,
                        f"M{m}"))
    for name in ("german", "image"):
        for r in range(3):
            out.append((f"{name}M50-r{r}", "raetsch M=50",
                        lambda name=name, r=r: _raetsch(name, r), 0, "M50"))
    for name, load in (("twonorm", lambda: _full("twonorm")),
                       ("ringnorm", lambda: _full("ringnorm")),
                       ("banana", lambda: _full("banana")),
                       ("waveform", lambda: _full("waveform")),
                       ("usps-4-vs-rest", _usps_4_vs_rest),
                       ("usps-even-vs-odd", _usps_even_vs_odd),
                       ("mnist-3-vs-5-pca50", _mnist_3_vs_5_pca50)):
        out.append((f"{name}M50", "large M=50", load, 0, "M50"))
    for n in (4000, 16000):
        for s in range(5 if n == 16000 else 3):
            out.append((f"T1-{n}-s{s}", "T1", lambda n=n, s=s: _xor(n, s), s, "T1"))
    return out


def make_estimator(optimizer, rtol, seed, X=None, setup=None):
    """The estimator of one cell: the defaults, n_inducing=50, or the T1 setup of
    ``bench_peers`` (seed 0 is its exact setup; Z drawn with ``default_rng(2 + seed)``)."""
    from sparsegp import GFITCClassifier
    from sparsegp.kernels import SquaredExponential
    if setup is None:
        return GFITCClassifier(optimizer=optimizer, ep_search_rtol=rtol, random_state=seed)
    if setup.startswith("M"):
        return GFITCClassifier(n_inducing=int(setup[1:]), optimizer=optimizer,
                               ep_search_rtol=rtol, random_state=seed)
    rng = np.random.default_rng(2 + seed)
    Z = X[np.sort(rng.choice(X.shape[0], 50, replace=False))].copy()
    return GFITCClassifier(inducing_points=Z, kernel=SquaredExponential(1.0, np.ones(2)),
                           bias=0.0, optimizer=optimizer, ep_search_rtol=rtol, max_iter=20,
                           random_state=seed)


def _warm_up(candidates):
    from sparsegp.datasets import make_xor
    from sparsegp.kernels import SquaredExponential
    X, y = make_xor(200, random_state=123)
    for opt, rtol in candidates:
        for kernel in (None, SquaredExponential(1.0, np.ones(2))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = make_estimator(opt, rtol, 0)
                est.set_params(n_inducing=5, max_iter=2, kernel=kernel).fit(X, y)


def _done(path):
    if not os.path.exists(path):
        return set()
    with open(path) as fh:
        return {(r["problem"], r["optimizer"], r["rtol"]) for r in map(json.loads, fh)}


def run(path, only=None, candidates=CANDIDATES):
    """Fit every (problem, candidate) not yet in ``path``; append a JSON line per fit."""
    done = _done(path)
    _warm_up(candidates)
    for name, group, load, seed, setup in problems():
        if only and not any(name.startswith(o) for o in only):
            continue
        todo = [c for c in candidates if (name, c[0], c[1]) not in done]
        if not todo:
            continue
        X, y = load()
        for opt, rtol in todo:
            est = make_estimator(opt, rtol, seed, X, setup)
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                t0, c0 = time.perf_counter(), time.process_time()
                est.fit(X, y)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            row = dict(problem=name, group=group, N=int(X.shape[0]), D=int(X.shape[1]),
                       optimizer=opt, rtol=rtol, log_evidence=float(est.log_evidence_),
                       n_iter=int(est.n_iter_), wall=wall, cpu=cpu,
                       warnings=sorted({type(x.message).__name__ for x in w}))
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{name:18s} N={X.shape[0]:6d} {opt:5s} {rtol:<5g} "
                  f"logZ={est.log_evidence_:.6f} {wall:6.2f}s cpu {cpu:6.2f}s", flush=True)


def _load_rows(path):
    with open(path) as fh:
        rows = [json.loads(line) for line in fh]
    by = {}
    for r in rows:
        by.setdefault(r["problem"], {})[(r["optimizer"], r["rtol"])] = r
    return by


def table(path, candidates=CANDIDATES):
    """Markdown: per problem, each candidate's evidence and times against ``(cg, 0)``."""
    by = _load_rows(path)
    ref = candidates[0]
    others = [c for c in candidates[1:] if any(c in v for v in by.values())]
    head = " | ".join(f"{o} {r:g}" for o, r in others)
    print("Per cell: log Z minus that of (cg, 0); wall-clock / CPU time over (cg, 0)'s.\n")
    print(f"| problem | N | D | cg 0: log Z | wall, CPU (s) | iters | {head} |")
    print("|---|---:|---:|---:|---|---:|" + "---|" * len(others))
    for name, *_ in problems():
        if name not in by or ref not in by[name]:
            continue
        cells = by[name]
        base = cells[ref]
        row = [f"{base['log_evidence']:.3f}", f"{base['wall']:.2f}, {base['cpu']:.2f}",
               str(base["n_iter"])]
        for c in others:
            r = cells.get(c)
            row.append("" if r is None else
                       f"{r['log_evidence'] - base['log_evidence']:+.3f} / "
                       f"{r['wall'] / base['wall']:.2f}, {r['cpu'] / base['cpu']:.2f}")
        print(f"| {name} | {base['N']} | {base['D']} | " + " | ".join(row) + " |")
    print("\nPer candidate, over the problems with N >= the threshold: log Z minus (cg, 0)'s, "
          "and the median time ratios.\n")
    print("| candidate | N >= | problems | worst | best | lower by > 1e-6 | higher by > 1e-6 | "
          "median wall ratio | median CPU ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c in others:
        for n_min in (0, 2000, 4000, 5000, 7000, 10000, 16000):
            d, tw, tc = [], [], []
            for cells in by.values():
                if ref in cells and c in cells and cells[ref]["N"] >= n_min:
                    d.append(cells[c]["log_evidence"] - cells[ref]["log_evidence"])
                    tw.append(cells[c]["wall"] / cells[ref]["wall"])
                    tc.append(cells[c]["cpu"] / cells[ref]["cpu"])
            if d:
                d = np.array(d)
                print(f"| {c[0]} {c[1]:g} | {n_min} | {d.size} | {d.min():+.3f} | "
                      f"{d.max():+.3f} | {int(np.sum(d < -1e-6))} | {int(np.sum(d > 1e-6))} | "
                      f"{np.median(tw):.2f} | {np.median(tc):.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("run", "table"))
    ap.add_argument("path", help="JSON-lines file of results")
    ap.add_argument("--only", nargs="*", help="problem-name prefixes to run")
    args = ap.parse_args()
    if args.mode == "run":
        run(args.path, args.only)
    else:
        table(args.path)


if __name__ == "__main__":
    main()
