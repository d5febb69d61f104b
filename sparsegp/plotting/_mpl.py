"""Lazy matplotlib access with a helpful error when it is missing."""


def pyplot():
    """Return ``matplotlib.pyplot``.

    The backend is left to matplotlib: it falls back to Agg on a machine without a display,
    and inside Jupyter ipykernel selects the inline backend, which forcing Agg would break.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is a runtime dependency
        raise ImportError("sparsegp.plotting needs matplotlib: pip install matplotlib") from exc
    return plt


def get_ax(ax=None, figsize=(5.0, 4.0)):
    """``ax`` itself, or a new axes on a new figure."""
    if ax is not None:
        return ax
    plt = pyplot()
    _, ax = plt.subplots(figsize=figsize)
    return ax
