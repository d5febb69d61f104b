"""Where the regressor's inducing inputs start: greedy selection by prior variance.

:func:`greedy_variance_selection` picks M of the N training inputs X (N, D), each the one
whose prior variance the inducing inputs chosen before it leave most unexplained: pivoted
incomplete Cholesky of K_ff, computed one column k(X, x_j) (N,) at a time with the compiled
row pass of :mod:`sparsegp.regression._base`, which is why it lives in the regression
package. The starts that need no covariance (random rows, k-means) and the PITC partitions
are in :mod:`sparsegp.inducing`.
"""
import math

import numpy as np

from .._numba.covfuncs import SE
from ._base import cross_cov


def greedy_variance_selection(X, n_inducing, variance, lengthscale, rng, jitter=1e-6,
                              family=SE):
    """Greedy forward selection of inducing inputs among the training inputs.

    Criterion: the largest conditional prior variance Var[f(x_n) | u] = k(x_n, x_n) − Q_nn
    given the points chosen so far — the point the current inducing set explains worst. This
    is pivoted incomplete Cholesky of K_ff: O(N M²) time, O(N M) memory, no targets used.
    The first point is drawn at random (all prior variances are equal for the SE kernel).

    Returns
    -------
    index : ndarray of shape (M,)
        Row indices into ``X``, in order of selection.
    """
    N = X.shape[0]
    M = int(n_inducing)
    R = np.zeros((N, M))                                      # rows: L_u⁻¹ k(z, x_n)ᵀ
    resid = np.full(N, float(variance))
    chosen = np.empty(M, dtype=np.int64)
    taken = np.zeros(N, dtype=bool)
    j = int(rng.integers(N))
    for m in range(M):
        chosen[m] = j
        taken[j] = True
        piv = math.sqrt(max(resid[j], jitter * variance))
        k = cross_cov(X, X[j:j + 1], variance, lengthscale, family=family)[:, 0]
        col = (k - R[:, :m] @ R[j, :m]) / piv
        R[:, m] = col
        resid -= col * col
        resid[taken] = -np.inf
        if m + 1 < M:
            j = int(np.argmax(resid))
    return chosen
