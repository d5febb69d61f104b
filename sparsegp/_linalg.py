"""The one Cholesky-with-jitter ladder of the library (notes §0.2).

Every K_uu factorisation adds ``jitter × scale`` to the diagonal, where ``scale`` is the
kernel's own diagonal (the signal variance of a stationary kernel), so that ``jitter`` means
the same relative amount in every estimator and in any units. When the factorisation fails the
jitter grows tenfold (from at least 1e-10) up to :data:`sparsegp._config.MAX_JITTER`; a grown
jitter is reported with a :class:`~sparsegp.exceptions.JitterWarning`, a factorisation that
fails even there with a ``LinAlgError`` that says what to try.
"""

import numpy as np

from ._config import MAX_JITTER
from . import exceptions
from .exceptions import JitterWarning


def cholesky_jitter(K, scale, jitter, *, name="K_uu", escalate=True, warn=True):
    """Lower Cholesky factor of ``K + j · scale · I``, j starting at ``jitter``.

    Parameters
    ----------
    K : ndarray of shape (M, M)
        Symmetric matrix without jitter; left unchanged.
    scale : float
        The kernel's diagonal value (signal variance); the jitter is relative to it.
    jitter : float
        Starting multiple j >= 0.
    name : str
        What K is, for messages.
    escalate : bool
        Grow j tenfold on failure (up to ``MAX_JITTER``); False fails at once.
    warn : bool
        Issue a :class:`~sparsegp.exceptions.JitterWarning` (at the user's line) when j had
        to grow.

    Returns
    -------
    L : ndarray of shape (M, M)
        Lower factor with finite entries.
    used : float
        The multiple j finally used (>= ``jitter``).

    Raises
    ------
    numpy.linalg.LinAlgError
        When no j up to ``MAX_JITTER`` (or, without ``escalate``, ``jitter`` itself) gives a
        positive definite matrix.
    """
    used = float(jitter)
    diag = np.diag_indices_from(K)
    while True:
        Kj = K.copy()
        Kj[diag] += used * scale
        try:
            L = np.linalg.cholesky(Kj)
            if np.all(np.isfinite(L)):
                break
        except np.linalg.LinAlgError:
            pass
        if not escalate or used >= MAX_JITTER:
            raise np.linalg.LinAlgError(
                f"{name} is not positive definite even with jitter {used:g} x its diagonal; "
                "check the inputs for NaN, spread nearly coincident inducing inputs, or raise "
                "jitter")
        used = min(max(used * 10.0, 1e-10), MAX_JITTER)
    if warn and used > jitter:
        exceptions.warn(
            f"{name} was numerically singular with jitter {jitter:g}; the jitter was increased "
            f"to {used:g} x its diagonal (duplicate or nearly coincident inducing inputs?)",
            JitterWarning)
    return L, used
