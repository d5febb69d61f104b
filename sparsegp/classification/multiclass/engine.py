"""The multi-class EP/SEP engine (Villacampa-Calvo & Hernández-Lobato 2017, seed 002;
derivations in ../shared/notes/multiclass_ep.md): the maths that the in-memory estimator and
the Dask driver (:mod:`sparsegp.distributed`) both run.

Model (notes §1): C independent latent functions with per-class stationary kernels (SE-ARD
by default; amplitude, length-scales, additive noise), M inducing points per class whose
values u_c are *kept* in the model (not marginalised), the FITC conditional
p(f_ic | u_c) = N(v_ic^T u_c, d_ic) and the pairwise-probit approximation (eq. 6) of the
likelihood factor: N (C - 1) factors
phi_ik = Phi((v_{i,y_i}^T u_{y_i} - v_ik^T u_k) / sqrt(d_{i,y_i} + d_ik)).

Sites (notes §2.1) are rank-one along each factor's FITC direction. Their u-space totals are
kept per class as a natural-parameter pair (T_c, h_c): the posterior is
q(u_c) = N(m_c, S_c) with S_c^{-1} = K_c^{-1} + T_c and m_c = S_c h_c (eq. 24-27), computed in
the stable form S_c = L (I + L^T T_c L)^{-1} L^T with K_c = L L^T.

* ``method="ep"``: per-factor sites (four scalars per point and class) plus the direction each
  was fitted with; memory O(N C M).
* ``method="sep"``: one tied site per class, (T_c, h_c) itself (notes §2.7); memory O(C M^2).

Interface, by layer (the state and the gradient in modules of their own):

* state, in :mod:`.ep_state`: :class:`.kernel.ClassParams` (hyper-parameters and Z, the one
  parameter vector), :class:`~.ep_state.Prior` (K_c and its factors),
  :class:`~.ep_state.Gaussian` (q(u_c) or a cavity), :class:`~.ep_state.EPState` (the
  sites); here :class:`EPFailure`;
* rows (sums over rows, so a data set's chunks can be taken apart and added):
  :func:`.ep_state.data_terms`, :func:`factor_pass`, :func:`sep_row_totals`,
  :func:`ep_row_refine`, :func:`row_evidence`, :func:`minibatch_update`;
* globals (O(C M^3)): :func:`.ep_state.posterior`, :func:`.ep_state.sep_cavity`,
  :func:`ep_update`, :func:`sep_update`, :func:`evidence_from_rows`;
* the gradient of log Z_EP (notes §4), rows' part and K_c part: :mod:`.ep_gradient`;
* whole data sets: :func:`batch_refine`, :func:`batch_evidence`, :func:`converge_ep`,
  :func:`fixed_site_evidence`, and :class:`LocalRows`, the rows of a fit in this process.

Training (in :mod:`._ep`) is EP-inner by default (notes §5): every iteration refines all
factors of the batch in parallel (one compiled kernel,
:func:`sparsegp._numba.multiclass.factor_pass`) and then takes one gradient step on the
hyper-parameters and inducing inputs with the approximate gradient of log Z_EP (eq. 10,
notes §4), held at the current sites. The paper's two other schedules (Figure 1) are
options: EP-inner with the exact gradient at the current sites
(:func:`.ep_gradient._moment_mismatch` gives what eq. 10 drops away from a fixed point) and
EP-outer (EP to convergence before each step).
"""
import numpy as np

from ..._numba import multiclass as _nbmc
from ..._optimize import EvaluationFailure
from ..._inducing_base import take_rows
from ..._config import MC_PARALLEL_WORK as _PARALLEL_WORK
from ..._config import MC_EVIDENCE_BLOCK as _EVIDENCE_BLOCK
from . import kernel as _k
from .ep_gradient import (
    _hyper_gradient,
    _kuu_gradient,
    _mismatch_weight,
    _moment_mismatch,
    _prior_gradient,
    _row_gradient,
)
from .ep_state import (
    EPState,
    Gaussian,
    Prior,
    _matmul,
    data_terms,
    posterior,
    sep_cavity,
    site_totals,
    u_space,
    zero_sites,
)
from .likelihood import class_counts_factors
from .rows import iter_minibatches


class PassResult:
    """Outputs of one call of the compiled factor pass.

    The pass writes every entry of every output on a row it completes, and a row it cannot
    complete sets ``status``, which :func:`factor_pass` raises on; so the outputs are left
    uninitialised (zeroing GV, (C, B, M), cost 2 % of a Satellite SEP fit).
    """

    def __init__(self, B, C, M, compute_grad):
        self.new = [np.empty((B, C)) for _ in range(4)]
        self.log_z = np.empty(B)
        self.delta = np.empty(B)
        self.GV = np.empty((C, B, M)) if compute_grad else np.zeros((C, 1, 1))
        self.wsum = np.empty((B, C)) if compute_grad else np.zeros((1, 1))
        self.status = np.zeros(B, dtype=np.int64)


def factor_pass(y, V, Vo, Kfu, d, S, m, sites, same_dirs, compute_grad):
    B = y.shape[0]
    C, _, M = V.shape
    out = PassResult(B, C, M, compute_grad)
    tp, ep, tm, em = sites
    # the O(B C M^2) part is two stacked products, left to BLAS; the compiled pass is O(B C M)
    SV = _matmul(V, S)
    SO = SV if same_dirs else _matmul(Vo, S)
    # threads pay off only when the pass has real work
    kernel = (_nbmc.factor_pass_projected if B * C * M >= _PARALLEL_WORK
              else _nbmc.factor_pass_projected_serial)
    kernel(y, V, V if same_dirs else Vo, SV, SO, Kfu, d, m, tp, ep, tm, em,
           out.new[0], out.new[1], out.new[2], out.new[3],
           out.log_z, out.delta, out.GV, out.wsum, out.status,
           bool(same_dirs), bool(compute_grad))
    if np.any(out.status != 0):
        bad = int(np.max(out.status))
        raise EPFailure("improper cavity" if bad == _nbmc.STATUS_IMPROPER_CAVITY
                         else "negative variances")
    return out


class EPFailure(EvaluationFailure):
    """A site update produced an improper cavity or a non-positive variance."""


def sep_row_totals(y, data, cav, C):
    """u-space totals (T, h) of fresh SEP sites of the rows ``y`` against cavity ``cav``.

    A sum over rows: chunks of a data set may be taken apart and their totals added.
    """
    Kfu, V, d = data
    res = factor_pass(y, V, V, Kfu, d, cav.S, cav.m, zero_sites(y.shape[0], C), True, False)
    w_tau, w_eta = site_totals(V, y, C, *res.new)
    return u_space(V, w_tau, w_eta)


def ep_row_refine(y, data, q, sites, Vo, damping):
    """Damped EP refinement of the rows' own sites; returns ``(T, h, change, new_sites)``.

    (T, h) are the u-space totals of the new sites, a sum over rows; ``change`` the largest
    undamped residual |target - current| of a site parameter (the measure of
    :mod:`sparsegp._numba.ep`). Nothing is stored: the caller keeps ``new_sites`` (with the
    current directions V as their new ``Vo``) once the whole posterior is accepted.

    Each factor's cavity is projected on the direction its site was fitted with (``Vo``),
    with the FITC variance d of the current hyper-parameters: the authors' batch code
    (``refineFactors`` of ``epMGPC_batch.R``, notes §2.3); the paper does not say which
    direction a site keeps after a hyper-parameter step. Before the first refinement (every
    stored direction still zero) the sites are uniform and the cavity is the prior (the
    paper's appendix C), projected on the current V; the R code projects on its zero
    directions there instead (a cavity of variance 0). Measured on satellite split 0
    (``figures/multiclass_readings.md``, issue 47): this projection, not the general one
    (v° for the site, v for the factor), is what brings batch EP to the R code's test NLL.
    """
    Kfu, V, d = data
    P = Vo if np.any(Vo) else V
    res = factor_pass(y, P, P, Kfu, d, q.S, q.m, sites, True, False)
    new_sites = tuple(np.empty_like(o, dtype=np.float64) for o in sites)
    change = max(_nbmc.damp_factor_sites(sites[2 * s], sites[2 * s + 1], res.new[2 * s],
                                         res.new[2 * s + 1], float(damping),
                                         new_sites[2 * s], new_sites[2 * s + 1])
                 for s in (0, 1))
    w_tau, w_eta = site_totals(V, y, V.shape[0], *new_sites)
    T, h = u_space(V, w_tau, w_eta)
    return T, h, change, new_sites


def ep_update(prior, state, T, h):
    """Accept the EP site totals (T, h) of every row: raises if q(u) is not PD."""
    q_new = Gaussian(prior.L, T, h)
    state.T, state.h = T, h
    state.posterior = (prior.L, T, h, q_new)


def sep_update(prior, state, T_new, h_new, n_rows_factors, damping):
    """Move SEP's tied sites towards the rows' fresh totals; updates ``state`` in place.

    ``n_rows_factors`` (C,) counts the factors of the rows behind (T_new, h_new): all of them
    in a batch step, a minibatch's otherwise. Returns the largest change of (T, h).
    """
    frac = n_rows_factors / state.n_factors
    T = state.T + damping * (T_new - frac[:, None, None] * state.T)
    h = state.h + damping * (h_new - frac[:, None] * state.h)
    q_new = Gaussian(prior.L, T, h)  # raises if the new posterior is not PD
    change = max(float(np.max(np.abs(T - state.T))), float(np.max(np.abs(h - state.h))))
    state.T, state.h = T, h
    state.posterior = (prior.L, T, h, q_new)
    return change


def row_evidence(X, y, hyp, prior, data, state, q, cav, compute_grad, scale, noise_in_kuu):
    """The rows' part of log Z_EP and of its gradient (a sum over rows, see _row_gradient).

    Returns ``(log_z_rows, grad_rows or None, GVtV or None)``, the likelihood terms already
    multiplied by ``scale``.
    """
    Kfu, V, d = data
    C = hyp.shape[0]
    if state.method == "ep":
        res = factor_pass(y, V, V, Kfu, d, q.S, q.m, state.sites, True, compute_grad)
        log_z = scale * float(np.sum(res.log_z) + np.sum(res.delta))
    else:
        res = factor_pass(y, V, V, Kfu, d, cav.S, cav.m, zero_sites(y.shape[0], C), True,
                           compute_grad)
        log_z = scale * float(np.sum(res.log_z))
    if not compute_grad:
        return log_z, None, None
    grad, GVtV = _row_gradient(X, hyp, prior, Kfu, V, res, scale, noise_in_kuu)
    return log_z, grad, GVtV


def evidence_from_rows(hyp, prior, state, q, cav, log_z_rows, grad_rows, GVtV, noise_in_kuu,
                       W_extra=None):
    """log Z_EP and its gradient from the rows' parts plus the global terms (notes §3-4).

    ``W_extra``: the exact gradient's moment-mismatch weight (:func:`_mismatch_weight`),
    optional.
    """
    log_z = log_z_rows + float(np.sum(q.log_norm_minus_prior()))
    if state.method != "ep":
        g_cav_minus_q = (0.5 * (q.logdet_P - cav.logdet_P)
                         + 0.5 * np.einsum("ci,ci->c", cav.h, cav.m)
                         - 0.5 * np.einsum("ci,ci->c", q.h, q.m))
        log_z += float(np.sum(state.n_factors * g_cav_minus_q))
    grad = None
    if grad_rows is not None:
        grad = grad_rows + _prior_gradient(hyp, prior, q, GVtV, noise_in_kuu, W_extra)
    return log_z, grad


# --------------------------------------------------------------------------------------------
# Batch engine (also used by the tests: evidence, gradient, convergence at fixed hypers)
# --------------------------------------------------------------------------------------------
def batch_refine(X, y, hyp, state, damping, noise_in_kuu, jitter, prior=None, data=None):
    """One damped parallel refinement of every factor (notes §2.6); updates ``state`` in place.

    Returns the largest undamped residual of the site parameters (EP) or the largest change
    of (T, h) (SEP, whose tied sites are not per-factor sites).
    Raises ``EPFailure`` / ``LinAlgError`` without touching ``state`` on a numerical failure.
    """
    C, M, D = hyp.shape
    prior = Prior(hyp, noise_in_kuu, jitter) if prior is None else prior
    Kfu, V, d = data_terms(X, hyp, prior) if data is None else data
    if state.method == "ep":
        q = Gaussian(prior.L, state.T, state.h)
        T, h, change, new_sites = ep_row_refine(y, (Kfu, V, d), q, state.sites, state.Vo,
                                                damping)
        ep_update(prior, state, T, h)
        state.sites = new_sites
        state.Vo = V.copy()
        return change
    T_new, h_new = sep_row_totals(y, (Kfu, V, d), sep_cavity(prior, state), C)
    return sep_update(prior, state, T_new, h_new, class_counts_factors(y, C), damping)


def batch_evidence(X, y, hyp, state, noise_in_kuu, jitter, compute_grad=True, scale=1.0,
                   prior=None, data=None, exact=False):
    """log Z_EP (notes §3) and, optionally, its gradient (notes §4) at the current sites.

    For EP the sites' stored directions must be the current ones (call right after
    :func:`batch_refine` at the same ``hyp``). ``scale`` multiplies the likelihood part (N/|B|
    for a minibatch estimate; the class terms are never scaled). ``exact`` (batch EP only)
    adds the factors' moment mismatch (:func:`_moment_mismatch`, as in
    :func:`fixed_site_evidence`), making the gradient that of log Z_EP with the sites held
    fixed also away from an EP fixed point (EP-inner-exact).

    Returns
    -------
    log_z : float
    grad : ndarray or None
        Packed like :meth:`.kernel.ClassParams.pack`.
    q : Gaussian
        The posterior.
    """
    prior = Prior(hyp, noise_in_kuu, jitter) if prior is None else prior
    data = data_terms(X, hyp, prior) if data is None else data
    q = posterior(prior, state)
    cav = None if state.method == "ep" else sep_cavity(prior, state)
    parts = row_evidence(X, y, hyp, prior, data, state, q, cav, compute_grad, scale,
                         noise_in_kuu)
    W_extra = None
    if exact and compute_grad:
        if state.method != "ep" or scale != 1.0:
            raise ValueError("the exact gradient is defined for batch EP only")
        # the factors' tilted moments: cavity times the undamped target sites of a pass
        Kfu, V, d = data
        res = factor_pass(y, V, V, Kfu, d, q.S, q.m, state.sites, True, False)
        W_extra = _mismatch_weight(prior, _moment_mismatch(y, V, V, q, state.sites, res.new))
    log_z, grad = evidence_from_rows(hyp, prior, state, q, cav, *parts, noise_in_kuu, W_extra)
    return log_z, grad, q


def converge_ep(X, y, hyp, state, noise_in_kuu=True, jitter=_k.DEFAULT_JITTER, damping=0.7,
                tol=1e-10, max_sweeps=2000):
    """Iterate damped parallel refinements at fixed ``hyp`` until the change is below ``tol``.

    Returns the number of sweeps; the state is updated in place. Used for exact-gradient
    checks (notes §8.3 item 5); training itself is EP-inner.
    """
    prior = Prior(hyp, noise_in_kuu, jitter)
    data = data_terms(X, hyp, prior)
    for sweep in range(1, max_sweeps + 1):
        change = batch_refine(X, y, hyp, state, damping, noise_in_kuu, jitter, prior, data)
        if change < tol:
            return sweep
    return max_sweeps


def fixed_site_evidence(X, y, hyp, state, noise_in_kuu, jitter, compute_grad=True,
                        block=_EVIDENCE_BLOCK):
    """log Z_EP (EP) or SEP's estimate at ``hyp`` with the sites of ``state`` held fixed, and
    its exact gradient.

    The sites are held as u-space objects (notes §2.1): EP's per-factor scalars along the
    directions v° they were fitted with (``state.Vo``), SEP's tied (T~, h~); so q(u_c) is
    N from K_c(hyp)^-1 + T_c and h_c, and the factors see the current FITC terms. At the
    hyper-parameters the sites were refined at this is the value the fit reports (EP-inner:
    ``log_evidence_``); the rows are taken ``block`` at a time, so X may be any
    row-sliceable array-like.

    The gradient is the engine's (notes §4, the direct terms with cavities fixed, and
    E_q - E_prior) plus the term EP-inner leaves out, the moment mismatch of every factor,
    sum_f (E_tilted_f - E_q)[u u^T] contracted with d(-1/2 K_c^-1) (see
    :func:`_moment_mismatch`): zero at an EP fixed point, and what makes the gradient exact
    elsewhere, for SEP too (notes §2.7 found the engine's alone up to 30% off).

    Parameters
    ----------
    X : array-like of shape (N, D)
        Model-unit training rows (row-sliceable).
    y : ndarray of shape (N,), int
    hyp : .kernel.ClassParams
    state : EPState
        EP with per-row ``sites`` and ``Vo``, or SEP.
    noise_in_kuu : bool
    jitter : float
    compute_grad : bool
    block : int
        Rows read and processed at a time.

    Returns
    -------
    log_z : float
    grad : ndarray or None
        Packed like :meth:`.kernel.ClassParams.pack`.
    """
    C, M, _ = hyp.shape
    ep = state.method == "ep"
    prior = Prior(hyp, noise_in_kuu, jitter)
    q = Gaussian(prior.L, state.T, state.h)
    cav = None if ep else sep_cavity(prior, state)
    ref = q if ep else cav                      # the Gaussian the factor passes start from
    N = y.shape[0]
    log_z_rows = 0.0
    grad_rows = GVtV = mismatch = None
    for start in range(0, N, block):
        idx = np.arange(start, min(N, start + block))
        Xb = take_rows(X, idx)
        yb = y[idx]
        Kfu, V, d = data_terms(Xb, hyp, prior)
        if ep:
            sites = tuple(np.ascontiguousarray(s[idx]) for s in state.sites)
            Vo = np.ascontiguousarray(state.Vo[:, idx])
        else:
            sites, Vo = zero_sites(idx.size, C), V
        res = factor_pass(yb, V, Vo, Kfu, d, ref.S, ref.m, sites, not ep, compute_grad)
        log_z_rows += float(np.sum(res.log_z) + (np.sum(res.delta) if ep else 0.0))
        if not compute_grad:
            continue
        g, G = _row_gradient(Xb, hyp, prior, Kfu, V, res, 1.0, noise_in_kuu)
        m = _moment_mismatch(yb, V, Vo, ref, sites, res.new)
        if grad_rows is None:
            grad_rows, GVtV, mismatch = g, G, m
        else:
            grad_rows, GVtV, mismatch = grad_rows + g, GVtV + G, mismatch + m
    if compute_grad and grad_rows is None:          # no rows at all
        grad_rows, GVtV, mismatch = np.zeros(hyp.pack().size), np.zeros((C, M, M)), 0.0
    log_z, grad = evidence_from_rows(hyp, prior, state, q, cav, log_z_rows, grad_rows, GVtV,
                                     noise_in_kuu)
    if not compute_grad:
        return log_z, None
    # every factor's cavity is ref less its own site: sum_f E_ref - E_q over the n_c
    # factor sides of class c, then the rank-one parts from the rows
    second = (ref.S + np.einsum("ci,cj->cij", ref.m, ref.m)
              - q.S - np.einsum("ci,cj->cij", q.m, q.m))
    mismatch = mismatch + state.n_factors[:, None, None] * second
    return log_z, grad + _kuu_gradient(hyp, prior, _mismatch_weight(prior, mismatch),
                                       noise_in_kuu)


def minibatch_update(Xb, yb, idx, hyp, state, prior, data, scale, noise_in_kuu, jitter):
    """Refine the factors of one minibatch (undamped, notes §5.2), then its evidence and gradient.

    Updates ``state`` in place: EP swaps the minibatch's old sites out of (T, h) and the
    refined ones in; SEP moves the tied sites by the minibatch's share of the factors.

    Parameters
    ----------
    Xb : ndarray of shape (B, D)
        The minibatch's model-unit rows.
    yb : ndarray of shape (B,), int
    idx : ndarray of shape (B,), int
        The rows' indices in the training set (EP's per-row sites).
    hyp : .kernel.ClassParams
    state : EPState
    prior : Prior
        At ``hyp``.
    data : tuple
        :func:`data_terms` of ``Xb``.
    scale : float
        N / B: multiplies the likelihood part of the estimate.
    noise_in_kuu : bool
    jitter : float

    Returns
    -------
    log_z : float
        The minibatch estimate of log Z_EP.
    grad : ndarray
        Packed like :meth:`.kernel.ClassParams.pack`.
    q : Gaussian
        The posterior after the update.
    """
    C, M, D = hyp.shape
    Kfu, V, d = data
    if state.method == "ep":
        q = Gaussian(prior.L, state.T, state.h)
        old = tuple(s[idx] for s in state.sites)
        Vo = np.ascontiguousarray(state.Vo[:, idx])
        res = factor_pass(yb, V, Vo, Kfu, d, q.S, q.m, old, False, False)
        wt_o, we_o = site_totals(Vo, yb, C, *old)
        wt_n, we_n = site_totals(V, yb, C, *res.new)
        To, ho = u_space(Vo, wt_o, we_o)
        Tn, hn = u_space(V, wt_n, we_n)
        state.T = state.T - To + Tn
        state.h = state.h - ho + hn
        for s, n in zip(state.sites, res.new):
            s[idx] = n
        state.Vo[:, idx] = V
        q = Gaussian(prior.L, state.T, state.h)
        res = factor_pass(yb, V, V, Kfu, d, q.S, q.m, res.new, True, True)
        log_z = scale * float(np.sum(res.log_z) + np.sum(res.delta))
        log_z += float(np.sum(q.log_norm_minus_prior()))
    else:
        cav = sep_cavity(prior, state)
        res = factor_pass(yb, V, V, Kfu, d, cav.S, cav.m, zero_sites(yb.size, C), True,
                          False)
        wt_n, we_n = site_totals(V, yb, C, *res.new)
        Tn, hn = u_space(V, wt_n, we_n)
        frac = class_counts_factors(yb, C) / state.n_factors
        state.T = state.T + Tn - frac[:, None, None] * state.T
        state.h = state.h + hn - frac[:, None] * state.h
        return batch_evidence(Xb, yb, hyp, state, noise_in_kuu, jitter, True, scale,
                              prior, data)
    grad = _hyper_gradient(Xb, hyp, prior, q, Kfu, V, res, scale, noise_in_kuu)
    return log_z, grad, q


class LocalRows:
    """The training rows of a fit, read in this process.

    A training step asks its rows a few questions: a batch step :meth:`refine` (one damped
    refinement of every factor) and :meth:`evidence` (log Z_EP and its gradient); a minibatch
    step :meth:`minibatches`, :meth:`minibatch_step` and, once trained,
    :meth:`fitted_evidence`. :class:`sparsegp.distributed.DaskRows` answers the same
    questions from rows that stay on Dask workers.

    Parameters
    ----------
    X : array-like of shape (N, D)
        Model-unit rows: an ndarray, or in minibatch mode any row-sliceable array-like
        (memmap, h5py or zarr dataset), read a minibatch at a time.
    y : ndarray of shape (N,), int
        Class indices.
    nik : tuple
        ``(noise_in_kuu, jitter)``.
    """

    #: Said after the training's name in its messages
    where = ""

    def __init__(self, X, y, nik):
        self.X, self.y = X, y
        self.n_rows = X.shape[0]
        self.noise_in_kuu, self.jitter = nik
        self._data = (None, None)

    def new_state(self, method, C, M, n_factors):
        """A fresh :class:`EPState` for these rows."""
        return EPState(method, self.n_rows, C, M, n_factors)

    def _terms(self, hyp, prior):
        # refine and evidence of one step share the kernel terms of that step's prior
        if self._data[0] is not prior:
            self._data = (prior, data_terms(self.X, hyp, prior))
        return self._data[1]

    def refine(self, hyp, prior, state, damping):
        """:func:`batch_refine` of every row; returns the change."""
        return batch_refine(self.X, self.y, hyp, state, damping, self.noise_in_kuu,
                            self.jitter, prior, self._terms(hyp, prior))

    def evidence(self, hyp, prior, state, exact=False):
        """:func:`batch_evidence` of every row: ``(log_z, grad, q)``."""
        return batch_evidence(self.X, self.y, hyp, state, self.noise_in_kuu, self.jitter, True,
                              1.0, prior, self._terms(hyp, prior), exact)

    def minibatches(self, batch_size, rng):
        """One epoch's minibatches: index arrays (:func:`iter_minibatches`)."""
        return iter_minibatches(self.n_rows, batch_size, rng)

    def minibatch_step(self, hyp, prior, state, idx):
        """:func:`minibatch_update` of the rows ``idx``: ``(log_z, grad, q)``."""
        Xb = take_rows(self.X, idx)
        data = data_terms(Xb, hyp, prior)
        return minibatch_update(Xb, self.y[idx], idx, hyp, state, prior, data,
                                self.n_rows / idx.size, self.noise_in_kuu, self.jitter)

    def fitted_evidence(self, hyp, prior, state, block):
        """log Z_EP over all rows at the fitted sites, read ``block`` rows at a time
        (:func:`fixed_site_evidence`; ``prior`` is not needed here)."""
        return fixed_site_evidence(self.X, self.y, hyp, state, self.noise_in_kuu, self.jitter,
                                   compute_grad=False, block=block)[0]
