"""Seed 002, Figure 5 (top): minibatch training on MNIST (USPS when MNIST is absent).

Settings of the paper (notes multiclass_ep.md §9): pixels / 255, no standardisation; M = 200
inducing points per class; minibatches of 200; ADAM with its default step 1e-3 for every
method; the length-scale initialised from the median pairwise distance of 1000 training points;
EP, SEP and VI (GFITC cannot use minibatches). Test NLL and error are recorded against
training time from ``callback`` every ``--eval-every`` minibatches on ``--n-test`` test points
(evaluation time excluded from the time axis). ``--budget S`` ends each method at its first
evaluation past S seconds of training (the paper's figure is drawn against time). ``--clock``
chooses those seconds: ``wall`` (the default, what a user watching the run sees) or ``cpu``,
the process's CPU time, for a run that shares its machine or is paused (SIGSTOP) now and then:
it does not count the time the process waits, so on one thread it is the time the run would
take alone on a core.

Each method's trace is written to the JSON as it runs and marked finished when it ends; a rerun
with the same settings keeps the finished methods and fits only the others.

    python figures/multiclass_fig5_minibatch.py [--quick] [--M 200] [--epochs 1] [--budget 3600]
        [--methods sep,ep,vi] [--clock wall|cpu]
"""
import argparse
import json
import os
import time
from pathlib import Path

# thread pools: the library's defaults (sparsegp._threads), as a user would have them

import numpy as np
from sklearn.base import clone

import sparsegp
from sparsegp.datasets import load_dataset
from sparsegp.experiments import write_whole
from sparsegp.kernels import SquaredExponential
from sparsegp.plotting import plot_metric_vs_time
from sparsegp.plotting._mpl import pyplot


#: the time axis: wall-clock seconds, or the process's CPU seconds (all its threads)
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
#: traces written before the clock was recorded were timed on the wall clock
CLOCK_UNSTATED = {"clock": "wall"}
#: the time axis's label for each clock ("mixed": traces of both clocks in one figure)
CLOCK_LABELS = {"wall": "training time (s)", "cpu": "training CPU time (s)",
                "mixed": "training time (s; wall and CPU clocks mixed)"}


class BudgetReached(Exception):
    """Raised by :class:`Recorder` at its first evaluation past the training-time budget."""


def _stop_after(steps):
    """A ``callback`` that ends a fit (:class:`BudgetReached`) at its ``steps``-th call."""
    calls = [0]

    def callback(est, iteration):
        calls[0] += 1
        if calls[0] >= steps:
            raise BudgetReached

    return callback


class Recorder:
    """callback recording (time, test NLL, test error) every ``every`` minibatches."""

    def __init__(self, X_test, y_test, every, on_row=None, budget=None, clock=time.perf_counter):
        self.X_test, self.y_test, self.every = X_test, y_test, every
        self.on_row = on_row
        self.budget = budget
        self.clock = clock
        self.t0 = clock()
        self.excluded = 0.0
        self.rows = []

    def __call__(self, est, iteration):
        if iteration % self.every:
            return
        start = self.clock()
        proba = est.predict_proba(self.X_test)
        idx = np.searchsorted(est.classes_, self.y_test)
        nll = float(-np.mean(np.log(np.maximum(proba[np.arange(idx.size), idx], 1e-300))))
        err = float(np.mean(est.classes_[np.argmax(proba, 1)] != self.y_test))
        self.rows.append((start - self.t0 - self.excluded, nll, err, iteration))
        if self.on_row is not None:
            self.on_row(self.rows)
        print(f"    step {iteration:6d}  t={self.rows[-1][0]:8.1f}s  NLL {nll:.4f}  error {err:.4f}",
              flush=True)
        self.excluded += self.clock() - start
        if self.budget is not None and self.rows[-1][0] >= self.budget:
            raise BudgetReached


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--M", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--methods", default="sep,ep,vi")
    parser.add_argument("--n-test", type=int, default=2000)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--budget", type=float, default=None,
                        help="training seconds per method (default: run every epoch)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="seconds of the time axis and the budget: wall clock or process CPU")
    parser.add_argument("--dataset", default=None, help="mnist (default when present) or usps")
    parser.add_argument("--redraw", action="store_true",
                        help="redraw the PNG from the stored JSON of an earlier run (no fitting)")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    name = args.dataset
    if name is None:
        root = os.environ.get("SPARSEGP_DATA", "")
        name = "mnist" if os.path.isfile(os.path.join(root, "mnist.npz")) else "usps"
    if args.redraw:
        tag = "_quick" if quick else ""
        out = Path(args.out)
        summary = json.loads((out / f"multiclass_fig5_{name}{tag}.json").read_text())
        traces = {m.upper(): (np.asarray(r["time"]), np.asarray(r["nll"]),
                              np.asarray(r["error"])) for m, r in summary.items()}
        clocks = {dict(CLOCK_UNSTATED, **r)["clock"] for r in summary.values()}
        draw_traces(traces, out, name, tag, args.M, args.batch_size,
                    clock=clocks.pop() if len(clocks) == 1 else "mixed")
        return
    Xtr, ytr, Xte, yte = load_dataset(name, download=True)   # fetched when missing
    scale = 255.0 if Xtr.max() > 2 else 1.0
    M, epochs, every, n_test = args.M, args.epochs, args.eval_every, args.n_test
    if quick:
        Xtr, ytr, M, epochs, every, n_test = Xtr[:1000], ytr[:1000], 10, 1, 2, 300
    # float32 rows in memory (the estimator converts one minibatch at a time)
    Xtr = np.asarray(Xtr, dtype=np.float32) / np.float32(scale)
    rng = np.random.default_rng(5)
    sel = rng.choice(len(Xte), min(n_test, len(Xte)), replace=False)
    Xte = np.asarray(Xte[sel], dtype=np.float64) / scale
    yte = yte[sel]
    sub = Xtr[rng.choice(len(Xtr), 1000, replace=False)].astype(np.float64)
    d = np.sqrt(np.maximum(np.sum(sub ** 2, 1)[:, None] + np.sum(sub ** 2, 1)[None]
                           - 2 * sub @ sub.T, 0))
    ls0 = float(np.sqrt(np.median(d[np.triu_indices(1000, 1)])))
    C = np.unique(ytr).size
    Z0 = np.stack([Xtr[np.sort(rng.choice(len(Xtr), M, replace=False))] for _ in range(C)])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "_quick" if quick else ""
    json_path = out / f"multiclass_fig5_{name}{tag}.json"
    settings = dict(epochs=epochs, M=M, n_test=int(len(yte)), batch_size=args.batch_size,
                    budget=args.budget, clock=args.clock)
    summary = json.loads(json_path.read_text()) if json_path.exists() else {}
    # a finished trace of the same settings is kept; anything else is fitted afresh
    summary = {m: r for m, r in summary.items() if r.get("finished")
               and all(dict(CLOCK_UNSTATED, **r).get(k) == v for k, v in settings.items())}
    traces = {m.upper(): tuple(np.asarray(r[k]) for k in ("time", "nll", "error"))
              for m, r in summary.items()}
    for method in args.methods.split(","):
        if method in summary:
            print(f"{method}: finished trace kept from {json_path}")
            continue

        def save_partial(rows, method=method):
            # a long run that is interrupted keeps its trace so far, marked unfinished
            t, nll, err, it = map(list, zip(*rows))
            partial = dict(summary, **{method: dict(time=t, nll=nll, error=err, step=it,
                                                    finished=False, **settings)})
            _write(json_path, partial)

        rec = Recorder(Xte, yte, every, on_row=save_partial, budget=args.budget,
                       clock=CLOCKS[args.clock])
        kernel = SquaredExponential(1.0, np.full(Z0.shape[2], ls0))
        kw = dict(inducing_points=Z0.astype(np.float64), kernel=kernel, latent_noise_variance=1.0,
                  batch_size=args.batch_size, max_iter=epochs, learning_rate=1e-3,
                  random_state=0, callback=rec)
        try:
            if method in ("ep", "sep"):
                est = sparsegp.MultiClassEPClassifier(method=method, **kw)
            else:
                est = sparsegp.MultiClassSVGPClassifier(**kw)
        except (AttributeError, ImportError) as exc:
            print(f"skipping {method}: {exc}")
            continue
        print(f"{method}: {name}, N={len(Xtr)}, M={M}, |B|={args.batch_size}, epochs={epochs}",
              flush=True)
        # compile (or load) the method's kernels outside its timing: its first two minibatch
        # steps on the same data, sizes and settings, ended from the callback
        try:
            clone(est).set_params(callback=_stop_after(2)).fit(Xtr, ytr)
        except BudgetReached:
            pass
        rec.t0 = rec.clock()
        stopped = "epochs"
        try:
            est.fit(Xtr, ytr)
            rec.budget = None
            rec(est, 0)  # final evaluation (iteration 0 always evaluates)
        except BudgetReached:
            stopped = "budget"
        t, nll, err, it = map(np.asarray, zip(*rec.rows))
        traces[method.upper()] = (t, nll, err)
        summary[method] = dict(time=t.tolist(), nll=nll.tolist(), error=err.tolist(),
                               step=it.tolist(), stopped=stopped,
                               plateau=plateau(t, err, len(Xtr) / args.batch_size, every),
                               finished=True, **settings)
        print(f"{method}: final test NLL {nll[-1]:.4f}, error {err[-1]:.4f} after {t[-1]:.1f}s; "
              f"{describe_plateau(summary[method]['plateau'])}", flush=True)
        # written after every method, so an interrupted run keeps the methods it finished
        _write(json_path, summary)
    draw_traces(traces, out, name, tag, M, args.batch_size, clock=args.clock)


def _write(path, summary):
    write_whole(path, json.dumps(summary, indent=1))   # a run killed mid-write keeps the last


def plateau(t, err, steps_per_epoch, every, margin=0.002):
    """The error level a trace ends on, and whether it has stopped falling.

    ``error``: the mean test error over the last epoch of evaluations; ``time``: the first
    time the error came within ``margin`` of it (0.2 points, about the binomial standard
    error on a few thousand test points); ``drop_last_quarter``: how far the error fell over
    the last quarter of the run (epoch-long means at 3/4 of the run and at its end). A trace
    is on its plateau when that drop is within ``margin``.
    """
    t, err = np.asarray(t), np.asarray(err)
    last = max(1, int(round(steps_per_epoch / every)))
    level = float(np.mean(err[-last:]))
    q = int(0.75 * err.size)
    earlier = float(np.mean(err[max(0, q - last):max(q, 1)]))
    reached = np.flatnonzero(err <= level + margin)
    return dict(error=level, margin=margin, n_last=int(min(last, err.size)),
                time=float(t[reached[0]]) if reached.size else None,
                drop_last_quarter=earlier - level,
                on_plateau=bool(earlier - level <= margin))


def describe_plateau(p):
    when = "never" if p["time"] is None else f"first within {p['margin']} at {p['time']:.0f}s"
    state = "on its plateau" if p["on_plateau"] else "still falling"
    return (f"final level (mean error of the last {p['n_last']} evaluations) {p['error']:.4f}, "
            f"{when}; fell {p['drop_last_quarter']:.4f} over the last quarter: {state}")


def draw_traces(traces, out, name, tag, M, batch_size, clock="wall"):
    """Test NLL and error against training time, one panel each, saved beside the JSON;
    ``clock`` ('wall', 'cpu' or 'mixed') names the time axis."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    plot_metric_vs_time({k: (v[0], v[1]) for k, v in traces.items()}, ax=axes[0],
                        title=f"{name.upper()}, M = {M}, minibatch {batch_size}")
    plot_metric_vs_time({k: (v[0], v[2]) for k, v in traces.items()}, ax=axes[1],
                        ylabel="test error")
    for ax in axes:
        ax.set_xlabel(CLOCK_LABELS[clock])
    fig.tight_layout()
    fig.savefig(out / f"multiclass_fig5_{name}{tag}.png", dpi=120)
    print("wrote", out / f"multiclass_fig5_{name}{tag}.png")


if __name__ == "__main__":
    main()
