"""One call that runs a paper's table and writes its results file and markdown."""
from pathlib import Path

from .grid import fetch_missing
from .report import markdown
from .runner import run_grid
from .store import ResultsStore
from .tables import TABLES


def run_table(name, out=".", stem=None, folds=None, datasets=None, methods=None,
              max_iter=None, command=None, report_only=False, download=False, **run_options):
    """Run table ``name`` as a grid; write ``<out>/<stem>.jsonl`` and ``<out>/<stem>.md``.

    Parameters
    ----------
    name : str
        A key of :data:`TABLES` ("multiclass", "gfitc_table1", "ivm_mnist").
    out : str or Path
        Folder of both files (created).
    stem : str, optional
        File name without suffix; default ``name``.
    folds : int, optional
        First ``folds`` splits of each data set (default the paper's number).
    datasets, methods : sequence of str, optional
        Subsets of the table's.
    max_iter : int, optional
        Overrides ``max_iter`` of every method that sets it (quick runs; such cells have
        their own keys, so they never mix with full-length ones).
    command : str, optional
        Command line printed in the markdown.
    report_only : bool, default=False
        Fit nothing: write the markdown from the cells already in the results file (a run
        still going, or one that was stopped).
    download : bool, default=False
        First download the registered data files of the chosen data sets that the data
        folder lacks (:func:`sparsegp.experiments.grid.fetch_missing`), before the grid is
        built: how many splits a data set has is read from its file.
    **run_options
        Passed to :func:`run_grid` (``client``, ``scheduler``, ``n_workers``, ``progress``,
        ``local``).

    Returns
    -------
    dict
        What :func:`run_grid` returns, plus ``cells`` (the grid), ``results`` and
        ``markdown`` (the two paths).

    Raises
    ------
    ValueError
        A name outside the table or a grid that fails validation; nothing has run then.
    sparsegp.datasets.DownloadError
        With ``download=True``, a data file that could not be had; nothing has run then.
    """
    if name not in TABLES:
        raise ValueError(f"unknown table {name!r}; valid: {', '.join(sorted(TABLES))}")
    table = TABLES[name]
    params = None if max_iter is None else {"max_iter": int(max_iter)}
    if download and not report_only:
        fetch_missing(table._subset(datasets, table.datasets, "data set"),
                      data_home=run_options.get("data_home"))
    cells = table.cells(folds=folds, datasets=datasets, methods=methods, params=params)
    out = Path(out)
    stem = stem or table.name
    results, md = out / f"{stem}.jsonl", out / f"{stem}.md"
    if report_only:
        records = ResultsStore(results).records()
        summary = {"records": {c.key: records[c.key] for c in cells if c.key in records},
                   "ran": 0, "failed": 0, "wall": None}
    else:
        summary = run_grid(cells, results, **run_options)
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(markdown(table, cells, summary["records"], wall=summary["wall"],
                           command=command), encoding="utf-8")
    return {**summary, "cells": cells, "results": results, "markdown": md}
