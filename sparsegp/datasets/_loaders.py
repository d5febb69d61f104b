"""Readers for the benchmark ``.npz`` files (layout: :mod:`._datafile`).

:func:`load_dataset` downloads a missing registered set only when asked (``download=True``;
see :func:`sparsegp.datasets.fetch`); :func:`load_table` reads every row of a file with its
metadata. Both read through the checks of :class:`._datafile._DataFile`.
"""
import numpy as np

from .._validation import check_int
from ._datafile import DatasetNotFoundError, _DataFile, _find
from ._docs import fill
from ._fetch import fetch

__all__ = ["load_dataset", "load_table"]


@fill
def load_dataset(name, split=None, data_home=None, dtype=None, download=False):
    """Load one train/test split of a benchmark data set.

    Parameters
    ----------
    name : str
        Base name of the ``.npz`` file (``"raetsch_banana"``, ``"synth"``, ``"satellite"``,
        ``"usps"``, ``"mnist"``, ...). Case and ``-``/``_`` do not matter. Short aliases:
        every Raetsch set without its prefix (``"banana"``, ``"breast_cancer"``, ...,
        ``"waveform"`` = ``raetsch_waveform``, ``"thyroid"`` = ``raetsch_thyroid``) and
        ``"ripley"`` = ``synth``. A file named exactly ``name`` wins over an alias.
    split : None, int or "official", default=None
        0-based realisation/fold r (row r of ``train_idx``/``test_idx``). ``None``: the
        official split when the file has one, else realisation/fold 0. ``"official"``: the
        official split (error if there is none). Files without any split (``crabs``) raise
        ``ValueError``; use :func:`load_table` for them.
    %(data_home)s
    dtype : numpy dtype, optional
        dtype of the returned inputs. Default: float64, except for integer-stored inputs
        (``mnist``: uint8 grey values 0..255), which keep their stored dtype because
        70000 x 784 float64 would take 440 MB; pass ``dtype=np.float64`` to convert.
    download : bool, default=False
        When the file is absent, fetch and convert it (:func:`sparsegp.datasets.fetch`)
        into ``data_home`` first. Off by default so that nothing reaches the network
        unasked.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features)
    y_train : ndarray of shape (n_train,)
        int64 labels with their stored values: -1/+1 for the Raetsch sets, 0/1 for ``synth``,
        0..C-1 for multi-class sets.
    X_test : ndarray of shape (n_test, n_features)
    y_test : ndarray of shape (n_test,)
        All four are new arrays owned by the caller.

    Raises
    ------
    DatasetNotFoundError
        (a ``FileNotFoundError``) when the file is absent and ``download`` is False; the
        message names the path.
    ValueError
        For a corrupt file, an out-of-range ``split``, or a file without any split.
    sparsegp.datasets.DownloadError
        With ``download=True``, when the source files cannot be had (see ``fetch``).

    Examples
    --------
    >>> X, y, Xt, yt = load_dataset("banana", split=0)     # doctest: +SKIP
    >>> X.shape, Xt.shape                                   # doctest: +SKIP
    ((400, 2), (4900, 2))
    """
    if not isinstance(download, bool):
        raise ValueError(f"download must be True or False; got {download!r}")
    if download:
        try:
            _find(name, data_home)
        except DatasetNotFoundError:
            fetch(name, data_home=data_home)
    with _DataFile(name, data_home) as df:
        n_splits = df.n_splits()
        official = df.has_official()
        if not official and not df.has_table():
            df.table()  # raises: the file holds no data arrays at all
        if split is None:
            if official:
                split = "official"
            elif n_splits:
                split = 0
            else:
                raise ValueError(
                    f"data set '{df.name}' ({df.path}) has no train/test split "
                    f"(no train_idx/test_idx and no X_train/X_test); load the whole table "
                    f"with sparsegp.datasets.load_table({df.name!r}) and split it yourself"
                )
        if isinstance(split, str):
            if split != "official":
                raise ValueError(f"split must be None, 'official' or an int; got {split!r}")
            if not official:
                raise ValueError(
                    f"data set '{df.name}' has no official split; use split=0..{n_splits - 1}"
                    if n_splits else f"data set '{df.name}' has no official split"
                )
            X_tr, y_tr, X_te, y_te = df.official()
        else:
            if n_splits == 0:
                raise ValueError(
                    f"data set '{df.name}' has no realisations/folds (no train_idx/test_idx); "
                    + ("use split=None for its official split" if official else
                       f"load the whole table with load_table({df.name!r})")
                )
            r = check_int(split, "split", minimum=0)
            if r >= n_splits:
                raise ValueError(
                    f"split must be in 0..{n_splits - 1} for data set '{df.name}' "
                    f"({n_splits} realisation(s)/fold(s)); got {r}"
                )
            X_tr, y_tr, X_te, y_te = df.realisation(r)
    return _cast_X(X_tr, dtype), y_tr, _cast_X(X_te, dtype), y_te


@fill
def load_table(name, data_home=None, dtype=None):
    """Load every row of a data set as one table, with its metadata.

    For files with an official split only (``synth``, ``usps``, ``mnist``, ...) the table is
    the training rows followed by the test rows (``info["n_train"]`` marks the boundary).

    Parameters
    ----------
    name : str
        As in :func:`load_dataset` (aliases allowed).
    %(data_home)s
    dtype : numpy dtype, optional
        As in :func:`load_dataset`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        int64 labels as stored.
    info : dict
        The file's JSON ``info`` plus ``name``, ``path``, ``n_samples``, ``n_features``,
        ``n_splits`` (number of train_idx/test_idx rows, 0 if none), ``official_split``
        (bool), ``n_train``/``n_test`` (official split only), ``label_values`` (sorted list
        of the allowed label values), ``classes`` (list, when the file names its classes) and
        ``arrays``: a dict of the file's other arrays (e.g. crabs' ``sp``, ``sex``,
        ``index``; ``train_idx``/``test_idx``; ``realisation_ids``), as new arrays.
    """
    with _DataFile(name, data_home) as df:
        X, y = df.table()
        info = df.describe(X.shape)
    return _cast_X(X, dtype), y, info


def _cast_X(X, dtype):
    if dtype is None:
        dtype = X.dtype if X.dtype.kind in "iu" else np.float64
    return X.astype(dtype, copy=False)

