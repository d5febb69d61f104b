"""Docstring pieces written once and filled in where several public functions share them.

A docstring names a piece with a line ``%(name)s`` of its own; :func:`fill_doc` replaces that
line by the piece, indented as the line is. The pieces are numpydoc parameter entries and
sections that several functions share word for word (the data folder of the ``datasets``
functions, what a converter writes and returns), so that each is worded in one place.
``help()`` and Sphinx read the filled text.
"""
import re
import textwrap

__all__ = ["fill_doc"]

#: A line holding only ``%(name)s`` (and its indentation).
_SLOT = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc(pieces):
    """Decorator filling the ``%(name)s`` lines of a function's docstring from ``pieces``.

    Parameters
    ----------
    pieces : dict
        Name -> text of the piece, written at column 0 (a numpydoc entry's continuation
        lines indented by 4); every non-blank line gets the indentation of the slot.

    Returns
    -------
    decorate : callable
        Takes a function (or class), fills its ``__doc__`` and returns it unchanged
        otherwise. A line naming a piece that ``pieces`` lacks raises ``KeyError`` when the
        module is imported.
    """
    def piece(match):
        indent, name = match.groups()
        return textwrap.indent(pieces[name], indent)

    def decorate(obj):
        if obj.__doc__ is not None:  # None under python -OO, which strips docstrings
            obj.__doc__ = _SLOT.sub(piece, obj.__doc__)
        return obj

    return decorate
