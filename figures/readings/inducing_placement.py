"""Where seed 002's Figure 3 methods put their inducing inputs, read from the stored panels.

The paper (section 5.1) says three things of its Figure 3: GFITC, EP and SEP find better
decision boundaries than VI with few inducing points ("VI fails in this task"); GFITC, EP and
SEP place inducing points on top of each other (a pruning mechanism); VI places them near the
decision boundaries. This script measures each from ``figures/multiclass_fig3_inducing.json``
without refitting anything:

- *agreement*: the share of the figure's grid cells where a panel's predicted class equals
  the generator's (the argmax over classes of the GP posterior mean of each drawn latent
  function given its noisy values at the 1 000 training inputs, at the true hyper-parameters);
- *distinct*: the share of a panel's inducing inputs that are distinct, counting points of
  one latent function closer than ``--tol`` (box units; the box is [-1, 1]^2) as one;
- *boundary*: the median distance from the inducing inputs to the panel's own decision
  boundary, divided by the same median over the training inputs (below 1: nearer the
  boundaries than the data are).

    python figures/readings/inducing_placement.py [--results figures/multiclass_fig3_inducing.json]
        [--tol 0.02]
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))   # the figure script beside us
from multiclass_fig2_ep_sep import TRUE  # noqa: E402
from multiclass_fig3_inducing import regions  # noqa: E402

from sparsegp.datasets import make_gp_classes  # noqa: E402
from sparsegp.kernels import se_kernel  # noqa: E402
from sparsegp.plotting._multiclass import _grid  # noqa: E402

#: the figure's data: n = 1 000 points, three classes, seed 7 (multiclass_fig3_inducing.main)
N, CLASSES, SEED = 1000, 3, 7


def reference_regions(X, latent, resolution, lengthscale, variance, noise):
    """The generator's class on the figure's grid, shape (resolution, resolution).

    ``latent`` (n, C) are the noisy latent values at ``X``; each class's GP posterior mean
    on the grid is taken at the true hyper-parameters and the argmax returned.
    """
    g0, g1 = _grid(X, resolution)
    G = np.c_[g0.ravel(), g1.ravel()]
    K = se_kernel(X, variance=variance, lengthscale=lengthscale)
    weights = cho_solve(cho_factor(K + noise * np.eye(len(X))), latent)
    mean = se_kernel(G, X, variance=variance, lengthscale=lengthscale) @ weights
    return np.argmax(mean, axis=1).reshape(g0.shape)


def distinct_share(Z, tol):
    """Share of the inducing inputs ``Z`` (C, M, d) left when the points of each latent
    function closer than ``tol`` are merged (single linkage: chains merge too)."""
    kept = 0
    for Zc in Z:
        close = cKDTree(Zc).sparse_distance_matrix(cKDTree(Zc), tol, output_type="coo_matrix")
        kept += connected_components(close, directed=False)[0]
    return kept / Z.shape[0] / Z.shape[1]


def boundary_distance(labels, X, points):
    """Distance from each of ``points`` (n, 2) to the nearest boundary of the grid regions
    ``labels`` (the midpoints between horizontally or vertically adjacent cells that differ);
    ``inf`` for every point when the grid holds one class only."""
    g0, g1 = _grid(X, labels.shape[0])
    grid = np.stack([g0, g1], axis=-1)
    across = labels[:, 1:] != labels[:, :-1]           # neighbours along the first coordinate
    up = labels[1:] != labels[:-1]                     # along the second
    mids = np.vstack([0.5 * (grid[:, 1:] + grid[:, :-1])[across],
                      0.5 * (grid[1:] + grid[:-1])[up]])
    if not len(mids):
        return np.full(len(points), np.inf)
    return cKDTree(mids).query(points)[0]


def read_panels(records, X, reference, tol):
    """One row per panel: (method, M, agreement, distinct share, boundary ratio)."""
    rows = []
    for r in sorted(records, key=lambda r: (r["M"], r["method"])):
        labels = regions(r)
        Z = np.asarray(r["inducing_points"], dtype=float)
        d_data = np.median(boundary_distance(labels, X, X))
        d_ind = np.median(boundary_distance(labels, X, Z.reshape(-1, Z.shape[-1])))
        ratio = d_ind / d_data if np.isfinite(d_data) else np.nan
        rows.append((r["method"], r["M"], float(np.mean(labels == reference)),
                     distinct_share(Z, tol), float(ratio)))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(HERE / "multiclass_fig3_inducing.json"))
    parser.add_argument("--tol", type=float, default=0.02)
    args = parser.parse_args(argv)
    records = json.loads(Path(args.results).read_text())
    X, _, latent = make_gp_classes(N, n_classes=CLASSES, random_state=SEED, return_latent=True,
                                   **TRUE)
    resolution = records[0]["resolution"]
    reference = reference_regions(X, latent, resolution, TRUE["lengthscale"],
                                  TRUE["variance"], TRUE["noise"])
    rows = read_panels(records, X, reference, args.tol)
    print(f"{'method':6s} {'M':>4s}  agreement  distinct  boundary")
    for method, M, agree, distinct, ratio in rows:
        print(f"{method:6s} {M:4d}  {agree:9.3f}  {distinct:8.2f}  {ratio:8.2f}")
    return rows


if __name__ == "__main__":
    main()
