"""Check every registered data file against the bytes of a Git snapshot of its source.

For each file of ``sparsegp.datasets.REGISTRY`` whose URL is a commit-pinned GitHub raw URL,
the script looks for a bare snapshot of that repository under ``--mirror`` (folders named
``<owner>+<repo>/repo`` or ``<owner>+<repo>/repo/.git``, as the search tool's ``fetch``
leaves them), reads the blob ``<commit>:<path>`` with ``git show`` and compares its SHA-256
with the registered one. Files served from elsewhere (MNIST's mirror) are compared with the
copies listed in ``COPIES``: other repositories whose committed bytes should be the same file.
Where a snapshot lists a file but does not hold its bytes (a blob over the snapshot's size
limit), the blob id of the tree is compared with the registered ``git_blob`` instead (a git
blob id is the SHA-1 of the content, so an equal id in another repository is the same file).

    python benchmarks/check_registry_bytes.py                  # one line a file, then a summary
    python benchmarks/check_registry_bytes.py --mirror /work/.mirror
    python benchmarks/check_registry_bytes.py --export /tmp/sources   # the matching files

``--export DIR`` also writes every file whose bytes matched into DIR under its registered
name: a source cache for the shared-equality test (``SPARSEGP_SOURCE_CACHE=DIR pytest
tests/test_data_sources.py``), or, copied into ``<data folder>/downloads/``, a warm download
cache that ``python -m sparsegp data fetch`` converts without the network.

Exit status 1 when any file's bytes (or blob id) differ from the registry's, else 0; a file
with no snapshot here is reported, not failed.
"""
import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

from sparsegp.datasets import REGISTRY

_RAW = "https://raw.githubusercontent.com/"

# fname -> copies (owner/repo, commit, path) in other public repositories, for files whose
# registered URL is not a repository (MNIST: torchvision's mirror) or whose own snapshot lacks
# the bytes (benchmarks.mat: a fork of the same blob). Found with the search tool's path
# look-up (find_files path=...).
COPIES = {
    "t10k-images-idx3-ubyte.gz": [
        ("lijie2020/vae", "6aa58aba724f46dba967fc7058945941d171d433",
         "data/MNIST/MNIST/raw/t10k-images-idx3-ubyte.gz")],
    "t10k-labels-idx1-ubyte.gz": [
        ("lijie2020/vae", "6aa58aba724f46dba967fc7058945941d171d433",
         "data/MNIST/MNIST/raw/t10k-labels-idx1-ubyte.gz")],
    "train-labels-idx1-ubyte.gz": [
        ("lijie2020/vae", "6aa58aba724f46dba967fc7058945941d171d433",
         "data/MNIST/MNIST/raw/train-labels-idx1-ubyte.gz"),
        ("johnsrgrace/mnist", "077204d99c28237d903d0f3c89549d15da5b953d",
         "challenge/train-labels-idx1-ubyte.gz")],
    "train-images-idx3-ubyte.gz": [
        ("lijie2020/vae", "6aa58aba724f46dba967fc7058945941d171d433",
         "data/MNIST/MNIST/raw/train-images-idx3-ubyte.gz")],
    "benchmarks.mat": [
        ("feynmanliang/dist-svgd", "f0526c944f47d071ffaefe996a7ade1747a1e6ae",
         "experiments/data/benchmarks.mat")],
}


def git_dir(mirror, repo):
    """The bare git folder of ``owner/repo``'s snapshot under ``mirror``, or None."""
    base = Path(mirror) / repo.replace("/", "+") / "repo"
    for cand in (base / ".git", base):
        if (cand / "objects").is_dir():
            return cand
    return None


def _git(gdir, *args):
    return subprocess.run(["git", f"--git-dir={gdir}", *args], capture_output=True)


def check_blob(gdir, commit, path, sha256, git_blob="", export=None):
    """(status, detail) of ``commit:path`` in the snapshot ``gdir`` against the registry;
    matching bytes are written to the path ``export`` when given."""
    if _git(gdir, "cat-file", "-e", f"{commit}^{{commit}}").returncode:
        return "no commit", f"commit {commit[:8]} not in the snapshot"
    listed = _git(gdir, "rev-parse", f"{commit}:{path}")
    if listed.returncode:
        return "not listed", f"{path} not in the tree at {commit[:8]}"
    blob = listed.stdout.decode().strip()
    shown = _git(gdir, "cat-file", "blob", blob)
    if shown.returncode == 0:
        got = hashlib.sha256(shown.stdout).hexdigest()
        if got == sha256:
            if export is not None:
                Path(export).write_bytes(shown.stdout)
            return "bytes match", f"{len(shown.stdout):,} bytes, sha256 {got[:12]}"
        return "MISMATCH", f"sha256 {got} != registered {sha256}"
    if git_blob:
        if blob == git_blob:
            return "blob id matches", f"bytes absent from the snapshot; tree blob {blob[:12]}"
        return "MISMATCH", f"tree blob {blob} != registered git_blob {git_blob}"
    return "bytes absent", f"tree blob {blob[:12]} listed, bytes not in the snapshot"


def sources(remote):
    """(owner/repo, commit, path, is_registered_url) to check for one RemoteFile."""
    out = []
    if remote.url and remote.url.startswith(_RAW):
        owner, repo, commit, path = remote.url[len(_RAW):].split("/", 3)
        out.append((f"{owner}/{repo}", commit, path, True))
    out.extend((repo, commit, path, False) for repo, commit, path in COPIES.get(remote.fname, ()))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default="/work/.mirror",
                        help="folder holding the repository snapshots (owner+repo/repo)")
    parser.add_argument("--export", default=None,
                        help="write the files whose bytes match into this folder")
    args = parser.parse_args(argv)
    if args.export:
        Path(args.export).mkdir(parents=True, exist_ok=True)
    files = {}
    for entry in REGISTRY.values():
        for remote in entry.files:
            files.setdefault(remote.fname, remote)
    counts = {}
    failed = False
    print("file\trepository @ commit:path\tresult\tdetail")
    for fname in sorted(files):
        remote = files[fname]
        best = "no snapshot"
        for repo, commit, path, own in sources(remote):
            gdir = git_dir(args.mirror, repo)
            if gdir is None:
                status, detail = "no snapshot", f"no snapshot of {repo} under {args.mirror}"
            else:
                export = Path(args.export) / fname if args.export else None
                status, detail = check_blob(gdir, commit, path, remote.sha256,
                                            remote.git_blob, export)
            where = f"{repo} @ {commit[:8]}:{path}" + ("" if own else " (copy)")
            print(f"{fname}\t{where}\t{status}\t{detail}")
            failed |= status == "MISMATCH"
            if _RANK[status] > _RANK[best]:
                best = status
        if not sources(remote):
            print(f"{fname}\t{remote.url}\tnot a repository\tno copy listed in COPIES")
        counts[best] = counts.get(best, 0) + 1
    print(f"\n{len(files)} registered files; best result per file: "
          + ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: -_RANK[kv[0]])))
    return 1 if failed else 0


# How much a result proves, to pick each file's best line for the summary.
_RANK = {"MISMATCH": 9, "bytes match": 5, "blob id matches": 4, "bytes absent": 3,
         "not listed": 2, "no commit": 1, "no snapshot": 0}

if __name__ == "__main__":
    sys.exit(main())
