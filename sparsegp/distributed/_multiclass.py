"""EP and SEP over the chunks of a Dask array: batch steps, and data-parallel SEP minibatches.

Every quantity a step needs from the rows is a sum over rows (notes §2-4): the fresh site
totals (T_c, h_c) and factor counts of a refinement, and log Z_EP's likelihood part, its
gradient's row part and GV^T V for the evidence. Each chunk's task computes its sums with the
same functions the in-memory fit uses (``sep_row_totals``, ``row_evidence``); this process adds
them and does the O(C M^3) rest (``sep_update``, ``evidence_from_rows``). A batch fit therefore
follows the in-memory iterates up to the order of the row sums. EP's per-row sites stay on the
workers beside their chunk, as futures of the refinement tasks; SEP keeps no per-row state.
"""
import contextlib
import math
import time

import numpy as np

from ..classification.multiclass import engine as _mce
from ..classification.multiclass import ep_state as _mcs
from ..classification.multiclass.rows import check_multiclass_labels
from ..classification.multiclass.likelihood import class_counts_factors
from ._cluster import local_cluster

__all__ = ["ClientInForce", "DASK_BACKEND", "DaskBackend", "DaskRows", "check_dask_input",
           "column_moments", "fit_on_dask"]

# tries at sending a step's shared objects while a lost worker is being dropped
BROADCAST_ATTEMPTS = 5

# ------------------------------------------------------------------------------ worker side
def _pick(X, y, pick):
    """The rows of a chunk a task works on: all of them, or a minibatch ``(seed, size)``."""
    if pick is not None:
        seed, size = pick
        idx = np.sort(np.random.default_rng(seed).choice(y.shape[0], size=min(size, y.shape[0]),
                                                         replace=False))
        X, y = X[idx], y[idx]
    return np.ascontiguousarray(X, dtype=np.float64), y


class _NumericalFailure:
    """What a chunk's task returns instead of raising a numerical failure.

    A raised exception would keep the task's frames, with their chunk-sized arrays, alive on
    the worker as long as the erred task is remembered; the driver raises it instead.
    """

    def __init__(self, message):
        self.message = message


def _numerically_guarded(fn):
    def task(*args):
        try:
            return fn(*args)
        except (_mce.EPFailure, np.linalg.LinAlgError) as exc:
            return _NumericalFailure(f"{type(exc).__name__}: {exc}")
    task.__name__ = task.__qualname__ = fn.__name__
    task.__doc__ = fn.__doc__
    return task


@_numerically_guarded
def _chunk_sep_totals(X, y, pick, hyp, prior, cav):
    """(T, h, factor counts) of fresh SEP sites of one chunk's rows."""
    X, y = _pick(X, y, pick)
    C = hyp.shape[0]
    T, h = _mce.sep_row_totals(y, _mcs.data_terms(X, hyp, prior), cav, C)
    return T, h, class_counts_factors(y, C)


@_numerically_guarded
def _chunk_evidence(X, y, pick, hyp, prior, state, q, cav, noise_in_kuu, scale):
    """One chunk's (log Z rows, gradient rows, GV^T V)."""
    X, y = _pick(X, y, pick)
    data = _mcs.data_terms(X, hyp, prior)
    return _mce.row_evidence(X, y, hyp, prior, data, state, q, cav, True, scale, noise_in_kuu)


@_numerically_guarded
def _chunk_ep_refine(X, y, sites, hyp, prior, q, damping):
    """EP: ``((T, h, change), (new sites, V))`` of one chunk; the second part stays there."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    old, Vo = sites
    data = _mcs.data_terms(X, hyp, prior)
    T, h, change, new = _mce.ep_row_refine(y, data, q, old, Vo, damping)
    return (T, h, change), (new, data[1].copy())


@_numerically_guarded
def _chunk_ep_evidence(X, y, sites, hyp, prior, q, noise_in_kuu):
    """EP: one chunk's (log Z rows, gradient rows, GV^T V) at its own sites."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    data = _mcs.data_terms(X, hyp, prior)
    return _mce.row_evidence(X, y, hyp, prior, data, _ChunkState(sites[0]), q, None, True,
                             1.0, noise_in_kuu)


class _ChunkState:
    """What ``row_evidence`` reads of an EP state, for one chunk's sites."""

    method = "ep"

    def __init__(self, sites):
        self.sites = sites


def _chunk_ep_zero_sites(y, C, M):
    B = y.shape[0]
    return tuple(np.zeros((B, C)) for _ in range(4)), np.zeros((C, B, M))


def _sums_part(result):
    """The sums of a refinement task (a failure passes through)."""
    return result if isinstance(result, _NumericalFailure) else result[0]


def _kept_part(result):
    return result[1]


def _chunk_bad_rows(X):
    """Offsets of the rows of a chunk holding NaN or inf (an empty array when it is clean)."""
    return np.flatnonzero(~np.all(np.isfinite(np.asarray(X)), axis=1))


# ------------------------------------------------------------------------------ driver side
class DaskRows:
    """Training rows held on Dask workers, one task per chunk and step.

    Answers the questions a training step asks of its rows, as
    :class:`sparsegp.classification.multiclass.engine.LocalRows` does for rows in this
    process: :meth:`refine` and :meth:`evidence` (batch steps), :meth:`minibatches`,
    :meth:`minibatch_step` and :meth:`fitted_evidence` (minibatch SEP). Made by
    :meth:`from_array`.

    Parameters
    ----------
    client : distributed.Client
    X_blocks, y_blocks : list of Future
        Row chunks of X (n_b, D) and of the class indices (n_b,), in row order.
    sizes : sequence of int
        Rows per chunk.
    nik : tuple
        ``(noise_in_kuu, jitter)``.
    """

    #: Said after the training's name in its messages
    where = " on Dask"

    def __init__(self, client, X_blocks, y_blocks, sizes, nik):
        self.client = client
        self.X_blocks, self.y_blocks = X_blocks, y_blocks
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.n_rows = int(self.sizes.sum())
        self.noise_in_kuu, self.jitter = nik
        #: the persisted Dask array (set by :meth:`from_array`)
        self.X = None
        self._width = None

    @classmethod
    def from_array(cls, client, X, y_index, nik):
        """Persist X's row chunks on the workers of ``client``, with the matching labels.

        Parameters
        ----------
        client : distributed.Client
        X : dask.array.Array of shape (N, D)
            Model-unit rows, one chunk along the columns.
        y_index : ndarray of shape (N,), int
            Class indices.
        nik : tuple
            ``(noise_in_kuu, jitter)``.

        Returns
        -------
        DaskRows
            With ``X`` the persisted array, for the start to draw rows from.

        Raises
        ------
        ValueError
            When a chunk holds NaN or infinite values (naming the chunk and the rows).
        """
        Xp, blocks, y_blocks, sizes = _row_chunks(client, X, y_index)
        rows = cls(client, blocks, y_blocks, sizes, nik)
        rows.X = Xp
        return rows

    def _submit(self, fn, shared, chunks=None, picks=None):
        """One task of ``fn`` per chunk (or per chunk of ``chunks``, with its ``picks``)."""
        chunks = range(len(self.X_blocks)) if chunks is None else chunks
        picks = [None] * len(chunks) if picks is None else picks
        shared = self._broadcast(list(shared))
        return [self.client.submit(fn, self.X_blocks[j], self.y_blocks[j], p, *shared,
                                   pure=False)
                for j, p in zip(chunks, picks)]

    def _broadcast(self, objects):
        """Send the step's shared objects to every worker, waiting out a worker going away."""
        from distributed.comm.core import CommClosedError
        for attempt in range(BROADCAST_ATTEMPTS):
            try:
                return self.client.scatter(objects, broadcast=True, hash=False)
            except (CommClosedError, OSError):
                # the scheduler has not yet dropped a lost worker: give it time, send again
                time.sleep(0.5 * (attempt + 1))
        return self.client.scatter(objects, broadcast=True, hash=False)

    @staticmethod
    def _gathered(client, futures):
        import asyncio
        import concurrent.futures

        from distributed.client import FutureCancelledError
        try:
            parts = client.gather(futures)
        except (FutureCancelledError, asyncio.CancelledError,
                concurrent.futures.CancelledError) as exc:
            # SEP's chunks are recomputed from their graph and the step rerun; EP's per-row
            # sites have no graph to be recomputed from once their worker is gone
            raise RuntimeError(
                "a Dask worker holding EP's per-row sites of some chunks was lost, so the "
                "posterior cannot be completed; the fit stopped (the estimator is left as it "
                "was before fit). Refit, or use method='sep', which keeps no per-row state "
                "and survives lost workers") from exc
        for part in parts:
            if isinstance(part, _NumericalFailure):
                # the batch loop undoes the step and retries with more damping, as in memory
                raise _mce.EPFailure(part.message)
        return parts

    def _sum(self, fn, shared, chunks=None, picks=None):
        """Run ``fn`` on the chunks and add the results, column by column."""
        parts = self._gathered(self.client, self._submit(fn, shared, chunks, picks))
        return [sum(column[1:], column[0]) for column in zip(*parts)]

    def new_state(self, method, C, M, n_factors):
        """The training state; EP's per-row sites are futures, one per chunk, on the workers."""
        state = _mcs.EPState(method, self.n_rows, C, M, n_factors, per_row=False)
        if method == "ep":
            state.sites = [self.client.submit(_chunk_ep_zero_sites, yb, C, M, pure=False)
                           for yb in self.y_blocks]
        return state

    def refine(self, hyp, prior, state, damping):
        """One damped batch refinement of every chunk's factors."""
        if state.method == "ep":
            q = _mcs.Gaussian(prior.L, state.T, state.h)
            full = self._submit(_chunk_ep_refine, (hyp, prior, q, damping), picks=state.sites)
            sums = self._gathered(self.client, [self.client.submit(_sums_part, f, pure=False)
                                                for f in full])
            T = sum(p[0] for p in sums[1:]) + sums[0][0]
            h = sum(p[1] for p in sums[1:]) + sums[0][1]
            _mce.ep_update(prior, state, T, h)  # raises, leaving the old sites, if not PD
            state.sites = [self.client.submit(_kept_part, f, pure=False) for f in full]
            return max(p[2] for p in sums)
        T, h, _ = self._sum(_chunk_sep_totals, (hyp, prior, _mcs.sep_cavity(prior, state)))
        # all rows took part: their factor counts are the state's
        return _mce.sep_update(prior, state, T, h, state.n_factors, damping)

    def evidence(self, hyp, prior, state, chunks=None, picks=None, scale=1.0, exact=False):
        """log Z_EP, its gradient and q(u) from the chunks' sums (all rows by default).

        ``exact`` (the EP-inner-exact gradient) is not computed on Dask: a ValueError.
        """
        if exact:
            raise ValueError("the exact gradient is not computed on a Dask array")
        q = _mcs.posterior(prior, state)
        if state.method == "ep":
            cav = None
            log_z, grad, GVtV = self._sum(_chunk_ep_evidence, (hyp, prior, q,
                                                               self.noise_in_kuu),
                                          picks=state.sites)
        else:
            cav = _mcs.sep_cavity(prior, state)
            light = state.copy()  # without the cached posterior: the workers get q itself
            log_z, grad, GVtV = self._sum(
                _chunk_evidence, (hyp, prior, light, q, cav, self.noise_in_kuu, scale),
                chunks, picks)
        log_z, grad = _mce.evidence_from_rows(hyp, prior, state, q, cav, log_z, grad, GVtV,
                                              self.noise_in_kuu)
        return log_z, grad, q

    def minibatches(self, batch_size, rng):
        """One epoch of synchronous data-parallel minibatches: ``(chunks, picks)`` per step.

        Each step draws ``batch_size`` rows from each of W chunks (W = the number of workers,
        at most the number of chunks), so an epoch is ceil(N / (W ``batch_size``)) steps;
        the draws are made one step at a time, between the steps' evaluations.
        """
        if self._width is None:
            n_workers = max(1, len(self.client.scheduler_info().get("workers", {})))
            self._width = min(n_workers, len(self.X_blocks))
        width = self._width
        for _ in range(max(1, math.ceil(self.n_rows / (width * batch_size)))):
            chunks = np.sort(rng.choice(len(self.X_blocks), size=width, replace=False))
            picks = [(int(s), batch_size) for s in rng.integers(0, 2 ** 63 - 1, size=width)]
            yield chunks, picks

    def minibatch_step(self, hyp, prior, state, batch):
        """Refine the tied sites from one minibatch ``(chunks, picks)`` of
        :meth:`minibatches`, then their evidence: ``(log_z, grad, q)``."""
        chunks, picks = batch
        cav = _mcs.sep_cavity(prior, state)
        T, h, counts = self._sum(_chunk_sep_totals, (hyp, prior, cav), chunks, picks)
        _mce.sep_update(prior, state, T, h, counts, 1.0)
        used = sum(min(size, int(self.sizes[j])) for j, (_, size) in zip(chunks, picks))
        return self.evidence(hyp, prior, state, chunks, picks, scale=self.n_rows / used)

    def fitted_evidence(self, hyp, prior, state, block=None):
        """log Z_EP over all chunks at the fitted sites (``block`` is the chunking's)."""
        return self.evidence(hyp, prior, state)[0]


def check_dask_input(X, y, owner):
    """Validate shapes, labels and chunking before any work.

    Parameters
    ----------
    X : dask.array.Array of shape (N, D)
    y : array-like or dask.array.Array of shape (N,)
        Class labels (brought to this process: N small integers).
    owner : str
        The estimator's name, for the messages.

    Returns
    -------
    X : dask.array.Array of shape (N, D)
        Rechunked to one chunk along the columns.
    y_index : ndarray of shape (N,), int
        Class indices.
    classes : ndarray of shape (C,)
    """
    import dask.array as da

    if not isinstance(X, da.Array):
        raise ValueError(f"X must be a dask.array.Array; got {type(X).__name__}")
    if X.ndim != 2 or any(math.isnan(n) for n in X.shape):
        raise ValueError(f"X must be a 2-D dask array of known shape; got shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"X must hold real numbers; got dtype {X.dtype}")
    N, D = X.shape
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target "
                         "y is None")
    # the labels (N small integers) come to this process; the rows of X never do
    y = np.asarray(y.compute() if isinstance(y, da.Array) else y).ravel()
    if y.shape[0] != N:
        raise ValueError(f"X and y have different lengths: X has {N} rows, y has {y.shape[0]}")
    classes, y_index = check_multiclass_labels(y)
    if X.chunks[1] != (D,):
        X = X.rechunk({1: D})
    return X, y_index, classes


def column_moments(X):
    """Per-column mean and standard deviation of a Dask array, computed by Dask.

    NaN and inf are left out of the moments, so that they stay in their rows for the chunk
    check of :meth:`DaskRows.from_array` to name.

    Returns
    -------
    centre, sd : ndarray of shape (D,)
    """
    import dask.array as da

    finite = da.where(da.isfinite(X), X, np.nan)
    centre = da.nanmean(finite, axis=0)
    sd = da.sqrt(da.nanmean((finite - centre) ** 2, axis=0))
    return da.compute(centre, sd)


class ClientInForce:
    """Context manager for the client to use: ``client`` itself, a new client of a scheduler
    address (closed after), the client in force (``None``), or else an embedded LocalCluster
    of single-threaded workers (closed after)."""

    def __init__(self, client):
        self.client, self._own = client, []

    def __enter__(self):
        from distributed import Client, default_client
        if isinstance(self.client, str):
            self.client = Client(self.client)
            self._own = [self.client]
        elif self.client is None:
            try:
                self.client = default_client()
            except ValueError:
                cluster = local_cluster()
                self.client = Client(cluster)
                self._own = [self.client, cluster]
        return self.client

    def __exit__(self, *exc):
        for thing in self._own:
            thing.close()
        return False


def _blocks(client, array):
    """Persist a Dask array on the workers; its row chunks' futures, in row order."""
    from distributed import futures_of, wait

    persisted = client.persist(array)
    wait(persisted)
    by_key = {f.key: f for f in futures_of(persisted)}
    return persisted, [by_key[(persisted.name, i) + (0,) * (persisted.ndim - 1)]
                       for i in range(persisted.numblocks[0])]


def _row_chunks(client, X, y_index):
    """Persist X's row chunks on the workers, and the matching label chunks.

    Both stay Dask collections, so a chunk lost with its worker is recomputed from its graph
    and the task that needed it is rerun.
    """
    import dask.array as da

    Xp, blocks = _blocks(client, X)
    sizes = Xp.chunks[0]
    bad = client.gather([client.submit(_chunk_bad_rows, b, pure=False) for b in blocks])
    start = 0
    for i, (rows, n) in enumerate(zip(bad, sizes)):
        if rows.size:
            raise ValueError(
                f"X contains NaN or infinite values in chunk {i} (rows {start} to "
                f"{start + n - 1}; first at row {start + int(rows[0])}, {rows.size} rows in "
                f"all); drop or impute them before fitting")
        start += n
    _, y_blocks = _blocks(client, da.from_array(y_index, chunks=(sizes,)))
    return Xp, blocks, y_blocks, sizes


class DaskBackend:
    """What ``MultiClassEPClassifier.fit`` asks of a Dask array: its checks, its column
    moments and its rows (:mod:`sparsegp._array_backends`; the front door registers
    :data:`DASK_BACKEND`, so the estimator, a layer below, never imports this module)."""

    name = "a Dask array"

    @staticmethod
    def check_input(X, y, owner):
        return check_dask_input(X, y, owner)

    @staticmethod
    def column_moments(X):
        return column_moments(X)

    @staticmethod
    @contextlib.contextmanager
    def rows(X, y_index, nik):
        """The :class:`DaskRows` of X on the client in force, open for the fit."""
        with ClientInForce(None) as client:
            yield DaskRows.from_array(client, X, y_index, nik)


#: The backend the front door registers for Dask input
DASK_BACKEND = DaskBackend()


def fit_on_dask(estimator, X, y, client=None):
    """Fit a :class:`~sparsegp.MultiClassEPClassifier` on a Dask array.

    Parameters
    ----------
    estimator : MultiClassEPClassifier
    X : dask.array.Array of shape (N, D)
        Row chunks stay on the workers; the start reads only the rows it draws (the
        inducing inputs, up to 1000 rows for the median heuristic).
    y : array-like or dask.array.Array of shape (N,)
        Class labels (brought to this process: N small integers).
    client : distributed.Client or str, optional
        A client or a scheduler address; default the client in force, else an embedded
        LocalCluster of single-threaded workers, one per core, closed after the fit.

    Returns
    -------
    estimator

    Notes
    -----
    Batch mode (``batch_size=None``, EP or SEP) takes every chunk in every step and follows the
    in-memory iterates; EP's sites stay on the workers, so a worker lost with them stops the
    fit with an error, while SEP's chunks are recomputed and the step rerun. Minibatch mode is
    SEP only and synchronous data parallelism: each step draws
    ``batch_size`` rows from each of W chunks (W = the number of workers, at most the number
    of chunks), so the effective minibatch is W x ``batch_size`` rows and an epoch is
    ceil(N / (W ``batch_size``)) steps.
    """
    import dask.array as da

    if not isinstance(X, da.Array):
        raise ValueError(f"X must be a dask.array.Array; got {type(X).__name__}")
    if client is None:
        return estimator.fit(X, y)
    # the estimator trains on the client in force: make this one so for the fit
    with ClientInForce(client) as cl, cl.as_current():
        return estimator.fit(X, y)
