"""The compiled ADAM step of :class:`sparsegp._ascend.Adam` (the only implementation)."""
import math

from ._jit import jit


@jit
def adam_ascent_step(theta, grad, scale, m, v, c1, c2, lr, beta1, beta2, eps, out):
    """One ADAM ascent step in the coordinates phi = theta / scale, in one pass over theta.

    out = (phi + lr m_hat / (sqrt(v_hat) + eps)) * scale with m_hat = m / c1, v_hat = v / c2
    (Kingma & Ba 2015, Algorithm 1, ascending). Coordinates with ``scale`` 0 are frozen
    (out = theta); scale 1 is the plain step. ``m`` and ``v`` (moments of grad * scale) are
    updated in place; ``out`` is written. The bias corrections c1 = 1 - beta1^t and
    c2 = 1 - beta2^t come from the caller, so that they are the same powers whichever path
    steps (Numba's float ** int is repeated squaring, not the C library's pow).
    """
    for j in range(theta.shape[0]):
        s = scale[j]
        g = grad[j] * s
        m[j] = beta1 * m[j] + (1.0 - beta1) * g
        v[j] = beta2 * v[j] + (1.0 - beta2) * g * g
        if s > 0.0:
            phi = theta[j] / s + lr * (m[j] / c1) / (math.sqrt(v[j] / c2) + eps)
            out[j] = phi * s
        else:
            out[j] = theta[j]
