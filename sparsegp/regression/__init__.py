"""Sparse Gaussian-process regression (SoD, SoR, DTC, FITC, FIC, PITC, VFE, exact)."""
from importlib import import_module as _import_module

_LAZY = {
    "SparseGPRegressor": "._sparse",
}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        value = getattr(_import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return __all__
