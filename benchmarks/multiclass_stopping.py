"""Would the stopping rule serve the multi-class EP/SEP default? Traces, then the rule replayed.

``trace`` fits ``MultiClassEPClassifier(method=...)`` at its defaults (the paper's 250 batch
iterations) on folds of seed 002's eight sets and stores, per fit, the EP-inner log Z of
every iteration and the test NLP every 5 iterations (a callback; prediction inside it). A
rerun skips the fits already in the file. ``replay`` applies the rule of
:mod:`sparsegp._optimize` to the stored log Z traces, for several tolerances, row floors and
variants, and prints where each would have stopped and its test NLP there against 250's (the
NLP of the traced iteration nearest the stop).

    export SPARSEGP_DATA=/path/to/datasets
    nice -n 19 python benchmarks/multiclass_stopping.py trace traces.jsonl --folds 0 1 2
    python benchmarks/multiclass_stopping.py replay benchmarks/multiclass_stopping_traces.jsonl

``--at-best`` in ``replay`` also asks that the last value be within the tolerance of the best
(so that a dip in the EP-inner log Z, after which the best value stalls, does not end the
run).
"""
import argparse
import json
import os
import time
import warnings

import numpy as np

SETS = ("glass", "new_thyroid", "satellite", "svmguide2", "vehicle", "vowel6", "waveform3",
        "wine")


def trace(path, folds):
    import sparsegp
    from sparsegp.datasets import load_dataset
    from sparsegp.metrics import mean_nlp
    done = set()
    if os.path.exists(path):
        with open(path) as fh:
            done = {(r["set"], r["fold"], r["method"]) for r in map(json.loads, fh)}
    for fold in folds:
        for name in SETS:
            X, y, Xt, yt = load_dataset(name, split=fold)
            for method in ("ep", "sep"):
                if (name, fold, method) in done:
                    continue
                nlp = {}

                def record(est, it):
                    if it % 5 == 4 or it == 0:
                        nlp[it + 1] = float(mean_nlp(yt, est.predict_proba(Xt),
                                                     classes=est.classes_))

                est = sparsegp.MultiClassEPClassifier(method=method, random_state=0,
                                                      callback=record)
                cpu = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.fit(X, y)
                row = dict(set=name, fold=fold, method=method, N=int(len(y)),
                           cpu=time.process_time() - cpu,
                           history=est.evidence_history_.tolist(), nlp=nlp)
                with open(path, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
                print(name, fold, method, f"N={len(y)} NLP at 250: {nlp.get(250)}",
                      flush=True)


def stop_at(history, tol, n_rows, floor, window=5, at_best=False):
    """Iteration (1-based) at which the rule stops a run with these log Z values."""
    gain = tol * max(n_rows, floor)
    best = np.maximum.accumulate(history)
    for k in range(window, len(history)):
        if best[k] - best[k - window] <= gain and (not at_best or
                                                    history[k] >= best[k] - gain):
            return k + 1
    return len(history)


def replay(path, at_best):
    with open(path) as fh:
        runs = [json.loads(line) for line in fh]
    print(f"{len(runs)} traced fits; difference = test NLP at the stop minus at 250\n")
    print("| floor (rows) | tol | median difference | mean | worse by > 0.01 | "
          "median stop (min-max) |\n|---:|---:|---:|---:|---|---|")
    for floor in (0, 1000, 3000):
        for tol in (1e-4, 3e-4, 1e-3):
            diffs, stops = [], []
            for r in runs:
                k = stop_at(np.asarray(r["history"]), tol, r["N"], floor, at_best=at_best)
                nlp = {int(a): b for a, b in r["nlp"].items()}
                near = min(nlp, key=lambda a: abs(a - k))
                diffs.append(nlp[near] - nlp[max(nlp)])
                stops.append(k)
            d = np.asarray(diffs)
            worse = ", ".join(f"{runs[i]['set']} {runs[i]['fold']} {runs[i]['method']} "
                              f"{d[i]:+.3f}" for i in np.flatnonzero(d > 0.01)) or "none"
            print(f"| {floor} | {tol:g} | {np.median(d):+.4f} | {d.mean():+.4f} | {worse} | "
                  f"{int(np.median(stops))} ({min(stops)}-{max(stops)}) |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("trace", "replay"))
    ap.add_argument("path")
    ap.add_argument("--folds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--at-best", action="store_true")
    args = ap.parse_args()
    trace(args.path, args.folds) if args.mode == "trace" else replay(args.path, args.at_best)


if __name__ == "__main__":
    main()
