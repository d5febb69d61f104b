"""The sparse GP regression family's predictions from its fitted factors (notes §4.4, §4.6-7).

The latent f at T test inputs Xs (T, D), in the units the model was fitted in, four ways:

* :func:`sparse_predict`: the approximation's own test conditional, from the M×M factors
  and weights of a :class:`~sparsegp.regression._base.Posterior`; O(M²) a test point.
* :func:`exact_predict`: the exact GP (and SoD, on its subset), from the lower Cholesky
  factor of K + σ² I (N, N) and (K + σ² I)⁻¹ y (N,) that
  :func:`~sparsegp.regression._base.exact_lml` returns.
* :func:`augmented_predict`: ASoR = ADTC, each test point joining the inducing set for its
  own prediction.
* :func:`bcm_predict`: transduction, the test inputs themselves as the inducing inputs
  (the Bayesian committee machine).

Each returns the mean (T,) and the variance (T,) or the joint covariance (T, T)
(augmentation only the variance, transduction only the covariance). The test
conditionals (which covariance each approximation puts between test points) are the table
of :mod:`sparsegp.regression._base`, which computes the evidence and the factors; the
covariances here come from its compiled row pass (:func:`~sparsegp.regression._base.cross_cov`)
with the stationary ``family`` code of :mod:`sparsegp._numba.covfuncs` (default SE).
"""
import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from .._numba.covfuncs import SE
from ._base import (SPARSE_METHODS, _times_lt, bias_covariance, chol_jitter, cross_cov,
                    sparse_lml, tri_inv)


def _cov(A, B, variance, lengthscale, family, bias_variance):
    """k(A, B) (+ v_b in every entry for a kernel with constant summands)."""
    return bias_covariance(cross_cov(A, B, variance, lengthscale, family=family),
                           bias_variance)


def _prior_var(variance, bias_variance):
    """k(x, x): s² (+ v_b)."""
    return variance if bias_variance is None else variance + bias_variance


def exact_predict(X_train, factors, Xs, variance, lengthscale, full_cov=False, family=SE,
                  bias_variance=None):
    """Exact GP predictive mean and variance (or covariance) of the latent f at ``Xs``.

    ``bias_variance``: v_b of a kernel's constant summands, added to every covariance entry
    (None: none), as in every function here.
    """
    L, alpha = factors
    Ks = _cov(Xs, X_train, variance, lengthscale, family, bias_variance)
    mean = Ks @ alpha
    Vs = solve_triangular(L, Ks.T, lower=True, check_finite=False)
    if full_cov:
        cov = _cov(Xs, Xs, variance, lengthscale, family, bias_variance) - Vs.T @ Vs
        return mean, cov
    return mean, _prior_var(variance, bias_variance) - np.einsum("mt,mt->t", Vs, Vs)


def sparse_predict(post, Z, Xs, variance, lengthscale, full_cov=False, family=SE,
                   bias_variance=None):
    """Predictive mean and variance (or joint covariance) of the latent f (notes §4.4).

    μ* = k*ᵀ w; with a* = L_u⁻¹ k*, e* = L_S⁻¹ a*:
    SoR σ*² = ‖e*‖²; DTC/VFE/FITC/FIC/PITC σ*² = k** − ‖a*‖² + ‖e*‖². Joint covariance:
    SoR E*ᵀE*; DTC/VFE/FITC/PITC K** − A*ᵀA* + E*ᵀE* (exact test conditional); FIC
    diag(K** − A*ᵀA*) + E*ᵀE* (fully independent test conditional). O(M²) per test point
    (O(T² M) for a joint covariance over T points).
    """
    Ksu = _cov(Xs, Z, variance, lengthscale, family, bias_variance)
    kss = _prior_var(variance, bias_variance)
    mean = Ksu @ post.w
    As = solve_triangular(post.Lu, Ksu.T, lower=True, check_finite=False)
    Es = solve_triangular(post.LS, As, lower=True, check_finite=False)
    if not full_cov:
        var = np.einsum("mt,mt->t", Es, Es)
        if post.method != "sor":
            var += kss - np.einsum("mt,mt->t", As, As)
        return mean, np.maximum(var, 0.0)
    cov = Es.T @ Es
    if post.method == "fic":
        cov[np.diag_indices_from(cov)] += kss - np.einsum("mt,mt->t", As, As)
    elif post.method != "sor":
        cov += _cov(Xs, Xs, variance, lengthscale, family, bias_variance) - As.T @ As
    return mean, cov


def augmented_predict(X, y, Z, Xs, variance, lengthscale, noise_variance, jitter,
                      chunk=256, family=SE, bias_variance=None):
    """ASoR = ADTC prediction (notes §4.6): every test point joins the inducing set for itself.

    Uses the training covariance K_y = Q_ff + σ² I of SoR/DTC (factorised once by Woodbury)
    and a rank-one correction of Q_ff per test point, so the cost is O(N M²) once plus
    O(N (M + D)) per test point (kernel column k(X, x*) and a few N-vector products); memory
    O(N · chunk). The test conditional is exact for x* itself (Q'** = K**), hence SoR and
    DTC augmentations coincide (seed 001, Remark 12).

    Returns
    -------
    mean, var : ndarrays of shape (T,)
        Latent predictive mean and variance.
    """
    s2 = float(variance)
    sn2 = float(noise_variance)
    vb = bias_variance
    kss = _prior_var(s2, vb)
    Kzz = _cov(Z, Z, s2, lengthscale, family, vb)
    Lu, used = chol_jitter(Kzz, s2, jitter)
    Vt = _times_lt(tri_inv(Lu), _cov(X, Z, s2, lengthscale, family, vb))
    S = Vt.T @ Vt / sn2
    S[np.diag_indices_from(S)] += 1.0
    LS = np.linalg.cholesky(S)

    def ky_solve(B):
        # (Vt Vtᵀ + σ² I)⁻¹ B = (B − Vt S⁻¹ Vtᵀ B / σ²) / σ²   (Woodbury)
        T = cho_solve((LS, True), Vt.T @ B, check_finite=False)
        return (B - Vt @ T / sn2) / sn2

    alpha = ky_solve(y)
    T = Xs.shape[0]
    mean = np.empty(T)
    var = np.empty(T)
    for start in range(0, T, chunk):
        Xc = Xs[start:start + chunk]
        Kfs = _cov(X, Xc, s2, lengthscale, family, vb)        # (N, c)
        Au = solve_triangular(Lu, _cov(Z, Xc, s2, lengthscale, family, vb), lower=True,
                              check_finite=False)             # L_u⁻¹ k_u*
        delta = kss - np.einsum("mc,mc->c", Au, Au)           # Var[f* | u]
        rho = Kfs - Vt @ Au                                   # k_f* − Q_f*
        E = ky_solve(rho)
        Aa = ky_solve(Kfs)
        kE = np.einsum("nc,nc->c", Kfs, E)
        denom = delta + np.einsum("nc,nc->c", rho, E)
        keep = delta > 1e-12 * s2                              # x* already (nearly) in u
        corr_m = np.where(keep, kE * (rho.T @ alpha) / np.where(keep, denom, 1.0), 0.0)
        corr_v = np.where(keep, kE * kE / np.where(keep, denom, 1.0), 0.0)
        mean[start:start + chunk] = Kfs.T @ alpha - corr_m
        var[start:start + chunk] = kss - np.einsum("nc,nc->c", Kfs, Aa) + corr_v
    return mean, np.maximum(var, 0.0)


def bcm_predict(X, y, Xs, variance, lengthscale, noise_variance, method, blocks, jitter,
                family=SE, bias_variance=None):
    """Transduction: the Bayesian committee machine of seed 001 (notes §4.7).

    The inducing inputs are the test inputs themselves (u = f*), with the training conditional
    of ``method`` (PITC blocks: Tresp's BCM; FITC/FIC: diagonal; SoR/DTC/VFE: σ² I). The
    posterior of u is the prediction: Σ_u = (K** + K*f Λ⁻¹ Kf*)⁻¹, mean K** Σ_u K*f Λ⁻¹ y,
    covariance K** Σ_u K**. Cost O(N T² + N B²) for T test points, recomputed for every test
    set (nothing is reused between calls); memory O(N T).

    Returns
    -------
    mean : ndarray of shape (T,)
    cov : ndarray of shape (T, T)
    """
    train = method if method in ("pitc", "fitc", "fic") else "dtc"
    _, _, post = sparse_lml(X, y, Xs, variance, lengthscale, noise_variance, train,
                            blocks=blocks, jitter=jitter, eval_gradient=False, family=family,
                            bias_variance=bias_variance)
    # At the inducing inputs the prediction is SoR's: K** w and K** Σ_u K** = L_u S⁻¹ L_uᵀ.
    Kss = post.Lu @ post.Lu.T
    mean = Kss @ post.w
    B = solve_triangular(post.LS, post.Lu.T, lower=True, check_finite=False)
    return mean, B.T @ B


class _PredictMixin:
    """The latent predictions of :class:`~sparsegp.regression.SparseGPRegressor`.

    They read its ``approximation`` and ``jitter`` and what ``fit`` left: the training rows
    in model units (``_training_rows()``), the targets ``_y_model``, the inducing inputs
    ``_Z``, the factors ``_post``, the PITC blocks ``_blocks_fit``, the kernel ``_spec``, the
    bias variance ``_vb`` (None without constant summands) and SoD's ``subset_indices_``.
    """

    def _predict_model(self, Xs, s2, ls, sn2, return_cov, augment, transduce):
        """Latent mean and variance (or covariance) at model-unit rows Xs, in model units."""
        method = self.approximation
        vb = self._vb
        if augment and transduce:
            raise ValueError("augment and transduce cannot both be True")
        full = bool(return_cov)
        if augment:
            if method not in ("sor", "dtc", "vfe"):
                raise ValueError("augment=True is implemented for approximation 'sor', 'dtc' "
                                 f"and 'vfe' (ASoR = ADTC); got {method!r}")
            if return_cov:
                raise ValueError("augment=True predicts each test point on its own; "
                                 "return_cov is not available")
            mean, var = augmented_predict(self._training_rows(), self._y_model, self._Z, Xs,
                                          s2, ls, sn2, self.jitter, family=self._spec.family,
                                          bias_variance=vb)
        elif transduce:
            if method not in SPARSE_METHODS:
                raise ValueError(f"transduce=True needs a sparse approximation; got {method!r}")
            mean, cov = bcm_predict(self._training_rows(), self._y_model, Xs, s2, ls, sn2,
                                    method, self._blocks_fit, self.jitter, self._spec.family,
                                    vb)
            var = np.maximum(np.diag(cov), 0.0)
            if full:
                return mean, cov
        elif method in SPARSE_METHODS:
            out = sparse_predict(self._post, self._Z, Xs, s2, ls, full, self._spec.family, vb)
            mean, var = out
            if full:
                return mean, var
        else:
            Xt = self._training_rows()
            Xt = Xt if method == "exact" else Xt[self.subset_indices_]
            mean, var = exact_predict(Xt, self._post, Xs, s2, ls, full, self._spec.family, vb)
            if full:
                return mean, var
            var = np.maximum(var, 0.0)
        return mean, var
