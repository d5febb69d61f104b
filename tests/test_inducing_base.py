"""The median length-scale heuristic against its definition, bit for bit."""
import math

import numpy as np
import pytest

from sparsegp._inducing_base import median_lengthscale


def _by_definition(X, rng, n_max=1000):
    """sqrt(np.median of the pairwise distances) of the sampled rows, spelled out (notes §5.3)."""
    idx = np.sort(rng.choice(X.shape[0], size=min(X.shape[0], n_max), replace=False))
    Xs = X[idx]
    sq = np.sum(Xs * Xs, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * Xs @ Xs.T, 0.0)
    iu = np.triu_indices(Xs.shape[0], k=1)
    med = float(np.median(np.sqrt(d2[iu]))) if iu[0].size else 1.0
    return math.sqrt(med) if med > 0 else 1.0


@pytest.mark.parametrize("seed", range(40))
def test_median_lengthscale_is_the_definition_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    # odd and even pair counts, 1 to 3 rows, ties (rounded inputs), offsets, and sampling
    N = int(rng.integers(1, 80))
    X = rng.standard_normal((N, int(rng.integers(1, 5)))) * rng.uniform(1e-3, 1e3)
    X += rng.uniform(-1e3, 1e3)
    if seed % 3 == 0:
        X = np.round(X)
    n_max = 1000 if seed % 4 else max(1, N // 2)
    got = median_lengthscale(X, np.random.default_rng(seed), n_max=n_max)
    assert got == _by_definition(X, np.random.default_rng(seed), n_max=n_max)


@pytest.mark.parametrize("X", [np.zeros((1, 2)), np.zeros((30, 3)),
                               np.repeat([[0.0, 1.0], [2.0, 5.0]], 4, axis=0)])
def test_median_lengthscale_degenerate_sets(X):
    # one row, all rows equal (median 0: the fallback 1), half the pairs at distance 0
    assert median_lengthscale(X) == _by_definition(X, np.random.default_rng(0))
