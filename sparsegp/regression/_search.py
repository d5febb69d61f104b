"""The regressor's search over its log hyper-parameters and its inducing inputs.

The vector θ is [log s², log ℓ (1 value, or D with ARD), (log v_b,) log σ²], less what the
kernel holds fixed: the ``theta_`` of a fit and the argument of ``log_marginal_likelihood``;
v_b is the bias variance of the kernel's constant summands, when it has them. Its box is
the kernel's bounds, and [1e-6, 1e6] for σ² (model units: relative to var(y) with
``normalize_y``, as s² and v_b are). An evaluation is an evidence of :mod:`sparsegp.regression._base`, the
approximation's own or the VFE bound, with its gradient by θ and by the inducing inputs
Z (M, D).

What the search moves, and by which objective, follows ``inducing_objective`` (the
estimator's docstring says why):

* ``"evidence"``: the approximation's own evidence over θ and Z together;
* ``"vfe"``: first the VFE bound over θ and Z, then the own evidence over θ alone, Z held
  where the bound left it; for VFE, whose evidence is the bound, one search;
* None, and SoD and the exact GP, which have no inducing inputs: the evidence over θ.

A search by the bound may start coarse (``coarse_rows``): searches on nested random subsets
of the rows, each ``COARSE_LEVEL_FACTOR`` times the one before (:mod:`sparsegp._config`),
then the search on every row from where they ended. Every search runs through the training
driver :func:`sparsegp._optimize.maximize`; its restarts draw θ inside the box and, unless
the user gave the inducing inputs, Z afresh (:mod:`sparsegp.regression._inducing`).
"""
import math
import warnings

import numpy as np

from .._config import (COARSE_LEVEL_FACTOR, COARSE_MIN_FACTOR, COARSE_ROWS,
                       COARSE_ROWS_PER_UNKNOWN)
from .._optimize import maximize, stopping_gain
from .._params import (BOX_OVERRIDES, Block, Packing, bias_variance_blocks, cached_packing,
                       kernel_blocks, spec_key, unbounded)
from ..exceptions import JitterWarning
from . import _base

#: The box of σ², and of the default kernel's parameters, in model units
#: (:data:`sparsegp._params.BOX_OVERRIDES`). Kept as the literal pair so that the default
#: ``kernel_`` shows it as written: exp(±log 1e6) prints as (1.0000000000000004e-06,
#: 999999.9999999995). log(1e-6) is exactly -log(1e6), so the log box the search sees is the
#: same either way.
DEFAULT_BOX = BOX_OVERRIDES["regression"]
#: log of that box's half-width
_LOG_BOUND = math.log(DEFAULT_BOX[1])


class _SearchMixin:
    """The search's methods on :class:`~sparsegp.regression.SparseGPRegressor`.

    They read the estimator's arguments (``approximation``, ``inducing_objective``,
    ``inducing_points``, ``optimizer``, ``max_iter``, ``tol``, ``coarse_rows``,
    ``n_restarts``, ``verbose``), its kernel in model units ``_spec`` and
    ``n_features_in_``; a restart draws the inducing inputs with its ``_init_Z``. A search
    sets ``coarse_rows_`` and clears ``converged_`` when it stops at its cap.
    """

    def _packing(self, n_Z=0):
        """The :class:`sparsegp._params.Packing` of ``[log s², log ℓ (1 or D), (log v_b,)
        log σ²]`` (the kernel's free entries, with its bounds; v_b for a kernel with constant
        summands), then ``n_Z`` inducing-input coordinates.

        The scalars' logs and exps are the C library's (``libm``), as the committed fits'.
        """
        D, spec = self.n_features_in_, self._spec
        return cached_packing(("regression", D, spec_key(spec), int(n_Z)), lambda: Packing(
            kernel_blocks(spec, D, libm=True) + bias_variance_blocks(spec)
            + [Block("log_noise_variance", 1, log=True, bounds=(-_LOG_BOUND, _LOG_BOUND),
                     libm=True),
               Block("Z", int(n_Z))]))

    def _pack(self, s2, ls, sn2, vb=None):
        """Log-space vector of the free hyper-parameters: [log s², log ℓ (1 or D), (log v_b,)
        log σ²]."""
        return self._packing().pack_natural({"log_variance": s2, "log_lengthscale": ls,
                                             "log_bias_variance": vb,
                                             "log_noise_variance": sn2, "Z": ()})

    def _theta_bounds(self):
        """Bounds (n_free, 2) matching :meth:`_pack`: the kernel's, then the noise's."""
        return self._packing().bounds()

    def _theta_names(self):
        """Names of :meth:`_pack`'s entries, for the driver's bound warning.

        The noise variance is left out (None): its box [1e-6, 1e6] var(y) is a floor for
        the factorisations, and a noise on that floor means the targets look noise-free to
        the model, rightly (a noise-free function, constant targets) or through FITC's
        diag(K − Q) taking its place; a wider box would change nothing. A noise on the
        ceiling is a flat fit, which the training-R² warning reports.
        """
        spec = self._spec
        names = ["variance"] if spec.free_variance else []
        if spec.free_lengthscale:
            D = self.n_features_in_
            names += [f"lengthscale[{j}]" for j in range(D)] if spec.ard else ["lengthscale"]
        packing = self._packing()
        if "log_bias_variance" in packing.slices and packing["log_bias_variance"].free:
            names.append("bias_variance")
        return names + [None]

    def _unpack(self, theta, D):
        """``(s2, ls (D,), sn2, vb)`` in natural units from :meth:`_pack`'s vector ``theta``.

        The kernel's fixed values fill what ``theta`` leaves out; ``ls`` is C-contiguous;
        ``vb``, the bias variance, is None for a kernel without constant summands.
        """
        v = self._packing().natural(theta)
        vb = v.get("log_bias_variance")
        return (float(v["log_variance"][0]), np.ascontiguousarray(v["log_lengthscale"]),
                float(v["log_noise_variance"][0]), None if vb is None else float(vb[0]))

    def _evidence(self, X, y, s2, ls, sn2, Z, jitter, blocks, eval_gradient, warn=True,
                  workspace=None, method=None, fitted_mean=False, vb=None):
        """``(lml, grad, post)`` of ``method`` (default ``approximation``) at these values,
        with the bias variance ``vb`` (None: the kernel has no constant summand).

        The sparse methods' :func:`~sparsegp.regression._base.sparse_lml` (``post`` a
        ``Posterior``), or the exact GP's :func:`~sparsegp.regression._base.exact_lml` for SoD
        (on its subset X) and ``"exact"``. ``warn=False`` silences the jitter warnings of
        single evaluations: the search reports the largest jitter once.
        """
        method = method or self.approximation
        family = self._spec.family
        if method in _base.SPARSE_METHODS:
            args = (X, y, Z, s2, ls, sn2, method, blocks, jitter, eval_gradient, workspace,
                    family, fitted_mean, vb)
            if warn:
                return _base.sparse_lml(*args)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", JitterWarning)
                return _base.sparse_lml(*args)
        return _base.exact_lml(X, y, s2, ls, sn2, eval_gradient, family, vb)

    def _search(self, X_all, X, y, theta0, Z0, jitter, blocks, max_jitter, rng):
        """The optimised fit: (theta, Z, n_iter) as ``inducing_objective`` says."""
        method = self.approximation
        objective = self.inducing_objective
        if method not in _base.SPARSE_METHODS:
            objective = None                    # SoD and the exact GP: no inducing inputs
        elif objective == "auto":
            # every method but VFE, whose own objective is the bound (the docstring says why
            # the FITC family's and SoR/DTC's evidences must not place the inducing inputs)
            objective = "vfe" if method != "vfe" else "evidence"
        if method == "vfe" and objective is not None:      # the bound is VFE's evidence
            return self._bound_search(X, y, theta0, Z0, jitter, blocks, max_jitter, rng)
        if objective != "vfe" or method == "vfe":
            return self._optimise(X_all, X, y, theta0, Z0, objective is not None, jitter,
                                  blocks, max_jitter, rng)
        # the bound places Z; its hyper-parameters are only the second stage's start, so
        # their bounds are not reported
        theta, Z, n_bound = self._bound_search(X, y, theta0, Z0, jitter, blocks, max_jitter,
                                               rng, stage="inducing inputs by the VFE bound")
        theta, Z, n_own = self._optimise(X_all, X, y, theta, Z, False, jitter, blocks,
                                         max_jitter, rng, n_restarts=0)
        return theta, Z, n_bound + n_own

    def _bound_search(self, X, y, theta0, Z0, jitter, blocks, max_jitter, rng, stage=None):
        """The search over theta and Z by the VFE bound, from a coarse start if there is one.

        Returns (theta, Z, n_iter), the iterations of both searches counted.
        """
        levels = self._coarse_levels(X, y, theta0.size + Z0.size, rng)
        n_coarse, n_restarts = 0, None
        for rows in levels:
            Xc, yc = X[rows], y[rows]
            theta0, Z0, n_level = self._optimise(
                Xc, Xc, yc, theta0, Z0, True, jitter, blocks, max_jitter, rng, method="vfe",
                stage=f"coarse start on {rows.size} of {y.size} rows", coarse=True,
                gain_rows=y.size, n_restarts=n_restarts)
            n_coarse += n_level
            n_restarts = 0                      # the restarts ran on the smallest subset
        if levels:
            self.coarse_rows_ = int(levels[0].size)
        theta, Z, n_iter = self._optimise(X, X, y, theta0, Z0, True, jitter, blocks,
                                          max_jitter, rng, method="vfe", stage=stage,
                                          n_restarts=n_restarts)
        return theta, Z, n_coarse + n_iter

    def _coarse_levels(self, X, y, n_unknowns, rng):
        """Rows of each coarse search (``coarse_rows``), smallest first; [] for none.

        The first level has ``coarse_rows`` rows, and each next one COARSE_LEVEL_FACTOR times
        as many while that is at most 1/COARSE_LEVEL_FACTOR of the training set; each level
        holds the one before. The rows are drawn from the training set in lexicographic order
        of (X, y), so the subsets are the same whatever the order of the rows, and so is
        their own order; scaling X or y keeps that order (up to ties that rounding creates),
        so they are the same in any units.
        """
        N = y.size
        if self.coarse_rows is None:
            return []
        if isinstance(self.coarse_rows, str):           # "auto"
            if self.tol is None:
                return []                               # a fixed schedule, as the papers ran
            size = max(COARSE_ROWS, COARSE_ROWS_PER_UNKNOWN * n_unknowns)
            if N < COARSE_MIN_FACTOR * size:
                return []
        else:
            size = int(self.coarse_rows)
            if size >= N:
                return []
        sizes = [size]
        while sizes[-1] * COARSE_LEVEL_FACTOR ** 2 <= N:
            sizes.append(sizes[-1] * COARSE_LEVEL_FACTOR)
        # np.lexsort's last key is the primary one: X's first column, then the next, ..., y
        order = np.lexsort(np.vstack([y[None, :], X[:, ::-1].T]))
        drawn = rng.permutation(N)
        return [order[np.sort(drawn[:n])] for n in sizes]

    def _optimise(self, X_all, X, y, theta0, Z0, move_Z, jitter, blocks, max_jitter, rng,
                  method=None, stage=None, n_restarts=None, coarse=False, gain_rows=None):
        """Maximise the evidence over theta (and Z) with the training driver.

        Returns the best (theta, Z, n_iter) over the start and ``n_restarts`` restarts;
        a restart draws theta inside the bounds and, unless ``inducing_points`` is given,
        initialises Z afresh under the drawn hyper-parameters. ``method`` names another
        approximation's objective (the VFE bound of ``_search``'s first stage), ``stage``
        that search in the warnings, which then leave out the bounds of theta. A ``coarse``
        search (on a subset of the rows, the start of the search on all of them) neither
        warns at its cap nor counts towards ``converged_``; it stops on the full search's
        gain in nats, counted on ``gain_rows`` (all the training rows), not on its own rows:
        its start need not be finer than that, and on T2 the last two thirds of a search
        to its own per-row rule moved the test NLP by under 0.001 (COARSE_START.md).
        """
        D = X.shape[1]
        n_th = theta0.size
        x0 = np.concatenate([theta0, Z0.ravel()]) if move_Z else theta0.copy()
        Zshape = Z0.shape if Z0 is not None else None
        workspace = _base.Workspace()            # the same N×M buffers for every evaluation

        def evaluate(x, _warm):
            theta = x[:n_th]
            Z = np.ascontiguousarray(x[n_th:].reshape(Zshape)) if move_Z else Z0
            s2, ls, sn2, vb = self._unpack(theta, D)
            lml, grad, post = self._evidence(X, y, s2, ls, sn2, Z, jitter, blocks, True,
                                             warn=False, workspace=workspace, method=method,
                                             vb=vb)
            if hasattr(post, "jitter"):
                max_jitter[0] = max(max_jitter[0], post.jitter)
            return lml, self._pack_grad(grad, s2, ls, sn2, move_Z, vb), None

        def restart(x, rng):
            if move_Z and self.inducing_points is None:
                s2r, lsr, _, vbr = self._unpack(x[:n_th], D)
                x[n_th:] = self._init_Z(X_all, s2r, lsr, jitter, rng, vbr).ravel()
            return x

        bounds = np.vstack([self._theta_bounds(), unbounded(x0.size - n_th)])
        label = f"SparseGPRegressor ({self.approximation}" + (f"; {stage})" if stage else ")")
        restart_mask = np.arange(x0.size) < n_th
        # fit holds the thread policy (_parallel_pool) around the whole run: one OpenBLAS
        # thread-count switch, not two per evaluation
        res = maximize(evaluate, x0, method=self.optimizer, bounds=bounds,
                       max_iter=self.max_iter,
                       tol=stopping_gain(self.tol, y.size if gain_rows is None else gain_rows),
                       # a fixed schedule (tol=None) stops at max_iter by design; a coarse
                       # search's end is only the full search's start
                       warn_at_cap=self.tol is not None and not coarse,
                       n_restarts=self.n_restarts if n_restarts is None else n_restarts,
                       random_state=rng, restart_mask=restart_mask, restart=restart,
                       progress=bool(self.verbose), label=label,
                       value_name="log marginal likelihood",
                       advice=", or try n_restarts > 0 or other initial hyper-parameters",
                       names=self._theta_names(),
                       # constant targets identify no hyper-parameter and are predicted
                       # exactly: nothing to warn about
                       warn_at_bound=stage is None and bool(np.ptp(y) > 0))
        if not np.isfinite(res.value):
            raise ValueError(
                "the evidence could not be evaluated at any start (failed factorisation or a "
                "non-finite value); try more jitter, standardised inputs or other initial "
                "hyper-parameters")
        if not coarse:
            self.converged_ = self.converged_ and bool(res.converged)
        x = res.theta
        Z = np.ascontiguousarray(x[n_th:].reshape(Zshape)) if move_Z else Z0
        return x[:n_th].copy(), Z, res.n_iter

    def _pack_grad(self, grad, s2, ls, sn2, move_Z, vb=None):
        """The gradient by :meth:`_pack`'s vector (by log s², log ℓ, (log v_b,) log σ²),
        then with ``move_Z`` by the inducing inputs, raveled (M·D,), from the
        natural-parameter ``grad`` of :meth:`_evidence`."""
        g_Z = np.ravel(grad["inducing_points"]) if move_Z else np.empty(0)
        # an isotropic ℓ's entries are scaled, then summed: the order the committed fits used
        return self._packing(g_Z.size).gradient(
            {"log_variance": grad["variance"], "log_lengthscale": grad["lengthscale"],
             "log_bias_variance": grad.get("bias_variance"),
             "log_noise_variance": grad["noise_variance"], "Z": g_Z},
            {"log_variance": s2, "log_lengthscale": ls, "log_bias_variance": vb,
             "log_noise_variance": sn2},
            scale_then_sum=True)
