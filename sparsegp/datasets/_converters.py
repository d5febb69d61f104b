"""Build the ``.npz`` cache from the original distribution files (:func:`fetch` downloads them).

* :func:`convert_raetsch` -- Raetsch's IDA benchmark: per-realisation
  ``<name>_{train,test}_{data,labels}_<r>.asc`` text files;
* :func:`convert_raetsch_mat` -- the same sets from Cawley's ``benchmarks.mat``;
* :func:`convert_libsvm` -- LIBSVM sparse text format (``label idx:val ...``, 1-based);
* :func:`convert_ripley` -- Ripley's ``synth.tr`` / ``synth.te`` (header, then ``xs ys yc``).

Each writes with ``numpy.savez_compressed`` the keys :func:`load_dataset` reads (see the
layout in ``_datafile``), with an ``info`` JSON string, re-reads the file through the loader's
checks and returns its path.
"""
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from ._datafile import _DataFile
from ._docs import fill

__all__ = ["convert_raetsch", "convert_raetsch_mat", "convert_libsvm", "convert_ripley"]


@fill
def convert_raetsch(folder, name, out_path):
    """Convert the realisations of one Raetsch (IDA) benchmark into one ``.npz``.

    Every realisation r found as ``<name>_train_data_<r>.asc`` in ``folder`` needs its three
    companions ``<name>_train_labels_<r>.asc``, ``<name>_test_data_<r>.asc`` and
    ``<name>_test_labels_<r>.asc`` (whitespace-separated numbers, one pattern per line,
    labels -1/+1). ``X`` is the first realisation's training rows followed by its test rows
    (duplicate patterns kept); row r of ``train_idx``/``test_idx`` gives the 0-based rows of
    ``X`` that reproduce realisation r exactly (identical pattern and label; equal rows are
    matched in order). ``realisation_ids`` holds the numbers r from the file names.

    Parameters
    ----------
    folder : str or path-like
        Folder holding the ``.asc`` files.
    name : str
        File prefix, e.g. ``"banana"`` or ``"breast-cancer"``.
    %(out_path)s

    %(written)s

    Raises
    ------
    FileNotFoundError
        No realisation, or a companion file missing.
    ValueError
        Labels other than -1/+1, inconsistent shapes, or a realisation that is not a
        re-partition of the first one's rows.
    """
    folder = Path(folder)
    pattern = re.compile(rf"^{re.escape(name)}_train_data_(\d+)\.asc$")
    ids = sorted(int(m.group(1)) for p in folder.glob(f"{name}_train_data_*.asc")
                 if (m := pattern.match(p.name)))
    if not ids:
        raise FileNotFoundError(
            f"no Raetsch realisation files {folder / (name + '_train_data_<r>.asc')} found"
        )
    parts = []
    for r in ids:
        arrays = []
        for kind in ("train_data", "train_labels", "test_data", "test_labels"):
            path = folder / f"{name}_{kind}_{r}.asc"
            if not path.is_file():
                raise FileNotFoundError(f"realisation {r} of '{name}' lacks {path}")
            arrays.append(_read_table(path, labels=kind.endswith("labels")))
        parts.append(tuple(arrays))
    inputs = f"{folder}/{name}_{{train,test}}_{{data,labels}}_<r>.asc, r = {ids}"
    return _write_realisations(parts, ids, name, out_path, "convert_raetsch", inputs)


@fill
def convert_raetsch_mat(mat_path, name, out_path):
    """Convert one set of Cawley's ``benchmarks.mat`` (all 13 Raetsch sets) into one ``.npz``.

    The file holds, per set, a struct with the unique patterns ``x`` (n, d), their labels
    ``t`` (n, 1) in -1/+1, and 1-based row indices ``train`` (R, n_train) and ``test``
    (R, n_test) into them, one row per realisation (R = 100, or 20 for image and splice).
    Each realisation is rebuilt from those indices and the result laid out as
    :func:`convert_raetsch` lays out the ``.asc`` files (``X`` = realisation 1's training
    rows then its test rows), so both routes give the same file for the same realisations.

    Parameters
    ----------
    mat_path : str or path-like
        ``benchmarks.mat`` (MATLAB v5/v7, read with :func:`scipy.io.loadmat`).
    name : str
        The set's variable name in the file: ``"banana"``, ``"breast_cancer"``, ...
    %(out_path)s

    %(written)s

    Raises
    ------
    ValueError
        ``name`` is not in the file, a field is missing, or indices are out of range or
        not integers.
    """
    from scipy.io import loadmat

    mat = loadmat(mat_path, variable_names=[name])
    if name not in mat:
        raise ValueError(f"name must be a data set in {mat_path}; {name!r} is not there")
    struct = mat[name]
    fields = struct.dtype.names or ()
    missing = [f for f in ("x", "t", "train", "test") if f not in fields]
    if missing:
        raise ValueError(f"{mat_path}: '{name}' lacks the field(s) {missing} (has {fields})")
    x, t, train, test = (np.asarray(struct[f][0, 0], dtype=np.float64)
                         for f in ("x", "t", "train", "test"))
    t = t.ravel()
    if x.ndim != 2 or t.shape[0] != x.shape[0]:
        raise ValueError(f"{mat_path}: '{name}' has x of shape {x.shape} and {t.shape[0]} "
                         f"labels; expected one label per row of x")
    parts = []
    for what, idx in (("train", train), ("test", test)):
        if idx.ndim != 2 or np.any(idx != np.round(idx)) or idx.min() < 1 \
                or idx.max() > x.shape[0]:
            raise ValueError(f"{mat_path}: '{name}.{what}' must hold 1-based row numbers of "
                             f"x (1..{x.shape[0]}), one realisation a row")
    if train.shape[0] != test.shape[0]:
        raise ValueError(f"{mat_path}: '{name}' has {train.shape[0]} train and "
                         f"{test.shape[0]} test realisations")
    for tr, te in zip(train.astype(np.int64) - 1, test.astype(np.int64) - 1):
        parts.append((x[tr], t[tr], x[te], t[te]))
    ids = list(range(1, len(parts) + 1))
    return _write_realisations(parts, ids, name, out_path, "convert_raetsch_mat",
                               f"{mat_path} ('{name}')")


def _write_realisations(parts, ids, name, out_path, converter, inputs):
    """Lay out realisations ``parts`` = [(X_tr, y_tr, X_te, y_te), ...] as one ``.npz``
    (``converter`` and ``inputs`` as in :func:`_info`)."""
    for r, (X_tr, y_tr, X_te, y_te) in zip(ids, parts):
        for X, y, what in ((X_tr, y_tr, "train"), (X_te, y_te, "test")):
            if X.shape[0] != y.shape[0]:
                raise ValueError(f"realisation {r} of '{name}': {what} data has {X.shape[0]} "
                                 f"rows but {y.shape[0]} labels")
            bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
            if bad.size:
                raise ValueError(f"realisation {r} of '{name}': {what} labels must be -1/+1; "
                                 f"found {bad[:5].tolist()}")
    X0_tr, y0_tr, X0_te, y0_te = parts[0]
    X = np.concatenate([X0_tr, X0_te]) + 0.0  # "+ 0.0" maps -0.0 to 0.0 for row matching
    y = np.concatenate([y0_tr, y0_te])
    shape0 = (X0_tr.shape, X0_te.shape)
    pool = defaultdict(list)  # (pattern, label) bytes -> rows of X holding it
    for i, key in enumerate(_row_keys(X, y)):
        pool[key].append(i)

    train_idx, test_idx = [], []
    for r, (X_tr, y_tr, X_te, y_te) in zip(ids, parts):
        if (X_tr.shape, X_te.shape) != shape0:
            raise ValueError(
                f"realisation {r} of '{name}' has train/test shapes {X_tr.shape}/{X_te.shape}, "
                f"unlike realisation {ids[0]} ({shape0[0]}/{shape0[1]})"
            )
        taken = defaultdict(int)
        rows = []
        for key in _row_keys(np.concatenate([X_tr, X_te]) + 0.0, np.concatenate([y_tr, y_te])):
            avail = pool.get(key, ())
            k = taken[key]
            if k >= len(avail):
                raise ValueError(
                    f"realisation {r} of '{name}' contains a (pattern, label) row that "
                    f"realisation {ids[0]} does not have (as often); the realisations must be "
                    f"re-partitions of the same data"
                )
            taken[key] = k + 1
            rows.append(avail[k])
        train_idx.append(rows[:X_tr.shape[0]])
        test_idx.append(rows[X_tr.shape[0]:])

    info = _info(out_path, converter, inputs, family="Raetsch IDA binary benchmark",
                 labels="original -1/+1",
                 split="train_idx/test_idx rows = realisations listed in realisation_ids; "
                       "0-based row indices into X (X = first realisation's train rows then "
                       "its test rows)")
    return _write(out_path, info, X=X, y=y.astype(np.int8),
                  train_idx=np.asarray(train_idx, dtype=np.int32),
                  test_idx=np.asarray(test_idx, dtype=np.int32),
                  realisation_ids=np.asarray(ids, dtype=np.int32))


@fill
def convert_libsvm(train_path, test_path=None, out_path=None, n_features=None):
    """Convert LIBSVM text files (``label idx:val idx:val ...``) into one ``.npz``.

    Indices are 1-based and may be omitted (sparse rows: missing features are 0); text after
    ``#`` and blank lines are ignored. Labels: when the label set is exactly {-1, +1} they are
    kept as -1/+1 (like the Raetsch sets); otherwise they are mapped to 0..C-1 in sorted order
    and ``classes`` stores the original codes. With ``test_path`` the file gets the official
    split ``X_train, y_train, X_test, y_test``; without it a single table ``X, y`` (load it with
    :func:`load_table`).

    Parameters
    ----------
    train_path : str or path-like
        LIBSVM file of the training set (or of the whole set).
    test_path : str or path-like, optional
        LIBSVM file of the test set.
    out_path : str or path-like
        ``.npz`` file to write (the suffix is added when missing). Required.
    n_features : int, optional
        Number of columns D; default: the largest index found in either file. Must be at
        least that index.

    %(written)s

    Raises
    ------
    ValueError
        Malformed lines (non-numeric values, index < 1, repeated index), an empty file, or
        ``n_features`` smaller than an index used.
    """
    if out_path is None:
        raise ValueError("out_path is required: the .npz file to write")
    sets = [_parse_libsvm(train_path)]
    if test_path is not None:
        sets.append(_parse_libsvm(test_path))
    max_index = max(max((max(r) for r, _ in s[0] if r), default=0) for s in sets)
    if n_features is None:
        n_features = max_index
    elif isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) \
            or n_features < max(max_index, 1):
        raise ValueError(f"n_features must be an integer >= {max(max_index, 1)} (the largest "
                         f"index in the files); got {n_features!r}")
    if n_features < 1:
        raise ValueError("the LIBSVM files contain no feature values; cannot infer n_features")

    all_labels = np.concatenate([s[1] for s in sets])
    codes = np.unique(all_labels)
    keep_pm = codes.size == 2 and codes[0] == -1.0 and codes[1] == 1.0
    if codes.size < 2:
        raise ValueError(f"need at least 2 classes; the files hold only labels {codes.tolist()}")
    integral = np.all(codes == np.round(codes))
    dense = []
    for rows, labels in sets:
        X = np.zeros((len(rows), n_features))
        for i, (idx, vals) in enumerate(rows):
            X[i, np.asarray(idx, dtype=np.int64) - 1] = vals
        y = labels.astype(np.int8) if keep_pm else np.searchsorted(codes, labels)
        dense.append((X, y))

    info = _info(out_path, "convert_libsvm",
                 f"{train_path}" + (f" and {test_path}" if test_path is not None else ""),
                 labels="original -1/+1" if keep_pm else _coded_labels(codes, "LIBSVM labels"),
                 split=("official: X_train / X_test from the two files"
                        if test_path is not None else "none (single file)"))
    arrays = {}
    if not keep_pm:
        arrays["classes"] = codes.astype(np.int64) if integral else codes
    label_dtype = np.int8 if codes.size <= 127 else np.int32
    if test_path is None:
        arrays.update(X=dense[0][0], y=dense[0][1].astype(label_dtype))
    else:
        arrays.update(X_train=dense[0][0], y_train=dense[0][1].astype(label_dtype),
                      X_test=dense[1][0], y_test=dense[1][1].astype(label_dtype))
    return _write(out_path, info, **arrays)


@fill
def convert_ripley(train_path, test_path, out_path):
    """Convert Ripley's synthetic data (``synth.tr``, ``synth.te``) into one ``.npz``.

    Each file has a header line and then rows ``xs ys yc`` with yc in {0, 1}. The result has
    the official split ``X_train`` (250 x 2 for the original), ``y_train``, ``X_test``
    (1000 x 2), ``y_test`` with the original 0/1 labels and ``classes = [0, 1]``, like the
    shared ``synth.npz``.

    Parameters
    ----------
    train_path : str or path-like
        ``synth.tr``.
    test_path : str or path-like
        ``synth.te``.
    %(out_path)s

    %(written)s

    Raises
    ------
    ValueError
        Rows without exactly 3 columns, or labels other than 0/1.
    """
    parts = []
    for path in (train_path, test_path):
        try:
            table = np.loadtxt(path, skiprows=1, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"{path}: not a Ripley table (header, then 'xs ys yc'): {exc}")
        if table.shape[1] != 3 or table.shape[0] == 0:
            raise ValueError(f"{path}: expected rows 'xs ys yc' (3 columns); got shape "
                             f"{table.shape}")
        bad = np.setdiff1d(np.unique(table[:, 2]), [0.0, 1.0])
        if bad.size:
            raise ValueError(f"{path}: labels yc must be 0 or 1; found {bad[:5].tolist()}")
        parts.append((table[:, :2].copy(), table[:, 2].astype(np.int8)))
    info = _info(out_path, "convert_ripley", f"{train_path} and {test_path}",
                 columns=["xs", "ys"], labels="original 0/1 (column yc)",
                 split="official: X_train (synth.tr) / X_test (synth.te)")
    return _write(out_path, info, X_train=parts[0][0], y_train=parts[0][1],
                  X_test=parts[1][0], y_test=parts[1][1], classes=np.array([0, 1]))


def _read_table(path, labels):
    try:
        arr = np.loadtxt(path, ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{path}: not a whitespace-separated numeric table: {exc}") from None
    if arr.shape[0] == 0:
        raise ValueError(f"{path} is empty")
    if labels:
        if arr.shape[1] != 1:
            raise ValueError(f"{path}: a label file needs one column; got {arr.shape[1]}")
        return arr[:, 0]
    return arr


def _row_keys(X, y):
    rows = np.ascontiguousarray(np.column_stack([X, y]), dtype=np.float64)
    return [row.tobytes() for row in rows]


def _parse_libsvm(path):
    """Return ``(rows, labels)``: rows = list of (indices, values), labels float array."""
    rows, labels = [], []
    with open(path, "r") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            tokens = line.split()
            try:
                labels.append(float(tokens[0]))
                idx, vals = [], []
                for tok in tokens[1:]:
                    i, v = tok.split(":")
                    idx.append(int(i))
                    vals.append(float(v))
            except ValueError:
                raise ValueError(f"{path}:{lineno}: expected 'label idx:val ...'; got "
                                 f"{line[:60]!r}") from None
            if idx and min(idx) < 1:
                raise ValueError(f"{path}:{lineno}: LIBSVM indices are 1-based; found "
                                 f"{min(idx)}")
            if len(set(idx)) != len(idx):
                raise ValueError(f"{path}:{lineno}: a feature index is repeated")
            if not np.all(np.isfinite(vals)) or not np.isfinite(labels[-1]):
                raise ValueError(f"{path}:{lineno}: NaN or infinite value")
            rows.append((idx, vals))
    if not rows:
        raise ValueError(f"{path}: no data lines")
    return rows, np.asarray(labels)


def _coded_labels(codes, what):
    """``info["labels"]`` of a file whose labels 0..C-1 stand for the sorted ``codes``."""
    listed = ", ".join(str(int(c)) if c == int(c) else str(c) for c in codes)
    return f"y = 0..{codes.size - 1} <- {what} {listed} (see classes)"


def _info(out_path, converter, inputs, **fields):
    """The ``info`` of a converted file: its ``name`` (the stem of ``out_path``), its
    ``source`` ("converted by sparsegp.datasets.<converter> from <inputs>") and ``fields``
    (``labels``, ``split``, ...)."""
    return {"name": Path(out_path).stem,
            "source": f"converted by sparsegp.datasets.{converter} from {inputs}", **fields}


def _write(out_path, info, **arrays):
    out_path = Path(out_path)
    if out_path.suffix != ".npz":
        out_path = out_path.with_name(out_path.name + ".npz")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_path, info=np.array(json.dumps(info, sort_keys=True)), **arrays)
    # Refuse to leave behind a file the loader would reject.
    with _DataFile(None, None, path=out_path) as df:
        df.check_all()
    return out_path
