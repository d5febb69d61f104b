"""The peer benchmark's driver pieces: shared data and start, skip reasons (no timings)."""
import os
import sys

import numpy as np
import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCH)
bench_peers = pytest.importorskip("bench_peers")


def test_t1_data_is_seeded_and_inducing_start_is_a_training_subset():
    cfg = bench_peers.QUICK["T1"]
    a, b = bench_peers.make_t1(300, cfg, seed=3), bench_peers.make_t1(300, cfg, seed=3)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])
    Z, X = a["Z"], a["Xtr"]
    assert Z.shape == (cfg["M"], 2)
    # every starting inducing input is a distinct training row
    rows = {tuple(x) for x in X}
    assert all(tuple(z) in rows for z in Z) and len({tuple(z) for z in Z}) == cfg["M"]


def test_t2_targets_have_unit_scale_so_normalize_y_false_fits_the_same_model():
    cfg = bench_peers.QUICK["T2"]
    d = bench_peers.make_t2(cfg, seed=0)
    assert d["Xtr"].shape == (cfg["N"], cfg["D"]) and d["Xte"].shape[0] == cfg["n_test"]
    assert abs(d["ytr"].mean()) < 0.1 and 0.9 < d["ytr"].var() < 1.3


def test_missing_interpreter_or_package_gives_a_reason(tmp_path, monkeypatch):
    missing = str(tmp_path / "no-python")
    assert "not found" in bench_peers.peer_problem(missing, "gpflow")
    monkeypatch.setitem(bench_peers.PEER_PACKAGES, "gpflow", ("no_such_module_xyz",))
    assert "lacks no_such_module_xyz" in bench_peers.peer_problem(sys.executable, "gpflow")
    assert bench_peers.peer_problem(sys.executable, "sparsegp") is None


def test_thread_settings_reach_the_child_environment(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    one = bench_peers._child_env("gpflow", "one")
    assert all(one[k] == "1" for k in bench_peers.THREAD_VARS)
    default = bench_peers._child_env("gpflow", "default")
    assert not any(k in default for k in bench_peers.THREAD_VARS)
    # sparsegp's child imports this checkout first
    assert bench_peers._child_env("sparsegp", "default")["PYTHONPATH"].startswith(
        bench_peers.ROOT)


def test_t2_time_to_objective_takes_the_first_evaluation_at_or_above_the_target():
    trace = [(0.5, -100.0), (1.0, -40.0), (1.5, -60.0), (2.0, -30.0)]
    assert bench_peers.time_to_objective(trace, -50.0) == 1.0
    assert bench_peers.time_to_objective(trace, -30.0) == 2.0
    assert bench_peers.time_to_objective(trace, -29.0) is None
    # a final recomputed after the search may differ from its traced value in the last digits
    assert bench_peers.time_to_objective(trace, -30.0 + 1e-12) == 2.0


def test_t2_equal_objective_compares_at_the_worse_final():
    ours = dict(objective=-40.0, trace=[(1.0, -90.0), (2.0, -50.0), (3.0, -40.0)])
    peer = dict(objective=-20.0, trace=[(2.0, -80.0), (6.0, -40.0), (9.0, -20.0)])
    e = bench_peers.t2_equal_objective(ours, peer)
    assert e["target"] == -40.0
    assert (e["sparsegp_seconds"], e["peer_seconds"], e["ratio"]) == (3.0, 6.0, 2.0)
    # each row learns when it reached the other's final: the peer did, sparsegp did not
    assert ours["time_to_reach"] is None and peer["time_to_reach"] == 6.0


def test_t2_accuracy_trace_scores_every_traced_point_of_a_regressor_search():
    # the trace rebuilds the model at each evaluated point from the estimator's private
    # unpacking of its parameter vector; it broke once that unpacking gained a value
    import sparsegp
    from sparsegp.kernels import SquaredExponential
    cfg = dict(bench_peers.QUICK["T2"], N=400, n_test=100)
    d = bench_peers.make_t2(cfg, seed=0)
    D = d["Xtr"].shape[1]
    est = sparsegp.SparseGPRegressor("vfe", inducing_points=d["Z"],
                                     kernel=SquaredExponential(1.0, np.ones(D)),
                                     noise_variance=1.0, normalize_y=False, max_iter=5, tol=None,
                                     random_state=0)
    points = []
    with bench_peers._traced_sparsegp_search(points):
        est.fit(d["Xtr"], d["ytr"])
    trace = bench_peers._sparsegp_accuracy_trace(est, "vfe", d, points, points[0][0])
    assert len(trace) == len(points) > 1
    nlp, rmse = np.array([t[1] for t in trace]), np.array([t[2] for t in trace])
    assert np.all(np.isfinite(nlp)) and np.all(rmse > 0)
