"""Seed 002, Figure 4 (and 6): test NLL and test error against training time on Satellite.

Satellite with the authors' 1287:5148 split (fold 0 of the R ``folds.dat``), features
standardised with training statistics, M = 100 inducing points per class, the same initial
hyper-parameters and inducing inputs for every method, 250 iterations (batch training; GFITC
and VI by L-BFGS-B, EP and SEP EP-inner). Test metrics are recorded from ``callback`` on a
log-spaced schedule; the evaluation time is excluded from the training-time axis.

Also prints the Done-when checks of issue 7: SEP's best/final test NLL within 250 iterations
(target <= 0.36) and the training time SEP needs to reach VI's final test NLL vs VI's time.

    python figures/multiclass_fig4_satellite.py [--quick] [--methods sep,vi,gfitc,ep] [--merge]

``--merge`` refits only ``--methods`` and keeps the other methods' traces from the stored JSON
(in their places, so each keeps its colour), then redraws the PNG from all of them.
"""
import argparse
import json
import os
import time
from pathlib import Path

# thread pools: the library's defaults (sparsegp._threads), as a user would have them

import numpy as np

import sparsegp
from sparsegp.datasets import load_dataset
from sparsegp.experiments import write_whole
from sparsegp.kernels import SquaredExponential
from sparsegp.plotting import plot_metric_vs_time
from sparsegp.plotting._mpl import pyplot

CLASSES = {"ep": "MultiClassEPClassifier", "sep": "MultiClassEPClassifier",
           "gfitc": "MultiClassGFITCClassifier", "vi": "MultiClassSVGPClassifier"}


class Recorder:
    """``callback`` that records (training time, test NLL, test error), excluding its own cost."""

    def __init__(self, X_test, y_test, schedule):
        self.X_test, self.y_test = X_test, y_test
        self.schedule = set(schedule)
        self.t0 = time.perf_counter()
        self.excluded = 0.0
        self.rows = []

    def __call__(self, est, iteration):
        start = time.perf_counter()
        if iteration in self.schedule:
            proba = est.predict_proba(self.X_test)
            idx = np.searchsorted(est.classes_, self.y_test)
            p = proba[np.arange(idx.size), idx]
            nll = float(-np.mean(np.log(np.maximum(p, 1e-300))))
            err = float(np.mean(est.classes_[np.argmax(proba, 1)] != self.y_test))
            self.rows.append((start - self.t0 - self.excluded, nll, err, iteration))
        self.excluded += time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--methods", default="gfitc,ep,sep,vi")
    parser.add_argument("--M", type=int, default=100)
    parser.add_argument("--max-iter", type=int, default=250)
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--merge", action="store_true",
                        help="keep the stored traces of the methods not refitted")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    M, max_iter = (10, 10) if quick else (args.M, args.max_iter)
    store = Path(args.out) / f"multiclass_fig4_satellite{'_quick' if quick else ''}.json"
    if args.merge and not store.exists():
        parser.error(f"--merge: no stored traces in {store}")
    # fetched when missing (checksummed; reading its R files needs the package rdata)
    Xtr, ytr, Xte, yte = load_dataset("satellite", split=args.fold, download=True)
    if quick:
        Xtr, ytr, Xte, yte = Xtr[:300], ytr[:300], Xte[:500], yte[:500]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    N, C = Xtr.shape[0], np.unique(ytr).size
    rng = np.random.default_rng(2017)
    Z0 = np.stack([Xtr[np.sort(rng.choice(N, M, replace=False))] for _ in range(C)])
    sub = Xtr[rng.choice(N, min(N, 1000), replace=False)]
    d = np.sqrt(np.sum((sub[:, None] - sub[None]) ** 2, -1))
    ls0 = float(np.sqrt(np.median(d[np.triu_indices(len(sub), 1)])))
    schedule = sorted(set(np.unique(np.geomspace(1, max_iter, 40).astype(int)) - 1)
                      | {max_iter - 1})
    store.parent.mkdir(parents=True, exist_ok=True)
    summary = json.loads(store.read_text()) if args.merge else {}
    traces = {m.upper(): (np.asarray(r["time"]), np.asarray(r["nll"]), np.asarray(r["error"]))
              for m, r in summary.items()}
    for method in args.methods.split(","):
        try:
            cls = getattr(sparsegp, CLASSES[method])
        except (AttributeError, ImportError) as exc:
            print(f"skipping {method}: {exc}")
            continue
        rec = Recorder(Xte, yte, schedule)
        # every class starts at amplitude 1 and the median length-scale in every feature
        kernel = SquaredExponential(1.0, np.full(Xtr.shape[1], ls0))
        # the paper's fixed number of iterations, not the stopping rule, for every method
        kw = dict(inducing_points=Z0, kernel=kernel, latent_noise_variance=1.0, max_iter=max_iter,
                  tol=None, random_state=0, callback=rec)
        if method in ("ep", "sep"):
            kw.update(method=method)
        # compile (or load) every kernel of this method outside its timing: two iterations on
        # the same data and sizes, as a smaller problem may leave a path uncompiled
        cls(**dict(kw, max_iter=2, callback=None)).fit(Xtr, ytr)
        est = cls(**kw)
        rec.t0 = time.perf_counter()
        est.fit(Xtr, ytr)
        t, nll, err, it = map(np.asarray, zip(*rec.rows))
        traces[method.upper()] = (t, nll, err)
        summary[method] = dict(time=t.tolist(), nll=nll.tolist(), error=err.tolist(),
                               iteration=it.tolist())
        print(f"{method:5s} final NLL {nll[-1]:.4f} (best {nll.min():.4f}) error {err[-1]:.4f} "
              f"training time {t[-1]:.1f}s", flush=True)
        # write after every method so that a long baseline cannot cost the others' results
        # whole or not at all: a run cut off mid-write keeps the stored traces --merge reads
        write_whole(store, json.dumps(summary, indent=1))
        _plot(traces, M, store.with_suffix(".png"))
    if "sep" in summary and "vi" in summary:
        _report(summary, max_iter)
    print("wrote", store.with_suffix(".png"))


def _report(summary, max_iter):
    sep, vi = summary["sep"], summary["vi"]
    target = vi["nll"][-1]
    reach = [t for t, v in zip(sep["time"], sep["nll"]) if v <= target]
    print(f"SEP min NLL within {max_iter} iterations: {min(sep['nll']):.4f}, final "
          f"{sep['nll'][-1]:.4f} (target <= 0.36)")
    print(f"VI final NLL {target:.4f} after {vi['time'][-1]:.1f}s; SEP reaches it after "
          f"{reach[0]:.1f}s" if reach else "SEP never reaches VI's final NLL", flush=True)


def _plot(traces, M, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    plot_metric_vs_time({k: (v[0], v[1]) for k, v in traces.items()}, ax=axes[0],
                        title=f"Satellite, M = {M}: test NLL")
    plot_metric_vs_time({k: (v[0], v[2]) for k, v in traces.items()}, ax=axes[1],
                        ylabel="test error", title=f"Satellite, M = {M}: test error")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
