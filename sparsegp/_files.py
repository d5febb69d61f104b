"""Files written whole or not at all: what long runs store as they go."""
import os
from pathlib import Path


def write_whole(path, content):
    """Replace ``path`` by ``content`` in one step, so that a run killed while writing
    leaves the previous file (or none), never a truncated one.

    The content is written to a sibling file ``<name>.partial`` and renamed over ``path``
    (:func:`os.replace`, atomic on POSIX and Windows within one folder).

    Parameters
    ----------
    path : str or Path
        The file to write; its folder is created when missing.
    content : str, bytes or callable
        Text (written as UTF-8), bytes, or a function called with the open binary file
        (e.g. ``lambda f: numpy.savez_compressed(f, **arrays)``).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    if not (isinstance(content, (str, bytes)) or callable(content)):
        raise TypeError(f"content must be str, bytes or a callable taking a binary file; "
                        f"got {type(content).__name__}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as fh:
            if isinstance(content, str):
                fh.write(content.encode("utf-8"))
            elif isinstance(content, bytes):
                fh.write(content)
            else:
                content(fh)
    except BaseException:
        # the old file stays as it was; the half-written one goes
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)
    return path
