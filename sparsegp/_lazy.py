"""Public names a package loads on first use (PEP 562), written once for every package.

``import sparsegp`` stays cheap because the estimators' modules are imported only when one of
their names is first read: the package and its subpackages each keep a table of public name
-> module and take their module-level ``__getattr__`` and ``__dir__`` from
:func:`lazy_exports`.
"""
from importlib import import_module

__all__ = ["lazy_exports"]


def lazy_exports(package, names, namespace):
    """The module-level ``__getattr__`` and ``__dir__`` of a package with lazy public names.

    Parameters
    ----------
    package : str
        The package's ``__name__``; relative module names are resolved against it.
    names : dict
        Public name -> the module that holds it, absolute (``"sparsegp.datasets"``) or
        relative (``"._gfitc"``). A name that is the last component of its module's name
        stands for the module itself (``"datasets"``).
    namespace : dict
        The package's ``globals()``. A name read once is stored there, so that later reads
        no longer reach ``__getattr__``; ``__dir__`` returns its ``__all__``.

    Returns
    -------
    __getattr__, __dir__ : callable
    """
    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = import_module(names[name], package)
        value = module if module.__name__.endswith("." + name) else getattr(module, name)
        namespace[name] = value
        return value

    def __dir__():
        return namespace["__all__"]

    return __getattr__, __dir__
