"""Stable probit quantities: log Phi(z), the inverse Mills ratio N(z)/Phi(z), tilted moments.

All functions are accurate to near machine precision for |z| <= 40 (and stay finite beyond).
For z < -5 the Mills ratio comes from its continued fraction evaluated backwards, which avoids
both the underflow of Phi(z) and the cancellation in z + r(z) (notes §0.4).
"""
import math

import numpy as np

from ._jit import jit

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_CF_TERMS = 40
_SWITCH = -5.0


@jit
def _mills_cf(t):
    """For t >= 5 return (f, f2): f = 1/R(t) = r(-t), and 1/f2 = r(-t) - t without cancellation."""
    f = t
    for k in range(_CF_TERMS, 1, -1):
        f = t + k / f
    f2 = f
    f = t + 1.0 / f2
    return f, f2


@jit
def log_ndtr(z):
    """log Phi(z) for a scalar z."""
    if z < _SWITCH:
        f, _ = _mills_cf(-z)
        return -0.5 * z * z - _LOG_SQRT_2PI - math.log(f)
    if z > 0.0:
        # Phi(z) is near 1: log1p keeps the relative accuracy of the small log
        return math.log1p(-0.5 * math.erfc(z * _INV_SQRT2))
    return math.log(0.5 * math.erfc(-z * _INV_SQRT2))


@jit
def inv_mills(z):
    """r(z) = N(z) / Phi(z) for a scalar z."""
    if z < _SWITCH:
        f, _ = _mills_cf(-z)
        return f
    pdf = math.exp(-0.5 * z * z - _LOG_SQRT_2PI)
    return pdf / (0.5 * math.erfc(-z * _INV_SQRT2))


@jit
def inv_mills_and_shift(z):
    """Return (r, z + r) with r = N(z)/Phi(z); z + r is free of cancellation for z < -5."""
    if z < _SWITCH:
        f, f2 = _mills_cf(-z)
        return f, 1.0 / f2
    r = inv_mills(z)
    return r, z + r


@jit
def probit_tilted(y, mu, var, bias):
    """Moments of Phi(y (f + bias)) N(f | mu, var).

    Returns
    -------
    log_z : float
        log of the tilted normaliser, log Phi(z) with z = y (mu + bias) / sqrt(1 + var).
    alpha : float
        d log Z / d mu.
    nu : float
        -d^2 log Z / d mu^2, in (0, 1 / (1 + var)).

    The tilted mean is mu + var * alpha and its variance var * (1 - var * nu) (notes §0.4).
    """
    s = math.sqrt(1.0 + var)
    z = y * (mu + bias) / s
    r, zr = inv_mills_and_shift(z)
    log_z = log_ndtr(z)
    alpha = y * r / s
    nu = r * zr / (1.0 + var)
    return log_z, alpha, nu


@jit
def probit_tilted_moments(y, mu, var, bias):
    """``(alpha, nu)`` of :func:`probit_tilted` without log Z.

    A parallel EP iteration needs only the two moments; skipping log Phi saves an ``erfc`` and
    a ``log`` per site, which at small M is a large part of the iteration.
    """
    s = math.sqrt(1.0 + var)
    z = y * (mu + bias) / s
    r, zr = inv_mills_and_shift(z)
    return y * r / s, r * zr / (1.0 + var)


@jit
def pairwise_tilted(a_p, s_p, d_p, a_m, s_m, d_m):
    """Tilted normaliser of one pairwise-probit factor and its derivatives (notes multiclass §2.4).

    The step factor Theta(f_p - f_m) of the multi-class likelihood (notes multiclass §1.2)
    integrated against independent Gaussians with cavity means ``a_p``, ``a_m``, variances
    ``s_p``, ``s_m`` and extra (FITC) variances ``d_p``, ``d_m`` (0 for a GFITC factor, whose
    FITC variance is already inside its marginals).

    Returns
    -------
    log_z : float
        log Phi(beta), beta = (a_p - a_m) / sqrt(z), z = d_p + s_p + d_m + s_m.
    g : float
        d log Z / d a_p (= -d log Z / d a_m) = r / sqrt(z).
    nu : float
        -d^2 log Z / d a_p^2 = r (r + beta) / z, with r(r + beta) clipped into (0, 1).
    w : float
        d log Z / d z = -r beta / (2 z).
    z : float
        The total variance (<= 0 signals a failure to the caller).
    """
    beta, g, nu, w, z = _pairwise_moments(a_p, s_p, d_p, a_m, s_m, d_m)
    if not z > 0.0:
        return -np.inf, g, nu, w, z
    return log_ndtr(beta), g, nu, w, z


@jit
def pairwise_tilted_moments(a_p, s_p, d_p, a_m, s_m, d_m):
    """``(g, nu, w, z)`` of :func:`pairwise_tilted` without log Z.

    An EP site update needs only the moments; skipping log Phi saves an ``erfc`` and a
    ``log`` per factor (a third of a multi-class GFITC parallel update; issue 22).
    """
    _, g, nu, w, z = _pairwise_moments(a_p, s_p, d_p, a_m, s_m, d_m)
    return g, nu, w, z


@jit
def _pairwise_moments(a_p, s_p, d_p, a_m, s_m, d_m):
    """``(beta, g, nu, w, z)`` of :func:`pairwise_tilted` (all 0 but z when z <= 0)."""
    z = d_p + s_p + d_m + s_m
    if not z > 0.0:
        return 0.0, 0.0, 0.0, 0.0, z
    sz = math.sqrt(z)
    beta = (a_p - a_m) / sz
    r, shift = inv_mills_and_shift(beta)
    # r (r + beta) lies in (0, 1) exactly; rounding can push it onto the boundary (notes §8.1)
    rr = r * shift
    if rr >= 1.0:
        rr = 1.0 - 1e-16
    elif rr <= 0.0:
        rr = 1e-300
    return beta, r / sz, rr / z, -0.5 * r * beta / z, z


@jit
def log_ndtr_array(z, out):
    """Element-wise log Phi of a 1-D array into ``out`` (same shape)."""
    for i in range(z.shape[0]):
        out[i] = log_ndtr(z[i])
    return out


@jit
def inv_mills_array(z, out):
    """Element-wise N(z)/Phi(z) of a 1-D array into ``out`` (same shape)."""
    for i in range(z.shape[0]):
        out[i] = inv_mills(z[i])
    return out


def log_ndtr_vec(z):
    """log Phi(z) for any array (Python convenience wrapper, allocates)."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    out = np.empty(z.size)
    log_ndtr_array(z.ravel(), out)
    return out.reshape(z.shape)


def inv_mills_vec(z):
    """N(z)/Phi(z) for any array (Python convenience wrapper, allocates)."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    out = np.empty(z.size)
    inv_mills_array(z.ravel(), out)
    return out.reshape(z.shape)
