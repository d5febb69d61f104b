"""Where the regressor's inducing inputs, or SoD's subset, start.

:class:`_InducingStartMixin` reads the estimator's ``init``: ``"random"`` and ``"kmeans"``
draw M inducing inputs (M, D) from the training inputs X (N, D) by :mod:`sparsegp.inducing`
(through :class:`~sparsegp._inducing_base.InducingPointEstimator`), and ``"greedy"`` picks
M training inputs by :func:`greedy_variance_selection`. SoD's subset, M row indices (M,),
is chosen the same three ways by its own ``subset`` (its k-means rows the nearest to the
centres): the subset is SoD's model, not a start that training moves, and the two starts
won for different approximations (``benchmarks/INIT.md``).

:func:`greedy_variance_selection` takes each time the training input whose prior variance
the ones chosen before it leave most unexplained: pivoted incomplete Cholesky of K_ff,
computed one column k(X, x_j) (N,) at a time with the compiled row pass of
:mod:`sparsegp.regression._base`, which is why it lives in the regression package and not
in :mod:`sparsegp.inducing`.
"""
import math
from inspect import signature

import numpy as np

from .._numba.covfuncs import SE
from ..exceptions import warn
from ..inducing import kmeans
from ._base import cross_cov


def greedy_variance_selection(X, n_inducing, variance, lengthscale, rng, jitter=1e-6,
                              family=SE, bias_variance=None):
    """Greedy forward selection of inducing inputs among the training inputs.

    Criterion: the largest conditional prior variance Var[f(x_n) | u] = k(x_n, x_n) − Q_nn
    given the points chosen so far — the point the current inducing set explains worst. This
    is pivoted incomplete Cholesky of K_ff: O(N M²) time, O(N M) memory, no targets used.
    The first point is drawn at random (all prior variances are equal for the SE kernel).
    ``bias_variance``, the v_b of a kernel's constant summands, is added to every entry of
    K_ff (None: none).

    Returns
    -------
    index : ndarray of shape (M,)
        Row indices into ``X``, in order of selection.
    """
    N = X.shape[0]
    M = int(n_inducing)
    R = np.zeros((N, M))                                      # rows: L_u⁻¹ k(z, x_n)ᵀ
    prior = float(variance) if bias_variance is None else float(variance) + bias_variance
    resid = np.full(N, prior)
    chosen = np.empty(M, dtype=np.int64)
    taken = np.zeros(N, dtype=bool)
    j = int(rng.integers(N))
    for m in range(M):
        chosen[m] = j
        taken[j] = True
        piv = math.sqrt(max(resid[j], jitter * variance))
        k = cross_cov(X, X[j:j + 1], variance, lengthscale, family=family)[:, 0]
        if bias_variance is not None:
            k += bias_variance
        col = (k - R[:, :m] @ R[j, :m]) / piv
        R[:, m] = col
        resid -= col * col
        resid[taken] = -np.inf
        if m + 1 < M:
            j = int(np.argmax(resid))
    return chosen


class _InducingStartMixin:
    """The starts on :class:`~sparsegp.regression.SparseGPRegressor`.

    They read its ``init`` and ``subset``, M from its ``_n_inducing`` and the kernel family
    of ``_spec``, and draw ``"random"`` and ``"kmeans"`` inducing inputs with its
    ``_initial_inducing_points``; the random numbers come from the fit's ``rng``.
    """

    def _subset_rule(self):
        """How SoD picks its rows: ``subset``, or for one release the ``init`` that picked
        them before ``subset`` existed, when that was given (``"random"``, ``"greedy"``; its
        default ``"kmeans"`` cannot be told from a choice) and ``subset`` was left at its
        default, with a ``FutureWarning``."""
        left = self.subset == signature(type(self).__init__).parameters["subset"].default
        if left and self.init in ("random", "greedy"):
            warn(f"{type(self).__name__}: init no longer picks SoD's subset (it is where "
                 f"the inducing inputs of the other approximations start); "
                 f"pass subset={self.init!r} instead. init={self.init!r} is honoured for "
                 f"approximation='sod' in this release only", FutureWarning)
            return self.init
        return self.subset

    def _choose_subset(self, X, s2, ls, jitter, rng, vb=None):
        """SoD's subset: sorted indices (M,) into the model-unit training rows X (N, D).

        ``s2``, ``ls`` (D,), ``jitter`` and the bias variance ``vb`` (None: none) are the
        starting kernel's, for ``"greedy"``.
        """
        N = X.shape[0]
        M = self._n_inducing(N)
        rule = self._subset_rule()
        if rule == "random":
            return np.sort(rng.choice(N, size=M, replace=False))
        if rule == "greedy":
            return np.sort(greedy_variance_selection(X, M, s2, ls, rng, jitter,
                                                     self._spec.family, vb))
        # k-means: the training point nearest each centre (duplicates topped up at random)
        C, _ = kmeans(X, X[rng.choice(N, size=M, replace=False)])
        d2 = (np.einsum("nd,nd->n", X, X)[:, None] - 2.0 * X @ C.T
              + np.einsum("md,md->m", C, C)[None, :])
        idx = np.unique(np.argmin(d2, axis=0))
        if idx.size < M:
            rest = np.setdiff1d(np.arange(N), idx)
            idx = np.concatenate([idx, rng.choice(rest, size=M - idx.size, replace=False)])
        return np.sort(idx)

    def _init_Z(self, X, s2, ls, jitter, rng, vb=None):
        """Initial inducing inputs (M, D), a new array, from the model-unit rows X (N, D).

        ``s2``, ``ls`` (D,), ``jitter`` and the bias variance ``vb`` (None: none) are the
        kernel's at this start (a restart's are drawn), for ``"greedy"``.
        """
        M = self._n_inducing(X.shape[0])
        if self.init == "greedy":
            return X[greedy_variance_selection(X, M, s2, ls, rng, jitter,
                                               self._spec.family, vb)].copy()
        return self._initial_inducing_points(X, rng)
