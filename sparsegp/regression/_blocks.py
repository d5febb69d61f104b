"""PITC's partition in padded form: the block index matrix and the block covariances.

A PITC evidence (:mod:`sparsegp.regression._base`) works on every block at once: the
partition of 0..N-1 becomes one padded index matrix (:func:`pack_blocks`) and the blocks'
covariances K_bb one padded (nb, B, B) array (:func:`block_cov`), filled by the compiled
stationary block pass of :mod:`sparsegp._numba.covfuncs`.
"""
import numba
import numpy as np

from .._config import REGRESSION_PARALLEL_SIZE as _PARALLEL_SIZE
from .._numba import covfuncs as _cf


def n_chunks():
    """Row chunks of the elementwise passes (any count gives the same numbers)."""
    return 4 * numba.get_num_threads()


def pack_blocks(blocks, n_samples):
    """Padded index matrix of a PITC partition: ``(idx (nb, B) int64, sizes (nb,), mask)``.

    Block b holds rows ``idx[b, :sizes[b]]``; padding entries point at row 0 and are masked.
    Padding lets every per-block operation run as one batched numpy/LAPACK call instead of a
    Python loop over blocks; padded rows are given an identity block of Λ and zero
    cross-covariance, so they change nothing.
    """
    sizes = np.array([b.size for b in blocks], dtype=np.int64)
    nb, B = len(blocks), int(sizes.max())
    order = np.concatenate(blocks)
    block_id = np.repeat(np.arange(nb), sizes)
    pos = np.arange(order.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    idx = np.zeros((nb, B), dtype=np.int64)
    idx[block_id, pos] = order
    mask = np.zeros((nb, B), dtype=bool)
    mask[block_id, pos] = True
    return idx, sizes, mask


def block_cov(X, idx, sizes, family, s2, lengthscale, deriv):
    """Padded PITC block covariances (nb, B, B), or their derivative factors with ``deriv``."""
    nb, B = idx.shape
    out = np.empty((nb, B, B))
    if out.size * X.shape[1] >= _PARALLEL_SIZE:
        _cf.stationary_blocks_parallel(X, idx, sizes, family, s2, lengthscale, deriv, out,
                                       n_chunks())
    else:
        _cf.stationary_blocks_rows(X, idx, sizes, family, s2, lengthscale, deriv, out, 0, nb)
    return out
