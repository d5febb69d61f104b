"""The one parameter vector (sparsegp._params, issue 48 item 2): packing, chain rule, bounds,
and the bounds of the stepping loop (sparsegp._ascend.ascend)."""
import math

import numpy as np
import pytest

from sparsegp._ascend import Adam, ascend
from sparsegp._params import (BOX_OVERRIDES, DEFAULT_BOX, Block, Packing,
                              bias_variance_blocks, kernel_blocks, log_box, unbounded)
from sparsegp.kernels import ConstantKernel, SquaredExponential, kernel_spec


def _packing():
    return Packing([
        Block("log_variance", 1, log=True, bounds=(-2.0, 3.0)),
        Block("log_lengthscale", 3, log=True, bounds=[(-1.0, 1.0)], shared=True),
        Block("bias", 1),
        Block("log_noise", 1, log=True, free=False, value=math.log(0.3), natural_value=0.3),
        Block("Z", (2, 3)),
    ])


def test_pack_unpack_round_trip():
    rng = np.random.default_rng(0)
    p = _packing()
    assert p.size == 1 + 1 + 1 + 6
    theta = rng.normal(size=p.size)
    values = p.unpack(theta)
    assert values["log_lengthscale"].shape == (3,)
    assert np.all(values["log_lengthscale"] == theta[1])        # shared: one entry for three
    assert values["Z"].shape == (2, 3)
    assert values["log_noise"][0] == math.log(0.3)               # held: its value, no entry
    np.testing.assert_array_equal(p.pack(values), theta)
    nat = p.natural(theta)
    assert nat["log_noise"][0] == 0.3                             # as given, not exp(log)
    np.testing.assert_array_equal(nat["log_variance"], np.exp(theta[:1]))
    np.testing.assert_array_equal(nat["bias"], theta[2:3])


def test_unpack_rejects_a_wrong_length():
    with pytest.raises(ValueError, match="theta must have shape"):
        _packing().unpack(np.zeros(4))


def test_held_block_needs_a_value_and_names_are_unique():
    with pytest.raises(ValueError, match="held but has no value"):
        Block("s", 1, free=False)
    with pytest.raises(ValueError, match="unique"):
        Packing([Block("a", 1), Block("a", 2)])


def test_chain_rule_matches_central_differences():
    """d f / d theta from the natural gradient, against central differences in theta."""
    rng = np.random.default_rng(1)
    p = _packing()
    w = rng.normal(size=3)
    Zw = rng.normal(size=(2, 3))

    def f_natural(v):
        # a smooth function of the natural values, and its derivatives by them
        s2, ls, b, sn = v["log_variance"], v["log_lengthscale"], v["bias"], v["log_noise"]
        Z = v["Z"]
        value = (np.sin(s2[0]) * np.sum(w * np.log1p(ls)) + b[0] ** 2 * sn[0]
                 + np.sum(Zw * np.tanh(Z)))
        grads = {"log_variance": np.array([np.cos(s2[0]) * np.sum(w * np.log1p(ls))]),
                 "log_lengthscale": np.sin(s2[0]) * w / (1.0 + ls),
                 "bias": np.array([2 * b[0] * sn[0]]),
                 "Z": Zw / np.cosh(Z) ** 2}
        return value, grads

    theta = rng.normal(scale=0.5, size=p.size)
    nat = p.natural(theta)
    grad = p.gradient(f_natural(nat)[1], nat)
    # the other order of the shared block's sum agrees to round-off
    np.testing.assert_allclose(p.gradient(f_natural(nat)[1], nat, scale_then_sum=True), grad,
                               rtol=1e-14, atol=1e-15)
    h = 1e-6
    fd = np.empty(p.size)
    for j in range(p.size):
        e = np.zeros(p.size)
        e[j] = h
        fd[j] = (f_natural(p.natural(theta + e))[0] - f_natural(p.natural(theta - e))[0]) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-9)


def test_bounds_clip_and_names():
    p = _packing()
    b = p.bounds()
    assert b.shape == (p.size, 2)
    np.testing.assert_array_equal(b[0], [-2.0, 3.0])
    np.testing.assert_array_equal(b[1], [-1.0, 1.0])
    assert np.all(np.isinf(b[2:])) and np.all(b[2:, 0] < 0) and np.all(b[2:, 1] > 0)
    theta = np.array([5.0, -4.0, 7.0, 1, 2, 3, 4, 5, 6])
    clipped = p.clip(theta)
    np.testing.assert_array_equal(clipped, [3.0, -1.0, 7.0, 1, 2, 3, 4, 5, 6])
    assert p.names() == ["log_variance", "log_lengthscale", "bias"] + [f"Z[{j}]"
                                                                      for j in range(6)]


@pytest.mark.parametrize("ard", [False, True])
@pytest.mark.parametrize("fixed", [None, "variance", "lengthscale"])
def test_kernel_blocks_come_from_the_kernel(ard, fixed):
    """Bounds, fixed flags and sharing of a kernel's blocks are the kernel's own."""
    D = 3
    vb = "fixed" if fixed == "variance" else (1e-2, 1e2)
    lb = "fixed" if fixed == "lengthscale" else (1e-1, 1e1)
    ls = np.array([0.5, 1.0, 2.0]) if ard else 0.7
    k = SquaredExponential(2.0, ls, vb, lb)
    spec = kernel_spec(k, D, "test")
    p = Packing(kernel_blocks(spec, D))
    n = (fixed != "variance") + (0 if fixed == "lengthscale" else (D if ard else 1))
    assert p.size == n
    assert p.size == k.theta.size                   # as many entries as the kernel's theta
    np.testing.assert_allclose(p.bounds(), k.bounds, rtol=0, atol=0)
    nat = p.natural(p.pack(p.unpack(k.theta)))
    assert nat["log_variance"][0] == pytest.approx(2.0, rel=1e-15)
    np.testing.assert_allclose(nat["log_lengthscale"], np.broadcast_to(ls, D), rtol=1e-15)
    if fixed == "variance":
        assert nat["log_variance"][0] == 2.0        # held: exactly the kernel's value


def test_free_mask_covers_the_full_vector():
    """The full vector keeps a held block's entries (one for a shared block); the mask is
    True exactly where theta has an entry, in order."""
    p = _packing()
    mask = p.free_mask()
    assert mask.dtype == bool
    np.testing.assert_array_equal(mask, [True, True, True, False] + [True] * 6)
    assert mask.sum() == p.size
    spec = kernel_spec(SquaredExponential(2.0, [0.5, 1.0, 2.0], "fixed", (1e-1, 1e1))
                       + ConstantKernel(0.5, "fixed"), 3, "test", bias=True)
    q = Packing(kernel_blocks(spec, 3) + bias_variance_blocks(spec) + [Block("bias", 1)])
    np.testing.assert_array_equal(q.free_mask(), [False, True, True, True, False, True])
    assert Packing([]).free_mask().shape == (0,)


def test_kernel_blocks_hold_given_values_and_take_a_box():
    """``held``: fixed blocks hold the given values as logs (back through exp); ``bounds``
    replaces the kernel's box; free blocks and their sharing are unchanged."""
    D = 3
    spec = kernel_spec(SquaredExponential(2.0, 0.7, "fixed", "fixed")
                       + ConstantKernel(0.0), D, "test", bias=True)
    ls = np.array([0.3, 0.3, 0.3])
    p = Packing(kernel_blocks(spec, D, held=(1.7, ls)) + bias_variance_blocks(spec, held=0.0))
    assert p.size == 0                                   # v_b = 0 is never free
    nat = p.natural(np.empty(0))
    assert nat["log_variance"][0] == math.exp(math.log(1.7))
    np.testing.assert_array_equal(nat["log_lengthscale"], np.exp(np.log(ls)))
    assert nat["log_bias_variance"][0] == 0.0
    free = kernel_spec(SquaredExponential(2.0, 0.7), D, "test")
    box = (np.log([0.1, 10.0]), np.array([[-1.0, 2.0]]))
    q = Packing(kernel_blocks(free, D, held=(1.7, ls), bounds=box))
    np.testing.assert_array_equal(q.bounds(), [np.log([0.1, 10.0]), [-1.0, 2.0]])
    assert q["log_lengthscale"].shared
    np.testing.assert_array_equal(Packing(kernel_blocks(free, D)).bounds(),
                                  np.log([[1e-5, 1e5], [1e-5, 1e5]]))


def test_boxes_are_named_once():
    assert DEFAULT_BOX == (1e-5, 1e5)
    assert log_box("default") == (math.log(1e-5), math.log(1e5))
    assert log_box("multiclass_lbfgs") == (-10.0, 10.0)
    for name, (lo, hi) in BOX_OVERRIDES.items():
        assert 0 < lo < 1 < hi
        assert log_box(name)[0] < 0 < log_box(name)[1]


def test_ascend_clips_every_step_into_its_bounds():
    """A quadratic peaked outside the box: every point ascend visits stays inside it, the
    result sits on the bound, and without bounds the same loop leaves the box."""
    peak = np.array([3.0, -3.0, 0.5])
    bounds = np.array([[-1.0, 1.0], [-1.0, 1.0], [-np.inf, np.inf]])
    seen = []

    def evaluate(theta, _batch):
        seen.append(theta.copy())
        return -float(np.sum((theta - peak) ** 2)), -2.0 * (theta - peak), None

    res = ascend(evaluate, np.zeros(3), Adam(3, 0.1), 200, bounds=bounds)
    visited = np.array(seen)
    assert np.all(visited[:, :2] >= -1.0) and np.all(visited[:, :2] <= 1.0)
    np.testing.assert_array_equal(res.theta[:2], [1.0, -1.0])
    assert abs(res.theta[2] - 0.5) < 1e-2
    free = ascend(evaluate, np.zeros(3), Adam(3, 0.1), 200)
    assert free.theta[0] > 1.5 and free.theta[1] < -1.5


def test_ascend_without_finite_bounds_steps_as_before():
    """Infinite bounds leave every step bit for bit as the unbounded loop takes it."""
    peak = np.array([0.3, -0.2])

    def evaluate(theta, _batch):
        return -float(np.sum((theta - peak) ** 2)), -2.0 * (theta - peak), None

    a = ascend(evaluate, np.zeros(2), Adam(2, 0.05), 30)
    b = ascend(evaluate, np.zeros(2), Adam(2, 0.05), 30, bounds=unbounded(2))
    np.testing.assert_array_equal(a.theta, b.theta)
    assert a.history == b.history


def test_ascend_bounds_need_an_array():
    with pytest.raises(ValueError, match="bounds need theta0 as an ndarray"):
        ascend(lambda t, b: (0.0, 0.0, None), object(), Adam(1), 1,
               bounds=unbounded(1))
