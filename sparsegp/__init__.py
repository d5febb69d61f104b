"""sparsegp: sparse Gaussian-process classification and regression, accelerated by Numba.

Importing the package is cheap: estimators are loaded on first attribute access, and
plotting (matplotlib) is never imported here.
"""
from ._array_backends import register_backend as _register_backend
from ._lazy import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
