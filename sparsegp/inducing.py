"""Initial inducing inputs (pseudo-inputs) and PITC block partitions.

Inducing inputs (M, D) are drawn from the training inputs X (N, D): a random subset of the
rows, or k-means centres started from one (:func:`init_inducing`, :func:`kmeans`). A PITC
partition is a list of int64 index arrays that together hold 0..N-1 once: k-means clusters
(:func:`kmeans_blocks`), balanced median splits (:func:`median_split_blocks`, the
regressor's default), or the user's, checked by :func:`check_blocks`.

Two starts live elsewhere: the regressor's greedy selection, which runs its compiled
covariance pass, in :mod:`sparsegp.regression._inducing`; the multi-class draw, one set per
class from any row-sliceable store, in
:meth:`sparsegp._inducing_base.InducingPointEstimator._initial_inducing_points`.
"""
import numpy as np

from ._validation import check_int


def init_inducing(X, n_inducing, method="random", rng=None, n_iter=25):
    """Choose ``n_inducing`` initial inducing inputs from the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (N, D)
    n_inducing : int
        Number of inducing inputs M, 1 <= M <= N.
    method : {"random", "kmeans"}
        ``"random"``: a subset of the training inputs without replacement; ``"kmeans"``:
        Lloyd's k-means centres started from such a subset.
    rng : numpy.random.Generator
    n_iter : int
        Lloyd iterations for ``"kmeans"``.

    Returns
    -------
    Z : ndarray of shape (M, D)
        A new array.
    """
    rng = np.random.default_rng() if rng is None else rng
    N = X.shape[0]
    M = check_int(n_inducing, "n_inducing", minimum=1)
    if M > N:
        raise ValueError(f"n_inducing must be <= the number of training points ({N}); got {M}")
    idx = rng.choice(N, size=M, replace=False)
    Z = X[np.sort(idx)].copy()
    if method == "random":
        return Z
    if method == "kmeans":
        return kmeans(X, Z, n_iter)[0]
    raise ValueError(f"init must be 'random' or 'kmeans'; got {method!r}")


def kmeans(X, centres, n_iter=25):
    """Lloyd's algorithm from the given centres. Returns ``(centres, labels)``.

    An empty cluster keeps its previous centre. O(N M D) per iteration through BLAS.
    """
    C = np.array(centres, dtype=np.float64, copy=True)
    x2 = np.einsum("ij,ij->i", X, X)
    labels = np.zeros(X.shape[0], dtype=np.int64)
    for it in range(n_iter):
        d2 = x2[:, None] - 2.0 * X @ C.T + np.einsum("ij,ij->i", C, C)[None, :]
        new_labels = np.argmin(d2, axis=1)
        if it > 0 and np.array_equal(new_labels, labels):
            break
        labels = new_labels
        counts = np.bincount(labels, minlength=C.shape[0])
        # one weighted bincount per column adds the rows in the order np.add.at does (so
        # the same sums to the bit) in a third of its time
        sums = np.empty_like(C)
        for d in range(C.shape[1]):
            sums[:, d] = np.bincount(labels, weights=X[:, d], minlength=C.shape[0])
        nonempty = counts > 0
        C[nonempty] = sums[nonempty] / counts[nonempty, None]
    return C, labels


def kmeans_blocks(X, n_blocks, rng=None, n_iter=25):
    """Partition the rows of ``X`` into ``n_blocks`` index arrays by k-means (PITC blocks).

    Empty clusters are dropped, so fewer blocks may come back when points coincide.
    """
    rng = np.random.default_rng() if rng is None else rng
    n_blocks = check_int(n_blocks, "blocks", minimum=1, maximum=X.shape[0])
    start = X[rng.choice(X.shape[0], size=n_blocks, replace=False)]
    _, labels = kmeans(X, start, n_iter)
    return [np.flatnonzero(labels == b) for b in range(n_blocks) if np.any(labels == b)]


def median_split_blocks(X, block_size):
    """Balanced PITC blocks by recursive median splits along the widest input dimension.

    Every block has between ⌈block_size/2⌉ and ``block_size`` points (when N >= block_size)
    and is spatially compact, like a k-d tree's leaves. Balanced sizes matter for the batched
    PITC algebra, whose cost is (number of blocks) × (largest block)³; k-means blocks can be
    very uneven. O(N log N) time.

    Returns
    -------
    blocks : list of int64 ndarrays partitioning 0..N-1
    """
    out = []
    stack = [np.arange(X.shape[0])]
    while stack:
        idx = stack.pop()
        if idx.size <= block_size:
            out.append(np.sort(idx))
            continue
        Xi = X[idx]
        j = int(np.argmax(Xi.max(axis=0) - Xi.min(axis=0)))
        order = idx[np.argsort(Xi[:, j], kind="stable")]
        half = order.size // 2
        stack.extend([order[:half], order[half:]])
    return out


def check_blocks(blocks, n_samples):
    """Validate an explicit PITC partition: a list of integer index arrays covering 0..N-1 once.

    Returns a list of sorted int64 arrays.
    """
    if isinstance(blocks, np.ndarray) and blocks.ndim == 1 and blocks.dtype.kind in "iu":
        raise ValueError(
            "blocks must be an int (number of k-means blocks) or a list of index arrays; got a "
            "single 1-D integer array (wrap it in a list for one block)"
        )
    try:
        out = [np.sort(np.asarray(b).astype(np.int64, casting="safe").ravel()) for b in blocks]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"blocks must be a list of integer index arrays; {exc}") from None
    out = [b for b in out if b.size]
    if not out:
        raise ValueError("blocks is empty; it must partition the training indices 0..N-1")
    allidx = np.concatenate(out)
    counts = np.bincount(allidx[(allidx >= 0) & (allidx < n_samples)], minlength=n_samples)
    if allidx.min() < 0 or allidx.max() >= n_samples:
        raise ValueError(
            f"blocks contain indices outside 0..{n_samples - 1} (got min {allidx.min()}, "
            f"max {allidx.max()}); they must partition the training indices"
        )
    if np.any(counts > 1):
        raise ValueError(
            f"blocks overlap: {int(np.sum(counts > 1))} training indices appear in more than "
            "one block; they must partition 0..N-1"
        )
    if np.any(counts == 0):
        raise ValueError(
            f"blocks do not cover the data: {int(np.sum(counts == 0))} of {n_samples} training "
            "indices are in no block; they must partition 0..N-1"
        )
    return out
