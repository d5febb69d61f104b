"""The converters of the fetched formats, and fetched sets against the shared ``.npz`` files.

The last test needs the registered source files on disk (there is no network in CI): set
``SPARSEGP_SOURCE_CACHE`` to a folder holding them under their registered names, e.g. files
taken from snapshots of the source repositories with ``git show <commit>:<path>``. It skips,
with the reason, when that folder or the shared data is absent.
"""
import gzip
import hashlib
import importlib.util
import os
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest
from scipy.io import savemat

from conftest import data_available
from sparsegp.datasets import (REGISTRY, convert_crabs_csv, convert_esl, convert_fold_package,
                               convert_mnist_idx, convert_raetsch, convert_raetsch_mat, fetch,
                               load_dataset, load_table)

SOURCE_CACHE_ENV_VAR = "SPARSEGP_SOURCE_CACHE"


def _realisations(rng, n=12, d=3, n_train=5, R=3):
    """Unique patterns with -1/+1 labels and R random train/test partitions (1-based)."""
    x = np.round(rng.normal(size=(n, d)), 3)
    t = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    perms = [rng.permutation(n) + 1 for _ in range(R)]
    train = np.array([p[:n_train] for p in perms], dtype=np.float64)
    test = np.array([p[n_train:] for p in perms], dtype=np.float64)
    return x, t, train, test


def test_convert_raetsch_mat_equals_the_asc_route(tmp_path, rng):
    x, t, train, test = _realisations(rng)
    # MATLAB stores the struct's labels as a column and the indices as doubles
    savemat(tmp_path / "benchmarks.mat",
            {"toy": {"x": x, "t": t[:, None], "train": train, "test": test}})
    out = convert_raetsch_mat(tmp_path / "benchmarks.mat", "toy", tmp_path / "a.npz")
    # the same realisations written as Raetsch's .asc files
    asc = tmp_path / "asc"
    asc.mkdir()
    for r, (tr, te) in enumerate(zip(train.astype(int) - 1, test.astype(int) - 1), 1):
        for kind, rows in (("train", tr), ("test", te)):
            np.savetxt(asc / f"toy_{kind}_data_{r}.asc", x[rows])
            np.savetxt(asc / f"toy_{kind}_labels_{r}.asc", t[rows])
    ref = convert_raetsch(asc, "toy", tmp_path / "b.npz")
    with np.load(out) as a, np.load(ref) as b:
        for key in ("X", "y", "train_idx", "test_idx", "realisation_ids"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    for r in range(3):
        X_tr, y_tr, X_te, y_te = load_dataset("a", split=r, data_home=tmp_path)
        np.testing.assert_array_equal(X_tr, x[train[r].astype(int) - 1])
        np.testing.assert_array_equal(y_te, t[test[r].astype(int) - 1])


def test_convert_raetsch_mat_refuses_what_it_cannot_read(tmp_path, rng):
    x, t, train, test = _realisations(rng)
    savemat(tmp_path / "m.mat", {"toy": {"x": x, "t": t[:, None], "train": train,
                                         "test": test + x.shape[0]}})
    with pytest.raises(ValueError, match="name must be a data set"):
        convert_raetsch_mat(tmp_path / "m.mat", "banana", tmp_path / "o.npz")
    with pytest.raises(ValueError, match=r"1-based row numbers of x \(1..12\)"):
        convert_raetsch_mat(tmp_path / "m.mat", "toy", tmp_path / "o.npz")
    savemat(tmp_path / "n.mat", {"toy": {"x": x, "t": t[:, None]}})
    with pytest.raises(ValueError, match=r"lacks the field\(s\) \['train', 'test'\]"):
        convert_raetsch_mat(tmp_path / "n.mat", "toy", tmp_path / "o.npz")


def test_convert_esl_reads_both_layouts(tmp_path):
    # USPS: code then inputs, gzipped
    for name, rows in (("d.train.gz", "3.0 -1 0.5\n1.0 0.25 -0.125\n"),
                       ("d.test.gz", "1.0 0 0\n")):
        with gzip.open(tmp_path / name, "wt") as fh:
            fh.write(rows)
    convert_esl(tmp_path / "d.train.gz", tmp_path / "d.test.gz", tmp_path / "d",
                dtype=np.float32)
    X_tr, y_tr, X_te, y_te = load_dataset("d", data_home=tmp_path)
    np.testing.assert_array_equal(X_tr, [[-1, 0.5], [0.25, -0.125]])
    assert y_tr.tolist() == [1, 0] and y_te.tolist() == [0]
    with np.load(tmp_path / "d.npz") as f:
        assert f["X_train"].dtype == np.float32 and f["classes"].tolist() == [1, 3]
    # ESL tables: row number, y, inputs; with names and the whole table kept
    (tmp_path / "v.train").write_text("row.names,y,x.1,x.2\n1,1,0.5,1\n2,2,-0.5,2\n")
    (tmp_path / "v.test").write_text("row.names,y,x.1,x.2\n1,2,3,4\n")
    convert_esl(tmp_path / "v.train", tmp_path / "v.test", tmp_path / "v",
                class_names=["hid", "hId"], keep_table=True)
    X, y, info = load_table("v", data_home=tmp_path)
    np.testing.assert_array_equal(X, [[0.5, 1], [-0.5, 2], [3, 4]])
    assert y.tolist() == [0, 1, 1] and info["classes"] == ["hid", "hId"]
    with pytest.raises(ValueError, match="class_names must name the 2 classes"):
        convert_esl(tmp_path / "v.train", tmp_path / "v.test", tmp_path / "w",
                    class_names=["a"])


def test_convert_fold_package(tmp_path, rng):
    X = rng.normal(size=(6, 2))
    codes = np.array([2, 5, 2, 5, 9, 9], dtype=np.int32)
    np.savez(tmp_path / "data.npz", X, codes)
    np.savez(tmp_path / "folds.npz", np.array([[0, 1, 2, 3], [2, 3, 4, 5]]),
             np.array([[4, 5], [0, 1]]))
    convert_fold_package(tmp_path / "data.npz", tmp_path / "folds.npz", tmp_path / "p")
    X_tr, y_tr, X_te, y_te = load_dataset("p", split=1, data_home=tmp_path)
    np.testing.assert_array_equal(X_tr, X[[2, 3, 4, 5]])
    assert y_tr.tolist() == [0, 1, 2, 2] and y_te.tolist() == [0, 1]
    assert load_table("p", data_home=tmp_path)[2]["classes"] == [2, 5, 9]
    np.savez(tmp_path / "bad.npz", X)
    with pytest.raises(ValueError, match="exactly arr_0 and arr_1"):
        convert_fold_package(tmp_path / "bad.npz", tmp_path / "folds.npz", tmp_path / "q")


def _same_realisations(ours, shared):
    """Each shared realisation has the same train and test rows as ours, as sets of rows."""
    for r in range(shared["train_idx"].shape[0]):
        for key in ("train_idx", "test_idx"):
            a = np.column_stack([ours["X"][ours[key][r]], ours["y"][ours[key][r]]])
            b = np.column_stack([shared["X"][shared[key][r]], shared["y"][shared[key][r]]])
            np.testing.assert_array_equal(a[np.lexsort(a.T)], b[np.lexsort(b.T)],
                                          err_msg=f"realisation {r} {key}")


def test_fetched_sets_equal_the_shared_files(tmp_path):
    source = os.environ.get(SOURCE_CACHE_ENV_VAR)
    if not source or not Path(source).is_dir():
        pytest.skip(f"no source files: set {SOURCE_CACHE_ENV_VAR} to a folder holding the "
                    f"registered files (there is no network here)")
    shared = Path(os.environ.get("SPARSEGP_DATA", ""))
    compared = []
    for name, entry in sorted(REGISTRY.items()):
        have = all((Path(source) / f.fname).is_file() for f in entry.files)
        if not (entry.fetchable and have and data_available(name)):
            continue
        if entry.converter == "satellite_r" and importlib.util.find_spec("rdata") is None:
            continue    # R save files need the optional package rdata (extra "data")
        downloads = tmp_path / "downloads"
        downloads.mkdir(exist_ok=True)
        for f in entry.files:
            # the registered hash holds for the bytes we were given
            data = (Path(source) / f.fname).read_bytes()
            assert hashlib.sha256(data).hexdigest() == f.sha256, f.fname
            shutil.copyfile(Path(source) / f.fname, downloads / f.fname)
        with socket.socket() as s:  # a base URL nobody answers: the cache must suffice
            s.bind(("127.0.0.1", 0))
            dead = f"http://127.0.0.1:{s.getsockname()[1]}"
        path = fetch(name, data_home=tmp_path, base_url=dead)
        with np.load(path) as ours, np.load(shared / f"{name}.npz") as ref:
            keys = set(ref.files) - {"info"}
            assert set(ours.files) - {"info"} == keys, name
            if "realisation_ids" in keys and ours["train_idx"].shape != ref["train_idx"].shape:
                _same_realisations(ours, ref)   # Cawley's file has every realisation
            else:
                for key in keys:                # same files: bit for bit
                    assert ours[key].dtype == ref[key].dtype, (name, key)
                    np.testing.assert_array_equal(ours[key], ref[key], err_msg=f"{name} {key}")
        compared.append(name)
    if not compared:
        pytest.skip(f"neither the shared data nor any registered set's source files in "
                    f"{source}")


def test_convert_crabs_csv_reads_both_r_dialects(tmp_path):
    rows = [("B", "M", 1, "8.1", "6.7", "16.1", "19", "7"),
            ("O", "F", 50, "23.1", "20.2", "46.2", "52.5", "21.1")]
    header = '"sp","sex","index","FL","RW","CL","CW","BD"'
    (tmp_path / "a.csv").write_text(header + "\n" + "\n".join(
        ",".join(f'"{c}"' if i < 2 else str(c) for i, c in enumerate(r)) for r in rows) + "\n")
    (tmp_path / "b.csv").write_text(header.replace(",", ";") + "\n" + "\n".join(
        ";".join(f'"{c}"' if i < 2 else str(c).replace(".", ",") for i, c in enumerate(r))
        for r in rows) + "\n")
    for name in ("a", "b"):
        convert_crabs_csv(tmp_path / f"{name}.csv", tmp_path / name)
        X, y, info = load_table(name, data_home=tmp_path)
        np.testing.assert_array_equal(X, [[8.1, 6.7, 16.1, 19, 7], [23.1, 20.2, 46.2, 52.5, 21.1]])
        assert y.tolist() == [1, -1]
        assert info["arrays"]["sp"].tolist() == [0, 1]
        assert info["arrays"]["index"].tolist() == [1, 50]
    (tmp_path / "c.csv").write_text("sp,sex,FL\nB,M,1\n")
    with pytest.raises(ValueError, match="the header must be sp, sex, index"):
        convert_crabs_csv(tmp_path / "c.csv", tmp_path / "c")


def _idx(path, array, gz=True):
    """Write ``array`` (uint8) as an IDX file: magic 0 0 8 ndim, big-endian sizes, bytes."""
    head = bytes([0, 0, 8, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    data = head + array.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        Path(path).write_bytes(data)


def test_convert_mnist_idx(tmp_path, rng):
    images = rng.integers(0, 256, size=(5, 28, 28)).astype(np.uint8)
    labels = np.array([5, 0, 4, 1, 9], dtype=np.uint8)
    _idx(tmp_path / "tri.gz", images[:3])
    _idx(tmp_path / "trl.gz", labels[:3])
    _idx(tmp_path / "tei", images[3:], gz=False)
    _idx(tmp_path / "tel", labels[3:], gz=False)
    convert_mnist_idx(tmp_path / "tri.gz", tmp_path / "trl.gz", tmp_path / "tei",
                      tmp_path / "tel", tmp_path / "m")
    X_tr, y_tr, X_te, y_te = load_dataset("m", data_home=tmp_path)
    assert X_tr.dtype == np.uint8 and X_tr.shape == (3, 784)
    np.testing.assert_array_equal(X_te, images[3:].reshape(2, -1))
    assert y_tr.tolist() == [5, 0, 4] and y_te.tolist() == [1, 9]
    with pytest.raises(ValueError, match="not an IDX file of 3-D unsigned bytes"):
        convert_mnist_idx(tmp_path / "trl.gz", tmp_path / "trl.gz", tmp_path / "tei",
                          tmp_path / "tel", tmp_path / "n")
    with pytest.raises(ValueError, match="3 images but 2 labels"):
        convert_mnist_idx(tmp_path / "tri.gz", tmp_path / "tel", tmp_path / "tei",
                          tmp_path / "tel", tmp_path / "n")
