"""Every notebook executes top to bottom in quick mode (small sizes, SPARSEGP_QUICK=1)."""
import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ holds no .ipynb file"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="notebook tests need the 'test' extra")
    nbclient = pytest.importorskip("nbclient", reason="notebook tests need the 'test' extra")
    # the kernel inherits this process's environment
    monkeypatch.setenv("SPARSEGP_QUICK", "1")
    # let ipykernel choose its inline backend so figures become display_data outputs
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any(o.get("output_type") == "display_data" for o in outputs), "no figure was drawn"
