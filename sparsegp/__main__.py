"""Command line: ``python -m sparsegp demo`` fits a sparse GP classifier on embedded data."""
import argparse
import sys

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
    args = parser.parse_args(argv)
    if args.command == "demo":
        run_demo(n_train=args.n_train, n_test=args.n_test, n_inducing=args.n_inducing,
                 out=args.out, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
