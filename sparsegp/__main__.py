"""Command line: ``python -m sparsegp demo`` fits a sparse GP classifier on embedded data;
``python -m sparsegp experiment TABLE`` runs a paper's table as a resumable grid;
``python -m sparsegp data list|fetch NAME|verify|path`` manages the benchmark data."""
import argparse
import shlex
import sys

from ._data_cli import add_data_parser, run_data
from ._demo import run_demo


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m sparsegp",
        description="sparsegp: sparse Gaussian-process classification and regression.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="fit a generalized-FITC classifier on synthetic xor data and draw its contours",
    )
    demo.add_argument("--n-train", type=int, default=400, help="training points (default 400)")
    demo.add_argument("--n-test", type=int, default=2000, help="test points (default 2000)")
    demo.add_argument("--n-inducing", type=int, default=4,
                      help="pseudo-inputs M (default 4: the xor problem needs about four)")
    demo.add_argument("--out", default="sparsegp_demo.png",
                      help="where to write the figure (default ./sparsegp_demo.png)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    _add_experiment_parser(sub)
    add_data_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "data":
        return run_data(args)
    if args.command == "experiment":
        return _run_experiment(args, sys.argv[1:] if argv is None else list(argv))
    if args.command == "demo":
        run_demo(n_train=args.n_train, n_test=args.n_test, n_inducing=args.n_inducing,
                 out=args.out, seed=args.seed)
    return 0


def _add_experiment_parser(sub):
    from .experiments.tables import TABLES

    exp = sub.add_parser(
        "experiment",
        help="run a paper's table as a grid of cells on dask (resumable) and write it as "
             "markdown beside the paper's numbers",
    )
    exp.add_argument("table", choices=sorted(TABLES), help="which table")
    exp.add_argument("--scheduler", default=None,
                     help="address of a running dask scheduler (tcp://host:port); default: "
                          "an in-process LocalCluster of single-threaded workers")
    exp.add_argument("--folds", type=int, default=None,
                     help="first F splits of each data set (default: the paper's number)")
    exp.add_argument("--out", default=".", help="folder for TABLE.jsonl and TABLE.md")
    exp.add_argument("--datasets", default=None, help="comma-separated subset of data sets")
    exp.add_argument("--methods", default=None, help="comma-separated subset of methods")
    exp.add_argument("--max-iter", type=int, default=None,
                     help="override the iterations of every method that takes max_iter "
                          "(quick runs; such cells are keyed apart from the full ones)")
    exp.add_argument("--workers", type=int, default=None,
                     help="LocalCluster workers (default: one per core)")
    exp.add_argument("--local", action="store_true",
                     help="run the cells in this process, in order, without dask")
    exp.add_argument("--no-progress", action="store_true", help="no progress bar")
    exp.add_argument("--download", action="store_true",
                     help="first download the registered data sets the table needs and the "
                          "data folder lacks (python -m sparsegp data fetch NAME)")
    exp.add_argument("--report-only", action="store_true",
                     help="fit nothing: write TABLE.md from the cells already in TABLE.jsonl")


def _run_experiment(args, argv):
    from .datasets import DownloadError
    from .experiments.reproduce import run_table

    def names(text):
        return None if text is None else [t.strip() for t in text.split(",") if t.strip()]

    try:
        summary = run_table(
            args.table, out=args.out, folds=args.folds, datasets=names(args.datasets),
            methods=names(args.methods), max_iter=args.max_iter,
            command="python -m sparsegp " + " ".join(shlex.quote(a) for a in argv),
            scheduler=args.scheduler, n_workers=args.workers, progress=not args.no_progress,
            local=args.local or None, report_only=args.report_only, download=args.download)
    except (ValueError, DownloadError) as exc:  # a misspelt name, data not had: nothing ran
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # every finished cell is already on disk
        print("interrupted: finished cells are kept; run the same command again to resume",
              file=sys.stderr)
        return 130
    n = len(summary["cells"])
    done = sum(r.get("status") == "ok" for r in summary["records"].values())
    if args.report_only:
        print(f"{n} cells: {len(summary['records'])} in {summary['results']} ({done} ok); "
              f"table in {summary['markdown']}")
        return 0
    print(f"{n} cells: {n - summary['ran']} already done, ran {summary['ran']} "
          f"({summary['failed']} failed); {done} ok in {summary['results']}; table in "
          f"{summary['markdown']}; wall {summary['wall']:.1f} s")
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
