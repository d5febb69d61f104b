"""Gaussian-process classifiers (binary and multi-class); each class lives in its own module."""
from .._lazy import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
