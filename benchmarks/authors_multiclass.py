"""Seed 002's batch EP/SEP/VI beside the authors' released R code, from one start (issue 47).

The R code is ``emakryo/scalable_multiclass_ep`` at commit 01a1beb (base R only). It is not
part of this repository; get it once and point this script at it::

    apt-get install -y r-base-core                      # Rscript
    git clone https://github.com/emakryo/scalable_multiclass_ep authors
    git -C authors checkout 01a1beb                     # or: git archive 01a1beb | tar x
    SPARSEGP_AUTHORS_MC=$PWD/authors python benchmarks/authors_multiclass.py

(``--authors DIR`` instead of the variable.) Without ``Rscript`` or the folder the script says
why and exits with status 0.

What runs, on Satellite split 0 (the authors' fold 1: 1 287 training and 5 148 test rows,
standardised with the training mean and sd), M = 100 inducing inputs per class, 250 batch
iterations:

1. The authors' own experiment script, ``experiments/satellite/{ep,sep}_batch``, through a
   small R driver written beside it at run time (nothing in their files changes). The driver
   draws their start (``set.seed(1)``; Z_c = 100 training rows per class; squared length-scale
   = the median pairwise distance; sigma = sigma0 = 1) and exports it, and records at every
   iteration what the loop has just refined: log Z_EP at the refined sites *before* the
   hyper-parameter step (the value our ``evidence_history_`` holds; the R loop prints log Z
   after the step), the hyper-parameters it is taken at, and the largest site change.
2. ``MultiClassEPClassifier`` from that exported start (``--start authors``) and from its own
   start (``--start ours``: ``n_inducing=100, init="random", random_state=1``, the paper's
   protocol of training rows drawn at random per class), recording the same
   three things through its callback.

``--method vi`` does the same for the VI baseline: their ``experiments/satellite/
vi_batch_lBFGS`` script (``fit_MSGPC_lBFGS``: L-BFGS-B by R's ``optim``, its defaults, ``maxit``
= ``--max-iter``; their script's own draw, ``set.seed(1)`` when their code is sourced, or
``--r-seed``) and ``MultiClassSVGPClassifier`` from its exported start with the R code's
robust-max likelihood (its eps = 1e-3 spread over all C labels is our eps = 1e-3 (C - 1) / C
over the C - 1 wrong ones: the same likelihood, so the two ELBOs agree at the start). The trace
is the ELBO after every iteration (R: optim's progress line). ``--start ours`` here is
``MultiClassSVGPClassifier(n_inducing=M, init="random", random_state=seed)``, its own start
(with the R code's likelihood too).
VI also prints the training NLL, and its times are CPU seconds. Their satellite scripts use
M = 100; the paper's 5 % of 1 287 rows is ``--M 64`` (our grid's round(0.05 N)). Paired runs
(both starts, 250 iterations): ``--method vi --M 64`` for split 0 with ``--r-seed`` 1, 2, 3
and for split 1.

Printed: the traces side by side every ``--every`` iterations, then test error and NLL of each.
``--json FILE`` keeps everything. A finished R run in ``--r-out`` is reused (``--rerun-r``
to run it again); an R fit of 250 iterations takes about 4-8 minutes here.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

R_COMMIT = "01a1beb"
R_SOURCES = {"ep": "Rcode/ep_code/epMGPC_batch.R", "sep": "Rcode/sep_code/sepMGPC_batch.R",
             "vi": "Rcode/vi_code/vi_multiclass_batch.R"}
#: the R code's robust-max eps (``fit_MSGPC_lBFGS``'s default)
R_VI_EPS = 1e-3

# The fold standardised with its training mean and sd (n - 1), the median-distance start and
# m inducing inputs per class drawn from the training rows, all exported beside the run:
# the part of the authors' experiment scripts both drivers share.
R_SPLIT = r"""
X_train <- data$X[folds$itrain[j, ], ]; Y_train <- data$Y[folds$itrain[j, ]]
means <- apply(X_train, 2, mean); sds <- apply(X_train, 2, sd); sds[sds == 0] <- 1.0
X_train <- (X_train - matrix(means, nrow(X_train), ncol(X_train), byrow = TRUE)) /
  matrix(sds, nrow(X_train), ncol(X_train), byrow = TRUE)
M <- as.matrix(dist(X_train)); l <- median(M[upper.tri(M)])
X_test <- data$X[folds$itest[j, ], ]; Y_test <- data$Y[folds$itest[j, ]]
X_test <- (X_test - matrix(means, nrow(X_test), ncol(X_test), byrow = TRUE)) /
  matrix(sds, nrow(X_test), ncol(X_test), byrow = TRUE)
Xbar <- list()
for (i in 1:length(levels(Y_train))) Xbar[[i]] <- X_train[sample(1:nrow(X_train), m), ]
put <- function(x, name) write.table(x, file.path(out, name), row.names = FALSE,
                                     col.names = FALSE)
put(folds$itrain[j, ], "itrain.txt"); put(folds$itest[j, ], "itest.txt")
put(l, "median_distance.txt"); put(means, "means.txt"); put(sds, "sds.txt")
put(as.integer(Y_train), "y_train.txt"); put(as.integer(Y_test), "y_test.txt")
for (i in seq_along(Xbar)) put(Xbar[[i]], sprintf("Z0_%d.txt", i))
""".lstrip("\n")

# The driver: the authors' satellite experiment script with an export of its start and a
# record of every iteration. It redefines two of their functions by wrapping them.
R_DRIVER = r"""
args <- commandArgs(trailingOnly = TRUE)
root <- args[1]; src <- args[2]; j <- as.integer(args[3]); out <- args[4]
max_iters <- as.integer(args[5])
source(file.path(root, src))
load(file.path(root, "data/satellite.dat")); load(file.path(root, "data/folds.dat"))
dir.create(out, showWarnings = FALSE, recursive = TRUE)
set.seed(j)
m <- as.integer(args[6])
""" + R_SPLIT + r"""# Every call of their optimize(a) sees the sites just refined at the current
# hyper-parameters: record log Z there, the hyper-parameters and the site change.
TRACE <- file.path(out, "trace.txt"); if (file.exists(TRACE)) file.remove(TRACE)
.optimize <- optimize; .computeEvidence <- computeEvidence; PREV <- NULL
sites_of <- function(a) if (is.null(a$f1Hat$Sigma)) {
  c(a$f1Hat$C1_yi, a$f1Hat$C2_yi, a$f1Hat$C1_c, a$f1Hat$C2_c) } else {
  c(a$f1Hat$Sigma, a$f1Hat$Mu) }
LAST <- NULL
optimize <- function(a) {
  s <- sites_of(a)
  change <- if (is.null(PREV)) max(abs(s)) else max(abs(s - PREV))
  row <- c(.computeEvidence(a), change)
  for (i in 1:a$nK) row <- c(row, log(a$gMGPCinfo[[i]]$sigma))
  for (i in 1:a$nK) row <- c(row, log(a$gMGPCinfo[[i]]$sigma0))
  for (i in 1:a$nK) row <- c(row, 0.5 * log(a$gMGPCinfo[[i]]$l))
  LAST <<- list(row = row, sites = s)
  .optimize(a)
}
# the loop calls computeEvidence once per accepted iteration (its progress line) and
# once at the end: the accepted iteration's record is the last optimize call before it
computeEvidence <- function(a) {
  if (!is.null(LAST)) {
    write(sprintf("%.12g", LAST$row), TRACE, ncolumns = length(LAST$row), append = TRUE)
    PREV <<- LAST$sites; LAST <<- NULL
  }
  .computeEvidence(a)
}
REPORT <- FALSE
t0 <- proc.time()
ret <- epMGPCInternal(X_train, Y_train, m, Xbar_ini = Xbar,
                      log_l = matrix(log(l), length(levels(Y_train)), ncol(X_train)),
                      max_iters = max_iters)
t1 <- proc.time()
pred <- predictMGPC(ret, X_test)
put(pred$prob, "proba_test.txt")
err <- mean(pred$labels != Y_test)
nll <- -mean(log(pred$prob[cbind(1:nrow(X_test), as.integer(Y_test))]))
cat(sprintf("FINAL %.8f %.8f %.3f\n", err, nll, (t1 - t0)[["elapsed"]]))
"""

# The VI driver: their vi_batch_lBFGS satellite script (no set.seed(j) there: the draw is
# the set.seed(1) at the top of their source file, or args[7]) with the start and the fit
# exported; optim prints the ELBO after every iteration ("iter N value -ELBO").
R_DRIVER_VI = r"""
args <- commandArgs(trailingOnly = TRUE)
root <- args[1]; src <- args[2]; j <- as.integer(args[3]); out <- args[4]
max_iters <- as.integer(args[5]); m <- as.integer(args[6])
source(file.path(root, src))
if (length(args) >= 7 && args[7] != "NA") set.seed(as.integer(args[7]))
load(file.path(root, "data/satellite.dat")); load(file.path(root, "data/folds.dat"))
dir.create(out, showWarnings = FALSE, recursive = TRUE)
""" + R_SPLIT + r"""REPORT <- FALSE
t0 <- proc.time()
ret <- fit_MSGPC_lBFGS(X_train, Y_train, m, Xbar_ini = Xbar,
                       log_l = t(matrix(log(l), length(levels(Y_train)), ncol(X_train))),
                       max_iters = max_iters)
t1 <- proc.time()
pred <- predictMGPC(ret, X_test)
pred_train <- predictMGPC(ret, X_train)
put(pred$prob, "proba_test.txt")
put(rbind(ret$log_sigma, ret$log_sigma_0), "log_sigma_sigma0.txt"); put(ret$log_l, "log_l.txt")
for (i in 1:ret$K) {
  put(ret$m[, i], sprintf("m_%d.txt", i)); put(ret$L[[i]], sprintf("L_%d.txt", i))
  put(ret$pseudo_inputs[[i]], sprintf("Z_%d.txt", i))
}
err <- mean(pred$labels != Y_test)
nll <- -mean(log(pred$prob[cbind(1:nrow(X_test), as.integer(Y_test))]))
nll_train <- -mean(log(pred_train$prob[cbind(1:nrow(X_train), as.integer(Y_train))]))
cpu <- (t1 - t0)[["user.self"]] + (t1 - t0)[["sys.self"]]
cat(sprintf("FINAL %.8f %.8f %.3f %.8f\n", err, nll, cpu, nll_train))
"""


def find_authors(path):
    """The folder of the R code, or ``(None, reason)``."""
    if shutil.which("Rscript") is None:
        return None, "Rscript is not on PATH (Debian: apt-get install -y r-base-core)"
    path = path or os.environ.get("SPARSEGP_AUTHORS_MC")
    if not path:
        return None, ("no R code given: set SPARSEGP_AUTHORS_MC or --authors to a checkout "
                      f"of emakryo/scalable_multiclass_ep at {R_COMMIT}")
    root = Path(path)
    missing = [p for p in (*R_SOURCES.values(), "data/satellite.dat", "data/folds.dat")
               if not (root / p).is_file()]
    if missing:
        return None, f"{root} lacks {', '.join(missing)}"
    return root, None


def run_r(root, method, fold, out, max_iter, M, rerun, seed=None):
    """Run (or reuse) the R fit; returns its trace, start and final numbers."""
    out = Path(out)
    final = out / "final.txt"
    if rerun or not final.is_file():
        out.mkdir(parents=True, exist_ok=True)
        driver = out / "driver.R"
        driver.write_text(R_DRIVER_VI if method == "vi" else R_DRIVER)
        t0 = time.perf_counter()
        proc = subprocess.run(["Rscript", str(driver), str(root), R_SOURCES[method], str(fold),
                               str(out), str(max_iter), str(M), str(seed or "NA")],
                              capture_output=True, text=True, check=False)
        (out / "stdout.txt").write_text(proc.stdout + proc.stderr)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("FINAL")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"Rscript failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        final.write_text(lines[-1] + f" {time.perf_counter() - t0:.1f}\n")
    values = [float(v) for v in final.read_text().split()[1:]]
    err, nll, seconds = values[:3]
    C = len(list(out.glob("Z0_*.txt")))
    Z0 = np.stack([np.loadtxt(out / f"Z0_{c + 1}.txt", ndmin=2) for c in range(C)])
    start = {"Z": Z0, "median_distance": float(np.loadtxt(out / "median_distance.txt")),
             "itrain": np.loadtxt(out / "itrain.txt").astype(int) - 1,
             "means": np.loadtxt(out / "means.txt"), "sds": np.loadtxt(out / "sds.txt")}
    result = {"error": err, "nll": nll, "seconds": seconds}
    if method == "vi":
        # optim's progress lines: "iter N value v" with v = -ELBO (fnscale = -1)
        text = (out / "stdout.txt").read_text().splitlines()
        result["trace"] = [{"elbo": -float(ln.split()[3])} for ln in text
                           if ln.startswith("iter ")]
        result["train_nll"] = values[3]
        return result, start
    trace = np.loadtxt(out / "trace.txt", ndmin=2)
    result["trace"] = [{"log_z": r[0], "change": r[1], "log_variance": r[2:2 + C],
                        "log_noise": r[2 + C:2 + 2 * C], "log_lengthscale": r[2 + 2 * C:]}
                       for r in trace]
    return result, start


def satellite_split(fold_index, start=None):
    """Split ``fold_index`` (0-based) standardised as the R script does (sd with n - 1)."""
    from sparsegp.datasets import load_dataset
    Xtr, ytr, Xte, yte = load_dataset("satellite", split=fold_index)
    Xtr, Xte = np.asarray(Xtr, np.float64), np.asarray(Xte, np.float64)
    mu, sd = Xtr.mean(0), Xtr.std(0, ddof=1)
    sd[sd == 0] = 1.0
    if start is not None and not (np.allclose(mu, start["means"], rtol=1e-10)
                                  and np.allclose(sd, start["sds"], rtol=1e-10)):
        raise RuntimeError("the R code's fold differs from sparsegp's split "
                           f"{fold_index}: training means/sds do not match")
    return (Xtr - mu) / sd, ytr, (Xte - mu) / sd, yte


def _start_arguments(start, n_features, M):
    """Estimator arguments for the R code's exported start (its inducing inputs, squared
    length-scale = the median distance, sigma = sigma0 = 1), or when ``start`` is None our
    start of the paper's protocol: M training rows per class drawn at random."""
    from sparsegp.kernels import UNBOUNDED, SquaredExponential

    if start is None:
        return {"n_inducing": M, "init": "random"}
    ls = np.full(n_features, np.sqrt(start["median_distance"]))
    return {"inducing_points": start["Z"], "latent_noise_variance": 1.0,
            "kernel": SquaredExponential(1.0, ls, UNBOUNDED, UNBOUNDED)}


def _fit_seconds(est, X, y):
    """Fit ``est`` and return the CPU seconds it took."""
    t0 = time.process_time()
    est.fit(X, y)
    return time.process_time() - t0


def run_ours(method, Xtr, ytr, Xte, yte, max_iter, start=None, M=100, seed=1):
    """Our fit with a per-iteration record: log Z, hyper-parameters, largest site change."""
    from sparsegp import MultiClassEPClassifier
    from sparsegp.metrics import error_rate, mean_nlp

    rows, prev = [], [None]

    def sites(est):
        # the R code's change: its four per-factor site arrays (EP) or tied totals (SEP)
        st = est._ep_state          # a benchmark may look inside; nothing is changed
        if method == "ep":
            return np.concatenate([np.ravel(s) for s in st.sites])
        return np.concatenate([np.ravel(st.T), np.ravel(st.h)])

    def callback(est, it):
        s = sites(est)
        change = float(np.max(np.abs(s if prev[0] is None else s - prev[0])))
        prev[0] = s
        rows.append({"log_z": float(est.evidence_history_[-1]), "change": change,
                     "log_variance": np.log(est.variance_), "log_noise": np.log(est.noise_),
                     "log_lengthscale": np.log(est.lengthscale_).ravel()})

    kw = {"method": method, "max_iter": max_iter, "tol": None, "callback": callback,
          "random_state": seed}
    est = MultiClassEPClassifier(**kw, **_start_arguments(start, Xtr.shape[1], M))
    seconds = _fit_seconds(est, Xtr, ytr)
    proba = est.predict_proba(Xte)
    pred = est.classes_[np.argmax(proba, axis=1)]
    return {"error": float(error_rate(yte, pred)),
            "nll": float(mean_nlp(yte, proba, classes=est.classes_)), "seconds": seconds,
            "trace": rows}


def run_ours_vi(Xtr, ytr, Xte, yte, max_iter, start=None, M=100, seed=1):
    """Our VI with the R code's likelihood; the ELBO after every iteration."""
    from sparsegp import MultiClassSVGPClassifier
    from sparsegp.metrics import error_rate, mean_nlp

    C = np.unique(ytr).size
    rows = []
    kw = {"max_iter": max_iter, "tol": None, "random_state": seed,
          "epsilon": R_VI_EPS * (C - 1) / C,
          "callback": lambda est, it: rows.append({"elbo": float(est.elbo_history_[-1])})}
    est = MultiClassSVGPClassifier(**kw, **_start_arguments(start, Xtr.shape[1], M))
    seconds = _fit_seconds(est, Xtr, ytr)
    out = {"seconds": seconds, "trace": rows}
    for name, X, y in (("", Xte, yte), ("train_", Xtr, ytr)):
        proba = est.predict_proba(X)
        pred = est.classes_[np.argmax(proba, axis=1)]
        out[name + "error"] = float(error_rate(y, pred))
        out[name + "nll"] = float(mean_nlp(y, proba, classes=est.classes_))
    return out


def print_vi(runs, every):
    names = list(runs)
    n = max(len(r["trace"]) for r in runs.values())
    print(f"{'iter':>4s}  " + "  ".join(f"{name + ': ELBO':>20s}" for name in names))
    for i in range(n):
        if (i + 1) % every and i != n - 1:
            continue
        cells = [f"{runs[name]['trace'][i]['elbo']:20.3f}" if i < len(runs[name]["trace"])
                 else " " * 20 for name in names]
        print(f"{i + 1:4d}  " + "  ".join(cells))
    for name in names:
        r = runs[name]
        print(f"{name:>14s}: test error {r['error']:.4f}  test NLL {r['nll']:.4f}  "
              f"train NLL {r['train_nll']:.4f}  ({r['seconds']:.0f} s CPU)")


def _summary(row):
    return (f"{row['log_z']:11.3f} {row['change']:9.2e} "
            f"{np.mean(row['log_variance']):7.3f} {np.mean(row['log_noise']):7.3f} "
            f"{np.mean(row['log_lengthscale']):7.3f}")


def print_side_by_side(runs, every):
    names = list(runs)
    n = max(len(r["trace"]) for r in runs.values())
    head = "  ".join(f"{name + ': log Z':>11s} {'change':>9s} {'lg var':>7s} {'lg nse':>7s} "
                     f"{'lg ls':>7s}" for name in names)
    print(f"{'iter':>4s}  {head}")
    for i in range(n):
        if i % every and i != n - 1:
            continue
        cells = []
        for name in names:
            tr = runs[name]["trace"]
            cells.append(_summary(tr[i]) if i < len(tr) else " " * 47)
        print(f"{i + 1:4d}  " + "  ".join(cells))
    print("(log Z at the refined sites before the step; lg var / lg nse / lg ls: means over "
          "classes (and features) of log sigma, log sigma0, log length-scale)")
    for name in names:
        r = runs[name]
        print(f"{name:>14s}: test error {r['error']:.4f}  test NLL {r['nll']:.4f}  "
              f"({r['seconds']:.0f} s)")


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--authors", help="checkout of the R code (default $SPARSEGP_AUTHORS_MC)")
    p.add_argument("--method", choices=("ep", "sep", "both", "vi"), default="both",
                   help="both = ep and sep")
    p.add_argument("--split", type=int, default=0, help="0-based (the R code's fold 1)")
    p.add_argument("--max-iter", type=int, default=250)
    p.add_argument("--M", type=int, default=100)
    p.add_argument("--start", choices=("authors", "ours", "both"), default="both")
    p.add_argument("--r-out", default="authors_multiclass_runs",
                   help="folder of the R runs' outputs (reused when finished)")
    p.add_argument("--rerun-r", action="store_true")
    p.add_argument("--r-seed", type=int,
                   help="VI: set.seed for the R draw of the inducing inputs (default: their "
                        "script's, the set.seed(1) of their source file)")
    p.add_argument("--every", type=int, default=25)
    p.add_argument("--json")
    args = p.parse_args(argv)

    root, reason = find_authors(args.authors)
    if root is None:
        print(f"skipped: {reason}")
        return 0
    methods = ("ep", "sep") if args.method == "both" else (args.method,)
    results = {}
    for method in methods:
        name = f"{method}_split{args.split}_M{args.M}_it{args.max_iter}"
        if method == "vi" and args.r_seed is not None:
            name += f"_seed{args.r_seed}"
        r, start = run_r(root, method, args.split + 1, Path(args.r_out) / name, args.max_iter,
                         args.M, args.rerun_r, args.r_seed if method == "vi" else None)
        Xtr, ytr, Xte, yte = satellite_split(args.split, start)
        ours = run_ours_vi if method == "vi" else partial(run_ours, method)
        runs = {"R code": r}
        if args.start in ("authors", "both"):
            runs["ours, R start"] = ours(Xtr, ytr, Xte, yte, args.max_iter, start, args.M)
        if args.start in ("ours", "both"):
            runs["ours, default"] = ours(Xtr, ytr, Xte, yte, args.max_iter, None, args.M)
        print(f"\n== {method.upper()}, satellite split {args.split}, M = {args.M}, "
              f"{args.max_iter} iterations ==")
        (print_vi if method == "vi" else print_side_by_side)(runs, args.every)
        results[method] = runs
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
