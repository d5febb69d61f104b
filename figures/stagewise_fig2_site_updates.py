"""Seed 004, Figure 2: error and NLP as basis vectors are added, moment matching vs optimised sites.

One realisation of Waveform (the first 3600 test points moved into training, n = 4000) and of
Image. For each site update ("moment": eq. 2; "optimize": NLP_a minimised over (alpha~, tau)
under eta <= eta~, notes §3.4) the classifier is fitted with adaptive sampling (kappa = 2) and
the NLP-of-eq.-4 outer loop; the curves are the kept model with its first t basis vectors
(training: solid, test: dashed), as in the paper's "inner loop just before termination".

    python figures/stagewise_fig2_site_updates.py
    python figures/stagewise_fig2_site_updates.py --quick

Writes ``stagewise_fig2_site_updates.png`` into ``--out``.
"""
import argparse
import os
from pathlib import Path

import numpy as np

from sparsegp import StagewiseGPClassifier
from sparsegp.metrics import error_rate, mean_nlp
from sparsegp.plotting import plot_stagewise_curves

from stagewise_fig3_methods import data_home, load_split, start_kernel

HERE = Path(__file__).resolve().parent
SEED = 2


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realization", type=int, default=0)
    parser.add_argument("--dmax", type=int, default=100)
    parser.add_argument("--max-iter", type=int, default=20,
                        help="outer iterations of Algorithm 1 (max_iter)")
    parser.add_argument("--out", default=str(HERE))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    quick = args.quick or bool(os.environ.get("CI"))
    d_max, outer, n_train = args.dmax, args.max_iter, None
    if quick:
        d_max, outer, n_train = 30, 2, 600
    home = data_home(args.data_home)

    from sparsegp.plotting._mpl import pyplot
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6.5), squeeze=False)
    colors = {"moment": "tab:red", "optimize": "tab:blue"}
    for col, ds in enumerate(("waveform", "image")):
        X, y, Xt, yt = load_split(ds, args.realization, home, n_train)
        for mode in ("moment", "optimize"):
            est = StagewiseGPClassifier(d_max=d_max, selection="adaptive", kappa=2,
                                        site_update=mode, max_iter=outer,
                                        kernel=start_kernel(X), random_state=SEED).fit(X, y)
            proba = est.predict_proba(Xt)
            print(f"{ds:9s} {mode:8s}: test error "
                  f"{error_rate(yt, est.classes_[np.argmax(proba, 1)]):.4f}, test NLP "
                  f"{mean_nlp(yt, proba, classes=est.classes_):.4f}, outer iterations "
                  f"{est.n_iter_}, NLP eq. 4 {min(est.nlp_history_):.4f}", flush=True)
            for row, metric in enumerate(("error", "nlp")):
                plot_stagewise_curves(est, X, y, Xt, yt, metric=metric, ax=axes[row, col],
                                      label=mode, color=colors[mode])
        axes[0, col].set_title(f"{ds} (realisation {args.realization}, n = {len(y)})")
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    png = out / "stagewise_fig2_site_updates.png"
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main()
