"""sparsegp.datasets.fetch against a local HTTP server: success, corrupt, truncated and
interrupted downloads, two processes at once, offline with and without a cache, the CLI.

Nothing here reaches the internet: every URL is on 127.0.0.1, and the files served are tiny
ones each test writes (Ripley's format: a header, then ``xs ys yc``).
"""
import hashlib
import http.server
import io
import multiprocessing
import os
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

from sparsegp.__main__ import main
from sparsegp.datasets import (REGISTRY, DownloadError, cache_status, fetch, load_dataset,
                               verify_cache)
from sparsegp.datasets._registry import DatasetSource, RemoteFile

TOY_TRAIN = b"   xs   ys   yc\n 0.1  0.2  0\n-0.3  0.4  1\n 0.5 -0.6  0\n 0.7  0.8  1\n"
TOY_TEST = b"xs ys yc\n 1.0 2.0 1\n-1.0 -2.0 0\n 0.0 0.5 1\n"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``server.files[path]`` as ``server.modes[path]`` says (default "ok")."""

    def do_GET(self):  # noqa: N802 (the stdlib's name)
        name = self.path.lstrip("/")
        srv = self.server
        with srv.lock:
            srv.hits[name] = srv.hits.get(name, 0) + 1
            hit = srv.hits[name]
        if name not in srv.files:
            self.send_error(404)
            return
        body = srv.files[name]
        mode = srv.modes.get(name, "ok")
        if mode == "truncate_once":
            mode = "truncate" if hit == 1 else "ok"
        if mode == "wait":
            srv.barrier.wait(timeout=20)    # every client is mid-download before any ends
        self.send_response(200)
        if mode == "truncate":
            # no Content-Length: the client cannot tell that half the body is missing
            # until it checks the hash
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            return
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "interrupt":
            # the connection breaks after half of the announced bytes
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def log_message(self, *args):
        pass  # keep the test output clean


@pytest.fixture
def server():
    """A threaded HTTP server on 127.0.0.1; ``server.url`` is its base URL."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.files, srv.modes, srv.hits, srv.lock = {}, {}, {}, threading.Lock()
    srv.barrier = threading.Barrier(2)
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


@pytest.fixture
def dead_url():
    """A base URL on which nothing listens: what an offline machine sees."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def toy_entry(train=TOY_TRAIN, test=TOY_TEST, sha_train=None):
    files = (RemoteFile("toy.tr", "https://example.invalid/toy.tr",
                        sha256(train) if sha_train is None else sha_train, len(train),
                        manual="toy.tr from the test"),
             RemoteFile("toy.te", "https://example.invalid/toy.te", sha256(test), len(test),
                        manual="toy.te from the test"))
    return DatasetSource("toy", files, "ripley", source="the test", licence="-", papers="-")


@pytest.fixture
def toy(monkeypatch, server):
    """Register the data set 'toy' and serve its two files."""
    monkeypatch.setitem(REGISTRY, "toy", toy_entry())
    server.files.update({"toy.tr": TOY_TRAIN, "toy.te": TOY_TEST})
    return server


def leftovers(home):
    """Files in the download folder other than the finished ones (pooch's temporaries)."""
    folder = Path(home) / "downloads"
    return sorted(p.name for p in folder.iterdir()
                  if p.name not in ("toy.tr", "toy.te")) if folder.is_dir() else []


def test_fetch_downloads_checks_and_converts(tmp_path, toy):
    path = fetch("toy", data_home=tmp_path, base_url=toy.url)
    assert path == tmp_path / "toy.npz"
    X_tr, y_tr, X_te, y_te = load_dataset("toy", data_home=tmp_path)
    np.testing.assert_array_equal(X_tr, np.loadtxt(io.BytesIO(TOY_TRAIN), skiprows=1)[:, :2])
    np.testing.assert_array_equal(y_te, [1, 0, 1])
    assert (tmp_path / "downloads" / "toy.tr").read_bytes() == TOY_TRAIN
    assert toy.hits == {"toy.tr": 1, "toy.te": 1}
    # a second call finds the .npz and asks the server nothing
    assert fetch("toy", data_home=tmp_path, base_url=toy.url) == path
    assert toy.hits == {"toy.tr": 1, "toy.te": 1}
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob(".toy-*"))
    # the loader's aliases name registered sets too
    assert fetch("Toy.npz", data_home=tmp_path, base_url=toy.url) == path


def test_load_dataset_downloads_only_when_asked(tmp_path, toy, monkeypatch):
    from sparsegp.datasets import DatasetNotFoundError

    with pytest.raises(DatasetNotFoundError, match="download=True"):
        load_dataset("toy", data_home=tmp_path)
    assert toy.hits == {}
    monkeypatch.setenv("SPARSEGP_DATA_URL", toy.url)        # the base URL from the environment
    X_tr, *_ = load_dataset("toy", data_home=tmp_path, download=True)
    assert X_tr.shape == (4, 2) and toy.hits == {"toy.tr": 1, "toy.te": 1}
    with pytest.raises(ValueError, match="download must be True or False"):
        load_dataset("toy", data_home=tmp_path, download="yes")


def test_checksum_mismatch_is_refused_and_nothing_is_kept(tmp_path, toy):
    toy.files["toy.tr"] = TOY_TRAIN.replace(b"0.1", b"0.9")     # same size, other bytes
    with pytest.raises(DownloadError) as exc:
        fetch("toy", data_home=tmp_path, base_url=toy.url)
    msg = str(exc.value)
    assert f"{toy.url}/toy.tr" in msg and sha256(TOY_TRAIN) in msg and "Manual route" in msg
    assert not (tmp_path / "downloads" / "toy.tr").exists() and leftovers(tmp_path) == []
    assert not (tmp_path / "toy.npz").exists()
    assert toy.hits["toy.tr"] == 2                          # tried again once, then refused


@pytest.mark.parametrize("mode", ["truncate", "interrupt"])
def test_a_broken_download_is_removed_never_used(tmp_path, toy, mode):
    toy.modes["toy.tr"] = mode
    with pytest.raises(DownloadError, match="toy.tr"):
        fetch("toy", data_home=tmp_path, base_url=toy.url)
    assert not (tmp_path / "downloads" / "toy.tr").exists() and leftovers(tmp_path) == []
    # the server mends: the next fetch downloads the whole file
    toy.modes.clear()
    fetch("toy", data_home=tmp_path, base_url=toy.url)
    assert (tmp_path / "downloads" / "toy.tr").read_bytes() == TOY_TRAIN


def test_a_truncated_download_is_fetched_again(tmp_path, toy):
    toy.modes["toy.tr"] = "truncate_once"
    fetch("toy", data_home=tmp_path, base_url=toy.url)
    assert toy.hits["toy.tr"] == 2
    assert (tmp_path / "downloads" / "toy.tr").read_bytes() == TOY_TRAIN


def test_a_partial_file_left_by_an_interrupted_run_is_replaced(tmp_path, toy):
    # what a copy killed half-way leaves at the final name: the hash tells, and it is redone
    folder = tmp_path / "downloads"
    folder.mkdir()
    (folder / "toy.tr").write_bytes(TOY_TRAIN[:10])
    assert verify_cache(tmp_path) == [("toy.tr", "MISMATCH")]
    fetch("toy", data_home=tmp_path, base_url=toy.url)
    assert (folder / "toy.tr").read_bytes() == TOY_TRAIN
    assert verify_cache(tmp_path) == [("toy.te", "ok"), ("toy.tr", "ok")]


def test_offline_with_a_warm_cache_works(tmp_path, toy, dead_url):
    fetch("toy", data_home=tmp_path, base_url=toy.url)
    (tmp_path / "toy.npz").unlink()                         # converted again from the cache
    assert fetch("toy", data_home=tmp_path, base_url=dead_url) == tmp_path / "toy.npz"
    assert load_dataset("toy", data_home=tmp_path)[0].shape == (4, 2)


def test_offline_without_a_cache_says_what_to_do(tmp_path, toy, dead_url):
    with pytest.raises(DownloadError) as exc:
        fetch("toy", data_home=tmp_path, base_url=dead_url)
    msg = str(exc.value)
    assert f"{dead_url}/toy.tr" in msg                      # the URL
    assert "Manual route" in msg and "toy.tr from the test" in msg
    assert str(tmp_path / "downloads" / "toy.tr") in msg    # where to put it by hand
    assert "SPARSEGP_DATA" in msg


def test_a_file_registered_without_hash_is_held_to_its_first_download(tmp_path, server,
                                                                      monkeypatch):
    monkeypatch.setitem(REGISTRY, "toy", toy_entry(sha_train=""))
    server.files.update({"toy.tr": TOY_TRAIN, "toy.te": TOY_TEST})
    fetch("toy", data_home=tmp_path, base_url=server.url)
    record = tmp_path / "downloads" / "toy.tr.sha256"
    assert record.read_text().strip() == sha256(TOY_TRAIN)
    # later bytes must match the recorded ones
    (tmp_path / "downloads" / "toy.tr").unlink()
    (tmp_path / "toy.npz").unlink()
    server.files["toy.tr"] = TOY_TRAIN.replace(b"0.1", b"0.9")
    with pytest.raises(DownloadError, match=sha256(TOY_TRAIN)):
        fetch("toy", data_home=tmp_path, base_url=server.url)


def test_bad_names_are_refused_before_any_download(tmp_path, server):
    with pytest.raises(ValueError, match="name must be a registered data set"):
        fetch("no_such_set", data_home=tmp_path, base_url=server.url)
    with pytest.raises(ValueError, match="no download route yet"):
        fetch("flights2008", data_home=tmp_path, base_url=server.url)
    with pytest.raises(ValueError, match="base_url must be a URL"):
        fetch("toy", data_home=tmp_path, base_url="127.0.0.1:80")
    with pytest.raises(ValueError, match="force must be True or False"):
        fetch("synth", data_home=tmp_path, force="yes")
    assert server.hits == {} and not (tmp_path / "downloads").exists()


def _fetch_in_child(home, url, queue):
    # a spawned process starts from a fresh import: register the test's set here too
    REGISTRY["toy"] = toy_entry()
    try:
        queue.put(str(fetch("toy", data_home=home, base_url=url)))
    except Exception as exc:  # reported to the parent, which fails the test
        queue.put(f"error: {exc!r}")


def test_two_processes_fetching_at_once_both_get_a_whole_file(tmp_path, toy):
    # the server holds each answer for toy.tr until both processes are downloading it
    toy.modes["toy.tr"] = "wait"
    ctx = multiprocessing.get_context("spawn")  # no fork of a process running a server thread
    queue = ctx.Queue()
    procs = [ctx.Process(target=_fetch_in_child, args=(str(tmp_path), toy.url, queue))
             for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == [str(tmp_path / "toy.npz")] * 2
    assert toy.hits["toy.tr"] == 2                          # both really downloaded it
    assert (tmp_path / "downloads" / "toy.tr").read_bytes() == TOY_TRAIN
    assert leftovers(tmp_path) == [] and not list(tmp_path.glob(".toy-*"))
    assert load_dataset("toy", data_home=tmp_path)[0].shape == (4, 2)


def test_cli_lists_fetches_verifies_and_locates(tmp_path, toy, capsys):
    assert main(["data", "--data-home", str(tmp_path), "path"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path)
    assert main(["data", "--data-home", str(tmp_path), "list"]) == 0
    out = capsys.readouterr().out
    for name in ("raetsch_splice", "synth", "usps", "mnist", "wine", "satellite",
                 "flights2008", "toy"):
        assert f"\n{name}\t" in out
    assert "https://example.invalid/toy.tr" in out and sha256(TOY_TRAIN) in out
    assert main(["data", "--data-home", str(tmp_path), "fetch", "toy",
                 "--base-url", toy.url]) == 0
    assert capsys.readouterr().out.strip() == f"toy\t{tmp_path / 'toy.npz'}"
    main(["data", "--data-home", str(tmp_path), "list"])
    assert "toy\ttoy.tr\t68\tconverted" in capsys.readouterr().out
    assert main(["data", "--data-home", str(tmp_path), "verify"]) == 0
    assert "2 file(s) checked" in capsys.readouterr().out
    (tmp_path / "downloads" / "toy.te").write_bytes(b"changed")
    assert main(["data", "--data-home", str(tmp_path), "verify"]) == 1
    assert "MISMATCH\ttoy.te" in capsys.readouterr().out
    assert main(["data", "--data-home", str(tmp_path), "fetch", "flights2008"]) == 1
    assert "no download route yet" in capsys.readouterr().err


def test_a_grid_fetches_only_the_files_it_lacks(tmp_path, toy, monkeypatch):
    from sparsegp.experiments import grid

    monkeypatch.setitem(grid.DATASETS, "toy", ("toy", None))
    monkeypatch.setenv("SPARSEGP_DATA_URL", toy.url)
    assert grid.fetch_missing(["toy", "toy", "not_a_set"], data_home=tmp_path) == ["toy"]
    assert toy.hits == {"toy.tr": 1, "toy.te": 1}
    assert grid.fetch_missing(["toy"], data_home=tmp_path) == []     # present: no request
    assert toy.hits == {"toy.tr": 1, "toy.te": 1}


def test_experiment_download_offline_names_the_url_and_runs_nothing(tmp_path, dead_url,
                                                                     monkeypatch, capsys):
    monkeypatch.setenv("SPARSEGP_DATA", str(tmp_path))
    monkeypatch.setenv("SPARSEGP_DATA_URL", dead_url)
    out = tmp_path / "out"
    assert main(["experiment", "gfitc_table1", "--download", "--datasets", "synth",
                 "--local", "--no-progress", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{dead_url}/synth.tr" in err and "Manual route" in err
    assert not out.exists()                                 # nothing ran, nothing written


def test_every_registered_file_is_pinned_and_hashed():
    for name, entry in REGISTRY.items():
        assert entry.licence and entry.papers and entry.source, name
        for f in entry.files:
            assert len(f.sha256) == 64 and int(f.sha256, 16) >= 0, name
            if name == "mnist":     # a stable mirror, held to the published SHA-256 sums
                assert not f.checked_here
                continue
            # a commit-pinned GitHub raw URL: owner/repo/<40 hex>/path
            parts = f.url.split("/")
            assert f.url.startswith("https://raw.githubusercontent.com/"), name
            assert len(parts[5]) == 40 and int(parts[5], 16) >= 0, name
    rows = {r["name"]: r for r in cache_status(os.devnull + "_absent")}
    assert set(rows) == set(REGISTRY)


def test_readme_data_table_has_one_row_per_registered_set():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("## Benchmark data"):readme.index("## Benchmarks and figures")]
    rows = [line.split("|")[1].strip().strip("`") for line in section.splitlines()
            if line.startswith("| `")]
    assert sorted(rows) == sorted(REGISTRY)
    assert "Nothing is downloaded" not in readme
