"""Log axes of the plotting helpers carry tick labels that do not run into each other."""
import numpy as np
import pytest

pytest.importorskip("matplotlib")


def _visible_label_boxes(fig, axis):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        label = tick.label1
        if label.get_visible() and label.get_text():
            boxes.append(label.get_window_extent(renderer))
    return boxes


def _overlaps(boxes):
    return [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


@pytest.mark.parametrize("t_range", [(20.0, 400.0), (0.05, 3.0), (1.0, 5000.0)])
def test_time_axis_labels_do_not_overlap(t_range):
    import matplotlib.pyplot as plt
    from sparsegp.plotting import plot_metric_vs_time

    t = np.geomspace(*t_range, 12)
    fig, ax = plt.subplots(figsize=(5, 4))
    plot_metric_vs_time({"a": (t, np.linspace(2, 0.3, 12)), "b": (t * 1.3, np.ones(12))}, ax=ax)
    boxes = _visible_label_boxes(fig, ax.xaxis)
    plt.close(fig)
    assert len(boxes) >= 2, "a log time axis needs at least two labelled ticks"
    assert not _overlaps(boxes)
    assert "(s)" in ax.get_xlabel()


def test_rejection_curve_log_axis_labels_do_not_overlap():
    import matplotlib.pyplot as plt
    from sparsegp.plotting import plot_rejection_curve

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    p1 = np.clip(0.5 + (2 * y - 1) * rng.uniform(0, 0.5, 2000) * 1.6, 0.001, 0.999)
    proba = np.column_stack([1 - p1, p1])
    fig, ax = plt.subplots(figsize=(5, 4))
    plot_rejection_curve(y, proba, ax=ax, classes=np.array([0, 1]), log_scale=True)
    boxes = _visible_label_boxes(fig, ax.yaxis)
    plt.close(fig)
    assert not _overlaps(boxes)
