"""sparsegp: sparse Gaussian-process classification and regression, accelerated by Numba.

Importing the package is cheap: estimators are loaded on first attribute access, and
plotting (matplotlib) is never imported here.
"""
from importlib import import_module as _import_module

from ._array_backends import register_backend as _register_backend

__version__ = "0.1.0"

# public name -> module that defines it; resolved lazily by __getattr__ (PEP 562)
_LAZY = {
    "GFITCClassifier": "sparsegp.classification",
    "EPClassifier": "sparsegp.classification",
    "IVMClassifier": "sparsegp.classification",
    "StagewiseGPClassifier": "sparsegp.classification",
    "MultiClassEPClassifier": "sparsegp.classification",
    "MultiClassGFITCClassifier": "sparsegp.classification",
    "MultiClassSVGPClassifier": "sparsegp.classification",
    "SparseGPRegressor": "sparsegp.regression",
    "datasets": "sparsegp.datasets",
    "metrics": "sparsegp.metrics",
    "plotting": "sparsegp.plotting",
}

__all__ = sorted(_LAZY) + ["__version__"]

# A Dask array given to fit trains on rows the scale-out layer (above the estimators) holds:
# named here, by path, so that the estimator need not import it and NumPy fits never load Dask
_register_backend("dask", "MultiClassEPClassifier", "sparsegp.distributed:DASK_BACKEND")


def __getattr__(name):
    if name in _LAZY:
        module = _import_module(_LAZY[name])
        value = module if module.__name__.endswith("." + name) else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sparsegp' has no attribute {name!r}")


def __dir__():
    return __all__
