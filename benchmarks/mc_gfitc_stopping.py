"""Should multi-class GFITC stop on a rule by default? Its fits against the 250-iteration budget.

``run`` fits ``MultiClassGFITCClassifier(random_state=0)`` on folds of seed 002's sets with
each variant of :data:`VARIANTS` and stores per fit the wall time, iterations, test NLP and
error, and log Z_EP (one JSON line per set and fold; a rerun skips those in the file).
``summary`` prints, per variant, the median test NLP change against the budget, how many
fits end worse or better by more than 0.01, and the median time ratio.

    export SPARSEGP_DATA=/path/to/datasets
    nice -n 19 python benchmarks/mc_gfitc_stopping.py run out.jsonl --folds 0 1 2
    python benchmarks/mc_gfitc_stopping.py summary benchmarks/mc_gfitc_stopping.jsonl

The sets are those of ``multiclass_stopping.py`` with at most 486 training rows (vehicle and
satellite are left out for time).
"""
import argparse
import json
import os
import time
import warnings

import numpy as np

SETS = ("wine", "glass", "new_thyroid", "waveform3", "svmguide2", "vowel6")


def variants(n_rows):
    """name -> constructor arguments: the budget (the paper's schedule), the rule at the
    binary default 3e-4 and at 3e-5 (both with the 3 000-row floor), and 3e-4 nats per row
    without the floor."""
    return {"budget": {"tol": None}, "tol3e-4": {"tol": 3e-4}, "tol3e-5": {"tol": 3e-5},
            "row3e-4": {"tol": 3e-4 * n_rows / 3000}}


def run(path, folds, sets):
    import sparsegp
    from sparsegp.datasets import load_dataset
    from sparsegp.metrics import mean_nlp
    done = set()
    if os.path.exists(path):
        with open(path) as fh:
            done = {(r["set"], r["fold"]) for r in map(json.loads, fh)}
    for fold in folds:
        for name in sets:
            if (name, fold) in done:
                continue
            X, y, Xt, yt = load_dataset(name, split=fold)
            row = dict(set=name, fold=fold, N=int(len(y)))
            for label, kw in variants(len(y)).items():
                est = sparsegp.MultiClassGFITCClassifier(random_state=0, **kw)
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    est.fit(X, y)
                row[label] = dict(
                    wall=time.perf_counter() - start, n_iter=int(est.n_iter_),
                    nlp=float(mean_nlp(yt, est.predict_proba(Xt), classes=est.classes_)),
                    err=float(np.mean(est.predict(Xt) != yt)),
                    logZ=float(est.log_marginal_likelihood_value_), warned=len(caught))
                print(name, fold, label, row[label], flush=True)
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")


def summary(path):
    with open(path) as fh:
        rows = [json.loads(line) for line in fh]
    print(f"{len(rows)} fits; test NLP and error against the 250-iteration budget")
    for label in [k for k in rows[0] if k not in ("set", "fold", "N", "budget")]:
        d = np.array([r[label]["nlp"] - r["budget"]["nlp"] for r in rows])
        e = np.array([r[label]["err"] - r["budget"]["err"] for r in rows])
        t = np.array([r[label]["wall"] / r["budget"]["wall"] for r in rows])
        worst = rows[int(np.argmax(d))]
        print(f"{label:>8}: median dNLP {np.median(d):+.4f}, worse > 0.01: {(d > 0.01).sum()}, "
              f"better: {(d < -0.01).sum()}, largest {d.max():+.3f} ({worst['set']} fold "
              f"{worst['fold']}); error worse {(e > 0).sum()}, better {(e < 0).sum()}; "
              f"median time ratio {np.median(t):.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run")
    p.add_argument("path")
    p.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--sets", default=",".join(SETS))
    p = sub.add_parser("summary")
    p.add_argument("path")
    args = parser.parse_args(argv)
    if args.cmd == "run":
        run(args.path, args.folds, args.sets.split(","))
    else:
        summary(args.path)


if __name__ == "__main__":
    main()
