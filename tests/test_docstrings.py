"""Docstring pieces written once (sparsegp._docstrings) and filled where they are named."""
import importlib
import inspect
from pathlib import Path

import pytest

import sparsegp
from sparsegp._docstrings import fill_doc


def test_fill_doc_indents_a_piece_as_its_slot():
    @fill_doc({"p": "p : int\n    The p.\n    Second line."})
    def f():
        """Summary.

        Parameters
        ----------
        %(p)s
        q : str
        """

    assert f.__doc__ == ("Summary.\n\n        Parameters\n        ----------\n        p : int\n"
                         "            The p.\n            Second line.\n        q : str\n        ")


def test_fill_doc_leaves_percent_signs_that_name_no_slot_alone():
    @fill_doc({"p": "P"})
    def f():
        """50% of %(p)s inline, and %d; only a line of its own is a slot."""

    assert f.__doc__ == "50% of %(p)s inline, and %d; only a line of its own is a slot."


def test_fill_doc_passes_a_function_without_docstring():
    # python -OO strips every docstring: the decorated functions must still load
    def f():
        pass

    assert fill_doc({"p": "P"})(f) is f and f.__doc__ is None


def test_fill_doc_refuses_an_unknown_piece():
    def f():
        """
        %(missing)s
        """

    with pytest.raises(KeyError, match="missing"):
        fill_doc({"p": "P"})(f)


def test_no_function_shows_an_unfilled_slot():
    # every module that fills docstrings: no "%(name)s" line is left in what it defines
    package = Path(sparsegp.__file__).parent
    filled = [p for p in package.rglob("*.py") if "\n@fill" in p.read_text(encoding="utf-8")]
    assert len(filled) >= 9
    for path in filled:
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        module = importlib.import_module(name.removesuffix(".__init__"))
        for obj in vars(module).values():
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == name:
                assert "%(" not in (obj.__doc__ or ""), f"{name}.{obj.__name__}"
