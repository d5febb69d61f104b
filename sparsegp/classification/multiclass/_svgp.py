"""Multi-class sparse variational GP classifier with the robust-max likelihood (notes §7.2).

The "VI" baseline of Villacampa-Calvo & Hernández-Lobato (2017), after Hensman et al. (2015b):
per class c a non-whitened variational posterior q(u_c) = N(m_c, S_c), S_c = L_c L_c^T with L_c
lower triangular, marginals (eqs. 16-17)

    mu_ic = k_ic^T K_c^-1 m_c,
    s2_ic = kappa_c - k_ic^T K_c^-1 k_ic + k_ic^T K_c^-1 S_c K_c^-1 k_ic,

and the robust-max likelihood (eq. 13) p(y | f) = (1 - eps) if y = argmax_c f_c, else
eps / (C - 1) (the GPflow/slides form; eps = 1e-3 fixed). Because that likelihood is linear in the
indicator, the ELBO (eqs. 14-15) is

    L = sum_i [P_i log(1 - eps) + (1 - P_i) log(eps / (C - 1))] - sum_c KL(q(u_c) || N(0, K_c)),
    P_i = int N(f | mu_{i,y_i}, s2_{i,y_i}) prod_{k != y_i} Phi((f - mu_ik) / s_ik) df,

with P_i by Gauss-Hermite quadrature on f_{y_i}. Gradients with respect to m, L, the log
hyper-parameters and Z are analytic (derivatives of the quadrature sum, then the chain rule
through the marginals, see :func:`svgp_elbo`); training uses L-BFGS-B on the full data or ADAM on
minibatches with the data term scaled by N / |B|.
"""
import time

import numpy as np
import scipy.linalg as sla

from ..._numba import multiclass_gfitc as _nb
from ..._ascend import Adam, ascend
from ..._optimize import maximize, stopping_gain
from ..._params import unbounded
from ..._validation import check_int, check_positive, check_tol, plain
from ...metrics import _as_labels, class_indices
from . import kernel as _k
from ..._inducing_base import take_rows
from ._base import DEPRECATED, MultiClassGPClassifier, fill_shared_docs
from .likelihood import class_probabilities
from .rows import iter_minibatches

__all__ = ["MultiClassSVGPClassifier"]


def gauss_hermite(n):
    """Physicists' Gauss-Hermite nodes and weights / sqrt(pi), C-contiguous, shape (n,)."""
    x, w = np.polynomial.hermite.hermgauss(int(n))
    return np.ascontiguousarray(x), np.ascontiguousarray(w / np.sqrt(np.pi))


class _Variational:
    """q(u_c) = N(m_c, L_c L_c^T): ``m`` (C, M), ``L`` (C, M, M) lower triangular."""

    def __init__(self, m, L):
        self.m = np.array(m, dtype=np.float64)
        self.L = np.tril(np.array(L, dtype=np.float64))

    def pack(self):
        C, M = self.m.shape
        il = np.tril_indices(M)
        return np.concatenate([self.m.ravel(), self.L[:, il[0], il[1]].ravel()])

    @classmethod
    def unpack(cls, v, C, M):
        il = np.tril_indices(M)
        m = v[:C * M].reshape(C, M)
        L = np.zeros((C, M, M))
        L[:, il[0], il[1]] = v[C * M:].reshape(C, -1)
        return cls(m, L)

    @staticmethod
    def size(C, M):
        return C * M + C * M * (M + 1) // 2


def robustmax_constants(C, eps):
    """(log(eps / (C - 1)), log((1 - eps) (C - 1) / eps)): E_i = a + b P_i."""
    a = np.log(eps / (C - 1))
    return a, np.log(1.0 - eps) - a


def svgp_marginals(X, hyp, q, jitter, noise_in_kuu, kernels=None):
    """Marginals (mu, s2), each (N, C), plus per-class pieces reused by the gradient."""
    C, M, D = hyp.Z.shape
    N = X.shape[0]
    mu = np.empty((N, C))
    s2 = np.empty((N, C))
    pieces = []
    for c in range(C):
        kc = _k.ClassKernel(X, hyp, c, jitter, noise_in_kuu) if kernels is None else kernels[c]
        V = sla.cho_solve((kc.LK, True), kc.P.T, check_finite=False).T  # K_fu K^-1, (N, M)
        VL = V @ q.L[c]
        mu[:, c] = V @ q.m[c]
        s2[:, c] = kc.kappa - np.einsum("ij,ij->i", V, kc.P) + np.einsum("ij,ij->i", VL, VL)
        pieces.append((kc, V))
    return mu, np.maximum(s2, 1e-12), pieces


def svgp_kl(hyp, q, kernels):
    """sum_c KL(N(m_c, S_c) || N(0, K_c)) = 1/2 [tr(K^-1 S) + m^T K^-1 m - M + log|K| - log|S|]."""
    total = 0.0
    M = q.m.shape[1]
    for c, kc in enumerate(kernels):
        A = sla.solve_triangular(kc.LK, q.L[c], lower=True, check_finite=False)
        b = sla.solve_triangular(kc.LK, q.m[c], lower=True, check_finite=False)
        total += 0.5 * (np.sum(A * A) + b @ b - M
                        + 2.0 * np.sum(np.log(np.diag(kc.LK)))
                        - np.sum(np.log(np.diag(q.L[c]) ** 2)))
    return total


def svgp_elbo(X, y, hyp, q, eps, jitter, noise_in_kuu, nodes, weights, scale=1.0,
              with_grad=True):
    """ELBO (or its minibatch estimate) and its gradient.

    Parameters
    ----------
    X : ndarray of shape (B, D)
        The rows of the (mini)batch.
    y : ndarray of shape (B,), int64 class indices.
    hyp : _k.ClassParams
    q : _Variational
    eps : float
        Robust-max error probability.
    nodes, weights : ndarray of shape (T,)
        Gauss-Hermite rule from :func:`gauss_hermite`.
    scale : float
        N / |B| for a minibatch; the KL term is never scaled.
    with_grad : bool

    Returns
    -------
    elbo : float
    grad_hyp : _k.ClassParams or None
        d ELBO / d(log sigma, log sigma0, log l, Z).
    grad_q : _Variational or None
        d ELBO / d(m, L) (lower-triangular L entries).

    Notes
    -----
    With g_mu = dL/dmu_c and g_s = dL/ds2_c (N,), V = K_fu K^-1, a = K^-1 m, S = L L^T,
    Psi = V^T diag(g_s) V:

    * dL/dm = V^T g_mu - K^-1 m;  dL/dL = tril(2 Psi L - K^-1 L) + diag(1 / L_jj);
    * dL/dK_fu = g_mu a^T + 2 diag(g_s) (V S K^-1 - V);
    * dL/dK = sym(-V^T g_mu a^T - Psi S K^-1 - K^-1 S Psi + Psi)
              + 1/2 [K^-1 (S + m m^T) K^-1 - K^-1];
    * dL/dkappa = g_s.
    """
    C, M, D = hyp.Z.shape
    mu, s2, pieces = svgp_marginals(X, hyp, q, jitter, noise_in_kuu)
    kernels = [p[0] for p in pieces]
    B = X.shape[0]
    P = np.empty(B)
    dmu = np.empty((B, C)) if with_grad else np.empty((1, 1))
    ds2 = np.empty((B, C)) if with_grad else np.empty((1, 1))
    _nb.class_prob_quadrature(y, mu, s2, nodes, weights, P, dmu, ds2, with_grad)
    a0, b0 = robustmax_constants(C, eps)
    elbo = scale * float(np.sum(a0 + b0 * P)) - svgp_kl(hyp, q, kernels)
    if not with_grad:
        return elbo, None, None
    g_mu = (scale * b0) * dmu
    g_s = (scale * b0) * ds2
    grad_hyp = _k.ClassParams.zeros(C, M, D, bias=hyp.log_bias is not None)
    grad_q = _Variational(np.zeros((C, M)), np.zeros((C, M, M)))
    I = np.eye(M)
    for c in range(C):
        kc, V = pieces[c]
        Lq = q.L[c]
        Ki = sla.cho_solve((kc.LK, True), I, check_finite=False)
        a = Ki @ q.m[c]
        S = Lq @ Lq.T
        Psi = V.T @ (g_s[:, c:c + 1] * V)
        grad_q.m[c] = V.T @ g_mu[:, c] - a
        gL = np.tril(2.0 * Psi @ Lq - Ki @ Lq)
        gL[np.diag_indices(M)] += 1.0 / np.diag(Lq)
        grad_q.L[c] = gL
        SKi = S @ Ki
        W_fu = np.outer(g_mu[:, c], a) + 2.0 * g_s[:, c:c + 1] * (V @ SKi - V)
        T = -0.5 * np.outer(V.T @ g_mu[:, c], a) - Psi @ SKi + 0.5 * Psi
        W_uu = (T + T.T) + 0.5 * (Ki @ (S + np.outer(q.m[c], q.m[c])) @ Ki - Ki)
        gv, gn, gl, gZ, gb = kc.grads(X, W_uu, W_fu, g_s[:, c])
        grad_hyp.log_variance[c], grad_hyp.log_noise[c] = gv, gn
        grad_hyp.log_lengthscale[c], grad_hyp.Z[c] = gl, gZ
        if grad_hyp.log_bias is not None:
            grad_hyp.log_bias[c] = gb
    return elbo, grad_hyp, grad_q


def svgp_predict_latent(Xt, hyp, q, jitter, noise_in_kuu):
    """Predictive (mean, var) of the noisy latents, each (n_test, C) (notes §6)."""
    mu, s2, _ = svgp_marginals(Xt, hyp, q, jitter, noise_in_kuu)
    return mu, s2


# --------------------------------------------------------------------------------------------
# estimator
# --------------------------------------------------------------------------------------------
@fill_shared_docs
class MultiClassSVGPClassifier(MultiClassGPClassifier):
    """Multi-class sparse variational GP classifier with the robust-max likelihood ("VI").

    The VI baseline of Villacampa-Calvo & Hernández-Lobato (2017), after Hensman et al.
    (2015b): per class a stationary covariance (SE-ARD by default; amplitude, length-scales,
    additive noise), M inducing inputs and a full-covariance Gaussian
    q(u_c) = N(m_c, L_c L_c^T) (not whitened, initialised at the prior as in the R code);
    likelihood (1 - eps) for the argmax class and eps / (C - 1) otherwise. The ELBO is
    computed with 1-D Gauss-Hermite quadrature and maximised with analytic gradients by
    L-BFGS-B on the full data (``batch_size=None``, box [-10, 10] on the log
    hyper-parameters) or by ADAM on minibatches with the data term scaled by N / |B|.

    Parameters
    ----------
    %(inducing)s
    %(kernel)s
    %(kernel_box)s
    batch_size : int, optional
        Minibatch size; ``None`` trains on the full data with L-BFGS-B. In minibatch mode X may
        be any row-sliceable array-like (memmap, h5py or zarr dataset), read one minibatch at a
        time.
    max_iter : int, default=250
        Optimiser iterations (batch mode) or epochs (minibatch mode). Without ``tol`` a
        budget, as in the paper's experiments: stopping at it is not reported as
        non-convergence; with ``tol`` (batch mode), a cap whose reaching is.
    tol : float or None, default=None
        Batch mode's stopping rule in nats per training row (:mod:`sparsegp._optimize`, as
        ``GFITCClassifier``'s). None (for now the default: its measurement on the paper's
        folds is pending) runs the ``max_iter`` budget.
    optimizer : {"auto", "lbfgs", "adam"} or None, default="auto"
        The method that maximises the ELBO over q(u), the hyper-parameters and the inducing
        inputs: "lbfgs" (L-BFGS-B, batch mode) or "adam" (minibatch mode); "auto" is the one
        of the mode. None holds every hyper-parameter and the inducing inputs fixed; q(u) is
        still fitted, by the mode's method. To learn only the inducing inputs and q(u), hold
        the kernel with "fixed" bounds and set ``latent_noise_variance_bounds="fixed"``.
        The names are those of one vocabulary across the estimators (README, table
        "optimizer and max_iter").
    learning_rate : float, default=1e-3
        ADAM step size (minibatch mode).
    %(nugget)s
    epsilon : float, default=1e-3
        Robust-max labelling-error probability (fixed, eq. 13).
    n_quadrature : int, default=100
        Gauss-Hermite nodes for the ELBO (notes §6 recommends 50-100).
    random_state : int, Generator or None
    verbose : bool or int, default=False
        Print progress every ``verbose`` iterations/epochs (every 10 when True).
    callback : callable, optional
        ``callback(estimator, iteration)`` after every L-BFGS-B iteration (batch mode) or every
        minibatch (minibatch mode; ``iteration`` counts minibatches). The estimator can predict
        inside the callback.
    %(renamed)s

    %(fitted)s
    q_mean_ : ndarray of shape (C, M)
    q_sqrt_ : ndarray of shape (C, M, M)
        Lower-triangular factors L_c of the variational covariances.
    %(theta)s
    elbo_ : float
        The ELBO on the full training data at the final parameters.
    elbo_history_ : ndarray
        The ELBO at the start and after every L-BFGS-B iteration (batch mode), or the average
        minibatch estimate of every epoch (minibatch mode).
    log_marginal_likelihood_value_ : float
        The objective the fit maximised, under scikit-learn's name: the evidence lower bound (=
        ``elbo_``).
    n_iter_ : int

    References
    ----------
    J. Hensman, A. G. Matthews, M. Filippone and Z. Ghahramani. MCMC for variationally sparse
    Gaussian processes. NIPS 2015.
    %(villacampa2017)s
    """

    def __init__(self, n_inducing="auto", inducing_points=None, init="kmeans", kernel=None,
                 latent_noise_variance=1.0, latent_noise_variance_bounds=None, batch_size=None,
                 max_iter=250, tol=None, optimizer="auto", learning_rate=1e-3, noise_in_kuu=True,
                 jitter=_k.DEFAULT_JITTER, epsilon=1e-3, n_quadrature=100, random_state=None,
                 verbose=False, callback=None, noise_variance=DEPRECATED,
                 noise_variance_bounds=DEPRECATED):
        super().__init__(n_inducing, inducing_points, init, kernel, latent_noise_variance,
                         latent_noise_variance_bounds, max_iter, optimizer, noise_in_kuu, jitter,
                         random_state, verbose, callback, noise_variance, noise_variance_bounds)
        self.tol = tol
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.epsilon = epsilon
        self.n_quadrature = n_quadrature

    # ----------------------------------------------------------------------------------------
    def fit(self, X, y):
        """Maximise the ELBO on X (N, D) and labels y (N,); returns ``self``."""
        max_iter, jitter = self._check_iterations_and_callback(min_iter=0)
        self._tol = check_tol(self.tol)
        n_quad = check_int(self.n_quadrature, "n_quadrature", minimum=2)
        eps = float(check_positive(self.epsilon, "epsilon", allow_array=False))
        if eps >= 1.0:
            raise ValueError(f"epsilon must be in (0, 1); got {plain(self.epsilon)!r}")
        lr = float(check_positive(self.learning_rate, "learning_rate", allow_array=False))
        batch_size = None
        if self.batch_size is not None:
            batch_size = check_int(self.batch_size, "batch_size", minimum=1)
        self._check_optimizer(batch_size, "lbfgs", "adam")
        X, N, D, classes, y_idx = self._validate_training_data(X, y, batch_size is not None)
        self._training_rows(X, y_idx)
        rng = self._check_random_state()
        C = classes.size
        var, noise, ls, Z = self._initial_parameters(X, y_idx, C, rng)
        M = Z.shape[1]
        family, isotropic, log_bounds, frozen = self._kernel_settings(C, M, D)
        log_bias = self._initial_log_bias()
        # GFITC's settings: the mean log length-scale of an isotropic class (_k.ClassParams)
        self._hyp_settings = (family, isotropic, log_bounds, True, log_bias is not None)
        hyp = _k.ClassParams(np.log(var), np.log(noise), np.log(ls), Z,
                             *self._hyp_settings[:4], log_bias=log_bias)
        self.classes_ = classes
        self._nik = (bool(self.noise_in_kuu), jitter)
        self._gh = gauss_hermite(n_quad)
        self._eps = eps
        # q(u) starts at the prior (R code): m = 0, L = chol(K_c)
        kernels = [_k.ClassKernel(None, hyp, c, jitter, self._nik[0]) for c in range(C)]
        q = _Variational(np.zeros((C, M)), np.stack([k.LK for k in kernels]))
        free = np.ones(hyp.pack().size + _Variational.size(C, M), dtype=bool)
        if self.optimizer is None:
            free[:hyp.pack().size] = False          # q(u) alone is fitted
        free[:frozen.size][frozen] = False          # "fixed" bounds of the kernel and noise
        vec0 = np.concatenate([hyp.pack(), q.pack()])
        verbose = self._print_every()
        if batch_size is None:
            self._fit_batch(X, y_idx, vec0, free, (C, M, D), max_iter, verbose)
        else:
            self._fit_minibatch(X, y_idx, vec0, free, (C, M, D), max_iter, batch_size, lr,
                                verbose, rng)
        self._check_against_frequencies(X, y_idx)
        return self

    def _split(self, vec, shape):
        C, M, D = shape
        nh = 2 * C + C * D + C * M * D + (C if self._hyp_settings[4] else 0)
        hyp = _k.ClassParams.unpack(vec[:nh], C, M, D, *self._hyp_settings)
        return hyp, _Variational.unpack(vec[nh:], C, M)

    def _objective(self, vec, Xb, yb, shape, scale):
        hyp, q = self._split(vec, shape)
        nik, jitter = self._nik
        try:
            elbo, gh, gq = svgp_elbo(Xb, yb, hyp, q, self._eps, jitter, nik, *self._gh,
                                     scale=scale)
        except (np.linalg.LinAlgError, sla.LinAlgError):
            return -np.inf, None
        # the point depends on each class's mean log length-scale only (see _k.ClassParams)
        grad = hyp.tied(np.concatenate([gh.pack(), gq.pack()]))
        if not (np.isfinite(elbo) and np.all(np.isfinite(grad))):
            return -np.inf, None
        return elbo, grad

    def _fit_batch(self, X, y, vec0, free, shape, max_iter, verbose):
        """L-BFGS-B on the full-data ELBO through the training driver."""

        def evaluate(theta, _warm):
            v = vec0.copy()
            v[free] = theta
            elbo, grad = self._objective(v, X, y, shape, 1.0)
            # a failed factorisation is -inf: the driver's failure policy
            return elbo, (np.zeros(theta.size) if grad is None else grad[free]), None

        theta0 = vec0[free]
        first = evaluate(theta0, None)
        if not np.isfinite(first[0]):
            raise ValueError("the ELBO is not finite at the initial parameters; try "
                             "standardised inputs or a larger jitter")
        history = [first[0]]
        self.n_iter_ = 0
        self._store(vec0, shape, first[0], history)
        t0 = time.perf_counter()

        def full(theta):
            v = vec0.copy()
            v[free] = theta
            return v

        def on_iteration(n_iter, theta, value, _state):
            self.n_iter_ = n_iter
            history.append(value)
            self._store(full(theta), shape, value, history)
            if verbose and n_iter % verbose == 0:
                print(f"[VI] iter {n_iter:4d}  ELBO {value: .6f}  "
                      f"{time.perf_counter() - t0:.1f}s")
            if self.callback is not None:
                self.callback(self, n_iter)

        if max_iter > 0:
            C, M, D = shape
            bounds = np.vstack([self._split(vec0, shape)[0].bounds(_k.LBFGS_BOX),
                                unbounded(_Variational.size(C, M))])[free]
            # without tol, max_iter is a budget (the paper's experiments), not a cap
            res = maximize(evaluate, theta0, method="lbfgs", bounds=bounds, max_iter=max_iter,
                           initial=first, callback=on_iteration, label="MultiClassSVGP",
                           value_name="ELBO", tol=stopping_gain(self._tol, y.shape[0]),
                           warn_at_cap=self._tol is not None)
            self._store(full(res.theta), shape, res.value, history)

    def _fit_minibatch(self, X, y, vec0, free, shape, max_iter, batch_size, lr, verbose, rng):
        """ADAM on minibatch ELBO estimates through the training driver's stepping loop."""
        N = y.shape[0]
        adam = Adam(int(free.sum()), lr)
        # the kernel's and the noise's log bounds, without the L-BFGS-B box (never applied here)
        bounds = np.vstack([self._split(vec0, shape)[0].bounds(),
                            unbounded(_Variational.size(shape[0], shape[1]))])
        self.n_iter_ = 0
        t0 = time.perf_counter()

        def evaluate(vec, idx):
            Xb = take_rows(X, idx)
            if Xb.shape[1] != shape[2]:
                raise ValueError(f"X rows have {Xb.shape[1]} features; expected {shape[2]}")
            elbo, grad = self._objective(vec, Xb, y[idx], shape, float(N) / idx.size)
            # a failed factorisation is -inf: the driver's failure policy
            return elbo, (np.zeros(vec.size) if grad is None else grad), None

        def advance(vec, grad):
            out = vec.copy()
            out[free] = adam.step(vec[free], grad[free])
            return out

        def on_step(step, vec, elbo, _info, history):
            if self.callback is not None:
                self._store(vec, shape, elbo, history[:-1])
                self.callback(self, step)

        def on_epoch(n_epochs, history):
            self.n_iter_ = n_epochs
            if verbose and n_epochs % verbose == 0:
                print(f"[VI] epoch {n_epochs:4d}  mean minibatch ELBO {history[-1]: .6f}  "
                      f"{time.perf_counter() - t0:.1f}s")

        res = ascend(evaluate, vec0.copy(), adam, max_iter, advance=advance,
                     batches=lambda: iter_minibatches(N, batch_size, rng),
                     on_success=on_step, on_epoch=on_epoch, label="MultiClassSVGP",
                     bounds=bounds)
        self.n_iter_ = res.n_iter
        self._store(res.theta, shape, self._full_elbo(X, y, res.theta, shape, batch_size)[0],
                    res.history)

    def _full_elbo(self, X, y, vec, shape, batch_size, with_grad=False):
        """ELBO on all rows, streamed one block at a time (the KL counted once).

        With ``with_grad`` also its gradient with respect to the hyper-parameters and Z,
        packed as :meth:`_k.ClassParams.pack` (q(u) held fixed); otherwise None in its place.
        """
        hyp, q = self._split(vec, shape)
        nik, jitter = self._nik
        # the objective of no rows is -KL: subtracted from every block's, added back once
        neg_kl, g_kl, _ = svgp_elbo(np.empty((0, shape[2])), np.empty(0, dtype=np.int64), hyp,
                                    q, self._eps, jitter, nik, *self._gh, scale=1.0,
                                    with_grad=with_grad)
        N = y.shape[0]
        step = max(batch_size, 1000)
        data = 0.0
        grad = np.zeros_like(hyp.pack()) if with_grad else None
        for start in range(0, N, step):
            idx = np.arange(start, min(N, start + step))
            e, g, _ = svgp_elbo(take_rows(X, idx), y[idx], hyp, q, self._eps, jitter, nik,
                                *self._gh, scale=1.0, with_grad=with_grad)
            data += e - neg_kl
            if with_grad:
                grad += g.pack() - g_kl.pack()
        if with_grad:
            grad += g_kl.pack()
        return data + neg_kl, grad

    def _store(self, vec, shape, elbo, history):
        hyp, q = self._split(vec, shape)
        self._hyp, self._q = hyp, q
        self._set_theta(hyp.log_variance, hyp.log_noise, hyp.log_lengthscale, hyp.log_bias)
        self.elbo_ = float(elbo)
        self.log_marginal_likelihood_value_ = self.elbo_
        self.elbo_history_ = np.array(history, dtype=np.float64)
        self.inducing_points_ = self._scaling.inverse_transform(hyp.Z)     # user units
        self.variance_ = np.exp(hyp.log_variance)
        self.noise_ = np.exp(hyp.log_noise)
        self.lengthscale_ = self._scaling.lengthscale_to_user(np.exp(hyp.log_lengthscale))
        self.q_mean_ = q.m.copy()
        self.q_sqrt_ = q.L.copy()

    # ----------------------------------------------------------------------------------------
    _lml_objective = "The evidence lower bound (ELBO) on the whole training set"
    _lml_notes = """``theta`` is ``theta_``: ``[log variance (C), log noise (C), log lengthscale (C x D,
or C for an isotropic kernel), then with a constant summand log v_c (C)]`` less what the kernel
holds fixed, length-scales in the units of X.
The inducing inputs (``inducing_points_``) and the variational parameters (``q_mean_``,
``q_sqrt_``) stay at their fitted values; the value is the full-data bound also after a
minibatch fit (``elbo_``), and its gradient is exact. Needs the training rows, which a fit on
an in-memory array keeps."""

    def _log_marginal_likelihood(self, theta, eval_gradient):
        X, y = self._rows_for_lml()
        C, M, D = self._hyp.Z.shape
        vec = np.concatenate([self._hyper_at(theta, self._hyp.Z), self._q.pack()])
        value, grad = self._full_elbo(X, y, vec, (C, M, D), 0, with_grad=eval_gradient)
        if not eval_gradient:
            return float(value)
        return float(value), self._theta_gradient(grad, C, D)

    def predict_latent(self, X):
        """Mean and variance of q(f*_c) for every class, each (n, C) (eqs. 16-17)."""
        return self._latent(self._validate_predict_data(X))

    def _latent(self, X):
        nik, jitter = self._nik
        return svgp_predict_latent(X, self._hyp, self._q, jitter, nik)

    def predict_proba(self, X):
        """Predictive class probabilities (n, C), columns ordered as ``classes_``.

        E_q[p(y* = c | f*)] = (1 - eps) P_c + eps / (C - 1) (1 - P_c), with P_c the probability
        that f*_c is the largest latent (1-D quadrature, renormalised over classes).
        """
        return self._proba(*self.predict_latent(X))

    def expected_log_likelihood(self, X, y):
        """E_q[log p(y_i | f_i)] of every row under the fitted q(f), shape (n,).

        The term whose sum (over training rows, less the KL) the ELBO is; seed 002's Figure 7
        sets its test mean beside the test log-likelihood log E_q[p(y* | f*)] (the log of
        ``predict_proba`` at the true class). By Jensen's inequality it is never larger, so a
        rising bound need not mean a rising predictive likelihood.

        Parameters
        ----------
        X : array-like of shape (n, D)
        y : array-like of shape (n,)
            Labels, each one of ``classes_``.

        Returns
        -------
        ell : ndarray of shape (n,)
        """
        X = self._validate_predict_data(X)
        y_index = class_indices(_as_labels(y, "y"), self.classes_)
        if y_index.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y_index.shape[0]} labels")
        mean, var = self._latent(X)
        nodes, weights = self._gh
        P = np.empty(X.shape[0])
        unused = np.empty((1, 1))
        # P_i = probability that f_{y_i} is the largest latent, by the training quadrature
        _nb.class_prob_quadrature(y_index, mean, var, nodes, weights, P, unused, unused, False)
        C = self.classes_.size
        return P * np.log1p(-self._eps) + (1.0 - P) * np.log(self._eps / (C - 1))

    def _proba(self, mean, var):
        P = class_probabilities(mean, var)
        P /= P.sum(axis=1, keepdims=True)
        C = P.shape[1]
        return (1.0 - self._eps) * P + self._eps / (C - 1) * (1.0 - P)
