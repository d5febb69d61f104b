"""The multi-class GFITC engine: EP on the exact likelihood, a FITC prior per class (notes §7.1).

The maths under :class:`~sparsegp.classification.multiclass._gfitc.MultiClassGFITCClassifier`
(the model is described in that module). For fixed hyper-parameters, :class:`_GFITCState`
holds every class's whitened FITC pieces and :class:`_Sites` the N (C - 1) factors' sites;
then, by what they compute:

* EP: :func:`gfitc_run_ep` (sequential sweeps of compiled rank-one updates, O(C N M^2)) and
  :func:`gfitc_run_ep_parallel` (damped parallel updates from level-3 BLAS marginals, the
  authors' R schedule); :func:`_ep_runner` chooses one and :func:`_ep_evidence` runs it
  warm-started, with a cold restart when that fails;
* the posterior: :func:`gfitc_posterior` and :func:`gfitc_marginals`;
* the evidence log Z_EP and its gradient in the log hyper-parameters and the inducing inputs
  with the sites held: :func:`gfitc_log_evidence`, :func:`gfitc_gradient`;
* prediction: :func:`gfitc_predict_latent`.

The classes run side by side on :func:`~sparsegp._threads.map_threads` where the products are
large enough (:func:`_small`); the compiled passes are :mod:`sparsegp._numba.multiclass_gfitc`.
"""
from typing import NamedTuple

import numba
import numpy as np
import scipy.linalg as sla

from ..._numba import multiclass_gfitc as _nb
from ..._threads import map_threads
from ..._config import MC_GFITC_MIN_UPDATE_ROWS as _MIN_UPDATE_ROWS
from . import kernel as _k

#: parallel EP iterations before a run falls back to sequential sweeps (a cold start on 3 000
#: points needs about 900 at tolerance 1e-6, warm starts far fewer)
_PARALLEL_BUDGET = 500
#: The loosest tolerance an inexact search solve may reach (``ep_search_rtol``; the
#: estimator's ``_SEARCH_RTOL``)
_SEARCH_EP_TOL_MAX = 1e-2


def _small(N, M):
    """True when one class's O(N M^2) products are too small to be worth a thread hand-off
    (bench_threads mc_gfitc, N = 1000, M = 20: threaded 0.094-0.124 s, serial 0.072 s)."""
    return N * M * M < 1_000_000


class _GFITCState:
    """FITC pieces of every class for fixed hyper-parameters.

    ``U`` (C, N, M) = K_fu L_K^{-T} (so Q = U U^T), ``Dg`` (C, N) = kappa - diag Q (clipped at 0,
    notes §8.1), ``LKinv`` (C, M, M) the inverse Cholesky factors L_K^{-1}, ``kernels`` the
    per-class :class:`_k.ClassKernel`.

    Products with L_K^{-1} stand in for triangular solves with N right-hand sides: they are
    faster at these shapes, and numpy releases the GIL in them where SciPy's triangular solves
    do not, so the classes really run side by side on :func:`map_threads`.
    """

    def __init__(self, X, hyp, jitter, noise_in_kuu):
        C, M, D = hyp.Z.shape
        N = X.shape[0]
        self.C, self.M, self.N = C, M, N
        self.U = np.empty((C, N, M))
        self.Dg = np.empty((C, N))
        self.LKinv = np.empty((C, M, M))

        def build(c):
            kc = _k.ClassKernel(X, hyp, c, jitter, noise_in_kuu)
            self.LKinv[c] = _k.tri_solve(kc.LK, np.eye(M))
            U = np.matmul(kc.P, self.LKinv[c].T, out=self.U[c])
            self.Dg[c] = np.maximum(kc.kappa - np.einsum("ij,ij->i", U, U), 0.0)
            return kc

        self.kernels = map_threads(build, range(C), serial=_small(N, M))


class _Sites:
    """EP sites of the N (C - 1) factors, stored at column k of (N, C) arrays (notes §7.1).

    ``tp, np_`` are the winner-side (tau+, nu+) on f_{i,y_i}, ``tm, nm`` the loser-side
    (tau-, nu-) on f_ik; column y_i is unused and stays 0.
    """

    def __init__(self, N, C):
        self.tp = np.zeros((N, C))
        self.np_ = np.zeros((N, C))
        self.tm = np.zeros((N, C))
        self.nm = np.zeros((N, C))

    def aggregate(self, y):
        """(tau_bar, nu_bar) of shape (C, N): winner sites summed over k, loser site per class."""
        N = self.tp.shape[0]
        rows = np.arange(N)
        tau_bar = self.tm.T.copy()
        nu_bar = self.nm.T.copy()
        tau_bar[y, rows] = self.tp.sum(axis=1)
        nu_bar[y, rows] = self.np_.sum(axis=1)
        return np.ascontiguousarray(tau_bar), np.ascontiguousarray(nu_bar)

    def copy(self):
        s = _Sites(0, 0)
        s.tp, s.np_, s.tm, s.nm = self.tp.copy(), self.np_.copy(), self.tm.copy(), self.nm.copy()
        return s


def gfitc_run_ep(y, state, sites, tol=1e-6, max_sweeps=1000, damping=1.0, rtol=0.0,
                 tol_max=np.inf):
    """Run sequential EP sweeps on ``sites`` in place until the largest change is below ``tol``.

    Every sweep starts from a freshly computed B_c^{-1}, so rounding in the rank-one updates
    cannot accumulate across sweeps. With ``rtol`` > 0 the threshold is ``max(tol, min(rtol
    * r_1, tol_max))``, r_1 the largest change of the first sweep: an inexact solve for an
    optimiser's evaluation (``ep_search_rtol``), loose while a warm start is far from its
    fixed point. Returns ``(n_sweeps, converged, max_change)``.
    """
    C, M = state.C, state.M
    Binv = np.empty((C, M, M))
    gam = np.empty((C, M))
    max_change = np.inf
    for sweep in range(1, max_sweeps + 1):
        tau_bar, nu_bar = sites.aggregate(y)
        for c in range(C):
            _nb.refresh_class(state.U, state.Dg, tau_bar, nu_bar, Binv, gam, c)
        max_change, n_skipped, _ = _nb.gfitc_ep_sweep(
            y, state.U, state.Dg, tau_bar, nu_bar, Binv, gam,
            sites.tp, sites.np_, sites.tm, sites.nm, damping)
        if not np.isfinite(max_change):
            return sweep, False, max_change
        if sweep == 1 and rtol > 0.0:
            tol = max(tol, min(rtol * max_change, tol_max))
        if max_change < tol and n_skipped == 0:
            return sweep, True, max_change
    return max_sweeps, False, max_change


def gfitc_run_ep_parallel(y, state, sites, tol=1e-6, max_sweeps=1000, damping=1.0,
                          return_posterior=False):
    """Run damped parallel EP on ``sites`` in place until the fixed-point residual is below ``tol``.

    Every iteration computes all posterior marginals with level-3 BLAS (O(C N M^2), the classes
    on parallel threads) and moves every site a fraction ``damping`` of the way to its update.
    Convergence is judged on the largest undamped site change (the fixed-point residual), so a
    small step cannot fake convergence. A failed factorisation or non-finite marginals undo the
    last step and halve the damping. The authors' R code also decays the damping by 0.99 per
    iteration (notes §7.1); we do not: with damping judged on the residual, a decaying step
    only stalls a cold start (2 000 iterations without converging at N = 3 000, C = 4).

    On convergence ``sites`` holds the sites whose residual was measured below ``tol`` (the
    last update, smaller than ``tol``, is not applied), so their posterior is already known:
    with ``return_posterior`` it is returned as a fourth element (None when not converged),
    for :func:`gfitc_log_evidence` and :func:`gfitc_gradient` to reuse.

    Returns ``(n_iterations, converged, residual)`` or, with ``return_posterior``,
    ``(n_iterations, converged, residual, posterior)``.
    """
    N, C = sites.tp.shape
    residual = np.empty(N)
    res = best = np.inf
    stalled = 0
    step = float(damping)

    def finish(n, converged, residual_max, posterior=None):
        out = (n, converged, residual_max)
        return out + (posterior,) if return_posterior else out

    for it in range(1, max_sweeps + 1):
        tau_bar, nu_bar = sites.aggregate(y)
        try:
            posterior = gfitc_posterior(state, tau_bar, nu_bar)
            mu, var = posterior.mu, posterior.var
        except (np.linalg.LinAlgError, sla.LinAlgError):
            mu = None
        if mu is None or not (np.all(np.isfinite(mu)) and np.all(var > 0)):
            if it == 1 or step < 1e-6:
                return finish(it, False, np.inf)
            sites.tp, sites.np_, sites.tm, sites.nm = previous
            step *= 0.5
            continue
        previous = (sites.tp.copy(), sites.np_.copy(), sites.tm.copy(), sites.nm.copy())
        n_skipped = _update_sites(y, mu, var, sites, step, residual)
        res = float(residual.max())
        if res < tol and n_skipped == 0:
            sites.tp, sites.np_, sites.tm, sites.nm = previous
            return finish(it, True, res, posterior)
        # a max over N (C - 1) sites goes up and down on the way (halving the step on every
        # rise doubled the iterations at N = 3 000); ten iterations without a new best mean
        # a cycle, which smaller steps break
        if res < 0.99 * best:
            best, stalled = res, 0
        else:
            stalled += 1
            if stalled == 10:
                step *= 0.5
                best, stalled = res, 0
    return finish(max_sweeps, False, res)


def _update_sites(y, mu, var, sites, step, residual):
    """:func:`~sparsegp._numba.multiclass_gfitc.gfitc_parallel_update` of every row, the rows
    split over the same threads as the per-class products; returns the factors skipped."""
    N = y.shape[0]
    n_parts = 1 if N < _MIN_UPDATE_ROWS else max(1, numba.get_num_threads())
    bounds = np.linspace(0, N, n_parts + 1).astype(np.int64)
    return sum(map_threads(
        lambda part: _nb.gfitc_parallel_update(y, mu, var, sites.tp, sites.np_, sites.tm,
                                               sites.nm, step, residual, bounds[part],
                                               bounds[part + 1]),
        range(n_parts)))


class _ClassPosterior(NamedTuple):
    """What the evidence and gradient need of class c's posterior beyond its marginals.

    With s = 1 / (1 + Dg tau_bar) and B = I + U^T diag(tau_bar s) U the posterior covariance
    is diag(Dg s) + diag(s) U B^-1 U^T diag(s) (notes §7.1).
    """
    s: np.ndarray        # (N,)
    q: np.ndarray        # (N,) diag(U B^-1 U^T)
    UB: np.ndarray       # (N, M) U B^-1
    logdet_B: float


class _Posterior(NamedTuple):
    """Posterior under a set of aggregated sites: ``tau_bar, nu_bar, mu, var`` (C, N) and the
    per-class :class:`_ClassPosterior` pieces."""
    tau_bar: np.ndarray
    nu_bar: np.ndarray
    mu: np.ndarray
    var: np.ndarray
    pieces: list


def gfitc_posterior(state, tau_bar, nu_bar):
    """The posterior of every class's latents under aggregated sites ``tau_bar, nu_bar`` (C, N).

    Costs two (N, M)(M, M)-sized products per class (the classes on parallel threads): B and
    U B^-1. B has every eigenvalue >= 1, so its explicit inverse is safe, and it turns the
    triangular solves with N right-hand sides into products. Returns a :class:`_Posterior`.
    """
    mu = np.empty((state.C, state.N))
    var = np.empty((state.C, state.N))

    def one(c):
        U, D, t, nu = state.U[c], state.Dg[c], tau_bar[c], nu_bar[c]
        s = 1.0 / (1.0 + D * t)
        Binv, logdet_B = _inverse_of_B(U, t * s, state.M)
        UB = U @ Binv
        q = np.einsum("ij,ij->i", UB, U)
        var[c] = D * s + s * s * q
        mu[c] = D * s * nu + s * (UB @ (U.T @ (s * nu)))
        return _ClassPosterior(s, q, UB, logdet_B)

    pieces = map_threads(one, range(state.C), serial=_small(state.N, state.M))
    return _Posterior(tau_bar, nu_bar, mu, var, pieces)


def gfitc_marginals(state, tau_bar, nu_bar):
    """Posterior marginal means and variances of every latent, each of shape (C, N)."""
    posterior = gfitc_posterior(state, tau_bar, nu_bar)
    return posterior.mu, posterior.var


def _inverse_of_B(U, w, M):
    """(B^-1, log|B|) for B = I + U^T diag(w) U, through its Cholesky factor (B has every
    eigenvalue >= 1 at proper sites, so the explicit inverse is safe)."""
    B = np.eye(M) + U.T @ (U * w[:, None])
    R = sla.cholesky(B, lower=True, check_finite=False)
    Binv = sla.cho_solve((R, True), np.eye(M), check_finite=False)
    return Binv, 2.0 * np.sum(np.log(np.diag(R)))


def gfitc_log_evidence(y, state, sites, return_parts=False, posterior=None):
    """EP estimate log Z_EP for the given sites (notes §7.1); valid for any sites.

    sum_{i, k != y_i} [log Phi(beta_ik) + Delta(+) + Delta(-)]
      + sum_c [-1/2 log|I + K^F_c T_c| + 1/2 nu_bar_c^T mu_c],
    with log|I + K^F T| = sum log(1 + D tau_bar) + log|B|. ``posterior`` is the
    :func:`gfitc_posterior` of these sites when already known (a converged parallel EP run
    returns it); ``return_parts`` also returns it, for :func:`gfitc_gradient`.
    """
    N = y.shape[0]
    if posterior is None:
        posterior = gfitc_posterior(state, *sites.aggregate(y))
    tau_bar, nu_bar, mus, vs, pieces = posterior
    total = 0.0
    for c, piece in enumerate(pieces):
        logdet = np.sum(np.log1p(state.Dg[c] * tau_bar[c])) + piece.logdet_B
        total += -0.5 * logdet + 0.5 * float(nu_bar[c] @ mus[c])
    terms = _nb.factor_evidence_terms(y, mus, vs, sites.tp, sites.np_, sites.tm, sites.nm,
                                      np.empty((N, state.C)))
    total += float(np.sum(terms))
    if return_parts:
        return total, posterior
    return total


def gfitc_gradient(X, y, hyp, state, sites, parts=None):
    """d log Z_EP / d(log sigma, log sigma0, log l, Z) with the sites held fixed (notes §7.1).

    Exact at an EP fixed point: -1/2 tr(M dK^F) with M = (K^F + T^-1)^-1 - b b^T,
    b = nu_bar - tau_bar mu = (K^F)^-1 mu and (K^F + T^-1)^-1 = T - T Sigma T, i.e. diagonal
    plus rank M, so every term costs O(N M^2). With M' = M - diag(M) and Q = P K^-1 P^T,

        -1/2 tr(M dK^F) = -1/2 sum_i M_ii dkappa - <M' P K^-1, dK_fu>
                          + 1/2 <K^-1 P^T M' P K^-1, dK>.

    In whitened terms (P = U L^T with K = L L^T, and U^T diag(tau_bar s) U = B - I) this is
    M' P = H L^T with H = diag(a - m - tau_bar s) U + diag(tau_bar s) U B^-1 - b (b^T U), where
    a - m = tau_bar^2 s^2 diag(U B^-1 U^T) + b^2 is the part of diag(M) beyond T - T diag(g) T:
    so M' P K^-1 = H L^-1 and K^-1 P^T M' P K^-1 = L^-T (U^T H) L^-1: two products with N
    rows per class.

    ``parts`` is the posterior returned by ``gfitc_log_evidence(..., return_parts=True)``.
    Returns a :class:`_k.ClassParams` holding the gradient.
    """
    if parts is None:
        _, parts = gfitc_log_evidence(y, state, sites, return_parts=True)
    tau_bar, nu_bar, mu, _, pieces = parts
    C, M, D = hyp.Z.shape
    grad = _k.ClassParams.zeros(C, M, D, bias=hyp.log_bias is not None)

    def one(c):
        s, q, UB, _ = pieces[c]
        U, kc, t = state.U[c], state.kernels[c], tau_bar[c]
        ts = t * s
        b = nu_bar[c] - t * mu[c]
        low = ts * ts * q + b * b
        m_diag = t - t * ts * state.Dg[c] - low
        H = U * (low - ts)[:, None]
        H += UB * ts[:, None]
        H -= np.outer(b, b @ U)
        Li = state.LKinv[c]
        MpPKi = H @ Li
        W_uu = Li.T @ (U.T @ H) @ Li
        gv, gn, gl, gZ, gb = kc.grads(X, 0.25 * (W_uu + W_uu.T), -MpPKi, -0.5 * m_diag)
        grad.log_variance[c], grad.log_noise[c] = gv, gn
        grad.log_lengthscale[c], grad.Z[c] = gl, gZ
        if grad.log_bias is not None:
            grad.log_bias[c] = gb

    map_threads(one, range(C), serial=_small(X.shape[0], M))
    return grad


def gfitc_predict_latent(Xt, state, tau_bar, nu_bar):
    """FITC predictive (mean, var) of the noisy latents, each (n_test, C).

    The posterior of the whitened inducing values is N(B^-1 h, B^-1) with
    h = U^T (nu_bar / (1 + D tau_bar)); a test latent is f* = u*^T v + independent noise with
    u* = L_K^-1 k*, so var* = kappa - |u*|^2 + |R^-1 u*|^2.
    """
    C = state.C
    n = Xt.shape[0]
    mean = np.empty((n, C))
    var = np.empty((n, C))
    for c in range(C):
        U, D, t = state.U[c], state.Dg[c], tau_bar[c]
        s = 1.0 / (1.0 + D * t)
        B = np.eye(state.M) + U.T @ (U * (t * s)[:, None])
        R = sla.cholesky(B, lower=True, check_finite=False)
        h = U.T @ (nu_bar[c] * s)
        kc = state.kernels[c]
        Ps = kc.kfu(Xt)
        Us = sla.solve_triangular(kc.LK, Ps.T, lower=True, check_finite=False)
        Rs = sla.solve_triangular(R, Us, lower=True, check_finite=False)
        mean[:, c] = Rs.T @ sla.solve_triangular(R, h, lower=True, check_finite=False)
        var[:, c] = kc.kappa - np.einsum("ij,ij->j", Us, Us) + np.einsum("ij,ij->j", Rs, Rs)
    return mean, np.maximum(var, 1e-300)


def _ep_runner(schedule, damping, rtol=0.0):
    """``run(y, state, sites, tol, max_sweeps) -> (n, converged, residual, posterior)`` for
    ``schedule`` ("sequential"/"parallel"); ``posterior`` is the converged sites' posterior
    when the run already has it (:func:`gfitc_run_ep_parallel`), else None. ``rtol`` > 0
    makes a sequential run an inexact solve (:func:`gfitc_run_ep`); the parallel schedule's
    own tolerance is already as loose as that solve's loosest."""
    if schedule == "sequential":
        return lambda *args: gfitc_run_ep(*args, rtol=rtol, tol_max=_SEARCH_EP_TOL_MAX) + (None,)

    def run(y, state, sites, tol, max_sweeps):
        n, ok, res, posterior = gfitc_run_ep_parallel(
            y, state, sites, tol, min(max_sweeps, _PARALLEL_BUDGET), damping,
            return_posterior=True)
        if ok or n >= max_sweeps:
            return n, ok, res, posterior
        # parallel EP can cycle where sequential EP converges (separable classes, say):
        # finish sequentially from where it got to
        n_seq, ok, res = gfitc_run_ep(y, state, sites, tol, max_sweeps - n)
        return n + n_seq, ok, res, None

    return run


def _ep_evidence(X, y, hyp, sites, jitter, noise_in_kuu, run_ep, tol, max_sweeps):
    """EP at ``hyp`` from a copy of ``sites`` (from zero sites when that run fails), then
    log Z_EP.

    ``run_ep`` is an :func:`_ep_runner`. Returns ``(log_z, parts, state, sites, converged,
    n_sweeps)``, ``parts`` for :func:`gfitc_gradient`; ``n_sweeps`` counts both runs.
    """
    state = _GFITCState(X, hyp, jitter, noise_in_kuu)
    sites = sites.copy()
    n_sweeps, ok, _, posterior = run_ep(y, state, sites, tol, max_sweeps)
    if not ok:
        sites = _Sites(*sites.tp.shape)
        n_cold, ok, _, posterior = run_ep(y, state, sites, tol, max_sweeps)
        n_sweeps += n_cold
    lz, parts = gfitc_log_evidence(y, state, sites, return_parts=True, posterior=posterior)
    return lz, parts, state, sites, ok, n_sweeps
