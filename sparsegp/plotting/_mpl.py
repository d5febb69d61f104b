"""Lazy matplotlib access with a helpful error when it is missing."""


def pyplot():
    """Return ``matplotlib.pyplot``, selecting a non-interactive backend when headless."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - matplotlib is a runtime dependency
        raise ImportError("sparsegp.plotting needs matplotlib: pip install matplotlib") from exc
    import os
    if not os.environ.get("DISPLAY") and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def get_ax(ax=None, figsize=(5.0, 4.0)):
    """``ax`` itself, or a new axes on a new figure."""
    if ax is not None:
        return ax
    plt = pyplot()
    _, ax = plt.subplots(figsize=figsize)
    return ax
