"""Results file: one JSON line per finished cell, appended and flushed as each cell ends.

A driver killed mid-write (SIGKILL) can leave a truncated last line; it is skipped on reading,
and the next append starts on a fresh line. The newest record of a key wins, so a cell that
failed and later succeeded reads as succeeded.
"""
import json
import os
from pathlib import Path

from .._files import write_whole  # noqa: F401  (figure scripts store their results with it)


class ResultsStore:
    """Append-only JSON-lines file of cell records keyed by :attr:`Cell.key`.

    Parameters
    ----------
    path : str or Path
        The ``.jsonl`` file; created (with its folder) on the first append.
    """

    def __init__(self, path):
        self.path = Path(path)

    def records(self):
        """Newest record of every key, in the order keys first appear.

        Returns
        -------
        dict
            key -> record (dict). Lines that are not complete JSON objects are skipped.
        """
        out = {}
        if not self.path.exists():
            return out
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # the truncated tail of a killed run
                if isinstance(rec, dict) and "key" in rec:
                    out[rec["key"]] = rec
        return out

    def finished_keys(self):
        """Keys whose newest record has status "ok" (failed cells are retried on a rerun)."""
        return {k for k, r in self.records().items() if r.get("status") == "ok"}

    def append(self, record):
        """Write one record as one line, flushed and fsynced so a kill loses at most it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=True) + "\n"
        with self.path.open("a+b") as fh:
            # a killed writer may have left a partial line: start ours on a fresh one
            fh.seek(0, os.SEEK_END)
            if fh.tell() > 0:
                fh.seek(-1, os.SEEK_END)
                if fh.read(1) != b"\n":
                    fh.write(b"\n")
            fh.write(line.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
