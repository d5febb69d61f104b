"""Assumed-density-filtering (ADF) core of the informative vector machine (seed 003, notes §2).

This module is shared by :class:`sparsegp.IVMClassifier` (seed 003) and the stagewise classifier
of seed 004 (notes §3), which includes sites chosen by another rule through the same kernels.

Model
-----
Prior f ~ N(0, K) with K = s2 g(r^2) + v_b (a stationary kernel of
:mod:`sparsegp._numba.covfuncs`, SE g = exp(-r^2/2) by default, plus the constant
``bias_variance`` v_b of notes §2.7); likelihood Phi(y (f + b)). After including the active
set I (in order i_0, i_1, ..., i_{k-1}) with Gaussian sites exp(-p_i (f_i - m_i)^2 / 2) the
posterior is N(h, A), A = (K^-1 + Pi)^-1, h = A Pi m, represented without any n x n matrix as

    B = I + S K_II S = L L^T        (S = Pi_I^(1/2), L lower, k x k)
    M = L^-1 S K_I.                 (k x n)
    A = K - M^T M,   diag A = diag K - colsum(M^2),   h = sum_r g_r M[r, :]

State layout (allocated once by :func:`new_state`; all C-contiguous, modified in place)
-------------------------------------------------------------------------------------
=============  ====================  ======================================================
field          shape, dtype          meaning
=============  ====================  ======================================================
``Mt``         (n, d_max) float64    M transposed: ``Mt[j, r]`` = M[r, j]; row j of ``Mt`` is
                                     column j of M, so every per-point dot product is
                                     contiguous (notes §2.9 layout hint)
``L``          (d_max, d_max) f8     lower Cholesky factor of B; rows >= k are unused
``diag_A``     (n,) float64          posterior marginal variances a_jj (clamped at >= 0)
``h``          (n,) float64          posterior marginal means h_j (latent, without the bias b)
``count``      (n,) int64            rows of column j of M that are computed; ``diag_A[j]`` and
                                     ``h[j]`` are exact for the first ``count[j]`` inclusions.
                                     Columns with ``count[j] < k`` are *lagging* (delayed
                                     updates, notes §2.4); :func:`adf_catch_up` brings them
                                     up to date.
``active``     (d_max,) int64        ``active[r]`` = index of the r-th included point
``sqrt_p``     (d_max,) float64      sqrt of the site precision p of row r
``site_mean``  (d_max,) float64      site mean m of row r
``g``          (d_max,) float64      mean step of row r: h += g_r * M[r, :]
                                     (g_r = alpha~_r / sqrt(eta_r), 0 when p_r = 0)
``is_active``  (n,) bool             True for included points
``k``          (1,) int64            number of inclusions so far (``k[0]``)
=============  ====================  ======================================================

:class:`ADFState` is a ``NamedTuple`` of exactly these fields in this order, so Python code
calls the kernels as ``adf_include(X, variance, lengthscale, bias_variance, *state, i, p, m,
cols, work)``.

Contract (for the IVM and for the stagewise classifier of seed 004)
------------------------------------------------------------------
* Kernel parameters ``(X, variance, lengthscale, bias_variance)`` lead every kernel that
  needs kernel values: ``X`` (n, D) C-contiguous float64, ``variance`` s2 > 0,
  ``lengthscale`` (D,) float64 (isotropic models repeat one value), ``bias_variance`` v_b >= 0.
  The stationary family is the trailing optional argument ``family`` (an int code of
  :mod:`sparsegp._numba.covfuncs`: 0 SE, the default, 1/2/3 Matérn 1/2, 3/2, 5/2); it is last
  so that calls written for the SE-only core keep their meaning. Every call on one state must
  pass the same family. The kernel column k(X, x_i) + v_b is computed inside (O(n D));
  nothing n x n is formed.
  Changing any kernel parameter invalidates the state: call :func:`reset_state`.
* Site parameters are ARBITRARY: :func:`adf_include` / :func:`adf_include_column` take any
  (p_i >= 0, m_i). The moment-matched ADF values of seed 003 eq. 2 come from
  :func:`probit_site` (h_i, a_ii, y_i, b) -> (p, m, alpha, nu, log_z); seed 004's
  site-parameter optimisation may pass its own.
* ``cols`` (int64 array) lists the columns (data points) whose M entries, ``diag_A`` and ``h``
  an inclusion must update. Pass ``np.arange(n)`` for the exact full posterior (full greedy
  selection, the stagewise classifier); pass the selection index J for the randomized greedy
  scheme, leaving the other columns lagging. Every kernel first catches up the columns it
  touches, so a lagging column is never used stale.
* Costs: :func:`adf_include` O(|cols| (k + D)) plus catch-up work; each (row, column) entry of M
  is computed at most once over a whole run, so full greedy costs O(n d^2) in total.
* Look-ahead (seed 004 eq. 7): :func:`adf_cov_column` gives A[:, i] (= k~_{., i}) for the
  columns in ``cols`` without changing the posterior; a candidate's effect on the posterior is
  h' = h + alpha~ A[:, i], diag A' = diag A - eta A[:, i]^2 with eta = p / (1 + p a_ii),
  alpha~ = eta (m - h_i) (:func:`site_step`). Having chosen i, pass the same column to
  :func:`adf_include_column` to avoid recomputing it.
* Inclusion of an already included point, or beyond ``d_max``, is the caller's error; the
  kernels return ``-1.0`` for eta in that case and change nothing.
* ``cols`` must hold unique indices (columns are updated concurrently). Column passes run
  multi-threaded only above ``PARALLEL_MIN_WORK`` flops; on a heavily shared machine set
  ``NUMBA_NUM_THREADS=1`` (and ``OPENBLAS_NUM_THREADS=1``): over-subscribed threads cost far more
  than they save.
* BLAS fast path for full columns (every column current, e.g. full greedy):
  :func:`cov_column_blas` with :func:`scaled_inputs` replaces :func:`adf_cov_column`; then call
  :func:`adf_include_column` as usual.
* One-call moment-matched inclusion: :func:`adf_include_probit` (catch-up of column i,
  :func:`probit_site`, :func:`adf_include`). :func:`active_sites` copies out (active, p, m, L).

References: seed 003 eqs. 2-3; seed 004 eqs. 2-3 and 7; notes §2.1, §2.2, §2.4, §2.9, §3.2.
"""
import math
from typing import NamedTuple

import numba
import numpy as np

from ._jit import jit
# scaled_inputs is the precomputation of cov_column_blas's callers, kept importable from here
from .covfuncs import SE, gram_column, gram_columns, pair_value, scaled_inputs  # noqa: F401
from .ep import marginal_step, site_target
from .probit import probit_tilted
from .._config import ADF_PARALLEL_MIN_WORK as PARALLEL_MIN_WORK

#: flops :func:`_column_pass` counts per column of an inclusion's append pass
APPEND_WORK = 8


class ADFState(NamedTuple):
    """The in-place state of the ADF core (see the module docstring for every field)."""

    Mt: np.ndarray
    L: np.ndarray
    diag_A: np.ndarray
    h: np.ndarray
    count: np.ndarray
    active: np.ndarray
    sqrt_p: np.ndarray
    site_mean: np.ndarray
    g: np.ndarray
    is_active: np.ndarray
    k: np.ndarray


def new_state(n, d_max, variance, bias_variance=0.0):
    """Allocate an empty state (prior: h = 0, diag A = s2 + v_b) for n points, d_max sites.

    The ``Mt`` buffer (n * d_max float64) dominates the memory, as in seed 003 §3; it is
    allocated with ``np.empty`` so pages are touched only as rows are filled.
    """
    state = ADFState(
        Mt=np.empty((n, d_max)),
        L=np.zeros((d_max, d_max)),
        diag_A=np.empty(n),
        h=np.empty(n),
        count=np.empty(n, dtype=np.int64),
        active=np.empty(d_max, dtype=np.int64),
        sqrt_p=np.empty(d_max),
        site_mean=np.empty(d_max),
        g=np.empty(d_max),
        is_active=np.empty(n, dtype=np.bool_),
        k=np.zeros(1, dtype=np.int64),
    )
    return reset_state(state, variance, bias_variance)


def reset_state(state, variance, bias_variance=0.0):
    """Empty the active set of ``state`` in place (prior of the given kernel); returns it."""
    state.diag_A[:] = float(variance) + float(bias_variance)
    state.h[:] = 0.0
    state.count[:] = 0
    state.is_active[:] = False
    state.k[0] = 0
    state.L[:] = 0.0
    state.active[:] = -1
    return state


def active_sites(state):
    """Copies of (active indices, site precisions p, site means m, L[:k, :k]) of a state."""
    k = int(state.k[0])
    return (state.active[:k].copy(), state.sqrt_p[:k] ** 2, state.site_mean[:k].copy(),
            state.L[:k, :k].copy())


def cov_column_blas(Xs, sq_norms, variance, bias_variance, state, i, out, family=SE):
    """BLAS fast path of :func:`adf_cov_column` for ALL n columns: ``out = A[:, i]``, (n,).

    Requires every column to be up to date (``state.count == state.k[0]``, as in full greedy
    selection); ``Xs, sq_norms`` from :func:`scaled_inputs`; ``family`` a stationary family
    code (SE by default). For SE the kernel column uses |a - b|^2 = |a|^2 + |b|^2 - 2 a.b
    (one gemv) and M^T M[:, i] is one gemv on the strided ``Mt[:, :k]``; both run at memory
    bandwidth, about twice the compiled loop's speed at n = 60 000. Round-off differs from
    the compiled path at the 1e-15 level.

    The Matérn families take their kernel column from explicit differences
    (:func:`sparsegp._numba.covfuncs.scaled_column`) instead: Matérn 1/2 depends on
    r = sqrt(q), which turns the ~1e-16 cancellation error of the gemv form at (near-)coincident
    points into ~1e-8. Both forms are :func:`sparsegp._numba.covfuncs.gram_column`.
    """
    k = int(state.k[0])
    gram_column(Xs, sq_norms, i, family, float(variance), out)
    out += bias_variance
    if k:
        out -= state.Mt[:, :k] @ state.Mt[i, :k]
    return out


#: fewest columns for which :func:`cov_columns_blas` forms them by GEMM (measured crossover
#: 4-8 at n = 4 000, k = 80-320, D = 2-20)
BATCH_COLUMNS = 8


def cov_columns_blas(Xs, sq_norms, variance, bias_variance, state, idx, out, family=SE):
    """:func:`cov_column_blas` for several columns at once: ``out[c] = A[:, idx[c]]``.

    ``out`` (at least len(idx), n) C-contiguous, rows filled. From :data:`BATCH_COLUMNS`
    columns on, the products with ``Xs`` and ``Mt[:, :k]`` become two GEMMs that read those
    (n, .) arrays once for all the columns, where one gemv per column reads them once per
    column (the stagewise validation rule asks for 59 per inclusion: 9.7 against 20 ms at
    n = 4 000, k = 320, one thread); round-off then differs from the one-column path at the
    1e-16 level (blocked sums). Fewer columns take :func:`cov_column_blas` one at a time: the
    GEMM packs Mt first, which costs more than it saves below 8 columns (2 columns at
    k = 320: 1.3 against 0.55 ms).
    """
    k = int(state.k[0])
    c = len(idx)
    rows = out[:c]
    if c < BATCH_COLUMNS:
        for r in range(c):
            cov_column_blas(Xs, sq_norms, variance, bias_variance, state, idx[r], rows[r],
                            family)
        return rows
    gram_columns(Xs, sq_norms, idx, family, float(variance), rows)
    rows += bias_variance
    if k:
        Mk = state.Mt[:, :k]
        rows -= Mk[idx] @ Mk.T
    return rows


# ------------------------------------------------------------------------------------------
# moment matching and site algebra (O(1))


@jit
def probit_site(y_i, h_i, a_ii, bias):
    """Moment-matched ADF site for including point i (seed 003 eq. 2, notes §2.1).

    The cavity of an ADF inclusion is the current marginal N(h_i, a_ii) (site i is still 0).

    Returns
    -------
    p : float
        Site precision nu / (1 - a_ii nu) >= 0 (0 when nu underflows, i.e. the point is
        classified with certainty and its site carries no information).
    m : float
        Site mean h_i + alpha / nu (h_i when p = 0).
    alpha, nu : float
        d log Z / d h_i and -d^2 log Z / d h_i^2 of Z = E[Phi(y_i (f_i + b))] (notes §0.4).
    log_z : float
        log Phi(y_i (h_i + b) / sqrt(1 + a_ii)).
    """
    log_z, alpha, nu = probit_tilted(y_i, h_i, a_ii, bias)
    # ADF: the site is still zero, so the cavity is the marginal itself (ep.cavity would
    # return it unchanged); p = 0 when nu underflows and the site carries no information
    p, pm, ok = site_target(h_i, a_ii, alpha, nu)
    if not (ok and p > 0.0):
        return 0.0, h_i, alpha, 0.0, log_z
    return p, pm / p, alpha, nu, log_z


@jit
def site_step(p_i, m_i, h_i, a_ii):
    """(eta, alpha~) of including a site (p_i, m_i) at a point with marginal (h_i, a_ii).

    eta = p / (1 + p a_ii), alpha~ = eta (m - h_i); the posterior moves by
    h += alpha~ A[:, i], A -= eta A[:, i] A[i, :] (seed 004 eq. 7, notes §3.2). With the
    moment-matched site of :func:`probit_site`, eta = nu and alpha~ = alpha exactly.
    """
    # the site goes from 0 to natural parameters (p, p m): ep.marginal_step's (c, g); p >= 0
    # keeps its denominator >= 1
    eta, alpha_t, _ = marginal_step(p_i, p_i * m_i, h_i, a_ii)
    return eta, alpha_t


# ------------------------------------------------------------------------------------------
# small leaves


@jit
def _dot(a, b, n):
    """sum_{q < n} a[q] b[q] with four partial sums (breaks the add latency chain)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    q = 0
    while q + 4 <= n:
        s0 += a[q] * b[q]
        s1 += a[q + 1] * b[q + 1]
        s2 += a[q + 2] * b[q + 2]
        s3 += a[q + 3] * b[q + 3]
        q += 4
    while q < n:
        s0 += a[q] * b[q]
        q += 1
    return (s0 + s1) + (s2 + s3)


@jit
def kernel_value(X, a, b, family, variance, inv_ls, bias_variance):
    """k(x_a, x_b) + v_b (:func:`sparsegp._numba.covfuncs.pair_value`); ``inv_ls`` = 1 / l."""
    return pair_value(X, a, b, family, variance, inv_ls) + bias_variance


@jit
def _catch_up_one(j, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h, count,
                  active, sqrt_p, g, k):
    """Bring column j of M (and diag_A[j], h[j]) from ``count[j]`` rows to k rows.

    Row r is forward substitution in L M = S K_I. (notes §2.4):
    M[r, j] = (sqrt(p_r) k(x_j, x_{i_r}) - sum_{q<r} L[r, q] M[q, j]) / L[r, r].
    """
    c = count[j]
    if c >= k:
        return
    da = diag_A[j]
    hj = h[j]
    for r in range(c, k):
        kv = kernel_value(X, j, active[r], family, variance, inv_ls, bias_variance)
        mu = (sqrt_p[r] * kv - _dot(L[r], Mt[j], r)) / L[r, r]
        Mt[j, r] = mu
        da -= mu * mu
        hj += g[r] * mu
    # Marginal variances are >= 0 in exact arithmetic; round-off can cross zero after many
    # subtractions (seed 004 §3 remarks on it), so clamp.
    diag_A[j] = da if da > 0.0 else 0.0
    h[j] = hj
    count[j] = k


@jit
def _append_entry(j, r, mu, g_r, Mt, diag_A, h, count):
    """Write M[r, j] = mu and apply its rank-one effect on column j (eq. 3)."""
    Mt[j, r] = mu
    da = diag_A[j] - mu * mu
    diag_A[j] = da if da > 0.0 else 0.0
    h[j] += g_r * mu
    count[j] = r + 1


_OP_CATCH_UP = 0
_OP_COV = 1
_OP_APPEND = 2


@jit
def _column_op(op, j, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h, count,
               active, sqrt_p, g, kk, i, vec, s_eta, g_k):
    """The per-column work of the three passes (each column j independent of the others)."""
    if op == _OP_APPEND:
        if count[j] == kk:
            _append_entry(j, kk, s_eta * vec[j], g_k, Mt, diag_A, h, count)
        return
    _catch_up_one(j, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h, count,
                  active, sqrt_p, g, kk)
    if op == _OP_COV:
        vec[j] = (kernel_value(X, j, i, family, variance, inv_ls, bias_variance)
                  - _dot(Mt[j], Mt[i], kk))


@jit(parallel=True)
def _pass_parallel(op, cols, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h,
                   count, active, sqrt_p, g, kk, i, vec, s_eta, g_k):
    for t in numba.prange(cols.shape[0]):
        _column_op(op, cols[t], X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h,
                   count, active, sqrt_p, g, kk, i, vec, s_eta, g_k)


@jit
def _column_pass(op, cols, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h,
                 count, active, sqrt_p, g, kk, i, vec, s_eta, g_k):
    """Apply ``op`` to every column in ``cols`` (unique indices), threaded if large."""
    if op == _OP_APPEND:
        work = APPEND_WORK * cols.shape[0]
    else:
        # catch-up rows cost k + D each; the covariance entry one more such row
        rows = 0
        for t in range(cols.shape[0]):
            rows += kk - count[cols[t]]
        if op == _OP_COV:
            rows += cols.shape[0]
        work = rows * (kk + X.shape[1])
    if work >= PARALLEL_MIN_WORK:
        _pass_parallel(op, cols, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h,
                       count, active, sqrt_p, g, kk, i, vec, s_eta, g_k)
        return
    for t in range(cols.shape[0]):
        _column_op(op, cols[t], X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h,
                   count, active, sqrt_p, g, kk, i, vec, s_eta, g_k)


# ------------------------------------------------------------------------------------------
# public kernels


@jit
def adf_catch_up(X, variance, lengthscale, bias_variance, Mt, L, diag_A, h, count, active,
                 sqrt_p, site_mean, g, is_active, k, cols, family=SE):
    """Bring every column listed in ``cols`` (int64 (c,), unique) up to the current k.

    Afterwards ``diag_A[cols]`` and ``h[cols]`` are the exact current posterior marginals.
    Each (row, column) entry is computed once over a run (delayed updates, notes §2.4).
    O(sum over cols of (k - count[j]) (k + D)); multi-threaded over columns when large.
    """
    _column_pass(_OP_CATCH_UP, cols, X, family, variance, 1.0 / lengthscale, bias_variance, Mt,
                 L, diag_A, h, count, active, sqrt_p, g, k[0], 0, diag_A, 0.0, 0.0)


@jit
def adf_cov_column(X, variance, lengthscale, bias_variance, Mt, L, diag_A, h, count, active,
                   sqrt_p, site_mean, g, is_active, k, i, cols, out, family=SE):
    """Posterior covariance column: ``out[j] = A[j, i]`` for every j in ``cols``.

    A[j, i] = K[j, i] - sum_r M[r, j] M[r, i] (= k~_{j,i} of seed 004 eq. 7); column i and
    the columns in ``cols`` (unique indices) are caught up first (which changes no posterior
    value, only fills the lagging rows of M). Entries of ``out`` outside ``cols`` are not
    touched. ``out`` has shape (n,) and is returned. O(|cols| (k + D)) plus catch-up.
    """
    kk = k[0]
    inv_ls = 1.0 / lengthscale
    _catch_up_one(i, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h, count,
                  active, sqrt_p, g, kk)
    _column_pass(_OP_COV, cols, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h,
                 count, active, sqrt_p, g, kk, i, out, 0.0, 0.0)
    return out


@jit
def adf_include_column(Mt, L, diag_A, h, count, active, sqrt_p, site_mean, g, is_active, k,
                       i, p_i, m_i, acol, cols):
    """Include point i with site (p_i, m_i), given its covariance column ``acol`` = A[:, i].

    ``acol`` (n,) must hold A[j, i] for every j in ``cols`` and for j = i, computed from the
    current state (:func:`adf_cov_column` with the same ``cols``); every column in ``cols``
    and column i must be up to date (they are, right after that call). Appends row k of L,
    [sqrt(p) M[:, i]^T, sqrt(1 + p a_ii)], and row k of M, mu = sqrt(eta) A[:, i]
    (seed 003 eq. 3 with mu = sqrt(nu) A[:, i], notes §2.2), then for j in ``cols``:
    diag_A[j] -= mu_j^2, h[j] += alpha~ A[j, i]. Columns outside ``cols`` lag by one row.

    Returns
    -------
    eta, alpha_tilde : float
        :func:`site_step` of the inclusion; ``(-1.0, 0.0)`` (and nothing changed) when i is
        already active, the buffer is full, column i is stale or p_i < 0 / not finite.
    """
    kk = k[0]
    if (is_active[i] or kk >= L.shape[0] or count[i] != kk or not (p_i >= 0.0)
            or not math.isfinite(p_i) or not math.isfinite(m_i)):
        return -1.0, 0.0
    a_ii = diag_A[i]
    h_i = h[i]
    eta, alpha_t = site_step(p_i, m_i, h_i, a_ii)
    sp = math.sqrt(p_i)
    lam = math.sqrt(1.0 + p_i * a_ii)
    for q in range(kk):
        L[kk, q] = sp * Mt[i, q]
    L[kk, kk] = lam
    se = math.sqrt(eta)
    # h += alpha~ A[:, i] = (alpha~ / sqrt(eta)) mu; a zero site leaves h unchanged
    gk = alpha_t / se if eta > 0.0 else 0.0
    active[kk] = i
    sqrt_p[kk] = sp
    site_mean[kk] = m_i
    g[kk] = gk
    is_active[i] = True
    # the append pass touches only Mt, diag_A, h, count (X, L, ... are placeholders)
    _column_pass(_OP_APPEND, cols, L, SE, 0.0, L[0], 0.0, Mt, L, diag_A, h, count, active,
                 sqrt_p, g, kk, i, acol, se, gk)
    if count[i] == kk:  # i not in cols: still write its own row entry (cheap, O(1))
        _append_entry(i, kk, se * acol[i], gk, Mt, diag_A, h, count)
    k[0] = kk + 1
    return eta, alpha_t


@jit
def adf_include(X, variance, lengthscale, bias_variance, Mt, L, diag_A, h, count, active,
                sqrt_p, site_mean, g, is_active, k, i, p_i, m_i, cols, work, family=SE):
    """Include point i with site (p_i, m_i) into the active set, updating ``cols``.

    :func:`adf_cov_column` into ``work`` ((n,) scratch, overwritten) followed by
    :func:`adf_include_column`; O(|cols| (k + D)) plus catch-up. Use ``cols = arange(n)``
    for the exact posterior everywhere. For the moment-matched ADF site of seed 003 eq. 2,
    first catch up column i and take ``p_i, m_i`` from
    ``probit_site(y[i], h[i], diag_A[i], bias)``.

    Returns
    -------
    eta, alpha_tilde : float
        As :func:`adf_include_column` (eta = -1.0 when the inclusion was refused).
    """
    kk = k[0]
    if is_active[i] or kk >= L.shape[0]:
        return -1.0, 0.0
    adf_cov_column(X, variance, lengthscale, bias_variance, Mt, L, diag_A, h, count, active,
                   sqrt_p, site_mean, g, is_active, k, i, cols, work, family)
    # A[i, i] itself (cols may not contain i); identical to diag_A[i] up to round-off
    work[i] = diag_A[i]
    return adf_include_column(Mt, L, diag_A, h, count, active, sqrt_p, site_mean, g,
                              is_active, k, i, p_i, m_i, work, cols)


@jit
def adf_include_probit(X, variance, lengthscale, bias_variance, Mt, L, diag_A, h, count,
                       active, sqrt_p, site_mean, g, is_active, k, i, y_i, bias, cols, work,
                       family=SE):
    """Moment-matched ADF inclusion of point i with label y_i in {-1, +1} (seed 003 eqs. 2-3).

    Catches up column i, computes (p, m) by :func:`probit_site` from its current marginal,
    and calls :func:`adf_include`. Returns ``(p, m, log_z)``; ``p = -1.0`` when refused.
    """
    kk = k[0]
    if is_active[i] or kk >= L.shape[0]:
        return -1.0, 0.0, 0.0
    inv_ls = 1.0 / lengthscale
    _catch_up_one(i, X, family, variance, inv_ls, bias_variance, Mt, L, diag_A, h, count,
                  active, sqrt_p, g, kk)
    p, m, alpha, nu, log_z = probit_site(y_i, h[i], diag_A[i], bias)
    adf_include(X, variance, lengthscale, bias_variance, Mt, L, diag_A, h, count, active,
                sqrt_p, site_mean, g, is_active, k, i, p, m, cols, work, family)
    return p, m, log_z
