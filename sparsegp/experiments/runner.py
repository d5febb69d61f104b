"""Run a grid of cells, each as a task on a dask.distributed client, resumably.

Without dask.distributed installed (the ``sparsegp[distributed]`` extra) the cells run
in this process, one after another, and the runner says so.
"""
import sys
import time
import uuid
import warnings

from ..distributed._cluster import (SINGLE_THREAD_ENV, have_distributed,  # noqa: F401
                                    local_cluster)
from .grid import Cell, fetch_missing, run_cell, validate_cells
from .store import ResultsStore


class _Progress:
    """tqdm bar of finished cells with done / running / failed counts and the time left."""

    def __init__(self, total, enabled):
        self.failed = 0
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, unit="cell", dynamic_ncols=True, file=sys.stderr)

    def update(self, record, running):
        self.failed += record["status"] != "ok"
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix(done=self.bar.n, running=running, failed=self.failed)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run_grid(cells, results, client=None, scheduler=None, n_workers=None, progress=True,
             data_home=None, local=None, download=False):
    """Run every cell not yet finished in ``results``; append each record as it ends.

    Parameters
    ----------
    cells : sequence of Cell
        The grid. Checked first with :func:`validate_cells`: a bad name raises ValueError
        before any cell runs. Duplicate cells run once.
    results : str or Path
        JSON-lines results file. Cells whose newest record there is "ok" are skipped; failed
        cells are run again (a rerun is how a researcher retries after a fix).
    client : distributed.Client, optional
        Use this client (and its cluster) as is.
    scheduler : str, optional
        Address of a running scheduler, e.g. ``"tcp://127.0.0.1:8786"``.
    n_workers : int, optional
        Workers of the embedded LocalCluster (default: one per core).
    progress : bool
        Show a tqdm bar on stderr.
    data_home : str or Path, optional
        Data folder checked by validation (the workers read ``$SPARSEGP_DATA``).
    local : bool, optional
        True runs in this process, in order, without dask. Default: only when
        dask.distributed is missing (with a warning saying so).
    download : bool, default=False
        First download the registered data files the grid needs and the data folder lacks
        (:func:`sparsegp.experiments.grid.fetch_missing`); off by default, so that nothing
        reaches the network unasked.

    Returns
    -------
    dict
        ``records`` (key -> newest record for every cell of the grid), ``ran`` (number of
        cells fitted in this call), ``failed`` (of those, how many failed), ``wall`` (s).
    """
    cells = list(dict.fromkeys(Cell(**c) if isinstance(c, dict) else c for c in cells))
    if download:
        fetch_missing({c.dataset for c in cells}, data_home=data_home)
    validate_cells(cells, data_home=data_home)
    store = ResultsStore(results)
    finished = store.finished_keys()
    todo = [c for c in cells if c.key not in finished]
    if local is None:
        local = client is None and scheduler is None and not have_distributed()
        if local:
            warnings.warn("dask.distributed is not installed (pip install "
                          "'sparsegp[distributed]'): running the grid's cells in this "
                          "process, one after another", RuntimeWarning, stacklevel=2)
    t0 = time.perf_counter()
    bar = _Progress(len(todo), progress and bool(todo))
    try:
        if local:
            for cell in todo:
                record = run_cell(cell)
                store.append(record)
                bar.update(record, running=0)
        elif todo:
            _run_on_dask(todo, store, bar, client, scheduler, n_workers)
    finally:
        bar.close()
    records = store.records()
    return {"records": {c.key: records[c.key] for c in cells if c.key in records},
            "ran": len(todo), "failed": bar.failed, "wall": time.perf_counter() - t0}


def _run_on_dask(todo, store, bar, client, scheduler, n_workers):
    from distributed import Client, as_completed

    own_cluster = own_client = None
    try:
        if client is None:
            if scheduler is not None:
                client = own_client = Client(scheduler)
            else:
                own_cluster = local_cluster(n_workers)
                client = own_client = Client(own_cluster)
        # Send plain dicts (cheap to pickle); a fresh task key per submission, so a cell
        # retried on a shared client is fitted again rather than served from an old future.
        futures = {client.submit(run_cell, c.as_dict(), pure=False,
                                 key=f"sparsegp-cell-{uuid.uuid4().hex}"): c for c in todo}
        for fut in as_completed(futures):
            cell = futures[fut]
            try:
                record = fut.result()
            except Exception as exc:  # the worker died or the task could not run at all
                record = {"key": cell.key, **cell.as_dict(), "status": "failed",
                          "traceback": f"{type(exc).__name__}: {exc}"}
            store.append(record)
            # tasks the scheduler has handed to workers (with its default queueing, those
            # are the ones being run)
            running = sum(len(keys) for keys in client.processing().values())
            bar.update(record, running=running)
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
