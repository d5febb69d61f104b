"""Seed 002, Figure 2: EP against stochastic EP (SEP) on a toy problem.

SEP ties the N likelihood factors into one average factor, so its cavity is the posterior
with 1/N of that factor removed rather than the row's own factor, and its memory no longer grows
with N; the figure shows how far that moves the predictions. The paper's toy set-up was lost in our
copy; ours: the 3-class 2-D problem of ``sparsegp.datasets.make_gp_classes`` (as in Figure 3),
hyper-parameters fixed at their true values, the same M inducing inputs per class for both
methods, learnt with the sites (batch mode). Panels: EP's and SEP's decision boundaries and
inducing inputs, and their predictive probabilities on a grid plotted against each other, for a
small and a larger training set.

    python figures/multiclass_fig2_ep_sep.py [--quick] [--n 50,1000] [--M 8] [--iterations 200]

Writes ``multiclass_fig2_ep_sep.png`` and ``.json`` (largest probability gap per N) beside this
script (``--out``).
"""
import argparse
import json
import os
from pathlib import Path

import numpy as np

import sparsegp
from sparsegp.datasets import make_gp_classes
from sparsegp.kernels import SquaredExponential
from sparsegp.plotting import plot_multiclass_boundaries, plot_probability_comparison
from sparsegp.plotting._mpl import pyplot

#: the generator's covariance (make_gp_classes' arguments)
TRUE = dict(lengthscale=0.5, variance=1.0, noise=0.01)


def held_true(n_features):
    """The generator's covariance for the estimators, held fixed ("fixed" bounds)."""
    kernel = SquaredExponential(TRUE["variance"], np.full(n_features, TRUE["lengthscale"]),
                                "fixed", "fixed")
    return dict(kernel=kernel, latent_noise_variance=TRUE["noise"],
                latent_noise_variance_bounds="fixed")


def fit_pair(X, y, M, iterations):
    """EP and SEP from one start: the same inducing inputs, the true hyper-parameters."""
    rng = np.random.default_rng(3)
    C = np.unique(y).size
    Z0 = np.stack([X[np.sort(rng.choice(len(X), M, replace=False))] for _ in range(C)])
    kw = dict(inducing_points=Z0, max_iter=iterations, tol=None, random_state=0,
              **held_true(X.shape[1]))
    return {m.upper(): sparsegp.MultiClassEPClassifier(method=m, **kw).fit(X, y)
            for m in ("ep", "sep")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", default="50,1000", help="training-set sizes, one row each")
    parser.add_argument("--M", type=int, default=8, help="inducing points per class")
    parser.add_argument("--iterations", type=int, default=200)
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    sizes = [int(v) for v in args.n.split(",")]
    iterations = 20 if quick else args.iterations
    if quick:
        sizes = [min(v, 200) for v in sizes]
    # one draw of the latent functions; the smaller sets are its first rows
    X_all, y_all = make_gp_classes(max(sizes), n_classes=3, random_state=7, **TRUE)
    g = np.linspace(-1, 1, 40)
    grid = np.c_[np.repeat(g, g.size), np.tile(g, g.size)]
    plt = pyplot()
    fig, axes = plt.subplots(len(sizes), 3, figsize=(12, 4 * len(sizes)), squeeze=False)
    summary = {}
    for row, n in enumerate(sizes):
        X, y = X_all[:n], y_all[:n]
        fits = fit_pair(X, y, args.M, iterations)
        for col, (name, est) in enumerate(fits.items()):
            plot_multiclass_boundaries(est, X, y, ax=axes[row, col], resolution=80,
                                       title=f"{name}, N = {n}, M = {args.M}")
        P = {name: est.predict_proba(grid) for name, est in fits.items()}
        plot_probability_comparison(P["EP"], P["SEP"], names=("EP", "SEP"), ax=axes[row, 2],
                                    title=f"N = {n}: predictive probabilities on a grid")
        gap = float(np.max(np.abs(P["EP"] - P["SEP"])))
        summary[str(n)] = dict(max_probability_gap=gap,
                               log_evidence={k: float(e.log_marginal_likelihood_value_)
                                             for k, e in fits.items()})
        print(f"N = {n}: largest |p_EP - p_SEP| on the grid {gap:.4f}; log Z_EP "
              + ", ".join(f"{k} {v:.3f}" for k, v in summary[str(n)]["log_evidence"].items()),
              flush=True)
    fig.tight_layout()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "_quick" if quick else ""
    fig.savefig(out / f"multiclass_fig2_ep_sep{tag}.png", dpi=110)
    (out / f"multiclass_fig2_ep_sep{tag}.json").write_text(json.dumps(summary, indent=1))
    print("wrote", out / f"multiclass_fig2_ep_sep{tag}.png")


if __name__ == "__main__":
    main()
