"""The GFITC benchmark's phase table (benchmarks/bench_gfitc.py, table 0) records and replays
the EP runs of a real fit through the names the estimator and the engine call (no timings)."""
import importlib.util
from pathlib import Path

import pytest

from sparsegp.classification import _gfitc


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gfitc.py"
    spec = importlib.util.spec_from_file_location("bench_gfitc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_phase_table_records_the_fit_and_times_every_phase(bench):
    fit_ep = _gfitc.fit_ep
    (row,) = bench.phases_child([300], M=5, max_iter=3, repeats=1, n_replay=2)
    # the wrappers are gone again
    assert _gfitc.fit_ep is fit_ep and bench.G.fit_ep is fit_ep
    # three CG steps (a fixed schedule): the start and at least one evaluation per step,
    # each recorded, then fit's final EP (not counted)
    assert row["n_cg"] == 3 and row["n_evals"] >= 4
    # a 300-row fit runs on one Numba thread: the serial row passes are the ones timed
    phases = row["phases"]
    for name in ("EP refresh", "EP targets", "EP step+refresh", "evidence", "gradient"):
        assert phases[name] > 0.0, name


def test_phase_table_fails_loudly_when_the_fit_runs_no_recorded_ep(bench, monkeypatch):
    # as when the estimator calls the engine by a name the benchmark does not wrap
    monkeypatch.setattr(_gfitc, "fit_ep", lambda *a, **k: bench.G.fit_ep(*a, **k))
    with pytest.raises(RuntimeError, match="no longer calls the engine's fit_ep"):
        bench.phases_child([300], M=5, max_iter=3, repeats=1, n_replay=2)


def test_phase_timers_fail_loudly_when_a_phase_is_not_seen(bench, monkeypatch):
    records, _ = bench._record_fit(300, 5, 3)
    # as when the engine runs its phases under names the timer does not wrap
    monkeypatch.setattr(bench._PhaseTimer, "wrap",
                        lambda self, owner, name, key, count_nested=True:
                        (owner, name, getattr(owner, name)))
    with pytest.raises(RuntimeError, match="saw no call of"):
        bench._replay(records[2], 1)
