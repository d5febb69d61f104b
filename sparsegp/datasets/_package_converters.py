"""Converters for two more distribution formats the registry fetches.

* :func:`convert_esl` -- the data pages of *The Elements of Statistical Learning*: USPS
  ``zip.{train,test}.gz`` (label, then 256 grey values a line) and the ``row.names, y, x.1 ...``
  tables (``vowel``, ``waveform``);
* :func:`convert_fold_package` -- a ``data.npz`` / ``folds.npz`` pair as the multi-class EP
  authors ship them (``arr_0`` = X or train folds, ``arr_1`` = y or test folds, 0-based).

Both write the layout of :func:`sparsegp.datasets.load_dataset` through the same writer as the
other converters, which re-reads the file through the loader's checks.
"""
import gzip
from pathlib import Path

import numpy as np

from ._converters import _write

__all__ = ["convert_esl", "convert_fold_package"]


def convert_esl(train_path, test_path, out_path, class_names=None, keep_table=False,
                dtype=np.float64):
    """Convert an ESL train/test pair into one ``.npz`` with its official split.

    A file whose first line starts with ``row.names`` is a table with a header (comma or
    tab separated): the row number, the class code ``y``, then the inputs. Otherwise each
    line is the class code followed by the inputs (USPS; ``.gz`` files are decompressed).
    Codes are mapped to 0..C-1 in sorted order.

    Parameters
    ----------
    train_path, test_path : str or path-like
        The two files of the official split.
    out_path : str or path-like
        ``.npz`` file to write (suffix added when missing).
    class_names : sequence of str, optional
        Names of the classes in code order, stored as ``classes``; default: the codes.
    keep_table : bool, default=False
        Also store ``X``/``y`` = training rows then test rows (as ``vowel.npz`` has).
    dtype : numpy dtype, default=float64
        dtype of the stored inputs (USPS uses float32, which holds its 3 decimals exactly).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ValueError
        Rows of unequal length, non-integer codes, or ``class_names`` of the wrong length.
    """
    parts = [_read_esl(p) for p in (train_path, test_path)]
    if parts[0][0].shape[1] != parts[1][0].shape[1]:
        raise ValueError(f"{train_path} has {parts[0][0].shape[1]} inputs but {test_path} has "
                         f"{parts[1][0].shape[1]}")
    codes = np.unique(np.concatenate([p[1] for p in parts]))
    if np.any(codes != np.round(codes)):
        raise ValueError(f"class codes must be integers; found {codes[:5].tolist()}")
    classes = _classes(codes, class_names)
    (X_tr, c_tr), (X_te, c_te) = parts
    y_tr = np.searchsorted(codes, c_tr).astype(np.int8)
    y_te = np.searchsorted(codes, c_te).astype(np.int8)
    arrays = dict(X_train=X_tr.astype(dtype), y_train=y_tr, X_test=X_te.astype(dtype),
                  y_test=y_te, classes=classes)
    if keep_table:
        arrays.update(X=np.concatenate([arrays["X_train"], arrays["X_test"]]),
                      y=np.concatenate([y_tr, y_te]))
    info = {
        "name": Path(out_path).stem,
        "labels": f"y = 0..{codes.size - 1} <- file codes "
                  f"{', '.join(str(int(c)) for c in codes)} (see classes)",
        "source": f"converted by sparsegp.datasets.convert_esl from {train_path} and "
                  f"{test_path}",
        "split": "official: X_train / X_test from the two files",
    }
    return _write(out_path, info, **arrays)


def _classes(codes, class_names):
    """The stored ``classes``: the names given, in code order, else the integer codes."""
    if class_names is None:
        return codes.astype(np.int64)
    if len(class_names) != codes.size:
        raise ValueError(f"class_names must name the {codes.size} classes in code order; got "
                         f"{len(class_names)} names")
    return np.asarray(class_names)


def _read_esl(path):
    """(inputs, class codes) of one ESL file: ndarray (n, d) float64 and (n,) float64."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        lines = [line for line in fh.read().splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path} holds no data lines")
    header = lines[0].lstrip('"').startswith("row.names")
    rows = lines[1:] if header else lines
    sep = "," if header and "," in lines[0] else None
    try:
        table = np.array([[float(v) for v in line.split(sep)] for line in rows])
    except ValueError as exc:
        raise ValueError(f"{path}: not a numeric ESL table ({exc})") from None
    if table.ndim != 2:
        raise ValueError(f"{path}: rows have different numbers of values")
    if header:  # row number, y, inputs
        return table[:, 2:], table[:, 1]
    return table[:, 1:], table[:, 0]


def convert_fold_package(data_path, folds_path, out_path, class_names=None):
    """Convert the multi-class EP authors' ``data.npz`` / ``folds.npz`` into one ``.npz``.

    ``data.npz`` holds ``arr_0`` (n, d) inputs and ``arr_1`` (n,) integer class codes;
    ``folds.npz`` holds ``arr_0`` (R, n_train) and ``arr_1`` (R, n_test), 0-based rows of the
    data for fold r. Codes are mapped to 0..C-1 in sorted order.

    Parameters
    ----------
    data_path, folds_path : str or path-like
        The two files of one data set of the package.
    out_path : str or path-like
        ``.npz`` file to write (suffix added when missing).
    class_names : sequence of str, optional
        Names of the classes in code order, stored as ``classes``; default: the codes.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ValueError
        A missing array, or ``class_names`` of the wrong length.
    """
    with np.load(data_path, allow_pickle=False) as data, \
            np.load(folds_path, allow_pickle=False) as folds:
        for path, npz in ((data_path, data), (folds_path, folds)):
            if set(npz.files) != {"arr_0", "arr_1"}:
                raise ValueError(f"{path} must hold exactly arr_0 and arr_1; has "
                                 f"{sorted(npz.files)}")
        X, codes_all = data["arr_0"].astype(np.float64), data["arr_1"]
        train_idx, test_idx = folds["arr_0"], folds["arr_1"]
    codes = np.unique(codes_all)
    classes = _classes(codes, class_names)
    info = {
        "name": Path(out_path).stem,
        "labels": f"y = 0..{codes.size - 1} <- package codes "
                  f"{', '.join(str(int(c)) for c in codes)} (see classes)",
        "source": f"converted by sparsegp.datasets.convert_fold_package from {data_path} and "
                  f"{folds_path}",
        "split": "folds of the authors' package (arr_0 = train, arr_1 = test, 0-based)",
    }
    return _write(out_path, info, X=X, y=np.searchsorted(codes, codes_all).astype(np.int8),
                  classes=classes, train_idx=train_idx.astype(np.int32),
                  test_idx=test_idx.astype(np.int32))
