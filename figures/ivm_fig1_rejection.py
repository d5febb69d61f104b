"""Seed 003, Figure 1: test error against rejected fraction, MNIST digit 9 against the rest.

The IVM rejects the test points with the smallest |P(y = +1 | x) - 1/2|; the SVM rejects those
closest to its separating plane
(smallest |decision function|). Setup as in seed 003 §4: images box-downsampled to 13 x 13 (the
1-pixel border dropped, 2 x 2 blocks averaged, grey values / 255), 59 000 training points (a
random 59 000 of the 60 000), the 10 000 MNIST test points; kernel
C exp(-gamma |x - x'|^2 / (2 * 169)) + v_b with v_b = 0.1, bias b = Phi^-1(fraction of 9s),
d = 2 740 active points (Table 1) and the randomized greedy scheme (2 random, 198 full greedy,
|J| = 500, tau = 1/2). (gamma, C) = (32, 20) was chosen on 1 000 validation points from the grid
gamma in {4, 8, 16, 32, 64} x C in {1, 5, 20, 80, 300}, training on a random subset of 5 000
with d = 500 (as the paper selects its parameters on 5 000-point subsets). The SVM uses the same
RBF kernel (scikit-learn ``gamma = gamma / 338``) with ``C = 10``, trained, as the paper's, on
all 59 000 training points (61 s of libsvm here, one thread; ``--svm-n N`` uses the first N).
Each model's test probabilities are stored in ``ivm_fig1_rejection.npz`` beside the PNG
(committed) as soon as it is fitted, so a run cut off in the SVM's hour keeps the IVM, a rerun
fits only what is missing, and ``--redraw`` redraws every stored curve without fitting.

Reads ``mnist.npz`` from ``--data-home``, else $SPARSEGP_DATA, else ``../shared/datasets`` when
present, else the default data folder; a missing file is downloaded (checksummed, see
``python -m sparsegp data``) except into ``../shared/datasets``. Exits with a message when it
cannot be had.

Usage::

    python figures/ivm_fig1_rejection.py [--out DIR] [--quick] [--svm-n N] [--data-home DIR]
        [--redraw]

Writes ``ivm_fig1_rejection.png`` into ``--out`` (default: this folder).
"""
import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.svm import SVC

from sparsegp import IVMClassifier
from sparsegp.datasets import DatasetNotFoundError, DownloadError, load_dataset
from sparsegp.experiments import write_whole
from sparsegp.kernels import ConstantKernel, SquaredExponential
from sparsegp.metrics import error_rate, rejection_curve
from sparsegp.plotting import plot_rejection_curve

SEED = 2002
DIGIT = 9
D_ACTIVE = 2740
GAMMA, C_KERNEL = 32.0, 20.0
C_SVM = 10.0
DIM = 169


def _mnist_13x13(data_home, download=True):
    Xtr, ytr, Xte, yte = load_dataset("mnist", data_home=data_home, download=download)
    boxed = [(X / 255.0).reshape(-1, 28, 28)[:, 1:27, 1:27].reshape(-1, 13, 2, 13, 2)
             .mean(axis=(2, 4)).reshape(-1, DIM) for X in (Xtr, Xte)]
    return boxed[0], ytr, boxed[1], yte


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent),
                        help="output folder (default: figures/)")
    parser.add_argument("--quick", action="store_true",
                        help="5 000 training points, d = 300 (smoke run)")
    parser.add_argument("--svm-n", type=int, default=None,
                        help="training points for the SVM (default: all, as the paper)")
    parser.add_argument("--redraw", action="store_true",
                        help="redraw from the stored ivm_fig1_rejection.npz (no fitting)")
    parser.add_argument("--data-home", default=None, help="folder holding mnist.npz")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    data_home, download = args.data_home, True
    if data_home is None and not os.environ.get("SPARSEGP_DATA"):
        dev = Path(__file__).resolve().parents[2] / "shared" / "datasets"
        # the development tree's shared folder is read, never written into
        data_home, download = (str(dev), False) if dev.is_dir() else (None, True)
    store = Path(args.out) / ("ivm_fig1_rejection_quick.npz" if quick else "ivm_fig1_rejection.npz")
    if args.redraw:
        saved = np.load(store)
        curves = {k: saved[k] for k in saved.files if k != "y_test"}
        return draw(saved["y_test"], curves, args.out)
    try:
        X, y, Xte, yte = _mnist_13x13(data_home, download)
    except (DatasetNotFoundError, DownloadError) as exc:
        print(f"MNIST not available, figure skipped: {exc}")
        return None
    rng = np.random.default_rng(SEED)
    train = rng.permutation(X.shape[0])[:59000]
    n_train, d = (5000, 300) if quick else (59000, D_ACTIVE)
    X, y = X[train[:n_train]], np.where(y[train[:n_train]] == DIGIT, 1, -1)
    yte = np.where(yte == DIGIT, 1, -1)

    saved = dict(np.load(store)) if store.exists() else {}
    if "IVM" in saved and not np.array_equal(saved["y_test"], yte):
        saved = {}   # stored for other test labels: start afresh
    saved["y_test"] = yte
    if "IVM" in saved:
        print("IVM: probabilities from", store)
    else:
        t0 = time.perf_counter()
        # the paper's kernel C exp(-gamma |x - x'|^2 / (2 DIM)) + v_b with v_b = 0.1
        kernel = SquaredExponential(C_KERNEL, np.sqrt(DIM / GAMMA)) + ConstantKernel(0.1)
        ivm = IVMClassifier(n_active=d, kernel=kernel, bias="auto", randomized=True,
                            random_state=SEED)
        ivm.fit(X, y)
        saved["IVM"] = ivm.predict_proba(Xte)[:, 1]
        print(f"IVM {DIGIT} vs rest: n = {n_train}, d = {d}, test error "
              f"{100 * error_rate(yte, ivm.predict(Xte)):.3f}% "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        _save(store, saved)   # before the SVM, so a cut-off run keeps the IVM
    n_svm = n_train if args.svm_n is None else min(args.svm_n, n_train)
    if quick:
        n_svm = min(n_svm, 2000)
    name = f"SVM (n = {n_svm})"
    if name in saved:
        print(f"{name}: margins from", store)
    else:
        t0 = time.perf_counter()
        svm = SVC(C=C_SVM, gamma=GAMMA / (2.0 * DIM), cache_size=2000)
        svm.fit(X[:n_svm], y[:n_svm])
        # any increasing map of the margin with 0 -> 1/2 gives the same rejection order
        saved[name] = 1.0 / (1.0 + np.exp(-svm.decision_function(Xte)))
        print(f"SVM {DIGIT} vs rest: n = {n_svm}, {svm.support_.size} SVs, test error "
              f"{100 * error_rate(yte, svm.predict(Xte)):.3f}% "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        _save(store, saved)
    return draw(yte, {"IVM": saved["IVM"], name: saved[name]}, args.out)


def _save(store, arrays):
    """Write ``arrays`` to ``store`` whole (an interrupted write keeps the old file)."""
    write_whole(store, lambda f: np.savez_compressed(f, **arrays))


def draw(y_test, curves, out):
    """Rejection curves of every model in ``curves`` (name -> P(y = +1)) into one PNG."""
    ax = None
    for k, (name, proba) in enumerate(curves.items()):
        ax = plot_rejection_curve(y_test, proba, ax=ax, label=name, max_fraction=0.2,
                                  color=f"C{k}", linestyle="-" if k == 0 else "--")
        frac, err = rejection_curve(proba, y_test)
        print(f"{name}: error after rejecting " + ", ".join(
            f"{f:.0%} {100 * err[np.searchsorted(frac, f)]:.3f}%" for f in (0.0, 0.05, 0.1, 0.2)))
    ax.set_title(f"MNIST {DIGIT} against the rest (13x13): error vs rejection", fontsize=9)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "ivm_fig1_rejection.png")
    ax.figure.savefig(path, dpi=130, bbox_inches="tight")
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
