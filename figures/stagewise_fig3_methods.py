"""Seed 004, Figure 3: six basis-vector selection methods against d_max (right panel) and the
kappa sweep of adaptive against random sampling (left panel, ``--kappa-sweep``).

Test error and test NLP (mean +- standard error over realisations) for adaptive sampling
(kappa = 1, 2), random sampling (kappa = 2), the validation rule (kappa = 59), entropy and
information gain, at d_max in {40, 80, 160, 320}, on the Raetsch sets of the paper's Table 1:
Banana, Waveform, Twonorm and Ringnorm with the first 3600 test points moved into training
(n = 4000), Splice (+1000) and Image (as distributed). Every method uses moment-matched sites
and re-estimates the hyper-parameters on the NLP of eq. 4 (Algorithm 1, iter_max = 20), as in
the paper's comparison.

The covariance is the estimator's default: isotropic SE from its data-following start, searched
in its default box (variance and length-scale in [1e-3, 1e3], standardised units). The paper
states neither a start nor bounds. Unbounded (as the outer-5 results were fitted: amplitude 1,
length-scale sqrt(D)), eq. 4 drives the variance to 1e12-1e13 on Banana, where
A = s2 - |V|^2 keeps no digits, and the fit follows the rounding: a gradient that moved by
1e-13 relative changed Banana's d_max = 80 information-gain fit from 0.1515 to 0.1431 test
error. In the box the same fits are reproducible and cost less (Waveform, d_max = 320: 35-38 s
against 85-94 s).

Data: read from ``--data-home``, else $SPARSEGP_DATA, else ``../shared/datasets`` when present,
else the default data folder. A set missing there is downloaded (Cawley's ``benchmarks.mat``,
every realisation, checksummed; ``python -m sparsegp data``), except into
``../shared/datasets``, which is only read. That folder has no Splice (skipped with a message)
and only the first 10 realisations (Twonorm: 1), so ``--realizations P`` is clipped to what
exists (the paper used 25, Image and Splice 20).

    python figures/stagewise_fig3_methods.py --realizations 5 --datasets banana waveform \\
        --dmax 40 80
    python figures/stagewise_fig3_methods.py --quick

``--kappa-sweep`` fits adaptive and random sampling at kappa in {1, 2, 4, 8, 16, 32} and the
validation rule (kappa = 59) on Waveform and Twonorm at d_max 40 and 80, as the left panel does,
and draws ``stagewise_fig3_kappa.png`` (mean +- s.e. against kappa).

Results are appended to a JSON file (``--results``) after every fit, so an interrupted run
resumes where it stopped. Writes ``stagewise_fig3_methods.png`` into ``--out``.
"""
import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from sparsegp import StagewiseGPClassifier
from sparsegp.datasets import DatasetNotFoundError, DownloadError, load_dataset
from sparsegp.metrics import error_rate, mean_nlp
from sparsegp.experiments import write_whole
from sparsegp.experiments.stats import bonferroni_dunn, friedman, wilcoxon_pairs
from sparsegp.kernels import UNBOUNDED, SquaredExponential
from sparsegp.plotting import plot_method_comparison, summarize_runs

HERE = Path(__file__).resolve().parent
SEED = 4

#: name -> (file, test points moved into the training set)
DATASETS = {
    "banana": ("raetsch_banana", 3600),
    "waveform": ("raetsch_waveform", 3600),
    "twonorm": ("raetsch_twonorm", 3600),
    "ringnorm": ("raetsch_ringnorm", 3600),
    "splice": ("raetsch_splice", 1000),
    "image": ("raetsch_image", 0),
}

#: the paper's order of the bars in Figure 3 (right)
METHODS = {
    "entropy": dict(selection="entropy"),
    "infogain": dict(selection="infogain"),
    "adaptive k=1": dict(selection="adaptive", kappa=1),
    "adaptive k=2": dict(selection="adaptive", kappa=2),
    "random k=2": dict(selection="random", kappa=2),
    "validation k=59": dict(selection="validation", kappa=59),
}


#: the left panel: working-set sizes, data sets and d_max of the kappa sweep
KAPPAS = (1, 2, 4, 8, 16, 32)
SWEEP_DATASETS = ("waveform", "twonorm")
SWEEP_DMAX = (40, 80)


def method_settings(name):
    """Constructor arguments of a method name: a key of METHODS or 'adaptive|random k=K'."""
    if name in METHODS:
        return METHODS[name]
    selection, _, kappa = name.partition(" k=")
    if selection not in ("adaptive", "random") or not kappa.isdigit():
        raise ValueError(f"unknown method {name!r}: expected one of {sorted(METHODS)} or "
                         "'adaptive k=K' / 'random k=K'")
    return dict(selection=selection, kappa=int(kappa))


def sweep_methods(kappas=KAPPAS):
    """The kappa sweep's method names, adaptive and random at every kappa, then validation."""
    return [f"{s} k={k}" for k in kappas for s in ("adaptive", "random")] + ["validation k=59"]


def start_kernel(X):
    """The SE kernel from amplitude 1 and length-scale sqrt(D), searched without bounds: the
    outer-5 results of Figure 3 and Figure 2's fits (``stagewise_fig2_site_updates.py``)."""
    return SquaredExponential(1.0, float(np.sqrt(X.shape[1])), UNBOUNDED, UNBOUNDED)


def data_home(arg=None):
    """``--data-home``, else ``$SPARSEGP_DATA``, else ``../shared/datasets`` when present."""
    if arg:
        return arg
    if os.environ.get("SPARSEGP_DATA"):
        return None
    shared = HERE.parents[1] / "shared" / "datasets"
    return str(shared) if shared.is_dir() else None


def may_download(home):
    """Whether a missing set may be fetched into ``home``: anywhere but the development
    tree's ``../shared/datasets``, which is read and never written."""
    return home is None or Path(home).resolve() != (HERE.parents[1] / "shared" / "datasets"
                                                     ).resolve()


def load_split(name, r, home=None, n_train=None):
    """Realisation r of a Table 1 data set: (X, y, X_test, y_test), or None when absent.

    The first ``moved`` test points are appended to the training set (seed 004 §5).
    ``n_train`` (quick mode) keeps only the first rows of that training set.
    """
    file, moved = DATASETS[name]
    X, y, Xt, yt = load_dataset(file, split=r, data_home=home, download=may_download(home))
    X = np.vstack([X, Xt[:moved]])
    y = np.concatenate([y, yt[:moved]])
    Xt, yt = Xt[moved:], yt[moved:]
    if n_train is not None:
        X, y = X[:n_train], y[:n_train]
    return X, y, Xt, yt


def available_realisations(name, wanted, home=None):
    """How many of the first ``wanted`` realisations exist (0 when the file is missing and
    cannot be downloaded; the reason is printed)."""
    file, _ = DATASETS[name]
    count = 0
    for r in range(wanted):
        try:
            load_dataset(file, split=r, data_home=home, download=may_download(home))
        except (DatasetNotFoundError, DownloadError) as exc:
            print(f"{name}: {exc}")
            return 0
        except ValueError:
            break
        count += 1
    return count


def fit_model(X, y, d_max, method, max_iter, seed):
    """One method's estimator as the figure fits it: the default kernel and box (module
    docstring)."""
    return StagewiseGPClassifier(d_max=d_max, max_iter=max_iter, random_state=seed,
                                 **method_settings(method)).fit(X, y)


def fit_one(X, y, Xt, yt, d_max, method, max_iter, seed):
    """Fit one method and return (test error, test NLP, seconds)."""
    t0 = time.perf_counter()
    est = fit_model(X, y, d_max, method, max_iter, seed)
    proba = est.predict_proba(Xt)
    err = error_rate(yt, est.classes_[np.argmax(proba, axis=1)])
    return float(err), float(mean_nlp(yt, proba, classes=est.classes_)), \
        time.perf_counter() - t0


def run(datasets, P, d_values, methods, max_iter, results_path, home=None, n_train=None,
        first=0, verbose=True):
    """Fill (and return) ``results[key] = [error, nlp, seconds]`` with key 'ds|r|d|method'.

    Methods are the outermost loop, in the order given, so the first methods are complete on
    every realisation before the later ones start. Realisations ``first .. P-1`` are run.
    """
    results = {}
    if results_path.is_file():
        results = json.loads(results_path.read_text())
    for ds in datasets:
        n_real = available_realisations(ds, P, home)
        if n_real == 0:
            print(f"{ds}: data file {DATASETS[ds][0]}.npz not found and not downloaded; "
                  f"skipped (the shared data has no Splice)")
            continue
        if n_real < P:
            print(f"{ds}: only {n_real} realisation(s) available; using {n_real} instead of {P}")
        splits = {r: load_split(ds, r, home, n_train) for r in range(first, n_real)}
        for method in methods:
            for r, (X, y, Xt, yt) in splits.items():
                for d in d_values:
                    key = f"{ds}|{r}|{d}|{method}"
                    if d >= len(y) or key in results:
                        continue
                    results[key] = list(fit_one(X, y, Xt, yt, d, method, max_iter,
                                                SEED + r))
                    # whole or not at all: a run killed mid-write keeps every earlier fit
                    write_whole(results_path, json.dumps(results, indent=0))
                    if verbose:
                        e, nlp, sec = results[key]
                        print(f"{key:40s} error {e:.4f}  NLP {nlp:.4f}  ({sec:.1f} s)",
                              flush=True)
    return results


def collect(results, ds, metric):
    """``values[method][d] = [...]`` for one data set; metric 0 = error, 1 = NLP."""
    values = {}
    for key, val in results.items():
        name, r, d, method = key.split("|")
        if name == ds:
            values.setdefault(method, {}).setdefault(int(d), []).append(val[metric])
    return values


def print_table(results, datasets, methods):
    for ds in datasets:
        for metric, label in ((0, "test error"), (1, "test NLP")):
            summary = summarize_runs(collect(results, ds, metric))
            if not summary:
                continue
            ds_d = sorted({d for m in summary.values() for d in m})
            print(f"\n{ds} — {label} (mean ± s.e. over realisations)")
            print("method".ljust(18) + "".join(f"d={d}".rjust(22) for d in ds_d))
            for m in methods:
                if m not in summary:
                    continue
                cells = []
                for d in ds_d:
                    mu, se, c = summary[m].get(d, (np.nan, 0.0, 0))
                    cells.append(f"{mu:.4f} ± {se:.4f} ({c})".rjust(22))
                print(m.ljust(18) + "".join(cells))


def draw_kappa_sweep(results, datasets, d_values, kappas, out, tag=""):
    """The left panel: error and NLP against kappa per (data set, d_max); None without data."""
    from sparsegp.plotting import plot_learning_curves
    from sparsegp.plotting._mpl import pyplot
    rows = [(ds, d) for ds in datasets for d in d_values
            if any(collect(results, ds, 0).get(f"adaptive k={k}", {}).get(d) for k in kappas)]
    if not rows:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 3 * len(rows)), squeeze=False)
    for i, (ds, d) in enumerate(rows):
        for j, (metric, label) in enumerate(((0, "test error"), (1, "test NLP"))):
            values = collect(results, ds, metric)
            curves = {}
            for sel in ("adaptive", "random"):
                runs = [values.get(f"{sel} k={k}", {}).get(d, []) for k in kappas]
                width = max(len(r) for r in runs)
                # realisations as rows; a missing fit is NaN and left out of that mean
                curves[f"{sel} sampling"] = np.array([[r[p] if p < len(r) else np.nan
                                                        for r in runs] for p in range(width)])
            ax = plot_learning_curves(kappas, curves, ax=axes[i, j],
                                      ylabel=f"{ds}, d_max {d}: {label}")
            valid = values.get("validation k=59", {}).get(d)
            if valid:
                ax.axhline(np.mean(valid), color="k", ls="-.", lw=1, label="validation k=59")
                ax.legend(fontsize=7)
            ax.set_xscale("log", base=2)
            ax.set_xticks(kappas, [str(k) for k in kappas])
            ax.set_xlabel("working-set size kappa")
    fig.tight_layout()
    png = out / f"stagewise_fig3_kappa{tag}.png"
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")
    return png


#: the paper's significance tests: the proposed method (adaptive, kappa = 2) as the control
CONTROL = "adaptive k=2"
TESTED = (CONTROL, "validation k=59", "entropy", "infogain")
METRICS = ((0, "error"), (1, "NLP"))


def paired(results, ds, d, metric, methods):
    """``{method: values}`` on the realisations every one of ``methods`` has at this d_max."""
    per = {m: {} for m in methods}
    for key, val in results.items():
        name, r, dd, method = key.split("|")
        if name == ds and int(dd) == d and method in per:
            per[method][int(r)] = val[metric]
    common = sorted(set.intersection(*(set(v) for v in per.values())))
    return {m: [per[m][r] for r in common] for m in methods}, len(common)


def significance_report(results, datasets, d_values):
    """Markdown of the paper's tests (seed 004 §5) on the results so far.

    Wilcoxon signed-rank of the control against each other tested method on the shared
    realisations of every data set; Friedman over the data sets that have all four methods,
    on their mean losses, and the Bonferroni-Dunn comparison with the control (alpha 0.05).
    """
    lines = ["# Seed 004, Figure 3: significance tests", "",
             f"Control: {CONTROL}. Two-sided tests; p < 0.05 in bold. 'n' is the number of "
             "realisations (Wilcoxon) or data sets (Friedman) with every method present.", "",
             "## Wilcoxon signed-rank, per data set", "",
             "| data set | d_max | n | " + " | ".join(f"{m} ({lab})" for m in TESTED[1:]
                                                   for _, lab in METRICS) + " |",
             "|---|---|---|" + "---|" * (2 * len(TESTED[1:]))]

    def fmt(p):
        return "–" if not np.isfinite(p) else (f"**{p:.3g}**" if p < 0.05 else f"{p:.3g}")

    for ds in datasets:
        for d in d_values:
            cells, n = {}, 0
            for metric, lab in METRICS:
                scores, n = paired(results, ds, d, metric, TESTED)
                if n < 2:
                    break
                for m, res in wilcoxon_pairs(scores, CONTROL).items():
                    sign = "+" if res["median_difference"] < 0 else "−"
                    cells[(m, lab)] = f"{fmt(res['p_value'])} ({sign})"
            if cells:
                lines.append(f"| {ds} | {d} | {n} | " + " | ".join(
                    cells[(m, lab)] for m in TESTED[1:] for _, lab in METRICS) + " |")
    lines += ["", "(+) the control's median loss is lower, (−) higher.", "",
              "## Friedman over data sets, then Bonferroni-Dunn against the control", ""]
    for d in d_values:
        for metric, lab in METRICS:
            table, used = {m: [] for m in TESTED}, []
            for ds in datasets:
                scores, n = paired(results, ds, d, metric, TESTED)
                if n:
                    used.append(ds)
                    for m in TESTED:
                        table[m].append(float(np.mean(scores[m])))
            if len(used) < 2:
                lines.append(f"- d_max {d}, {lab}: {len(used)} data set(s) with all four "
                             "methods; no test")
                continue
            fr = friedman(table)
            bd = bonferroni_dunn(table, CONTROL)
            ranks = ", ".join(f"{m} {r:.2f}" for m, r in fr["average_rank"].items())
            post = "; ".join(f"{m}: p {c['p_value']:.3g}" for m, c in bd["comparisons"].items())
            lines.append(f"- d_max {d}, {lab} ({len(used)} data sets: {', '.join(used)}): "
                         f"Friedman p {fmt(fr['p_value'])}; average ranks {ranks}; "
                         f"Bonferroni-Dunn (CD {bd['critical_difference']:.2f}) {post}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realizations", type=int, default=25)
    parser.add_argument("--first-realization", type=int, default=0,
                        help="skip realisations before this one (to split a run)")
    parser.add_argument("--merge", nargs="*", default=[],
                        help="further results JSON files to include in the table and figure")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--dmax", nargs="+", type=int, default=[40, 80, 160, 320])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--max-iter", type=int, default=20,
                        help="outer iterations of Algorithm 1 (max_iter)")
    parser.add_argument("--out", default=str(HERE))
    parser.add_argument("--results", default=None,
                        help="JSON file of per-fit results (default OUT/stagewise_fig3_results.json)")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--plot-only", action="store_true",
                        help="fit nothing: table and figure from the results file(s)")
    parser.add_argument("--kappa-sweep", action="store_true",
                        help="the left panel: adaptive vs random sampling against kappa")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    datasets, P, d_values, outer, n_train = (args.datasets, args.realizations, args.dmax,
                                             args.max_iter, None)
    if quick:
        datasets, P, d_values, outer, n_train = ["banana"], 1, [10, 20], 2, 500
    results_path = Path(args.results) if args.results else \
        out / ("stagewise_fig3_results_quick.json" if quick else "stagewise_fig3_results.json")
    home = data_home(args.data_home)
    if args.kappa_sweep:
        kappas = (1, 2) if quick else KAPPAS
        sweep_sets = datasets if quick else [d for d in SWEEP_DATASETS if d in args.datasets]
        sweep_d = d_values if quick else [d for d in SWEEP_DMAX if d in args.dmax] or SWEEP_DMAX
        results = {} if args.plot_only else run(sweep_sets, P, sweep_d, sweep_methods(kappas),
                                                 outer, results_path, home, n_train,
                                                 first=args.first_realization)
        if results_path.is_file():
            results = json.loads(results_path.read_text())
        draw_kappa_sweep(results, sweep_sets, sweep_d, kappas, out, "_quick" if quick else "")
        return results
    if args.plot_only:
        results = json.loads(results_path.read_text()) if results_path.is_file() else {}
    else:
        results = run(datasets, P, d_values, args.methods, outer, results_path, home, n_train,
                      first=args.first_realization)
    for extra in args.merge:
        results.update(json.loads(Path(extra).read_text()))
    print_table(results, datasets, list(METHODS))
    stats_md = out / ("stagewise_fig3_stats_quick.md" if quick else "stagewise_fig3_stats.md")
    stats_md.write_text(significance_report(results, datasets, d_values))
    print(f"wrote {stats_md}")

    from sparsegp.plotting._mpl import pyplot
    plt = pyplot()
    shown = [ds for ds in datasets if collect(results, ds, 0)]
    if not shown:
        print("no results to plot")
        return results
    fig, axes = plt.subplots(len(shown), 2, figsize=(11, 2.8 * len(shown)), squeeze=False)
    for i, ds in enumerate(shown):
        for j, (metric, label) in enumerate(((0, "test error"), (1, "test NLP"))):
            values = collect(results, ds, metric)
            plot_method_comparison(values, ax=axes[i, j],
                                   methods=[m for m in METHODS if m in values],
                                   d_values=[d for d in d_values
                                             if any(d in v for v in values.values())],
                                   ylabel=f"{ds}: {label}")
    axes[0, 1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    png = out / "stagewise_fig3_methods.png"
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")
    return results


if __name__ == "__main__":
    main()
