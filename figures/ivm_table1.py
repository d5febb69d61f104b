"""Seed 003, Table 1: SVM and IVM on MNIST (13 x 13), each digit against the rest, 10 runs.

The grid ``ivm_mnist`` of ``sparsegp.experiments`` (settings and the paper's numbers in
``sparsegp/experiments/tables.py``): for each digit, 10 seeded runs of the IVM at the paper's
final active-set size and of the SVM (``SVC``, C and gamma by 5-fold CV on 5 000 rows), on the
official split. Records go to ``ivm_mnist.jsonl`` as each cell finishes, the file that
``python -m sparsegp experiment ivm_mnist --out figures`` writes, so either resumes the other;
the table beside the paper's goes to ``ivm_mnist.md``.

    python figures/ivm_table1.py [--folds 10] [--datasets mnist_9_vs_rest] [--workers 2]
    python figures/ivm_table1.py --quick     # digit 9, one run, the first 2 000 rows, d = 200

Reads ``mnist.npz`` from $SPARSEGP_DATA (else the default data folder) and downloads it there
when missing (checksummed, see ``python -m sparsegp data``); exits with a message when it
cannot be had.
"""
import argparse
import os
import shlex
import sys
from pathlib import Path

from sparsegp.datasets import DownloadError
from sparsegp.experiments import TABLES, Cell, markdown, run_grid, run_table

# quick mode: a small problem through the same runner and table code (cells keyed apart by
# their n_train, so they never mix with the full table's)
QUICK_ROWS, QUICK_D = 2000, 200
QUICK_SVM = {"C_grid": [2.0, 8.0], "gamma_grid": [2.0 ** -4, 2.0 ** -3], "cv_subsample": 1000,
             "calibration": 300}


def quick_cells():
    """Digit 9 against the rest: one IVM and one SVM cell on the first 2 000 training rows."""
    table = TABLES["ivm_mnist"]
    return [Cell("mnist_9_vs_rest", "official", "ivm",
                 {**table.params["ivm"], "n_train": QUICK_ROWS}, QUICK_D, seed=0),
            Cell("mnist_9_vs_rest", "official", "svm",
                 {**table.params["svm"], **QUICK_SVM, "n_train": QUICK_ROWS}, None, seed=0)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--folds", type=int, default=None, help="runs per digit (default 10)")
    parser.add_argument("--datasets", default=None, help="subset, e.g. mnist_9_vs_rest")
    parser.add_argument("--scheduler", default=None, help="dask scheduler address")
    parser.add_argument("--workers", type=int, default=None, help="LocalCluster workers")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    argv = sys.argv[1:] if argv is None else list(argv)
    command = "python figures/ivm_table1.py " + " ".join(shlex.quote(a) for a in argv)
    out = Path(args.out)
    if quick:
        cells = quick_cells()
        try:
            got = run_grid(cells, out / "ivm_mnist_quick.jsonl", local=True, progress=False,
                           download=True)
        except DownloadError as exc:
            print(f"MNIST not available, table skipped: {exc}")
            return None
        md = out / "ivm_mnist_quick.md"
        md.write_text(markdown(TABLES["ivm_mnist"], cells, got["records"], wall=got["wall"],
                               command=command), encoding="utf-8")
    else:
        datasets = None if args.datasets is None else args.datasets.split(",")
        try:
            md = run_table("ivm_mnist", out=out, folds=args.folds, datasets=datasets,
                           scheduler=args.scheduler, n_workers=args.workers,
                           command=command, download=True)["markdown"]
        except DownloadError as exc:
            print(f"MNIST not available, table skipped: {exc}")
            return None
    print(md.read_text())
    return md


if __name__ == "__main__":
    main()
