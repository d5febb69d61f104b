"""The gradient of the multi-class log Z_EP in the log hyper-parameters and the inducing
inputs (notes §4), in the parts the engine adds up.

The gradient is linear in the weights of (K_c, K_fu, kappa_c). :func:`_row_gradient` gives the
rows' part (a sum over rows, so chunks of a data set can be added); :func:`_prior_gradient`
the K_c part once, from the rows' total GV^T V and the posterior; :func:`_kuu_gradient` turns
any K_c weight into the packed gradient; :func:`_hyper_gradient` is the two together. The
exact gradient with the sites held fixed adds every factor's moment mismatch
(:func:`_moment_mismatch`) through :func:`_mismatch_weight`. Every result is packed like
:meth:`.kernel.ClassParams.pack`.
"""
import numpy as np

from . import kernel as _k
from .ep_state import _matmul, _matmul_tn


def _grad_prior_part(prior, q, c):
    """-1/2 M_c with M_c = K^{-1} - K^{-1}(S + m m^T) K^{-1} (notes §4), shape (M, M)."""
    A = prior.A[c]
    Am = A @ q.m[c]
    ASA = A @ q.S[c] @ A
    return -0.5 * (A - ASA - np.outer(Am, Am))


def _row_gradient(X, hyp, prior, Kfu, V, res, scale, noise_in_kuu):
    """The rows' part of the gradient of log Z_EP, and their sum GV^T V (notes §4).

    The gradient is linear in the weights (W_uu, W_fu, w_kappa) of (K_c, K_fu, kappa); the rows
    give W_fu and w_kappa directly and enter W_uu only through the (C, M, M) sum GV^T V. So the
    rows of a data set can be taken in chunks (on other machines) and their parts added:
    :func:`_prior_gradient` adds the W_uu part once.

    Returns
    -------
    grad : ndarray
        Packed like :meth:`.kernel.ClassParams.pack`.
    GVtV : ndarray of shape (C, M, M)
    """
    C, M, D = hyp.shape
    g_lv, g_ln, g_ll, g_Z, g_lb = _holders(hyp)
    # batch steps have scale 1: no (C, B, M) copies then
    GV = res.GV if scale == 1.0 else scale * res.GV
    GVtV = _matmul_tn(GV, V)
    wsum = res.wsum if scale == 1.0 else scale * res.wsum
    W_fu = _matmul(GV, prior.A)
    for c in range(C):  # class by class: a (B, M) temporary instead of a (C, B, M) one
        W_fu[c] -= wsum[:, c, None] * V[c]
    zero = np.zeros((M, M))
    for c in range(C):
        g_lv[c], g_ln[c], g_ll[c], g_Z[c], g_lb[c] = _k.kernel_grads(
            X, hyp.Z[c], prior.variance[c], prior.lengthscale[c], prior.noise[c],
            prior.K_se[c], Kfu[c], zero, W_fu[c], wsum[:, c], noise_in_kuu, prior.jitter,
            hyp.family, prior.class_bias(c))
    return _k.pack_params(g_lv, g_ln, g_ll, g_Z, _bias_part(hyp, g_lb)), GVtV


def _prior_gradient(hyp, prior, q, GVtV, noise_in_kuu, W_extra=None):
    """The K_c part of the gradient, given the rows' total GV^T V, packed (notes §4).

    ``W_extra`` (C, M, M), optional, is added to the weight of every dK_c: the moment-mismatch
    term of the exact gradient (:func:`_mismatch_weight`).
    """
    W_uu = [_grad_prior_part(prior, q, c) - prior.A[c] @ GVtV[c] for c in range(hyp.shape[0])]
    if W_extra is not None:
        W_uu = [w + e for w, e in zip(W_uu, W_extra)]
    return _kuu_gradient(hyp, prior, W_uu, noise_in_kuu)


def _kuu_gradient(hyp, prior, W_uu, noise_in_kuu):
    """Gradient of sum_c <W_uu[c], K_c> (W_uu (C, M, M) symmetric), packed like
    :meth:`.kernel.ClassParams.pack`."""
    g_lv, g_ln, g_ll, g_Z, g_lb = _holders(hyp)
    for c in range(hyp.shape[0]):
        g_lv[c], g_ln[c], g_ll[c], g_Z[c], g_lb[c] = _k.kernel_grads(
            None, hyp.Z[c], prior.variance[c], prior.lengthscale[c], prior.noise[c],
            prior.K_se[c], None, W_uu[c], None, 0.0, noise_in_kuu, prior.jitter,
            hyp.family, prior.class_bias(c))
    return _k.pack_params(g_lv, g_ln, g_ll, g_Z, _bias_part(hyp, g_lb))


def _holders(hyp):
    """Empty per-class gradient arrays (C,), (C,), (C, D), (C, M, D), (C,)."""
    C, M, D = hyp.shape
    return np.empty(C), np.empty(C), np.empty((C, D)), np.empty((C, M, D)), np.empty(C)


def _bias_part(hyp, g_lb):
    """v_c's part of the packed gradient: ``g_lb`` when the kernel has a constant, else None
    (no entries)."""
    return None if hyp.log_bias is None else g_lb


def _hyper_gradient(X, hyp, prior, q, Kfu, V, res, scale, noise_in_kuu):
    """Gradient of log Z_EP (prior part full, likelihood part x ``scale``), packed (notes §4)."""
    grad, GVtV = _row_gradient(X, hyp, prior, Kfu, V, res, scale, noise_in_kuu)
    return grad + _prior_gradient(hyp, prior, q, GVtV, noise_in_kuu)


def _mismatch_weight(prior, mismatch):
    """The dK_c weight of the moment-mismatch term: sum_f (E_tilted_f - E_q)[u u^T] meets
    d(-1/2 K_c^-1) = 1/2 A dK A, so the weight is 1/2 A mismatch A, symmetrised; (C, M, M)."""
    W = 0.5 * np.matmul(np.matmul(prior.A, mismatch), prior.A)
    return 0.5 * (W + np.swapaxes(W, 1, 2))


def _moment_mismatch(y, V, Vo, ref, sites, new):
    """sum over the factors f of the rows of (E_tilted_f - E_ref)[u_c u_c^T], (C, M, M).

    Factor (i, k) with side c in {y_i, k} has a site (tau, eta) along v° (zero for SEP),
    cavity S_cav = S + (tau / rho) S v° v°^T S, m_cav = m + beta S v° (S, m of ``ref``;
    rho = 1 - tau v°^T S v°, beta = (tau v°^T m - eta) / rho), and its tilted marginal is the
    cavity times the new site (tau^, eta^) along v (the pass's undamped targets, ``new``):
    S_t = S_cav - nu x x^T, m_t = m_cav + gamma x with x = S_cav v = S v + alpha S v°,
    alpha = tau v°^T S v / rho, nu = tau^ / (1 + tau^ s^) and gamma = (eta^ - tau^ a^) /
    (1 + tau^ s^), s^ = v^T x and a^ = v^T m_cav the cavity projections. So
    E_t - E_ref = a_oo S v° v°^T S + a_vv S v v^T S + a_vo (S v v°^T S + S v° v^T S)
                  + m (p S v° + q S v)^T + (p S v° + q S v) m^T
    with p = beta + gamma alpha, q = gamma and the coefficients below; summed per class over
    the rows as (M, M) products.
    """
    C = V.shape[0]
    rows = np.arange(y.shape[0])
    SV = _matmul(V, ref.S)
    SO = SV if Vo is V else _matmul(Vo, ref.S)
    # projections (B, C): v^T S v, v°^T S v, v°^T S v°, v^T m, v°^T m
    avv = np.einsum("cbm,cbm->bc", V, SV)
    aov = np.einsum("cbm,cbm->bc", Vo, SV)
    aoo = np.einsum("cbm,cbm->bc", Vo, SO)
    muv = np.einsum("cbm,cm->bc", V, ref.m)
    muo = np.einsum("cbm,cm->bc", Vo, ref.m)
    coef = {key: np.zeros(avv.shape) for key in ("oo", "vv", "vo", "mo", "mv")}
    for side in (0, 1):             # winner side: class y_i; loser side: class k
        tau, eta = sites[2 * side], sites[2 * side + 1]
        tau_n, eta_n = new[2 * side], new[2 * side + 1]

        def proj(a):
            return np.broadcast_to(a[rows, y][:, None], a.shape) if side == 0 else a

        rho = 1.0 - tau * proj(aoo)
        alpha = tau * proj(aov) / rho
        beta = (tau * proj(muo) - eta) / rho
        s_hat = proj(avv) + alpha * proj(aov)
        a_hat = proj(muv) + beta * proj(aov)
        nu = tau_n / (1.0 + tau_n * s_hat)
        gamma = (eta_n - tau_n * a_hat) / (1.0 + tau_n * s_hat)
        p = beta + gamma * alpha
        terms = {"oo": tau / rho - nu * alpha ** 2 + p * p, "vv": gamma * gamma - nu,
                 "vo": p * gamma - nu * alpha, "mo": p, "mv": gamma}
        for key, value in terms.items():
            if side == 0:           # the C - 1 winner sides of row i are all on class y_i
                coef[key][rows, y] += value.sum(axis=1)
            else:
                coef[key] += value
    out = np.empty((C,) + ref.S.shape[1:])
    for c in range(C):
        sv, so = SV[c], SO[c]
        vo = sv.T @ (coef["vo"][:, c, None] * so)
        u = so.T @ coef["mo"][:, c] + sv.T @ coef["mv"][:, c]
        out[c] = (so.T @ (coef["oo"][:, c, None] * so) + sv.T @ (coef["vv"][:, c, None] * sv)
                  + vo + vo.T + np.outer(ref.m[c], u) + np.outer(u, ref.m[c]))
    return out
