"""The warnings for a fitted regressor that should not be trusted silently.

After an optimised fit, :meth:`_FitCheckMixin._warn_if_degenerate` compares the fitted mean
at the N training inputs with the targets, and for SoR and DTC the prior variance the
inducing inputs leave unexplained there with var(y). Both numbers come from the final
evidence evaluation (a :class:`~sparsegp.regression._base.Posterior`'s ``fitted_mean`` (N,)
and ``trace_gap``), not from a new pass over the rows. The thresholds below were measured;
the method's docstring says what each warning means.
"""
import numpy as np

from ..exceptions import ConvergenceWarning, warn
from . import _base

#: A fitted model whose training R² is at most this predicts no better than the mean of y.
MEAN_R2 = 1e-2
#: Mean prior variance left unexplained by the inducing inputs at the training inputs,
#: mean(K_nn − Q_nn), as a multiple of var(y), beyond which a SoR/DTC fit is reported as far
#: more certain than its kernel supports (``_warn_if_degenerate``). Measured at the defaults
#: (70/30 splits; M = 15 and 50): healthy fits at most 1.3 (test R² within 0.01 of training
#: R²), degenerate ones from 6.9 (5-D synthetic, training R² 1.00, test −0.19) to 5e5
#: (diabetes, training 0.96, test −6.6).
DEGENERATE_RATIO = 4.0


class _FitCheckMixin:
    """The fit checks on :class:`~sparsegp.regression.SparseGPRegressor`.

    They read its ``approximation`` and ``normalize_y`` and what ``fit`` left: the targets
    in model units ``_y_model``, the evidence's factors ``_post``, the hyper-parameters
    ``_s2``, ``_ls``, ``_sn2``, ``_vb`` and kernel ``_spec`` in model units, and SoD's
    ``subset_indices_``.
    """

    def _warn_if_degenerate(self, X):
        """ConvergenceWarnings for a fitted model that should not be trusted silently.

        * **No better than the mean of y**: the coefficient of determination of the fitted
          mean at the training inputs, R² = 1 − Σ(y − μ)² / Σ(y − ȳ)², at most
          ``MEAN_R2`` (a flat fit, or a zero-mean fit far from y with ``normalize_y=False``).
        * **SoR/DTC more certain than their kernel** (issue 23): their effective prior Q_ff
          takes the variance K_nn − Q_nn that the inducing inputs leave unexplained at each
          training input as known to be zero, so their evidence fits the training targets
          as if that variance did not exist; DTC's own predictive variance at those same
          inputs (exact test conditional) includes it. When its mean exceeds
          ``DEGENERATE_RATIO`` times var(y) (the model's s.d. at its own training inputs over
          twice that of y, while the mean fits them), the training fit rests on a prior the
          kernel does not support, and predictions away from the training inputs are
          typically far worse than the training fit (diabetes: training R² 0.96, test
          R² −6.6). The mean is tr(K_ff − Q_ff) / N, which the final evaluation computed
          (DTC's evidence exceeds the VFE bound at the same parameters by exactly
          tr(K_ff − Q_ff) / (2σ²)).

        Run after an optimised fit only: fixed hyper-parameters are the user's model. Both
        checks read what the final evidence evaluation left in ``self._post``; neither
        evaluates the kernel again (except for ``"sod"``, whose mean at the rows outside the
        subset is new).

        Parameters
        ----------
        X : ndarray of shape (N, D)
            The training inputs in model units.
        """
        method = self.approximation
        label = f"SparseGPRegressor ({method})"
        y_model = self._y_model
        ss = float(np.sum((y_model - np.mean(y_model)) ** 2))
        if ss > 0.0:
            resid = y_model - self._training_mean(X)
            r2 = 1.0 - float(np.sum(resid * resid)) / ss
            if r2 <= MEAN_R2:
                first = "" if self.normalize_y else "normalize_y=True, "
                warn(
                    f"{label}: the fit predicts the training targets no better than their mean "
                    f"(training R² {r2:.3g}); the evidence is likely at a degenerate optimum "
                    f"(a length-scale or signal variance at an extreme). Try {first}"
                    "n_restarts > 0 or other initial hyper-parameters, and check that y "
                    "depends on X", ConvergenceWarning)
        if method in ("sor", "dtc"):
            unexplained = self._post.trace_gap / y_model.size
            ratio = unexplained / max(ss / y_model.size, np.finfo(float).tiny)
            if ratio > DEGENERATE_RATIO:
                warn(
                    f"{label}: the fit is far more certain than its kernel supports: at the "
                    "training inputs the inducing inputs leave prior variance averaging "
                    f"{ratio:.3g} times var(y) unexplained, which {method} treats as zero. Its "
                    "training fit is likely far better than its predictions elsewhere; try "
                    "approximation='vfe' or 'fitc', more inducing points, or n_restarts > 0",
                    ConvergenceWarning)

    def _training_mean(self, X):
        """Fitted mean (model units) at the model-unit training rows X, without variances."""
        method, family = self.approximation, self._spec.family
        if method == "exact":
            _, alpha = self._post
            return self._y_model - self._sn2 * alpha            # K α = y − σ² α
        if method == "sod":
            Xs = X[self.subset_indices_]
            K = _base.cross_cov(X, Xs, self._s2, self._ls, family=family)
            return _base.bias_covariance(K, self._vb) @ self._post[1]
        return self._post.fitted_mean                           # K_fu w, from the evaluation
