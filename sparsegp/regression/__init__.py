"""Sparse Gaussian-process regression (SoD, SoR, DTC, FITC, FIC, PITC, VFE, exact)."""
from .._lazy import lazy_exports as _lazy_exports

_LAZY = {
    "SparseGPRegressor": "._sparse",
}
__all__ = sorted(_LAZY)

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
