"""The EP/SEP state of the multi-class engine (notes §1-2): what the factor pass and the
evidence read.

* :class:`Prior`: K_c, its Cholesky factor and inverse for every class;
* :func:`data_terms`: the rows' K_fu, FITC directions V and variances d;
* :class:`Gaussian`: q(u_c), or a cavity, from the prior factor and site totals (T_c, h_c);
* :func:`site_totals` and :func:`u_space`: per-factor sites summed into those totals;
* :class:`EPState`: the sites (EP's per factor with their directions, SEP's tied), with
  :meth:`~EPState.snapshot` / :meth:`~EPState.restore`; :func:`posterior`,
  :func:`sep_cavity` and :func:`zero_sites` read it.

The stacked per-class products (:func:`_matmul`, :func:`_matmul_tn`) go to a compiled GEMM
when large. The passes over rows and the evidence are in :mod:`.engine`, its gradient in
:mod:`.ep_gradient`.
"""
import math

import numba
import numpy as np
from scipy import linalg as sla

from ..._numba import multiclass as _nbmc
from ... import _covariance as _cov
from ..._config import MC_PARALLEL_GEMM as _PARALLEL_GEMM
from . import kernel as _k


def _n_parts(C):
    """Row blocks per class: enough blocks for every Numba thread to get two."""
    return max(1, math.ceil(2 * numba.get_num_threads() / C))


def _matmul(A, B):
    """``A[c] @ B[c]`` for a stack of classes: (C, N, K), (C, K, M) -> (C, N, M)."""
    C, N, K = A.shape
    if C * N * K * B.shape[2] < _PARALLEL_GEMM:
        return np.matmul(A, B)
    out = np.empty((C, N, B.shape[2]))
    _nbmc.stacked_gemm(np.ascontiguousarray(A), np.ascontiguousarray(B), out, _n_parts(C))
    return out


def _matmul_tn(A, B):
    """``A[c]ᵀ @ B[c]`` for a stack of classes: (C, N, M), (C, N, K) -> (C, M, K)."""
    C, N, M = A.shape
    if C * N * M * B.shape[2] < _PARALLEL_GEMM:
        return np.matmul(np.swapaxes(A, 1, 2), B)
    out = np.empty((C, M, B.shape[2]))
    _nbmc.stacked_gemm_tn(np.ascontiguousarray(A), np.ascontiguousarray(B), out, _n_parts(C))
    return out


class Prior:
    """K_c, its Cholesky factor and inverse for every class (notes §1.1).

    K_c is factored by :func:`.kernel.chol_kuu` (the library's jitter ladder): a jitter it had
    to add is in ``K`` too. ``bias`` (C,) holds the classes' bias variances v_c, in K,
    kappa and the rows' K_fu, when the kernel has a constant (None otherwise); ``K_se`` is
    the stationary part alone.
    """

    def __init__(self, hyp, noise_in_kuu, jitter):
        C, M, _ = hyp.shape
        self.variance = np.exp(hyp.log_variance)
        self.noise = np.exp(hyp.log_noise)
        self.lengthscale = np.exp(hyp.log_lengthscale)
        self.bias = hyp.bias
        self.kappa = _k.kernel_kappa(self.variance, self.noise, self.bias)
        self.family = hyp.family
        self.jitter = jitter
        self.K = np.empty((C, M, M))
        self.K_se = np.empty((C, M, M))
        self.L = np.empty((C, M, M))
        self.A = np.empty((C, M, M))
        eye = np.eye(M)
        for c in range(C):
            self.K[c], self.K_se[c] = _k.kernel_kuu(hyp.Z[c], self.variance[c],
                                                     self.lengthscale[c], self.noise[c],
                                                     noise_in_kuu, jitter, hyp.family,
                                                     self.class_bias(c))
            self.L[c] = _k.chol_kuu(self.K[c], f"K_c of class {c}")
            # LAPACK potrs/trtrs are slow here (see tri_solve); two BLAS trsm products instead
            Li = _k.tri_solve(self.L[c], eye)
            self.A[c] = Li.T @ Li

    def class_bias(self, c):
        """v_c of class c as a float, or None without a constant."""
        return None if self.bias is None else float(self.bias[c])


def data_terms(X, hyp, prior):
    """K_fu, directions V = K_fu K^{-1} and FITC variances d for rows X (notes §1.1).

    Returns Kfu (C, B, M), V (C, B, M), d (B, C); all C-contiguous. Kfu holds the classes'
    bias variances v_c when the kernel has a constant (the factor pass takes the whole k_ic).
    """
    Kfu = _cov.stacked_cross(X, hyp.Z, hyp.family, prior.variance, prior.lengthscale,
                             _n_parts(hyp.shape[0]))
    if prior.bias is not None:
        Kfu += prior.bias[:, None, None]
    V = _matmul(Kfu, prior.A)
    # rounding can make kappa - k^T K^{-1} k slightly negative (notes §8.1)
    d = np.maximum(prior.kappa[None, :] - np.einsum("cij,cij->ic", Kfu, V), 0.0)
    return Kfu, V, d


class Gaussian:
    """q(u_c) from prior factor L (K = L L^T) and site totals (T, h) (eqs. 24-27).

    S = L P^{-1} L^T with P = I + L^T T L (chol R), m = S h; logdet_P = log|P|.
    """

    def __init__(self, L, T, h):
        C, M, _ = L.shape
        self.S = np.empty((C, M, M))
        self.m = np.empty((C, M))
        self.R = np.empty((C, M, M))
        self.logdet_P = np.empty(C)
        self.h = h
        eye = np.eye(M)
        for c in range(C):
            LtTL = L[c].T @ T[c] @ L[c]
            P = eye + 0.5 * (LtTL + LtTL.T)
            R = sla.cholesky(P, lower=True, check_finite=False)
            Y = _k.tri_solve(R, L[c].T)
            self.S[c] = Y.T @ Y
            self.m[c] = self.S[c] @ h[c]
            self.R[c] = R
            self.logdet_P[c] = 2.0 * np.sum(np.log(np.diag(R)))

    def log_norm_minus_prior(self):
        """G(q_c) - G(prior_c) = -1/2 log|P| + 1/2 h^T m, shape (C,) (notes §3)."""
        return -0.5 * self.logdet_P + 0.5 * np.einsum("ci,ci->c", self.h, self.m)


def site_totals(V, y, C, tau_p, eta_p, tau_m, eta_m):
    """Per point/class site precision and linear weights w^tau, w^eta (eqs. 24-25), (B, C)."""
    rows = np.arange(y.shape[0])
    w_tau = tau_m.copy()
    w_eta = eta_m.copy()
    w_tau[rows, y] = tau_p.sum(axis=1)
    w_eta[rows, y] = eta_p.sum(axis=1)
    return w_tau, w_eta


def u_space(V, w_tau, w_eta):
    """T_c = V_c^T diag(w^tau_c) V_c and h_c = V_c^T w^eta_c for all classes."""
    T = _matmul_tn(V, w_tau.T[:, :, None] * V)
    h = np.einsum("cbm,bc->cm", V, w_eta)
    return T, h


class EPState:
    """Site state of EP or SEP for a data set of N points and C classes with M inducing points.

    EP: ``sites`` = (tau_p, eta_p, tau_m, eta_m), each (N, C); ``Vo`` (C, N, M) the directions
    they were fitted with; (T, h) their u-space totals. SEP: only (T, h), the tied sites.
    """

    def __init__(self, method, N, C, M, n_factors, per_row=True):
        self.method = method
        self.T = np.zeros((C, M, M))
        self.h = np.zeros((C, M))
        self.n_factors = n_factors
        #: (L, T, h, q) of the last posterior batch_refine formed, reused while unchanged
        self.posterior = None
        if method == "ep" and per_row:
            self.sites = tuple(np.zeros((N, C)) for _ in range(4))
            self.Vo = np.zeros((C, N, M))
        else:
            # SEP; or EP whose per-row sites live elsewhere (on Dask workers, in ``sites``)
            self.sites = None
            self.Vo = None

    def copy(self):
        new = EPState.__new__(EPState)
        new.method = self.method
        new.T = self.T.copy()
        new.h = self.h.copy()
        new.n_factors = self.n_factors
        new.posterior = None
        # sites held elsewhere are immutable references: sharing them is a copy
        new.sites = (self.sites if not isinstance(self.sites, tuple)
                     else tuple(s.copy() for s in self.sites))
        new.Vo = None if self.Vo is None else self.Vo.copy()
        return new


    def snapshot(self, rows=None):
        """What a minibatch step may change, to put back with :meth:`restore` if the step's
        evidence fails: (T, h) and, for per-row EP sites, the sites and directions of
        ``rows`` (the minibatch's indices; the step changes no other row). (T, h) are
        replaced, never written in place, so holding them is a copy."""
        saved = {"T": self.T, "h": self.h, "posterior": self.posterior}
        if rows is not None and isinstance(self.sites, tuple):
            rows = np.asarray(rows)
            saved.update(rows=rows, sites=tuple(s[rows] for s in self.sites),
                         Vo=self.Vo[:, rows].copy())
        return saved

    def restore(self, saved):
        """Undo everything since ``saved`` = :meth:`snapshot`."""
        self.T, self.h, self.posterior = saved["T"], saved["h"], saved["posterior"]
        if "rows" in saved:
            for s, old in zip(self.sites, saved["sites"]):
                s[saved["rows"]] = old
            self.Vo[:, saved["rows"]] = saved["Vo"]


def posterior(prior, state):
    """q(u_c) of the current site totals; the one :func:`batch_refine` checked is reused."""
    cached = state.posterior
    if (cached is not None and cached[0] is prior.L and cached[1] is state.T
            and cached[2] is state.h):
        return cached[3]
    return Gaussian(prior.L, state.T, state.h)


def sep_cavity(prior, state):
    frac = (1.0 - 1.0 / state.n_factors)[:, None]
    return Gaussian(prior.L, state.T * frac[:, :, None], state.h * frac)


def zero_sites(B, C):
    z = np.zeros((B, C))
    return (z, z, z, z)
