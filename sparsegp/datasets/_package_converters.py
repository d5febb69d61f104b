"""Converters for two more distribution formats the registry fetches.

* :func:`convert_esl` -- the data pages of *The Elements of Statistical Learning*: USPS
  ``zip.{train,test}.gz`` (label, then 256 grey values a line) and the ``row.names, y, x.1 ...``
  tables (``vowel``, ``waveform``);
* :func:`convert_fold_package` -- a ``data.npz`` / ``folds.npz`` pair as the multi-class EP
  authors ship them (``arr_0`` = X or train folds, ``arr_1`` = y or test folds, 0-based);
* :func:`convert_mnist_idx` -- LeCun's four MNIST IDX archives (``*-ubyte.gz``);
* :func:`convert_crabs_csv` -- MASS ``crabs`` written by R's ``write.csv`` or ``write.csv2``;
* :func:`convert_satellite_r` -- Satellite and its 100 splits as R save files
  (``satellite.dat``, ``folds.dat`` of the ICML 2017 R code; read with the ``rdata`` package).

Both write the layout of :func:`sparsegp.datasets.load_dataset` through the same writer as the
other converters, which re-reads the file through the loader's checks.
"""
import gzip
from pathlib import Path

import numpy as np

from ._converters import _coded_labels, _info, _write
from ._docs import fill

__all__ = ["convert_esl", "convert_fold_package", "convert_crabs_csv", "convert_mnist_idx",
           "convert_satellite_r", "SATELLITE_CLASSES"]

_CRABS_COLUMNS = ("sp", "sex", "index", "FL", "RW", "CL", "CW", "BD")

#: Satellite's classes in UCI code order (codes 1, 2, 3, 4, 5, 7; there is no class 6).
SATELLITE_CLASSES = ("red soil", "cotton crop", "grey soil", "damp grey soil",
                     "vegetation stubble", "very damp grey soil")
_SATELLITE_CODES = (1, 2, 3, 4, 5, 7)
#: Rows of the R table from UCI's sat.trn; the 2000 after them are sat.tst.
_SATELLITE_N_TRAIN = 4435


@fill
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
    %(out_path)s
    class_names : sequence of str, optional
        Names of the classes in code order, stored as ``classes``; default: the codes.
    keep_table : bool, default=False
        Also store ``X``/``y`` = training rows then test rows (as ``vowel.npz`` has).
    dtype : numpy dtype, default=float64
        dtype of the stored inputs (USPS uses float32, which holds its 3 decimals exactly).

    %(written)s

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
    info = _info(out_path, "convert_esl", f"{train_path} and {test_path}",
                 labels=_coded_labels(codes, "file codes"),
                 split="official: X_train / X_test from the two files")
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


@fill
def convert_fold_package(data_path, folds_path, out_path, class_names=None):
    """Convert the multi-class EP authors' ``data.npz`` / ``folds.npz`` into one ``.npz``.

    ``data.npz`` holds ``arr_0`` (n, d) inputs and ``arr_1`` (n,) integer class codes;
    ``folds.npz`` holds ``arr_0`` (R, n_train) and ``arr_1`` (R, n_test), 0-based rows of the
    data for fold r. Codes are mapped to 0..C-1 in sorted order.

    Parameters
    ----------
    data_path, folds_path : str or path-like
        The two files of one data set of the package.
    %(out_path)s
    class_names : sequence of str, optional
        Names of the classes in code order, stored as ``classes``; default: the codes.

    %(written)s

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
    info = _info(out_path, "convert_fold_package", f"{data_path} and {folds_path}",
                 labels=_coded_labels(codes, "package codes"),
                 split="folds of the authors' package (arr_0 = train, arr_1 = test, 0-based)")
    return _write(out_path, info, X=X, y=np.searchsorted(codes, codes_all).astype(np.int8),
                  classes=classes, train_idx=train_idx.astype(np.int32),
                  test_idx=test_idx.astype(np.int32))


@fill
def convert_satellite_r(data_path, folds_path, out_path):
    """Convert Satellite and its 100 random splits from the R save files into one ``.npz``.

    ``data_path`` holds a list ``data`` with ``X`` (6435 x 36 pixel values, UCI's ``sat.trn``
    rows then ``sat.tst`` rows) and ``Y`` (class names); ``folds_path`` a list ``folds`` with
    ``itrain`` (100 x 1287) and ``itest`` (100 x 5148), 1-based rows. The file gets the
    official UCI split (``X_train`` = the first 4435 rows), the table ``X``/``y``, the 100
    splits as ``train_idx``/``test_idx``, ``classes`` (names) and ``uci_codes``.

    Parameters
    ----------
    data_path, folds_path : str or path-like
        ``satellite.dat`` and ``folds.dat`` (gzipped R ``save`` files).
    %(out_path)s

    %(written)s

    Raises
    ------
    ImportError
        The optional package ``rdata`` (extra ``data``) is not installed.
    ValueError
        An object or class name other than expected, or a table of another size.
    """
    try:
        import rdata
    except ImportError:
        raise ImportError("reading R save files needs the package 'rdata': "
                          "pip install 'sparsegp[data]' (or pip install rdata)") from None
    data = _read_r_list(rdata, data_path, "data", ("X", "Y"))
    folds = _read_r_list(rdata, folds_path, "folds", ("itrain", "itest"))
    X = np.asarray(data["X"], dtype=np.float64)
    names = np.asarray(data["Y"], dtype=str)
    unknown = sorted(set(names.tolist()) - set(SATELLITE_CLASSES))
    if unknown or X.shape != (names.shape[0], 36):
        raise ValueError(f"{data_path}: expected 36 inputs a row and classes among "
                         f"{SATELLITE_CLASSES}; got X {X.shape} and unknown classes {unknown}")
    y = np.array([SATELLITE_CLASSES.index(n) for n in names], dtype=np.int8)
    idx = {k: np.asarray(folds[k], dtype=np.float64) for k in ("itrain", "itest")}
    for key, val in idx.items():
        if np.any(val != np.round(val)) or val.min() < 1 or val.max() > X.shape[0]:
            raise ValueError(f"{folds_path}: '{key}' must hold 1-based rows 1..{X.shape[0]}")
    n_tr = _SATELLITE_N_TRAIN
    info = _info(out_path, "convert_satellite_r", f"{data_path} and {folds_path}",
                 labels=f"y = 0..5 = {', '.join(SATELLITE_CLASSES)} (UCI codes 1,2,3,4,5,7)",
                 split="official UCI split: X_train = rows 0..4434 (sat.trn), X_test = the "
                       "rest (sat.tst); train_idx/test_idx = the R code's 100 random splits, "
                       "0-based")
    return _write(out_path, info, X=X, y=y, classes=np.asarray(SATELLITE_CLASSES),
                  uci_codes=np.asarray(_SATELLITE_CODES, dtype=np.int64),
                  X_train=X[:n_tr], y_train=y[:n_tr], X_test=X[n_tr:], y_test=y[n_tr:],
                  train_idx=(idx["itrain"] - 1).astype(np.int32),
                  test_idx=(idx["itest"] - 1).astype(np.int32))


def _read_r_list(rdata, path, name, fields):
    """The R list ``name`` of an R save file, as a dict holding at least ``fields``."""
    objects = rdata.conversion.convert(rdata.parser.parse_file(path))
    got = objects.get(name)
    if not hasattr(got, "keys") or any(f not in got for f in fields):
        raise ValueError(f"{path} must hold an R list '{name}' with {list(fields)}; found "
                         f"objects {sorted(objects)}")
    return got


@fill
def convert_crabs_csv(path, out_path):
    """Convert Campbell & Mahon's crabs (R package MASS) from a CSV export into one ``.npz``.

    The file has the header ``sp, sex, index, FL, RW, CL, CW, BD`` (quotes allowed) and one
    crab a row, comma-separated with decimal points (``write.csv``) or semicolon-separated
    with decimal commas (``write.csv2``). The result has ``X`` = the five measurements,
    ``y`` = sex as -1 (F) / +1 (M), ``sp`` (0 = B, 1 = O), ``sex`` (0 = F, 1 = M), ``index``
    and ``feature_names``, in the file's row order; MASS ships no train/test split.

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    %(out_path)s

    %(written)s

    Raises
    ------
    ValueError
        Another header, or a species, sex or number that cannot be read.
    """
    lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
    sep = ";" if ";" in lines[0] else ","
    header = tuple(c.strip().strip('"') for c in lines[0].split(sep))
    if header != _CRABS_COLUMNS:
        raise ValueError(f"{path}: the header must be {', '.join(_CRABS_COLUMNS)}; got "
                         f"{', '.join(header)}")
    sp, sex, index, X = [], [], [], []
    for lineno, line in enumerate(lines[1:], 2):
        cells = [c.strip().strip('"') for c in line.split(sep)]
        try:
            if len(cells) != 8 or cells[0] not in ("B", "O") or cells[1] not in ("F", "M"):
                raise ValueError
            # write.csv2 writes decimal commas; with ';' as separator a ',' is a decimal mark
            values = [float(c.replace(",", ".")) for c in cells[2:]]
        except ValueError:
            raise ValueError(f"{path}:{lineno}: expected sp (B/O), sex (F/M), index and five "
                             f"numbers; got {line[:60]!r}") from None
        sp.append("BO".index(cells[0]))
        sex.append("FM".index(cells[1]))
        index.append(values[0])
        X.append(values[1:])
    sex = np.asarray(sex, dtype=np.int8)
    info = _info(out_path, "convert_crabs_csv", path, columns_X=list(_CRABS_COLUMNS[3:]),
                 labels="y = sex: -1 = F, +1 = M; sp: 0 = B(lue), 1 = O(range); sex: 0 = F, "
                        "1 = M; index = 1..50 within each sp x sex group",
                 split="none in source (MASS ships no split)")
    return _write(out_path, info, X=np.asarray(X, dtype=np.float64),
                  y=(2 * sex - 1).astype(np.int8), sp=np.asarray(sp, dtype=np.int8), sex=sex,
                  index=np.asarray(index, dtype=np.int16),
                  feature_names=np.asarray(_CRABS_COLUMNS[3:]))


@fill
def convert_mnist_idx(train_images, train_labels, test_images, test_labels, out_path):
    """Convert the four MNIST IDX archives into one ``.npz`` with the official split.

    IDX files start with a magic number (0x00000803 for images, 0x00000801 for labels),
    then big-endian sizes, then unsigned bytes. Images are stored as rows of 784 uint8 grey
    values (28 x 28, row-major, 0 = background), labels as int8 digits, both in file order.

    Parameters
    ----------
    train_images, train_labels, test_images, test_labels : str or path-like
        ``train-images-idx3-ubyte.gz``, ``train-labels-idx1-ubyte.gz``,
        ``t10k-images-idx3-ubyte.gz``, ``t10k-labels-idx1-ubyte.gz`` (gzipped or not).
    %(out_path)s

    %(written)s

    Raises
    ------
    ValueError
        A file that is not an IDX file of the expected kind, or images and labels of
        different counts.
    """
    X_tr, X_te = (_read_idx(p, 3) for p in (train_images, test_images))
    y_tr, y_te = (_read_idx(p, 1) for p in (train_labels, test_labels))
    for X, y, what in ((X_tr, y_tr, "train"), (X_te, y_te, "test")):
        if X.shape[0] != y.shape[0] or y.max() > 9:
            raise ValueError(f"{what}: {X.shape[0]} images but {y.shape[0]} labels (digits "
                             f"0..9 expected, largest {int(y.max())})")
    info = _info(out_path, "convert_mnist_idx",
                 f"{train_images}, {train_labels}, {test_images}, {test_labels}",
                 dtype="X uint8 grey values 0..255 as in the IDX files (0 = background)",
                 image="28x28, row-major (784 = 28*28)", labels="digits 0..9",
                 split="official: 60000 train / 10000 test, original order")
    return _write(out_path, info, X_train=X_tr.reshape(X_tr.shape[0], -1),
                  y_train=y_tr.astype(np.int8), X_test=X_te.reshape(X_te.shape[0], -1),
                  y_test=y_te.astype(np.int8), classes=np.arange(10, dtype=np.int64))


def _read_idx(path, ndim):
    """The uint8 array of an IDX file with ``ndim`` dimensions (3: images, 1: labels)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    # magic: two zero bytes, 0x08 (unsigned byte data), then the number of dimensions
    if len(raw) < 4 + 4 * ndim or raw[:4] != bytes([0, 0, 8, ndim]):
        raise ValueError(f"{path}: not an IDX file of {ndim}-D unsigned bytes (magic "
                         f"{raw[:4].hex()})")
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    body = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape} but holds {body.size} values")
    return body.reshape(shape).copy()
