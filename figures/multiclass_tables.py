"""Seed 002, Tables 2 and 3: test NLL and test error on eight UCI sets, beside the paper.

Protocol (notes multiclass_ep.md §9, §5.3): features standardised with training statistics;
M = round(fraction * N_train) inducing points per class; every method starts from the same
hyper-parameters (sigma = sigma0 = 1, length-scale sqrt(median pairwise distance)) and the same
random inducing inputs (training rows drawn independently per class); 250 iterations; the first
F folds of each set. Mean +- standard error over folds.

The grid is run by ``sparsegp.experiments`` (the same as ``python -m sparsegp experiment
multiclass``): each (data set, fold, fraction, method) is a task on a dask LocalCluster (or the
scheduler given by --scheduler), and its record is appended to ``multiclass.jsonl`` as it
finishes: the committed results file of that command, so this script and the command resume
the same grid without refitting any cell. The Markdown table ``multiclass.md`` is rebuilt from
that file, and ``multiclass_readings.md`` reads each data set against the paper.

    python figures/multiclass_tables.py --folds 5 --methods ep,sep
    python figures/multiclass_tables.py --quick          # 1 fold, 20 iterations, small sets
"""
import argparse
import os
import shlex
import sys
from pathlib import Path

from sparsegp.experiments import run_table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--folds", type=int, default=20)
    parser.add_argument("--methods", default=None, help="subset of ep,sep,gfitc,vi")
    parser.add_argument("--datasets", default=None, help="subset of the eight sets")
    parser.add_argument("--max-iter", type=int, default=None, help="default 250 (the paper)")
    parser.add_argument("--scheduler", default=None, help="dask scheduler address")
    parser.add_argument("--workers", type=int, default=None, help="LocalCluster workers")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    names = {k: None if v is None else v.split(",") for k, v in
             (("methods", args.methods), ("datasets", args.datasets))}
    folds, max_iter = args.folds, args.max_iter
    if quick:
        names["datasets"] = ["wine", "new_thyroid"]
        folds, max_iter = 1, 20
    argv = sys.argv[1:] if argv is None else list(argv)
    out = run_table("multiclass", out=args.out,
                    stem="multiclass_quick" if quick else "multiclass",
                    folds=folds, max_iter=max_iter, scheduler=args.scheduler,
                    n_workers=args.workers, download=True, **names,
                    command="python figures/multiclass_tables.py "
                            + " ".join(shlex.quote(a) for a in argv))
    print(out["markdown"].read_text())


if __name__ == "__main__":
    main()
