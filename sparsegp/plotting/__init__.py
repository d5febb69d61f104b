"""Figures of fitted models. Every function takes ``ax=None`` and returns matplotlib objects.

matplotlib is imported only when a plotting function runs, never by ``import sparsegp``.
Each submodule lists its public functions in ``__all__``; they are found here by name.
"""
from importlib import import_module as _import_module
from importlib.util import find_spec as _find_spec

_SUBMODULES = ("_classification", "_regression", "_curves", "_stagewise", "_multiclass")


def _public():
    names = {}
    for sub in _SUBMODULES:
        if _find_spec(f"{__name__}.{sub}") is None:
            continue
        module = _import_module(f".{sub}", __name__)
        for name in getattr(module, "__all__", ()):
            names[name] = module
    return names


def __getattr__(name):
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(_public())
