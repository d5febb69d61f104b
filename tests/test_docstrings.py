"""Docstring pieces written once (sparsegp._docstrings) and filled where they are named."""
import inspect

import pytest

import sparsegp.datasets
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


def test_fill_doc_refuses_an_unknown_piece():
    def f():
        """
        %(missing)s
        """

    with pytest.raises(KeyError, match="missing"):
        fill_doc({"p": "P"})(f)


def test_no_public_data_function_shows_an_unfilled_slot():
    for name in sparsegp.datasets.__all__:
        obj = getattr(sparsegp.datasets, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert "%(" not in (obj.__doc__ or ""), name
