"""Gaussian-process classifiers (binary and multi-class); each class lives in its own module."""
from importlib import import_module as _import_module

_LAZY = {
    "GFITCClassifier": "._gfitc",
    "EPClassifier": "._ep",
    "IVMClassifier": "._ivm",
    "StagewiseGPClassifier": "._stagewise",
    "MultiClassEPClassifier": ".multiclass._ep",
    "MultiClassGFITCClassifier": ".multiclass._gfitc",
    "MultiClassSVGPClassifier": ".multiclass._svgp",
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
