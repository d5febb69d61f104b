"""What a first run spends compiling: the README demo with an empty Numba cache, per function.

Every compile goes through ``numba.core.dispatcher.Dispatcher.compile`` (our kernels, and the
overloads Numba builds for them: ``np.empty``, array sums, error messages), so timing that
method gives, for each function, its inclusive seconds (with the callees it compiled) and its
exclusive ones. The cache is pointed at a fresh directory before Numba is imported, so the run
is a fresh install's first, whatever ``__pycache__`` already holds.

    PYTHONPATH=. python benchmarks/compile_profile.py               # the demo, top 30 rows
    PYTHONPATH=. python benchmarks/compile_profile.py --top 60 -- --n-train 2000

Arguments after ``--`` go to ``python -m sparsegp demo``. Times are wall-clock and move with
the machine's load; compare rows measured under the same load.
"""
import argparse
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30, help="rows of the table (default 30)")
    parser.add_argument("demo_args", nargs="*", help="arguments of the demo, after --")
    args = parser.parse_args(argv)
    # before numba is imported: its config reads the variable once
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparsegp-numba-cache-")
    from numba.core import dispatcher

    inclusive, exclusive, calls = defaultdict(float), defaultdict(float), Counter()
    children = []          # seconds compiled by callees, one entry per open compile
    original = dispatcher.Dispatcher.compile

    def timed_compile(self, sig):
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        children.append(0.0)
        start = time.perf_counter()
        try:
            return original(self, sig)
        finally:
            seconds = time.perf_counter() - start
            inner = children.pop()
            inclusive[name] += seconds
            exclusive[name] += seconds - inner
            calls[name] += 1
            if children:
                children[-1] += seconds

    dispatcher.Dispatcher.compile = timed_compile
    start = time.perf_counter()
    from sparsegp.__main__ import main as sparsegp_main

    demo_args = args.demo_args or ["--out", os.path.join(tempfile.mkdtemp(), "demo.png")]
    sparsegp_main(["demo", *demo_args])
    total = time.perf_counter() - start
    print(f"\nwhole run {total:.1f} s, of which compiling {sum(exclusive.values()):.1f} s "
          f"({len(calls)} functions)")
    print(f"{'inclusive':>9} {'exclusive':>9} {'calls':>5}  function")
    for name in sorted(inclusive, key=inclusive.get, reverse=True)[:args.top]:
        print(f"{inclusive[name]:9.2f} {exclusive[name]:9.2f} {calls[name]:5d}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
