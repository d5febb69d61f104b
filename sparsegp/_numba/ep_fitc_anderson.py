"""Anderson acceleration of the parallel EP map over the FITC prior (type II, on x = (tau, nu)).

:func:`anderson_propose` turns the damped step of the parallel schedule into an Anderson step
over a memory of past iterates and residuals; the caller (``_Anderson`` in
:mod:`sparsegp.classification._fitc_ep`) owns the memory and decides when to reset it.
"""
import math

import numpy as np

from ._jit import jit
from .ep import TAU_MIN

#: Ridge of the Anderson normal equations, relative to the largest squared residual change.
ANDERSON_RIDGE = 1e-12


@jit
def _anderson_record(cur, target, off, dX, dF, x, f, slot):
    """Residuals of one half of x (tau or nu, at offset ``off``) and their differences."""
    for i in range(cur.shape[0]):
        j = off + i
        xi = cur[i]
        fi = target[i] - xi
        if slot >= 0:
            dX[slot, j] = xi - x[j]
            dF[slot, j] = fi - f[j]
        x[j] = xi
        f[j] = fi


@jit
def _anderson_point(out, off, c, delta, dX, dF, x, f, floor):
    """One half of the proposal x + delta f - (dX + delta dF) c, clipped below at ``floor``."""
    k = c.shape[0]
    for i in range(out.shape[0]):
        j = off + i
        v = x[j] + delta * f[j]
        for q in range(k):
            v -= c[q] * (dX[q, j] + delta * dF[q, j])
        out[i] = max(v, floor)


@jit
def anderson_propose(tau, nu, tau_target, nu_target, delta, dX, dF, x, f, slot, k):
    """One Anderson (type II) step of the parallel EP map on x = (tau, nu) (2N,), in place.

    With f = (tau_target, nu_target) - x the undamped residual and the columns of ΔX, ΔF the
    stored differences of iterates and residuals, the proposal is

        x + delta f - (ΔX + delta ΔF) c,   c = argmin ‖f - ΔF c‖₂

    (normal equations with a tiny ridge, :data:`ANDERSON_RIDGE`), precisions clipped at
    TAU_MIN; it overwrites ``tau_target`` and ``nu_target`` (N,). ``dX``, ``dF``
    (memory, 2N) hold the differences in any row order; when ``slot`` >= 0 the difference
    from the previous iterate ``x``, residual ``f`` (2N,) is written to that row first, and
    ``x``, ``f`` become the current ones. ``k`` is the number of valid rows afterwards (0: the
    plain damped step). O(N k).
    """
    N = tau.shape[0]
    _anderson_record(tau, tau_target, 0, dX, dF, x, f, slot)
    _anderson_record(nu, nu_target, N, dX, dF, x, f, slot)
    c = np.zeros(k)
    if k > 0:
        A = np.zeros((k, k))
        r = np.zeros(k)
        for j in range(k):
            for i in range(2 * N):
                r[j] += dF[j, i] * f[i]
            for q in range(j + 1):
                s = 0.0
                for i in range(2 * N):
                    s += dF[j, i] * dF[q, i]
                A[j, q] = s
        top = 0.0
        for j in range(k):
            top = max(top, A[j, j])
        if top > 0.0:
            # Cholesky of the k x k normal matrix (lower triangle), then two substitutions
            for j in range(k):
                A[j, j] += ANDERSON_RIDGE * top
                for q in range(j + 1):
                    s = A[j, q]
                    for l in range(q):
                        s -= A[j, l] * A[q, l]
                    A[j, q] = math.sqrt(s) if q == j else s / A[q, q]
            for j in range(k):
                s = r[j]
                for l in range(j):
                    s -= A[j, l] * c[l]
                c[j] = s / A[j, j]
            for j in range(k - 1, -1, -1):
                s = c[j]
                for l in range(j + 1, k):
                    s -= A[l, j] * c[l]
                c[j] = s / A[j, j]
    _anderson_point(tau_target, 0, c, delta, dX, dF, x, f, TAU_MIN)
    _anderson_point(nu_target, N, c, delta, dX, dF, x, f, -math.inf)
