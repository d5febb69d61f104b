"""Download the registered source files (pooch) and convert them into the ``.npz`` cache.

Layout under the data folder (:func:`sparsegp.datasets.get_data_home`)::

    <name>.npz              what load_dataset reads
    downloads/<fname>       the source files, exactly as registered (SHA-256 checked)
    downloads/<fname>.sha256  the hash recorded at first download, for files registered
                            without one (trust on first use)

Safety, and where it comes from:

* pooch streams each download into a temporary file in ``downloads/`` and moves it to its
  name only after its SHA-256 matched, so a truncated, interrupted or corrupt download is
  never at the final name; a cached file whose hash no longer matches is fetched again;
* each conversion writes into a private temporary folder and is renamed into place
  (:func:`os.replace`), so two processes fetching the same set both end with a whole file
  (the second rename replaces identical bytes) and a reader never sees a half-written one;
* a cached file is used without any network access.
"""
import hashlib
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from ._converters import convert_raetsch_mat, convert_ripley
from ._datafile import DATA_ENV_VAR, _candidates, get_data_home
from ._docs import fill
from ._package_converters import (convert_crabs_csv, convert_esl, convert_fold_package,
                                  convert_mnist_idx, convert_satellite_r)
from ._registry import REGISTRY

__all__ = ["fetch", "download_file", "cache_status", "verify_cache", "DownloadError",
           "BASE_URL_ENV_VAR", "DOWNLOAD_DIR"]

#: Environment variable: when set, every file is fetched from ``<base>/<fname>`` instead of
#: its registered URL (a mirror, or the test suite's local server). The hashes still apply.
BASE_URL_ENV_VAR = "SPARSEGP_DATA_URL"

#: Sub-folder of the data folder holding the downloaded source files.
DOWNLOAD_DIR = "downloads"

# A dropped connection or a truncated body is tried again this often; a second failure with
# the same bytes is not a network accident, and the error says so.
_RETRIES = 2


class DownloadError(OSError):
    """A registered file could not be downloaded whole with its registered SHA-256."""


@fill
def fetch(name, data_home=None, base_url=None, force=False):
    """Download a registered data set's source files and convert them into ``<name>.npz``.

    Nothing is downloaded when ``<name>.npz`` is already in the data folder (unless
    ``force``), nor for a source file already in ``downloads/`` with the registered hash.

    Parameters
    ----------
    name : str
        A registered data set (``python -m sparsegp data list``); the aliases of
        :func:`sparsegp.datasets.load_dataset` (``"banana"``, ``"ripley"``) work too.
    %(data_home)s
    base_url : str, optional
        Fetch every file from ``<base_url>/<fname>`` instead of its registered URL; default
        ``$SPARSEGP_DATA_URL`` when set.
    force : bool, default=False
        Convert again even when ``<name>.npz`` exists (the source files are still reused when
        their hash matches).

    Returns
    -------
    pathlib.Path
        The ``.npz`` file.

    Raises
    ------
    ValueError
        ``name`` is not registered, or is registered without a download route yet.
    DownloadError
        A file could not be had whole with its SHA-256 (network down and nothing cached, a
        truncated or corrupt download twice); the message names the URL and the manual route.
    """
    if not isinstance(force, bool):
        raise ValueError(f"force must be True or False; got {force!r}")
    if base_url is not None and not (isinstance(base_url, str) and "://" in base_url):
        raise ValueError(f"base_url must be a URL such as 'https://host/path'; got {base_url!r}")
    entry = _entry(name)
    if not entry.fetchable:
        raise ValueError(
            f"data set {entry.name!r} has no download route yet (source: {entry.source}); "
            f"build {entry.name}.npz by hand and put it in the data folder, or set "
            f"${DATA_ENV_VAR} to a folder holding it")
    home = get_data_home(data_home)
    out = home / f"{entry.name}.npz"
    if out.is_file() and not force:
        return out
    paths = [download_file(f, home, base_url) for f in entry.files]
    home.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=home))
    try:
        written = _CONVERTERS[entry.converter](paths, tmp, tmp / f"{entry.name}.npz",
                                               **entry.options)
        os.replace(written, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


@fill
def download_file(remote, data_home=None, base_url=None):
    """One registered file in ``<data_home>/downloads``, downloaded when absent or corrupt.

    Parameters
    ----------
    remote : RemoteFile
        A file of the registry (``REGISTRY[name].files[i]``).
    %(data_home)s
    base_url : str, optional
        See :func:`fetch`.

    Returns
    -------
    pathlib.Path
        The file, whose SHA-256 is the registered one (or the one recorded at its first
        download, for a file registered without a hash).

    Raises
    ------
    DownloadError
        As in :func:`fetch`.
    """
    import pooch
    import requests

    folder = get_data_home(data_home) / DOWNLOAD_DIR
    target = folder / remote.fname
    base_url = base_url or os.environ.get(BASE_URL_ENV_VAR) or None
    url = f"{base_url.rstrip('/')}/{remote.fname}" if base_url else remote.url
    sha256, record = _held_to(folder, remote.fname, remote.sha256)
    if url is None:  # a file placed by hand: held to its hash like a downloaded one
        if not target.is_file():
            raise DownloadError(f"{remote.fname} has no download URL; get it by hand "
                                f"({remote.manual}) and put it at {target}")
        if sha256 is not None and _sha256(target) != sha256:
            raise DownloadError(f"{target} does not have SHA-256 {sha256}; replace it with "
                                f"the right file ({remote.manual})")
    else:
        for _ in range(_RETRIES):
            try:
                pooch.retrieve(url, known_hash=f"sha256:{sha256}" if sha256 else None,
                               fname=remote.fname, path=folder, progressbar=False)
                break
            except (ValueError, requests.exceptions.RequestException, OSError) as exc:
                last = exc  # pooch has removed the partial or corrupt temporary file
        else:
            raise DownloadError(
                f"could not download {url} whole with SHA-256 "
                f"{sha256 or '(none registered)'} ({type(last).__name__}: {last}). Manual "
                f"route: get {remote.manual} by any means, check its SHA-256, and put it at "
                f"{target}; or put the converted .npz into the data folder "
                f"{target.parent.parent} (${DATA_ENV_VAR})") from last
    if sha256 is None:
        # No registered hash (the host is not a code repository): record the first bytes'
        # hash and hold every later use to it.
        record.write_text(_sha256(target) + "\n")
    return target


@fill
def cache_status(data_home=None):
    """One row per registered data set: what it is and what of it is on this machine.

    Parameters
    ----------
    %(data_home)s

    Returns
    -------
    rows : list of dict
        Keys ``name``, ``converted`` (``<name>.npz`` present), ``files``: a list of dicts
        with ``fname``, ``url``, ``sha256``, ``size`` and ``cached`` (present in
        ``downloads/``; not re-hashed, see :func:`verify_cache`).
    """
    home = get_data_home(data_home)
    rows = []
    for name in sorted(REGISTRY):
        entry = REGISTRY[name]
        files = [dict(fname=f.fname, url=f.url, sha256=f.sha256, size=f.size,
                      cached=(home / DOWNLOAD_DIR / f.fname).is_file()) for f in entry.files]
        rows.append(dict(name=name, converted=(home / f"{name}.npz").is_file(), files=files,
                         source=entry.source))
    return rows


@fill
def verify_cache(data_home=None):
    """Re-hash every downloaded file against its registered (or recorded) SHA-256.

    Parameters
    ----------
    %(data_home)s

    Returns
    -------
    results : list of (str, str)
        ``(fname, "ok" | "MISMATCH")`` for each registered file present in ``downloads/``,
        sorted by name; a mismatching file will be fetched again by :func:`fetch`.
    """
    folder = get_data_home(data_home) / DOWNLOAD_DIR
    known = {f.fname: f.sha256 for entry in REGISTRY.values() for f in entry.files}
    results = []
    for fname in sorted(known):
        path = folder / fname
        if not path.is_file():
            continue
        expected, _ = _held_to(folder, fname, known[fname])
        ok = expected is None or _sha256(path) == expected
        results.append((fname, "ok" if ok else "MISMATCH"))
    return results


def _entry(name):
    for cand in _candidates(name):
        if cand in REGISTRY:
            return REGISTRY[cand]
        if cand.lower() in REGISTRY:
            return REGISTRY[cand.lower()]
    raise ValueError(f"name must be a registered data set ({', '.join(sorted(REGISTRY))}); "
                     f"got {name!r}")


def _held_to(folder, fname, registered):
    """``(sha256, record)`` of the file ``folder/fname``: the SHA-256 it is held to (the
    registered one, else the one recorded at its first download, else None) and the path of
    that record (``<fname>.sha256`` beside it)."""
    record = folder / f"{fname}.sha256"
    return registered or (record.read_text().strip() if record.is_file() else None), record


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- conversions: (source paths, scratch folder, output path, **registry options) -> path ---
def _from_raetsch_mat(paths, tmp, out, member):
    return convert_raetsch_mat(paths[0], member, out)


def _from_ripley(paths, tmp, out):
    return convert_ripley(paths[0], paths[1], out)


def _from_esl_digits(paths, tmp, out):
    return convert_esl(paths[0], paths[1], out, dtype=np.float32)


def _from_esl_table(paths, tmp, out, classes, table):
    return convert_esl(paths[0], paths[1], out, class_names=classes, keep_table=table)


def _from_fold_package(paths, tmp, out, member, classes):
    wanted = [f"{member}/data.npz", f"{member}/folds.npz"]
    with tarfile.open(paths[0], "r:gz") as tar:
        names = set(tar.getnames())
        missing = [w for w in wanted if w not in names]
        if missing:
            raise ValueError(f"{paths[0]} lacks {missing}")
        for w in wanted:
            # extract only the two regular members, by name (no path from the archive is
            # trusted beyond them)
            with tar.extractfile(w) as src, open(tmp / w.replace("/", "_"), "wb") as dst:
                shutil.copyfileobj(src, dst)
    return convert_fold_package(tmp / wanted[0].replace("/", "_"),
                                tmp / wanted[1].replace("/", "_"), out, class_names=classes)


def _from_satellite_r(paths, tmp, out):
    return convert_satellite_r(paths[0], paths[1], out)


def _from_crabs_csv(paths, tmp, out):
    return convert_crabs_csv(paths[0], out)


def _from_mnist_idx(paths, tmp, out):
    return convert_mnist_idx(*paths, out)


_CONVERTERS = {"raetsch_mat": _from_raetsch_mat, "ripley": _from_ripley,
               "crabs_csv": _from_crabs_csv, "esl_digits": _from_esl_digits,
               "esl_table": _from_esl_table, "fold_package": _from_fold_package,
               "satellite_r": _from_satellite_r, "mnist_idx": _from_mnist_idx}
