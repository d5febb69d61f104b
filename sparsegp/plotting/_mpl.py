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


def readable_log_axis(axis):
    """Label a log-scaled x or y ``axis`` in plain numbers, minor ticks unlabelled.

    Call it after the data are drawn: the label steps (1-2-5, 1-3 or decades) follow the
    span of the view.

    matplotlib's default labels every decade as ``10^k`` and, on a range shorter than a decade
    or two, also labels the minor ticks as ``2 x 10^k``, ``3 x 10^k``, ...; on a time axis from
    20 s to 400 s those labels run into each other. Labels at 1, 2 and 5 times a power of ten,
    written as plain numbers, leave room between them and read as seconds directly.
    """
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    # fewer labels per decade as the range widens, so a 5-inch axis holds them all
    subs = (1.0, 2.0, 5.0) if decades <= 1.5 else (1.0, 3.0) if decades <= 2.5 else (1.0,)
    axis.set_major_locator(LogLocator(base=10.0, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_locator(LogLocator(base=10.0, subs=tuple(range(1, 10))))
    axis.set_minor_formatter(NullFormatter())
    return axis
