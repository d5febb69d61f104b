"""The data folder and its checked ``.npz`` files (layout: ``SPARSEGP_DATA/README.md``).

Every file holds ``info`` (a 0-d JSON string) and either

* ``X``, ``y`` (a single table), optionally with ``train_idx`` / ``test_idx`` of shape
  (R, n_train) / (R, n_test): 0-based rows of ``X`` for realisation or fold r;
* ``X_train``, ``y_train``, ``X_test``, ``y_test``: one official split;
* or both (``satellite``, ``vowel``).

Labels are -1/+1 when the file has no ``classes`` array (the Raetsch sets, ``crabs``) and
0..C-1 with ``classes[k]`` naming label k otherwise. :class:`_DataFile` checks a file on every
read and refuses a corrupt one with a ``ValueError`` saying what is wrong.

This module is below everything else in the package that touches files: the readers
(:mod:`._loaders`), the converters (which re-read what they write through
:class:`_DataFile`) and the fetcher (which finds the data folder here) all import it, and it
imports none of them.
"""
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from ._docs import fill

__all__ = ["list_datasets", "get_data_home", "DatasetNotFoundError", "DATA_ENV_VAR",
           "RAETSCH_SETS"]

#: Environment variable naming the folder with the ``.npz`` files.
DATA_ENV_VAR = "SPARSEGP_DATA"


#: The Raetsch (IDA) binary benchmarks; ``"banana"`` means ``"raetsch_banana"`` and so on.
#: diabetis, flare_solar, splice and thyroid are not in the shared data but the aliases let a
#: user who converts them with :func:`convert_raetsch` load them by their short names.
RAETSCH_SETS = ("banana", "breast_cancer", "diabetis", "flare_solar", "german", "heart",
                "image", "ringnorm", "splice", "thyroid", "titanic", "twonorm", "waveform")

_ALIASES = {short: "raetsch_" + short for short in RAETSCH_SETS}
_ALIASES.update({"ripley": "synth", "synth_ripley": "synth"})

_OFFICIAL_KEYS = ("X_train", "y_train", "X_test", "y_test")


class DatasetNotFoundError(FileNotFoundError):
    """A benchmark ``.npz`` file is not in the data folder (and no download was asked for)."""


def get_data_home(data_home=None):
    """The folder searched for ``<name>.npz`` files.

    Parameters
    ----------
    data_home : str or path-like, optional
        Used as given (``~`` expanded). Default: ``$SPARSEGP_DATA`` when set and non-empty,
        else pooch's per-user cache folder for ``sparsegp`` (``~/.cache/sparsegp`` on Linux,
        :func:`pooch.os_cache`), where :func:`sparsegp.datasets.fetch` puts what it fetches.

    Returns
    -------
    pathlib.Path
        The folder (it need not exist).
    """
    if data_home is None:
        data_home = os.environ.get(DATA_ENV_VAR)
    if not data_home:
        import pooch  # only here: reading a given folder needs no pooch

        data_home = pooch.os_cache("sparsegp")
    return Path(data_home).expanduser()


@fill
def list_datasets(data_home=None):
    """Base names of the ``.npz`` files in the data folder.

    Parameters
    ----------
    %(data_home)s

    Returns
    -------
    names : list of str
        Sorted; empty when the folder does not exist. The files are not opened or checked.
    """
    home = get_data_home(data_home)
    if not home.is_dir():
        return []
    return sorted(p.stem for p in home.glob("*.npz") if p.is_file())


def _candidates(name):
    """File base names to try, in order: as given, normalised (lower case, ``_``), alias."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a data set name (str); got {name!r}")
    given = name.strip()
    if given.lower().endswith(".npz"):
        given = given[:-4]
    if not given or "/" in given or os.sep in given:
        raise ValueError(f"name must be a bare data set name like 'raetsch_banana'; got {name!r}")
    key = given.lower().replace("-", "_")
    out = [given, key] + ([_ALIASES[key]] if key in _ALIASES else [])
    return list(dict.fromkeys(out))


def _find(name, data_home):
    candidates = _candidates(name)
    home = get_data_home(data_home)
    for cand in candidates:
        path = home / f"{cand}.npz"
        if path.is_file():
            return cand, path
    # Name the alias target first: that is the file the user most likely lacks.
    looked = [home / f"{c}.npz" for c in reversed(candidates)]
    where = ("" if home.is_dir() else f" (the folder {home} does not exist)")
    have = list_datasets(home)
    raise DatasetNotFoundError(
        f"data set {name!r} not found: looked for {' and '.join(str(p) for p in looked)}"
        f"{where}. Fetch it with load_dataset(..., download=True) or "
        f"'python -m sparsegp data fetch NAME' (registered sets), put the .npz file there, "
        f"or point ${DATA_ENV_VAR} (or the data_home argument) at the folder that holds it; "
        f"build it from the original distribution files with "
        f"sparsegp.datasets.convert_raetsch / convert_libsvm / convert_ripley."
        + (f" Available in {home}: {', '.join(have)}." if have else "")
    )


class _DataFile:
    """An open ``.npz`` with lazily read, checked arrays (reads only the keys it needs)."""

    def __init__(self, name, data_home, path=None):
        if path is None:
            self.name, self.path = _find(name, data_home)
        else:
            self.name, self.path = Path(path).stem, Path(path)
        try:
            self._npz = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(
                f"corrupt data file {self.path}: cannot be read as a .npz archive ({exc})"
            ) from None
        if not hasattr(self._npz, "files"):
            self._npz = None
            raise ValueError(f"corrupt data file {self.path}: a single .npy array, not a .npz")
        self.keys = set(self._npz.files)
        self._cache = {}
        try:
            self.info = self._read_info()
        except ValueError:
            self._npz.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._npz is not None:
            self._npz.close()
        return False

    # -- raw access -------------------------------------------------------------------------
    def _fail(self, what):
        raise ValueError(f"corrupt data file {self.path}: {what}")

    def _get(self, key):
        if key not in self._cache:
            if key not in self.keys:
                self._fail(f"key '{key}' is missing (keys present: {sorted(self.keys)})")
            try:
                self._cache[key] = self._npz[key]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
                self._fail(f"array '{key}' cannot be read ({exc})")
        return self._cache[key]

    def _read_info(self):
        raw = self._get("info")
        if raw.ndim != 0 or raw.dtype.kind not in "US":
            self._fail(f"'info' must be a 0-d string array holding JSON; got dtype {raw.dtype} "
                       f"shape {raw.shape}")
        try:
            info = json.loads(str(raw))
        except json.JSONDecodeError as exc:
            self._fail(f"'info' is not valid JSON ({exc})")
        if not isinstance(info, dict):
            self._fail("'info' JSON must be an object (dict)")
        return info

    # -- layout -----------------------------------------------------------------------------
    def has_table(self):
        return "X" in self.keys or "y" in self.keys

    def has_official(self):
        present = [k for k in _OFFICIAL_KEYS if k in self.keys]
        if present and len(present) < 4:
            missing = [k for k in _OFFICIAL_KEYS if k not in self.keys]
            self._fail(f"official split incomplete: has {present} but lacks {missing}")
        return bool(present)

    def n_splits(self):
        has_tr, has_te = "train_idx" in self.keys, "test_idx" in self.keys
        if has_tr != has_te:
            self._fail("has only one of 'train_idx'/'test_idx'; both are needed")
        if not has_tr:
            return 0
        if not self.has_table():
            self._fail("has train_idx/test_idx but no 'X'/'y' table to index into")
        tr, te = self._get("train_idx"), self._get("test_idx")
        for key, idx in (("train_idx", tr), ("test_idx", te)):
            if idx.ndim != 2 or idx.dtype.kind not in "iu":
                self._fail(f"'{key}' must be a 2-D integer array (R, n); got dtype {idx.dtype} "
                           f"shape {idx.shape}")
        if tr.shape[0] != te.shape[0] or tr.shape[0] == 0:
            self._fail(f"train_idx and test_idx must have the same number R >= 1 of rows; got "
                       f"{tr.shape} and {te.shape}")
        if tr.shape[1] == 0 or te.shape[1] == 0:
            self._fail(f"empty train or test index rows: {tr.shape}, {te.shape}")
        return tr.shape[0]

    def allowed_labels(self):
        if "classes" in self.keys:
            classes = self._get("classes")
            if classes.ndim != 1 or classes.shape[0] < 2:
                self._fail(f"'classes' must be 1-D with at least 2 entries; got shape "
                           f"{classes.shape}")
            return np.arange(classes.shape[0])
        return np.array([-1, 1])

    def _checked_X(self, key, n_rows=None):
        X = self._get(key)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            self._fail(f"'{key}' must be a non-empty 2-D array (n, d); got shape {X.shape}")
        if X.dtype.kind not in "fiu":
            self._fail(f"'{key}' must be numeric; got dtype {X.dtype}")
        if n_rows is not None and X.shape[0] != n_rows:
            self._fail(f"'{key}' has {X.shape[0]} rows but {n_rows} were expected")
        if X.dtype.kind == "f":
            bad = ~np.isfinite(X)
            if bad.any():
                rows = np.unique(np.nonzero(bad)[0])
                self._fail(f"'{key}' contains {int(bad.sum())} NaN/inf value(s) in "
                           f"{rows.size} row(s), first rows {rows[:5].tolist()}")
        return X

    def _checked_y(self, key, n_rows):
        y = self._get(key)
        if y.ndim != 1 or y.shape[0] != n_rows:
            self._fail(f"'{key}' must have shape ({n_rows},) to match its inputs; got {y.shape}")
        if y.dtype.kind == "f":
            if not np.all(np.isfinite(y)):
                self._fail(f"'{key}' contains NaN/inf labels")
            if np.any(y != np.round(y)):
                self._fail(f"'{key}' holds non-integer labels")
        elif y.dtype.kind not in "iu":
            self._fail(f"'{key}' must hold integer labels; got dtype {y.dtype}")
        allowed = self.allowed_labels()
        unexpected = np.setdiff1d(np.unique(y), allowed)
        if unexpected.size:
            kind = ("0..C-1 with C = len(classes)" if "classes" in self.keys
                    else "-1/+1 (no 'classes' array)")
            self._fail(f"'{key}' has label(s) {unexpected[:10].tolist()} outside the expected "
                       f"set {allowed.tolist()} ({kind})")
        return y.astype(np.int64)

    # -- the three views --------------------------------------------------------------------
    def table(self):
        if self.has_table():
            X = self._checked_X("X")
            y = self._checked_y("y", X.shape[0])
            if self.has_official():
                self._check_official_matches_table(X, y)
            return X, y
        if self.has_official():
            X_tr, y_tr, X_te, y_te = self.official()
            return np.concatenate([X_tr, X_te]), np.concatenate([y_tr, y_te])
        self._fail(f"neither 'X'/'y' nor 'X_train'/'y_train'/'X_test'/'y_test' present "
                   f"(keys: {sorted(self.keys)})")

    def official(self):
        X_tr = self._checked_X("X_train")
        X_te = self._checked_X("X_test")
        if X_tr.shape[1] != X_te.shape[1]:
            self._fail(f"X_train has {X_tr.shape[1]} columns but X_test has {X_te.shape[1]}")
        y_tr = self._checked_y("y_train", X_tr.shape[0])
        y_te = self._checked_y("y_test", X_te.shape[0])
        return X_tr, y_tr, X_te, y_te

    def realisation(self, r):
        X = self._checked_X("X")
        y = self._checked_y("y", X.shape[0])
        n = X.shape[0]
        tr = self._get("train_idx")[r].astype(np.int64)
        te = self._get("test_idx")[r].astype(np.int64)
        both = np.concatenate([tr, te])
        if both.min() < 0 or both.max() >= n:
            self._fail(f"row {r} of train_idx/test_idx has indices outside 0..{n - 1} "
                       f"(min {both.min()}, max {both.max()})")
        srt = np.sort(both)
        if np.any(srt[1:] == srt[:-1]):
            self._fail(f"row {r} of train_idx/test_idx repeats indices (train and test must "
                       f"be disjoint and without duplicates)")
        return X[tr], y[tr], X[te], y[te]

    def _check_official_matches_table(self, X, y):
        X_tr, y_tr, X_te, y_te = self.official()
        n_tr = X_tr.shape[0]
        if X.shape[0] != n_tr + X_te.shape[0] or X.shape[1] != X_tr.shape[1]:
            self._fail(f"'X' {X.shape} is not the official train rows {X_tr.shape} followed by "
                       f"the test rows {X_te.shape}")
        if not (np.array_equal(X[:n_tr], X_tr) and np.array_equal(X[n_tr:], X_te)
                and np.array_equal(y[:n_tr], y_tr) and np.array_equal(y[n_tr:], y_te)):
            self._fail("'X'/'y' differ from X_train/y_train followed by X_test/y_test")

    def check_all(self):
        """Run every check (used by the converters on the file they have just written)."""
        if self.has_table():
            self.table()
        if self.has_official():
            self.official()
        if not self.has_table() and not self.has_official():
            self.table()  # raises: no data at all
        for r in range(self.n_splits()):
            self.realisation(r)

    def describe(self, shape):
        info = dict(self.info)
        n_splits = self.n_splits()
        official = self.has_official()
        info.update(name=self.name, path=str(self.path), n_samples=int(shape[0]),
                    n_features=int(shape[1]), n_splits=int(n_splits),
                    official_split=bool(official),
                    label_values=self.allowed_labels().tolist())
        if official:
            info["n_train"] = int(self._get("y_train").shape[0])
            info["n_test"] = int(self._get("y_test").shape[0])
        if "classes" in self.keys:
            info["classes"] = self._get("classes").tolist()
        skip = {"info", "X", "y", "classes", *_OFFICIAL_KEYS}
        info["arrays"] = {k: np.array(self._get(k)) for k in sorted(self.keys - skip)}
        return info
