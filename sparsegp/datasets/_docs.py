"""The docstring pieces the data functions share, filled in by :data:`fill`.

``data_home`` is the parameter of every function that reads or writes the data folder;
``out_path`` and ``written`` say what each converter writes and returns.
"""
from .._docstrings import fill_doc

__all__ = ["fill"]

_PIECES = {
    "data_home": """data_home : str or path-like, optional
    The data folder; default ``$SPARSEGP_DATA`` when set and non-empty, else pooch's cache
    folder for ``sparsegp`` (:func:`sparsegp.datasets.get_data_home`).""",
    "out_path": """out_path : str or path-like
    ``.npz`` file to write (the suffix is added when missing); ``<data folder>/<name>.npz``
    is what :func:`sparsegp.datasets.load_dataset` finds by ``name``.""",
    "written": """Returns
-------
pathlib.Path
    The file written.""",
}

#: Decorator filling a data function's ``%(data_home)s``, ``%(out_path)s`` and
#: ``%(written)s`` lines.
fill = fill_doc(_PIECES)
