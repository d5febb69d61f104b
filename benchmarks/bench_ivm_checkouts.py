"""The IVM's fit time under two checkouts, at the same model (issue 22's before/after).

bench_threads' ``ivm`` case cannot compare a checkout older than the IVM's model selection:
that checkout's default fits fixed hyper-parameters once, while today's default searches them.
This script fits the model both versions share, SE with s2 = 1 and l = 1 held fixed,
``n_active=200``, on xor (N = 5 000, inputs standardised by the script so that neither
version's own input scaling changes the model), in fresh processes, the checkouts alternating
(``--rounds`` each), each process taking the best of ``--repeats`` fits after a warm-up. It
prints the minimum over rounds per checkout and thread setting and the largest difference of
the two versions' predicted probabilities, which must be round-off for the times to compare
the same work.

    python benchmarks/bench_ivm_checkouts.py --checkouts /path/to/old,/path/to/new
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from bench_threads import THREAD_VARS


def child(repeats):
    """Best-of-``repeats`` fit time of this process's sparsegp; one JSON line."""
    import warnings

    import sparsegp
    from sparsegp import IVMClassifier
    from sparsegp.datasets import make_xor
    X, y = make_xor(5000, random_state=0)
    X = (X - X.mean(0)) / X.std(0)
    if "kernel" in IVMClassifier().get_params():
        from sparsegp.kernels import SquaredExponential
        kw = dict(optimizer=None, kernel=SquaredExponential(1.0, 1.0))
    else:                                   # before the kernel objects: fixed by default
        kw = dict(variance=1.0, lengthscale=1.0)
    kw.update(n_active=200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        IVMClassifier(**{**kw, "n_active": 20}).fit(X[:200], y[:200])      # compile
        best = np.inf
        for _ in range(repeats):
            t0 = time.perf_counter()
            est = IVMClassifier(**kw).fit(X, y)
            best = min(best, time.perf_counter() - t0)
    proba = est.predict_proba(X)[:, 1]
    print(json.dumps({"sparsegp": os.path.dirname(sparsegp.__file__), "seconds": best,
                      "proba": proba.tolist()}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkouts", default="", help="OLD,NEW: two checkout folders")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.repeats)
        return
    paths = [os.path.abspath(p) for p in args.checkouts.split(",")]
    if len(paths) != 2:
        parser.error("--checkouts takes two folders, OLD,NEW")
    best, proba = {}, {}
    for _ in range(args.rounds):
        for setting in ("one", "default"):
            for path in paths:
                env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
                if setting == "one":
                    env.update({k: "1" for k in THREAD_VARS})
                env["PYTHONPATH"] = path
                res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child",
                                      "--repeats", str(args.repeats)], env=env, cwd="/",
                                     capture_output=True, text=True, check=True)
                got = json.loads(res.stdout.strip().splitlines()[-1])
                if os.path.realpath(got["sparsegp"]) != os.path.realpath(
                        os.path.join(path, "sparsegp")):
                    raise RuntimeError(f"child imported {got['sparsegp']}, not {path}")
                key = (path, setting)
                best[key] = min(best.get(key, np.inf), got["seconds"])
                proba[path] = np.asarray(got["proba"])
    diff = float(np.max(np.abs(proba[paths[0]] - proba[paths[1]])))
    print(f"# IVM, SE(1, 1) fixed, n_active = 200, xor N = 5000; min over {args.rounds} "
          f"processes x best of {args.repeats} fits; max |p_new - p_old| = {diff:.1e}")
    print(f"{'threads':8s} {'old s':>8s} {'new s':>8s} {'new/old':>8s}")
    for setting in ("one", "default"):
        old, new = best[(paths[0], setting)], best[(paths[1], setting)]
        print(f"{setting:8s} {old:8.4f} {new:8.4f} {new / old:8.3f}")


if __name__ == "__main__":
    main()
