"""EP over the FITC prior: the engine under :class:`~sparsegp.classification.GFITCClassifier`.

Generalized FITC classification (Naish-Guzman & Holden 2007, seed 000). The prior's whitened
pieces, the EP posterior and its refresh, the sequential and parallel site schedules, the
O(NM^2) evidence and its gradient, all as private functions over plain arrays; the estimator
(:mod:`sparsegp.classification._gfitc`) owns validation, the search and the fitted state. The
sequential site sweep is one compiled kernel (:mod:`sparsegp._numba.ep_fitc`). Every O(N M^2)
pass of an evaluation -- whitening, refresh, parallel site targets, marginals, the gradient's
adjoints -- is a compiled pass over blocks of rows (BLAS-3 on each block while it is in cache,
the rows split among Numba's threads); the M x M algebra is numpy/scipy. One evaluation inside
the optimiser costs, at N = 16 000, M = 50, about 5 + 4 per EP iteration + 10 (N x M)^T
(N x M) products (``benchmarks/bench_gfitc.py``, table 0). Nothing of size N x N is formed.

Internally the prior is whitened (notes §1.5 (c)): with ``K_uu = L_u L_u^T`` and
``V = L_u^{-1} K_uf`` (M, N), Q_ff = V^T V, so P_0 = V^T and R_0 = I. Every formula of notes §1
carries over with K_uu -> I, and the M x M matrices stay well conditioned.
"""
import math

import numba
import numpy as np
from scipy import linalg as sla

from .._config import EP_MAX_SWEEPS, EP_TOL, ROW_BLOCK
from .._covariance import deriv_factor, variance_gradient
from .._linalg import cholesky_jitter
from .._numba import ep_fitc as _ep
from .._numba import ep_fitc_anderson as _anderson
from .._numba import ep_fitc_gradient as _grad
from .._numba import ep_fitc_rows as _rows
from .._numba.covfuncs import SE
from .._numba.probit import log_ndtr_vec
from .._threads import single_threaded_blas
from ..kernels import grad_contract, kernel_matrix

#: The site schedules of :func:`run_ep`.
SCHEDULES = ("sequential", "parallel")
#: Smallest step the parallel schedule falls back to when its site changes grow.
PARALLEL_MIN_DAMPING = 0.05
#: Memory of the Anderson acceleration of the parallel schedule (:class:`_Anderson`); 0 takes
#: the plain damped steps. Off by default: it reaches the same fixed point in fewer
#: iterations, but stops at a different point within the tolerance, so a seeded fit moves.
PARALLEL_ANDERSON_MEMORY = 0


# --------------------------------------------------------------------------------------------
# FITC prior and the EP posterior
# --------------------------------------------------------------------------------------------
class _FITCPrior:
    """Whitened FITC prior pieces for fixed (X, Z, s2, l, jitter) and a stationary family.

    Parameters
    ----------
    X : ndarray of shape (N, D)
    Z : ndarray of shape (M, D)
    variance : float
    lengthscale : ndarray of shape (D,)
    jitter : float
        ``jitter * variance`` is added to the diagonal of K_uu.
    escalate : bool
        Grow the jitter tenfold (with a ``JitterWarning``) until K_uu factorises.
    family : int
        Stationary family code of :mod:`sparsegp._numba.covfuncs` (default SE).
    bias_variance : float or None
        v_b, the constant a kernel's ``ConstantKernel`` summands add to every covariance
        entry (K_fu, K_uu and the diagonal); None for none.

    Attributes: ``Kfu`` (N, M) k(X, Z); ``Kzz`` (M, M) k(Z, Z); ``Kuu`` (M, M) with jitter;
    ``Lu`` lower Cholesky of Kuu and ``Linv`` its inverse (lower, C-contiguous); ``Vt`` (N, M)
    C-contiguous, ``Vt = K_fu L_u^{-T}`` so that ``Q_ff = Vt Vt^T``; ``d0`` (N,)
    diag(K_ff - Q_ff) >= 0 (k(x, x) = s2 for every stationary family); ``jitter`` the jitter
    actually used (relative to s2). With v_b, ``Kfu``, ``Kzz`` and ``Kuu`` include it,
    ``Kfu_s`` and ``Kzz_s`` are the stationary parts alone (what the kernel's derivatives
    contract with), and ``prior_variance`` is k(x, x) = s2 + v_b (s2 without).
    """

    def __init__(self, X, Z, variance, lengthscale, jitter, escalate=True, family=SE,
                 bias_variance=None):
        X = np.ascontiguousarray(X, dtype=np.float64)
        Z = np.ascontiguousarray(Z, dtype=np.float64)
        lengthscale = np.ascontiguousarray(lengthscale, dtype=np.float64)
        self.X, self.Z = X, Z
        self.family = int(family)
        self.variance = float(variance)
        self.lengthscale = lengthscale
        self.bias_variance = bias_variance
        self.Kfu = kernel_matrix(X, Z, family, variance, lengthscale)
        Kzz = kernel_matrix(Z, Z, family, variance, lengthscale)
        self.Kfu_s, self.Kzz_s, self.prior_variance = self.Kfu, Kzz, self.variance
        if bias_variance is not None:
            self.Kfu = self.Kfu_s + bias_variance
            Kzz = Kzz + bias_variance
            self.prior_variance = self.variance + bias_variance
        self.Kzz = Kzz
        Lu, eps = cholesky_jitter(Kzz, self.variance, jitter, escalate=escalate)
        Kuu = Kzz.copy()
        Kuu[np.diag_indices_from(Kuu)] += eps * self.variance
        self.jitter = eps
        self.Kuu, self.Lu = Kuu, Lu
        # L_u^{-1} explicitly (O(M^3)): a triangular multiply by it runs at twice the speed
        # of a solve with N right-hand sides, and the gradient's adjoints need it as well
        Linv, info = sla.lapack.dtrtri(Lu, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"Cholesky factor of K_uu is singular (trtri {info})")
        self.Linv = np.ascontiguousarray(Linv)
        N, M = self.Kfu.shape
        self.Vt, self.d0 = np.empty((N, M)), np.empty(N)
        with _row_split_blas():
            _row_pass(_rows.whiten_rows, _rows.whiten_split, N, self.Kfu, self.Linv,
                      self.prior_variance, self.Vt, self.d0)


class _Posterior:
    """A = D + P R^T R P^T, h = nn + P gamma (notes §1.2) plus refresh by-products.

    By-products: ``b`` = V b~ (M,) of the refresh; ``c2``, ``vg`` (N,) the row pieces of the
    marginals
    (:func:`_marginal_parts`), None until first asked for, so that the evidence and its
    gradient share one pass.
    """

    __slots__ = ("d", "P", "R", "nn", "gamma", "logdet_S", "omega", "btil", "t", "Vt", "b", "c2",
                 "vg", "S")


def _upper_factor_of_inverse(S):
    """Upper R with R^T R = S^{-1}, and log|S|, via the rot180 trick (notes §1.5).

    Only the upper triangle of S (M, M) is read. Direct LAPACK calls (potrf on the reversed
    matrix, trtri): at small M the numpy/scipy wrappers' checks cost more than the algebra.
    """
    # reversing rows and columns maps S's upper triangle onto the lower one potrf reads
    Lr, info = sla.lapack.dpotrf(S[::-1, ::-1], lower=1, clean=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"S is not positive definite (potrf info {info})")
    U = Lr[::-1, ::-1]  # upper, U U^T = S
    R, info = sla.lapack.dtrtri(U, lower=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"factor of S is singular (trtri info {info})")
    return np.ascontiguousarray(R), 2.0 * float(np.sum(np.log(np.diag(Lr))))


def _refresh(prior, tau, nu, with_P=True):
    """Rebuild the posterior from the site vectors in O(NM^2) (notes §1.4, whitened).

    P = diag(t) V^T is materialised only when ``with_P`` (the sequential kernel updates it in
    place); otherwise it stays implicit as ``t`` and ``Vt``.
    """
    post = _Posterior()
    post.Vt = prior.Vt
    if np.all(tau >= 0.0):
        # the compiled row pass of the parallel schedule, without its step: one read of Vt
        N = tau.shape[0]
        post.t, post.omega, post.btil, post.d, post.nn = (np.empty(N) for _ in range(5))
        M = prior.Vt.shape[1]
        G, b = np.zeros((M, M)), np.zeros(M)
        with _row_split_blas():
            _row_pass(_rows.parallel_apply_rows, _rows.parallel_apply_split, N, prior.Vt,
                      prior.d0, tau, nu, tau, nu, -1.0, post.t, post.omega, post.btil, post.d,
                      post.nn, G, b)
    else:  # negative site precisions (never produced by the probit updates here)
        t = 1.0 / (1.0 + prior.d0 * tau)
        post.t = t
        post.omega = tau * t
        post.btil = nu * t
        post.d = prior.d0 * t
        post.nn = post.d * nu
        b = prior.Vt.T @ post.btil
        G = (prior.Vt * post.omega[:, None]).T @ prior.Vt
    post.P = prior.Vt * post.t[:, None] if with_P else None
    _finish_refresh(post, G, b)
    return post


def _finish_refresh(post, G, b):
    """The M x M part of a refresh: S = I + G, its factor R, log|S|, gamma = R^T R b.

    G (M, M) = V diag(omega) V^T, of which only the upper triangle is read (the row passes
    write no other); it is mirrored and becomes S in place, and is kept (the gradient's Gram
    uses it). Keeps ``b`` and clears the cached marginal pieces.
    """
    S = G
    M = S.shape[0]
    _mirror_upper(S)
    S.flat[::M + 1] += 1.0
    post.R, post.logdet_S = _upper_factor_of_inverse(S)
    post.S = S
    post.gamma = post.R.T @ (post.R @ b)
    post.b = b
    post.c2 = post.vg = None


def _mirror_upper(C):
    """Copy the upper triangle of the square C (M, M) into its lower one, in place (numpy:
    an M x M copy is not worth a compile on a first run)."""
    lower = np.tril_indices(C.shape[0], -1)
    C[lower] = C.T[lower]


def _marginal_parts(post):
    """c2 = ||R v_n||^2 and vg = v_n^T gamma (N,) of an implicit refresh, computed once.

    One compiled pass (:func:`sparsegp._numba.ep_fitc_rows.marginal_parts_split`): a TRMM of Vt by
    R^T a block of rows at a time. Cached on ``post`` until its next refresh.
    """
    if post.c2 is None:
        N = post.t.shape[0]
        post.c2, post.vg = np.empty(N), np.empty(N)
        with _row_split_blas():
            _row_pass(_rows.marginal_parts_rows, _rows.marginal_parts_split, N, post.Vt,
                      np.ascontiguousarray(post.R.T), post.gamma, post.c2, post.vg)
    return post.c2, post.vg


def _marginals(post):
    """diag A (N,) and h (N,) in O(NM^2): A_nn = d_n + ||R p_n||^2, h = nn + P gamma."""
    if post.P is not None:  # possibly updated in place by the sweep kernel
        B = post.P @ post.R.T
        return post.d + np.einsum("ij,ij->i", B, B), post.nn + post.P @ post.gamma
    # P R^T = diag(t) V^T R^T: A_nn = d_n + t_n^2 ||R v_n||^2, h_n = nn_n + t_n v_n^T gamma
    c2, vg = _marginal_parts(post)
    return post.d + post.t * post.t * c2, post.nn + post.t * vg


def _site_targets(y, tau, nu, diag_a, h, bias):
    N = y.shape[0]
    out = [np.empty(N) for _ in range(6)]
    _ep.ep_site_targets(y, tau, nu, diag_a, h, float(bias), *out)
    return out  # tau_new, nu_new, log_z, dlog_z, cav_tau, cav_nu


class _ParallelWork:
    """Buffers of the parallel schedule, allocated once per EP run."""

    __slots__ = ("tau_target", "nu_target")

    def __init__(self, N, M):
        self.tau_target = np.empty(N)
        self.nu_target = np.empty(N)


def _n_parts():
    """Row ranges of a parallel EP iteration: one per Numba thread."""
    return numba.get_num_threads()


def _row_pass(rows, split, N, *args):
    """Run one compiled row pass of :mod:`sparsegp._numba.ep_fitc_rows` or
    :mod:`sparsegp._numba.ep_fitc_gradient` over all N rows.

    ``split`` (``parallel=True``) divides the rows among Numba's threads; with one thread
    (every fit under ``PARALLEL_MIN_ROWS`` rows, :func:`sparsegp._threads.load_aware_threads`)
    ``rows``, the serial kernel each of those threads runs, takes all rows itself: the same
    blocks and sums, bit for bit, and a small fit never compiles a parallel wrapper (the
    larger part of a first run's 40 s of compilation). ``args`` are the pass's arguments up
    to its row range; returns what the pass returns.
    """
    n_parts = _n_parts()
    if n_parts == 1:
        return rows(*args, 0, N, ROW_BLOCK)
    return split(*args, n_parts, ROW_BLOCK)


def _row_split_blas():
    """OpenBLAS at one thread around a compiled pass that splits rows among Numba's threads
    (each calls BLAS); with one Numba thread there is nothing to hold (saves the switch)."""
    return single_threaded_blas(_n_parts() > 1)


class _Anderson:
    """Anderson acceleration (type II) of the parallel EP map on x = (tau, nu), shape (2N,).

    With F the site targets and f = F(x) - x the undamped residual, the step from x_k goes to

        x_k + delta f_k - (dX + delta dF) c,   c = argmin ||f_k - dF c||_2,

    where the columns of dX, dF are the last ``memory`` differences of iterates and residuals
    (Walker & Ni 2011, eq. 2.1 with mixing delta); precisions are clipped at TAU_MIN
    (:func:`sparsegp._numba.ep_fitc_anderson.anderson_propose`). A residual that grows resets the
    history (the step is then the plain damped one), so the acceleration never does worse
    than the damped iteration for long. O(N memory) per iteration beside the O(N M^2) passes.
    """

    __slots__ = ("memory", "dX", "dF", "x", "f", "n", "head", "started")

    def __init__(self, N, memory):
        self.memory = int(memory)
        self.dX = np.empty((self.memory, 2 * N))
        self.dF = np.empty((self.memory, 2 * N))
        self.x = np.empty(2 * N)
        self.f = np.empty(2 * N)
        self.reset()

    def reset(self):
        self.n, self.head, self.started = 0, 0, False

    def propose(self, tau, nu, tau_target, nu_target, delta):
        """Overwrite the targets (N,) with the accelerated point; the step to it is 1."""
        slot = -1
        if self.started:                # the history is a ring: the oldest row goes first
            slot, self.head = self.head, (self.head + 1) % self.memory
            self.n = min(self.n + 1, self.memory)
        _anderson.anderson_propose(tau, nu, tau_target, nu_target, float(delta), self.dX,
                                   self.dF, self.x, self.f, slot, self.n)
        self.started = True


def _parallel_step(prior, y, bias, tau, nu, post, work, delta, prev_change, max_delta,
                   accel=None):
    """One parallel EP iteration in place: site targets from ``post``, a damped step, refresh.

    The step size adapts (notes §1.6): when the undamped residual (largest |site change|)
    grew over ``prev_change`` the fixed-point map is overshooting and ``delta`` is halved,
    not below PARALLEL_MIN_DAMPING; otherwise it grows by 25%, up to ``max_delta``.
    With ``accel`` (an :class:`_Anderson`) the step goes to its accelerated point instead
    (its history reset whenever the residual grew).
    ``post`` must be an implicit (``with_P=False``) refresh; its site arrays, R, log|S| and
    gamma are overwritten, as are ``tau`` and ``nu``.

    Work: one TRMM and one SYRK of (N x M) by (M x M) and two O(NM) passes, in two compiled
    phases whose rows are split among the Numba threads (each thread keeps its block of C and
    Ws in cache; neither is ever stored whole), and the O(M^3) factor. Call it with OpenBLAS
    held to one thread (:func:`run_ep` does).

    Returns
    -------
    change : float
        The undamped residual before the step.
    delta : float
        The step size used.
    """
    N, M = post.Vt.shape
    change = _row_pass(_rows.parallel_targets_rows, _rows.parallel_targets_split, N, post.Vt,
                       np.ascontiguousarray(post.R.T), post.t, post.d, post.nn, post.gamma, y,
                       tau, nu, float(bias), work.tau_target, work.nu_target)
    if change > prev_change:
        delta = max(0.5 * delta, PARALLEL_MIN_DAMPING)
        if accel is not None:
            accel.reset()
    else:
        delta = min(1.25 * delta, float(max_delta))
    step = delta
    if accel is not None:
        accel.propose(tau, nu, work.tau_target, work.nu_target, delta)
        step = 1.0
    G, b = np.zeros((M, M)), np.zeros(M)
    _row_pass(_rows.parallel_apply_rows, _rows.parallel_apply_split, N, prior.Vt, prior.d0,
              tau, nu, work.tau_target, work.nu_target, step, post.t, post.omega, post.btil,
              post.d, post.nn, G, b)
    _finish_refresh(post, G, b)
    return change, delta


def _stop_tol(tol, rtol, tol_max, first_change):
    """The stopping threshold of :func:`run_ep` after its first sweep (see ``rtol``)."""
    return max(tol, min(rtol * first_change, tol_max)) if rtol > 0.0 else tol


class _EPResult:
    """Converged (or last) EP state: sites, posterior, sweep count, convergence flag."""

    __slots__ = ("tau", "nu", "post", "n_sweeps", "converged", "max_change", "n_aborts")


def run_ep(prior, y, bias, tau=None, nu=None, tol=EP_TOL, max_sweeps=EP_MAX_SWEEPS,
           damping=1.0, schedule="sequential", rng=None, fail_pos=-1, anderson=None,
           rtol=0.0, tol_max=math.inf):
    """EP over the FITC prior from the given sites (zeros by default).

    Parameters
    ----------
    prior : _FITCPrior
    y : ndarray of shape (N,)
        Labels in {-1, +1}.
    bias : float
    tau, nu : ndarray of shape (N,), optional
        Initial sites (warm start); copied.
    tol : float
        Stop when the largest undamped residual |target - current| of a site parameter over
        a sweep (or parallel iteration) is below ``tol``.
    rtol, tol_max : float
        With ``rtol`` > 0 the stopping threshold is ``max(tol, min(rtol * r_1, tol_max))``,
        r_1 the residual of the first sweep: an inexact solve for an optimiser's evaluations
        (``GFITCClassifier(ep_search_rtol=...)``), loose while a warm start is far from its fixed point and
        ``tol`` once it is close. Default 0: ``tol``.
    max_sweeps : int
    damping : float in (0, 1]
    schedule : {"sequential", "parallel"}
        Sequential: one compiled sweep over a random permutation, then a refresh. Parallel:
        all sites from one posterior, a step of ``damping`` towards them, then a refresh; the
        step is halved whenever the largest site change grows (oscillation) and regrows by
        25% per iteration otherwise, up to ``damping``.
    rng : numpy.random.Generator
        Source of the sweep permutations.
    fail_pos : int
        Test hook: force the first downdate at or after this position of the first sweep to
        fail, exercising the abort-and-refresh path (footnote 3).
    anderson : int, optional
        Parallel schedule: memory of its Anderson acceleration (:class:`_Anderson`), 0 for
        plain damped steps; default :data:`PARALLEL_ANDERSON_MEMORY` (read at the call).

    Returns
    -------
    _EPResult
    """
    N = y.shape[0]
    M = prior.Vt.shape[1]
    rng = np.random.default_rng(0) if rng is None else rng
    tau = np.zeros(N) if tau is None else np.array(tau, dtype=np.float64)
    nu = np.zeros(N) if nu is None else np.array(nu, dtype=np.float64)
    post = _refresh(prior, tau, nu, with_P=(schedule == "sequential"))
    res = _EPResult()
    res.n_aborts = 0
    converged = False
    max_change = np.inf
    sweep = 0
    if schedule == "sequential":
        u = np.empty(M)
        w = np.empty(M)
        for sweep in range(1, max_sweeps + 1):
            order = rng.permutation(N).astype(np.int64)
            start, max_change = 0, 0.0
            while True:
                status, pos, mc = _ep.ep_fitc_sweep(
                    y, order, start, tau, nu, post.d, post.P, post.R, post.nn, post.gamma,
                    float(bias), float(damping), u, w, int(fail_pos))
                max_change = max(max_change, mc)
                if status == _ep.SWEEP_DONE:
                    break
                # Footnote 3: a failed downdate aborts into a full refresh, then the sweep
                # resumes with the next site.
                res.n_aborts += 1
                fail_pos = -1
                post = _refresh(prior, tau, nu)
                start = pos + 1
            post = _refresh(prior, tau, nu)
            if sweep == 1:
                tol = _stop_tol(tol, rtol, tol_max, max_change)
            if max_change < tol:
                converged = True
                break
    else:
        delta = float(damping)
        prev_change = np.inf
        work = _ParallelWork(N, M)
        memory = PARALLEL_ANDERSON_MEMORY if anderson is None else int(anderson)
        accel = _Anderson(N, memory) if memory > 0 else None
        with single_threaded_blas():     # the phases call BLAS on every Numba thread
            for sweep in range(1, max_sweeps + 1):
                prev_change, delta = _parallel_step(prior, y, bias, tau, nu, post, work, delta,
                                                    prev_change, damping, accel)
                # Converged when the undamped residual of the fixed-point map is below tol:
                # the damped step alone could be small just because the step size is.
                max_change = prev_change
                if sweep == 1:
                    tol = _stop_tol(tol, rtol, tol_max, max_change)
                if max_change < tol:
                    converged = True
                    break
    res.tau, res.nu, res.post = tau, nu, post
    res.n_sweeps, res.converged, res.max_change = sweep, converged, max_change
    return res


def log_evidence(prior, y, bias, tau, nu, post):
    """EP log-evidence log Z_EP in O(NM^2) (notes §1.8) and d log Z_EP / d bias (§1.9 step 6).

    Returns ``(log_z, dlog_z_dbias, extras)`` where ``extras`` holds the marginals and cavities.
    """
    diag_a, h = _marginals(post)
    _, _, log_z, dlog_z, cav_tau, cav_nu = _site_targets(y, tau, nu, diag_a, h, bias)
    ok = cav_tau > 0.0
    tc = np.where(ok, cav_tau, 1.0)
    nc = np.where(ok, cav_nu, 0.0)
    term_sites = float(np.sum(log_z[ok]))
    logdet = float(np.sum(np.log1p(tau * prior.d0))) + post.logdet_S
    r = post.R @ post.b  # R P^T nu = R V b~ for a refreshed posterior
    quad = float(np.sum(post.d * nu * nu) + r @ r)
    ratio = np.log1p(tau / tc)
    rest = (tau * nc * nc / tc - 2.0 * nc * nu - nu * nu) / (tc + tau)
    value = (term_sites - 0.5 * logdet + 0.5 * float(np.sum(ratio[ok])) + 0.5 * quad
             + 0.5 * float(np.sum(rest[ok])))
    return value, float(np.sum(dlog_z[ok])), (diag_a, h)


def log_evidence_gradient(prior, tau, nu, post):
    """Gradient of log Z_EP w.r.t. s2, per-dimension l (D,) and Z (M, D) (notes §1.9).

    Uses the effective Gaussian-likelihood identity (step 0) with the sites fixed; O(NM^2)
    time and O(NM) memory. The adjoints of K_uf and K_uu are contracted with the derivatives
    of the prior's stationary family (``prior.family``); every family is s2 times a function
    of the scaled distance, so the variance derivative is the same contraction with K / s2.
    ``post`` must be a refresh at (tau, nu) (as :func:`run_ep` returns it); the marginal
    pieces the evidence computed on it are reused. Returns
    ``(d_variance, d_lengthscale (D,), d_Z (M, D))``, then ``d_bias_variance`` when the prior
    has a bias variance v_b (every entry's derivative by it is one: the sum of the adjoints).

    Whitened form (V = L^{-1} K_uf, S = I + V Omega V^T = (R^T R)^{-1}, Omega = diag(omega)):
    (K~ + S~)^{-1} = Omega - Omega V^T S^{-1} V Omega, so alpha = b~ - omega * (V^T gamma) and
    its diagonal kappa = omega - omega^2 ||R v_n||^2 come from the marginals' pieces. With
    a = V alpha and g = (alpha^2 - kappa) / 2, step 4's Psi G_hat (Psi = L^{-T} V) collapses,
    through V Omega V^T = S - I, to

        dL/dK_uf = L^{-T} H,  H = a alpha^T - S^{-1} V Omega - 2 V diag(g),
        dL/dK_uu = -1/2 L^{-T} (a a^T - I + S^{-1} - 2 V diag(g) V^T) L^{-1},

    so the whole gradient is three TRMMs and one weighted Gram (a SYRK) over the rows of V
    (:func:`sparsegp._numba.ep_fitc_gradient.evidence_gradient_split`), each a block at a time.
    """
    c2, vg = _marginal_parts(post)
    omega = post.omega
    alpha = post.btil - omega * vg  # (K~ + S~)^{-1} mu~
    kappa = omega - omega * omega * c2  # diag (K~ + S~)^{-1}
    g = 0.5 * (alpha * alpha - kappa)
    # V diag(g) V^T = (W^T W - (S - I)) / 2 with W = diag(alpha^2 + omega^2 c2)^(1/2) V^T:
    # one symmetric rank-k update instead of a general product (S - I = V Omega V^T is the
    # refresh's)
    wg = np.sqrt(alpha * alpha + omega * omega * c2)
    a = prior.Vt.T @ alpha
    s2 = prior.variance
    Gd = deriv_factor(prior.X, prior.Z, prior.Kfu_s, prior.family, s2, prior.lengthscale)
    N, M = prior.Vt.shape
    gl1, gz1, gram = np.zeros(prior.X.shape[1]), np.zeros(prior.Z.shape), np.zeros((M, M))
    with _row_split_blas():
        wk = _row_pass(_grad.evidence_gradient_rows, _grad.evidence_gradient_split, N,
                       prior.Vt, np.ascontiguousarray(post.R.T), prior.Linv, alpha, omega, g, wg, a,
                       prior.Kfu_s, Gd, prior.X, prior.Z, prior.lengthscale, gl1, gz1, gram)
    _mirror_upper(gram)
    # a a^T - I + S^{-1} - 2 V diag(g) V^T
    inner = np.outer(a, a) + post.R.T @ post.R - gram + post.S
    inner.flat[::inner.shape[0] + 1] -= 2.0
    G_uu = -0.5 * (prior.Linv.T @ inner @ prior.Linv)
    G_uu = 0.5 * (G_uu + G_uu.T)
    if prior.bias_variance is None:
        d_var = (wk + variance_gradient(G_uu, prior.Kuu) + s2 * float(np.sum(g))) / s2
    else:
        # K_uu = K_zz,s + v_b + jitter s2 I: only the stationary part and the jitter scale
        # with s2
        d_var = (wk + variance_gradient(G_uu, prior.Kzz_s)) / s2 + float(np.sum(g)) \
            + prior.jitter * float(np.trace(G_uu))
    gl2, gz2 = grad_contract(prior.Z, prior.Z, prior.Kzz_s, G_uu, prior.family, s2,
                             prior.lengthscale, symmetric=True)
    if prior.bias_variance is None:
        return d_var, gl1 + gl2, gz1 + gz2
    # sum of dL/dK_fu = L^-T H: (H 1)^T (L^-1 1), H 1 = a sum(alpha) - S^-1 V omega - 2 V g
    h1 = a * float(np.sum(alpha))
    h1 -= post.R.T @ (post.R @ (prior.Vt.T @ omega))
    h1 -= prior.Vt.T @ (2.0 * g)
    d_vb = float(h1 @ (prior.Linv @ np.ones(M))) + float(np.sum(G_uu)) + float(np.sum(g))
    return d_var, gl1 + gl2, gz1 + gz2, d_vb


def zero_site_log_evidence(y, bias, variance):
    """log Z_EP at tau = nu = 0: sum_n log Phi(y_n beta / sqrt(1 + s2)) (notes §1.8)."""
    return float(np.sum(log_ndtr_vec(y * bias / math.sqrt(1.0 + variance))))


def fit_ep(prior, y, bias, tau0=None, nu0=None, **ep_kw):
    """EP with the GPML warm-start safeguard (notes §1.6); returns ``(res, log_z, dbias)``.

    If a warm start ends at a lower evidence than the zero-site value, EP is rerun from zero.
    """
    res = run_ep(prior, y, bias, tau0, nu0, **ep_kw)
    lz, db, _ = log_evidence(prior, y, bias, res.tau, res.nu, res.post)
    if tau0 is not None and not (lz >= zero_site_log_evidence(y, bias, prior.prior_variance)):
        res = run_ep(prior, y, bias, None, None, **ep_kw)
        lz, db, _ = log_evidence(prior, y, bias, res.tau, res.nu, res.post)
    return res, lz, db
