"""Experiment grids: the papers' tables as resumable sets of cells run on dask.distributed.

    >>> from sparsegp.experiments import TABLES, run_grid  # doctest: +SKIP
    >>> cells = TABLES["multiclass"].cells(folds=2, datasets=["wine"])  # doctest: +SKIP
    >>> out = run_grid(cells, "wine.jsonl")  # doctest: +SKIP

Modules: :mod:`.grid` (what a cell is, validation, fitting one cell), :mod:`.store` (the
JSON-lines results file, and :func:`write_whole` for the files figure scripts keep as they
go), :mod:`.runner` (the dask / in-process runner), :mod:`.tables` (the papers' grids and
numbers), :mod:`.report` (summaries and markdown), :mod:`.reproduce` (run a table and write
its files).
"""
from .grid import DATASETS, METHODS, Cell, run_cell, validate_cells
from .report import markdown, summarise
from .reproduce import run_table
from .runner import SINGLE_THREAD_ENV, have_distributed, local_cluster, run_grid
from .store import ResultsStore, write_whole
from .tables import TABLES, Table

__all__ = ["DATASETS", "METHODS", "SINGLE_THREAD_ENV", "TABLES", "Cell", "ResultsStore",
           "Table", "have_distributed", "local_cluster", "markdown", "run_cell", "run_grid",
           "run_table", "summarise", "validate_cells", "write_whole"]
