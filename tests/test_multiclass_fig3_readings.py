"""The reading of seed 002's Figure 3 (figures/readings/inducing_placement.py)."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def reading(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "figures"))   # its siblings, the figure scripts
    spec = importlib.util.spec_from_file_location(
        "inducing_placement", ROOT / "figures" / "readings" / "inducing_placement.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    for name in ("multiclass_fig2_ep_sep", "multiclass_fig3_inducing"):
        sys.modules.pop(name, None)


def test_distinct_share_merges_close_points_of_one_latent_function_only(reading):
    Z = np.array([[[0.0, 0.0], [0.01, 0.0], [0.02, 0.0], [0.5, 0.5]],   # a chain of three
                  [[0.0, 0.0], [0.3, 0.0], [0.6, 0.0], [0.9, 0.0]]])    # all apart
    # class 0 keeps 2 of 4 (the chain merges at tol 0.015), class 1 all 4: 6 of 8
    assert reading.distinct_share(Z, 0.015) == pytest.approx(6 / 8)
    assert reading.distinct_share(Z, 0.005) == pytest.approx(1.0)


def test_boundary_distance_to_a_vertical_boundary(reading):
    X = np.array([[-1.0, -1.0], [1.0, 1.0]])           # grid over [-1.1, 1.1]^2
    labels = np.zeros((101, 101), dtype=int)
    labels[:, 60:] = 1                                  # boundary between columns 59 and 60
    xs = np.linspace(-1.1, 1.1, 101)
    edge = 0.5 * (xs[59] + xs[60])
    # on grid rows, so the nearest boundary midpoint is level with the point
    points = np.array([[0.0, xs[63]], [0.9, xs[27]], [edge, xs[50]]])
    assert np.allclose(reading.boundary_distance(labels, X, points), np.abs(points[:, 0] - edge))
    assert np.all(np.isinf(reading.boundary_distance(np.zeros((5, 5), int), X, points)))


def test_committed_panels_read_against_the_generator(reading):
    rows = reading.main([])
    methods = {"GFITC", "EP", "SEP", "VI"}
    assert {(m, M) for m, M, *_ in rows} == {(m, 2 ** k) for m in methods for k in range(9)}
    for method, M, agreement, distinct, ratio in rows:
        assert 0.0 < distinct <= 1.0
        # the generator's regions on the figure's grid: every panel from M = 16 on finds
        # most of them (a transposed or flipped grid would agree on about half)
        if M >= 16:
            assert agreement > 0.9, (method, M, agreement)
        if M == 1:                                      # one class everywhere: no boundary
            assert np.isnan(ratio)
