"""Initial inducing inputs (pseudo-inputs) and PITC block partitions."""
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
        sums = np.zeros_like(C)
        np.add.at(sums, labels, X)
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
