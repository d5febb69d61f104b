"""Call counts of one whole fit of a bench_threads case, to compare two checkouts on a busy box.

Wall time on a shared machine moves by tens of percent; the number of objective evaluations,
EP sweeps and kernel calls of a seeded fit does not. Each run loads the compiled kernels with
a small fit (bench_threads.warmed_up), profiles one fit of the case with cProfile and writes
{function: [ncalls, tottime]}; ``compare`` lists the functions whose counts differ, then those
with the most time. Functions are keyed by name only, so that a move between modules lines up.

    PYTHONPATH=/path/to/old python benchmarks/fit_calls.py dump mc_vi old.json
    PYTHONPATH=$PWD python benchmarks/fit_calls.py dump mc_vi new.json
    python benchmarks/fit_calls.py compare old.json new.json

``--standardise`` standardises X first: the estimators learn in model units (centred, scaled
inputs) since issue 22, so on raw inputs an older checkout follows another optimisation path;
on standardised inputs both start from the same point and should make the same calls. Old
checkouts that spell ``max_iter`` as ``outer_iter`` (the stagewise classifier) are accepted.
"""
import argparse
import cProfile
import inspect
import json
import os
import pstats
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def dump(case, path, standardise):
    import sparsegp
    from bench_threads import CASES, warmed_up

    name, kwargs, problem = CASES[case]
    accepted = inspect.signature(getattr(sparsegp, name)).parameters
    if "max_iter" in kwargs and "max_iter" not in accepted:
        kwargs = {("outer_iter" if k == "max_iter" else k): v for k, v in kwargs.items()}
        CASES[case] = (name, kwargs, problem)      # the warm-up's spelling too
    cls, kwargs, X, y = warmed_up(case)
    if standardise:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    profile = cProfile.Profile()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cls(random_state=0, **kwargs)
        profile.enable()
        est.fit(X, y)
        profile.disable()
    rows = {}
    for (_, _, func), (_, ncalls, tottime, _, _) in pstats.Stats(profile).stats.items():
        row = rows.setdefault(func, [0, 0.0])
        row[0] += ncalls
        row[1] += tottime
    with open(path, "w") as fh:
        json.dump({"case": case, "module": sys.modules[cls.__module__].__file__,
                   "n_iter": int(getattr(est, "n_iter_", -1)), "calls": rows}, fh)


def compare(path_a, path_b, n_top):
    with open(path_a) as fh:
        a = json.load(fh)
    with open(path_b) as fh:
        b = json.load(fh)
    print(f"{a['case']}: A {a['module']} (n_iter {a['n_iter']}), "
          f"B {b['module']} (n_iter {b['n_iter']})")
    calls_a, calls_b = a["calls"], b["calls"]
    names = set(calls_a) | set(calls_b)
    zero = [0, 0.0]
    differ = sorted((n for n in names if calls_a.get(n, zero)[0] != calls_b.get(n, zero)[0]),
                    key=lambda n: -max(calls_a.get(n, zero)[1], calls_b.get(n, zero)[1]))
    heavy = sorted(names, key=lambda n: -max(calls_a.get(n, zero)[1], calls_b.get(n, zero)[1]))
    for title, chosen in (("counts that differ", differ[:n_top]),
                          ("most time", heavy[:n_top])):
        print(f"-- {title}\n{'function':<44} {'calls A':>8} {'calls B':>8} {'s A':>8} {'s B':>8}")
        for n in chosen:
            (ca, ta), (cb, tb) = calls_a.get(n, zero), calls_b.get(n, zero)
            print(f"{n[:44]:<44} {ca:>8} {cb:>8} {ta:>8.3f} {tb:>8.3f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="profile one fit of a case and write its call counts")
    d.add_argument("case")
    d.add_argument("path")
    d.add_argument("--standardise", action="store_true", help="standardise X first")
    c = sub.add_parser("compare", help="compare two dumps")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    if args.command == "dump":
        dump(args.case, args.path, args.standardise)
    else:
        compare(args.a, args.b, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
