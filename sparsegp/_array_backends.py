"""Where an estimator finds the rows of an array that does not live in this process.

The estimators sit below :mod:`sparsegp.distributed` and may not import it, yet
``MultiClassEPClassifier().fit(X, y)`` with a Dask ``X`` must train where the chunks live.
So the dependency points the other way: the package's front door (:mod:`sparsegp`, the top
layer) names here, by a dotted path, the backend for each foreign array type and estimator,
and the estimator asks :func:`backend_for` before it converts ``X`` to NumPy. The path is
imported on first use only, so that fitting NumPy data never imports Dask.

A backend is an object with ``name`` (how messages call the input, e.g. "a Dask array"),
``check_input(X, y, owner) -> (X, y_index, classes)``, ``column_moments(X) -> (mean, std)``
and ``rows(X, y_index, noise_setting)``, a context manager giving the engine's rows object.
"""
from importlib import import_module

__all__ = ["array_package", "backend_for", "register_backend"]

#: ``(array package, estimator key) -> "module:attribute"``, filled by :mod:`sparsegp`
_BACKENDS = {}


def array_package(X):
    """The top-level package of ``X``'s type (``"dask"`` for a Dask array), read from the
    type's module so that no array library is imported to ask."""
    return type(X).__module__.split(".")[0]


def register_backend(package, estimator, target):
    """Name the backend that trains ``estimator`` on arrays of ``package``.

    Parameters
    ----------
    package : str
        Top-level package of the array type, as :func:`array_package` reads it.
    estimator : str
        The estimator's key (its class name).
    target : str
        ``"module:attribute"`` of the backend object.
    """
    module, sep, attribute = target.partition(":")
    if not (module and sep and attribute):
        raise ValueError(f"target must be 'module:attribute'; got {target!r}")
    _BACKENDS[(package, estimator)] = target


def backend_for(X, estimator):
    """The registered backend of ``estimator`` (a key) for ``X``'s array type, else None."""
    target = _BACKENDS.get((array_package(X), estimator))
    if target is None:
        return None
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)
