"""Seed 002, Figure 3: inducing-input locations and decision boundaries on a 3-class problem.

Synthetic 2-D data from ``sparsegp.datasets.make_gp_classes`` (1000 training points, latent
functions drawn from the GP prior, label = argmax). The kernel hyper-parameters are fixed at
their true values (length-scale 0.5, amplitude 1, noise 0.01: the generator's defaults, since
the paper's values were lost) and only the inducing inputs are learnt, starting from the same
random training rows for every method. GFITC, EP and SEP train in batch mode; VI by minibatch
ADAM (the paper: the batch version gets stuck). The paper runs 2000 iterations / epochs; the
default here is smaller (``--iterations``), and the M grid is ours (the paper's was lost).

    python figures/multiclass_fig3_inducing.py [--quick] [--iterations 300] [--M 1,2,4,8,16,32]

Each fitted estimator is saved as it finishes (``<out>/multiclass_fig3_fits/``, a pickle per
method and M, keyed by the iteration budget), so an interrupted run resumes where it stopped and
a finished one redraws without refitting; ``multiclass_fig3_inducing.json`` lists each fit's
training accuracy and time.
"""
import argparse
import json
import os
import pickle
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see multiclass_tables.py

import numpy as np  # noqa: E402

import sparsegp  # noqa: E402
from sparsegp.datasets import make_gp_classes  # noqa: E402
from sparsegp.plotting import plot_multiclass_boundaries  # noqa: E402
from sparsegp.plotting._mpl import pyplot  # noqa: E402

# the generator's covariance, and the same held fixed for the estimators
from multiclass_fig2_ep_sep import TRUE, held_true  # noqa: E402


def build(method, Z0, iterations, vi_batch):
    # only the inducing inputs are learnt
    kw = dict(inducing_points=Z0, random_state=0, **held_true(Z0.shape[2]))
    if method in ("EP", "SEP"):
        return sparsegp.MultiClassEPClassifier(method=method.lower(), max_iter=iterations, **kw)
    if method == "GFITC":
        return sparsegp.MultiClassGFITCClassifier(max_iter=iterations, **kw)
    return sparsegp.MultiClassSVGPClassifier(batch_size=vi_batch, max_iter=iterations,
                                             learning_rate=1e-2, **kw)


def fitted(method, M, Z0, X, y, iterations, vi_batch, cache):
    """The estimator of one panel and its fit time, loaded from ``cache`` if saved earlier."""
    path = cache / f"{method}_M{M}_it{iterations}.pkl"
    if path.exists():
        with open(path, "rb") as f:
            return pickle.load(f)
    t0 = time.perf_counter()
    est = build(method, Z0, iterations, vi_batch).fit(X, y)
    result = est, time.perf_counter() - t0
    # written whole then renamed, so a run cut off mid-write leaves no half file behind
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(result, f)
    os.replace(tmp, path)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--M", default="1,2,4,8,16,32")
    parser.add_argument("--methods", default="GFITC,EP,SEP,VI")
    parser.add_argument("--vi-batch", type=int, default=100)
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    n, Ms, iterations = (300, [2, 8], 15) if quick else (1000, [int(m) for m in
                                                           args.M.split(",")], args.iterations)
    X, y = make_gp_classes(n, n_classes=3, random_state=7, **TRUE)
    rng = np.random.default_rng(11)
    methods = []
    for m in args.methods.split(","):
        name = {"GFITC": "MultiClassGFITCClassifier", "VI": "MultiClassSVGPClassifier"}.get(
            m, "MultiClassEPClassifier")
        try:
            getattr(sparsegp, name)
            methods.append(m)
        except (AttributeError, ImportError) as exc:
            print(f"skipping {m}: {exc}")
    out = Path(args.out)
    cache = out / ("multiclass_fig3_fits_quick" if quick else "multiclass_fig3_fits")
    cache.mkdir(parents=True, exist_ok=True)
    summary = []
    plt = pyplot()
    fig, axes = plt.subplots(len(methods), len(Ms), figsize=(2.2 * len(Ms), 2.3 * len(methods)),
                             squeeze=False)
    for j, M in enumerate(Ms):
        Z0 = np.stack([X[np.sort(rng.choice(n, M, replace=False))] for _ in range(3)])
        for i, method in enumerate(methods):
            est, seconds = fitted(method, M, Z0, X, y, iterations, args.vi_batch, cache)
            acc = float(np.mean(est.predict(X) == y))
            summary.append(dict(method=method, M=M, iterations=iterations,
                                train_accuracy=acc, seconds=seconds))
            print(f"{method:5s} M={M:3d}: train accuracy {acc:.3f}  "
                  f"({seconds:.1f}s)", flush=True)
            plot_multiclass_boundaries(est, X, y, ax=axes[i, j], resolution=80 if quick else 120,
                                       title=f"{method}, M = {M}", point_size=3)
    fig.tight_layout()
    name = "multiclass_fig3_inducing_quick" if quick else "multiclass_fig3_inducing"
    fig.savefig(out / f"{name}.png", dpi=110)
    (out / f"{name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("wrote", out / f"{name}.png")


if __name__ == "__main__":
    main()
