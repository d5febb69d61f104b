"""A quick slice of the fuzz suite (benchmarks/fuzz.py, issue 49): every public estimator at
its defaults on a few random problems of at most ``MAX_ROWS`` rows. A fit may refuse with a
``ValueError`` or warn; it may not raise anything else, return non-finite values or invalid
probabilities, or predict one class everywhere without a warning when logistic regression
finds signal. Reproduce a failure with ``python benchmarks/fuzz.py --estimators NAME
--seed SEED --problem INDEX`` (the larger runs draw up to 300 rows)."""
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sparsegp

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCH)
# a plain import: the script ships with the repository, so failing to import it is a failure
import fuzz  # noqa: E402

#: The slice's problems are smaller than the full run's, to keep it within about a minute
MAX_ROWS = 60
#: The fuzz seed of the slice: hypothesis draws the problem index
SEED = 49


def test_every_public_estimator_is_fuzzed():
    public = {name for name in sparsegp.__all__ if isinstance(getattr(sparsegp, name), type)}
    fuzzed = {name.split("(")[0] for name in fuzz.ESTIMATORS}
    assert public == fuzzed


@pytest.mark.parametrize("name", fuzz.ESTIMATORS)
@settings(max_examples=3, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 10**6))
def test_default_fit_fails_only_loudly(name, index):
    outcome = fuzz.fit_one(name, SEED, index, max_rows=MAX_ROWS)
    failed = sorted(outcome["flags"] & set(fuzz.FAILURES))
    assert not failed, (
        f"{name} on fuzz seed {SEED} problem {index} (at most {MAX_ROWS} rows; N "
        f"{outcome['N']}, D {outcome['D']}): {', '.join(failed)}: {outcome['message']}")


def test_a_silent_flat_classifier_is_counted(monkeypatch):
    # a classifier predicting the majority class everywhere without a warning, on a problem
    # where logistic regression finds signal: the count the fuzz suite rests on must see it
    from sklearn.dummy import DummyClassifier

    class Flat(DummyClassifier):
        def __init__(self, random_state=None):
            super().__init__(strategy="prior")
            self.random_state = random_state

    index = next(i for i in range(100)
                 if fuzz.baseline_signal(*fuzz.problem(SEED, i, "binary", MAX_ROWS)[:3],
                                         "binary") >= fuzz.SIGNAL_MARGIN)
    monkeypatch.setattr(fuzz, "make_estimator", lambda name, random_state: Flat())
    outcome = fuzz.fit_one("GFITCClassifier", SEED, index, max_rows=MAX_ROWS)
    assert outcome["flags"] == {"flat_silent"}


def test_targets_constant_to_round_off_hold_no_signal():
    # fuzz seed 0, problem 2023: regression targets equal but for their last bit, which a
    # linear fit reproduces (R² 1.0); a regressor that predicts them as constant is right
    X, y, N = fuzz.problem(0, 2023, "regression", 300)
    assert 0 < np.ptp(y[:N]) <= 4 * np.spacing(np.abs(y[:N]).max())
    assert fuzz.baseline_signal(X, y, N, "regression") == 0.0
    # the same rows with targets that vary in earnest: signal again
    rng = np.random.default_rng(0)
    y_signal = X[:, np.argmax(np.std(X, axis=0))] * 1e-6 + y + 1e-9 * rng.standard_normal(y.size)
    assert fuzz.baseline_signal(X, y_signal, N, "regression") >= fuzz.SIGNAL_MARGIN


def test_a_fit_records_its_cpu_time_and_the_table_sums_it():
    # CPU seconds are what a one-thread fit takes alone, the quiet-machine time the issue
    # asks for; results written before they were recorded count as fits but not as timed
    outcome = fuzz.fit_one("GFITCClassifier", SEED, 0, max_rows=MAX_ROWS)
    assert 0.0 < outcome["cpu_seconds"]
    old = dict(outcome, seconds=2.0)
    del old["cpu_seconds"]
    new = dict(outcome, seconds=5.0, cpu_seconds=1.25)
    header, row = fuzz.tabulate([old, new, dict(new, name="IVMClassifier")],
                                ["GFITCClassifier"])
    assert header.split()[-4:] == ["s", "cpu", "s", "timed"]
    assert row.split()[1] == "2" and row.split()[-4:] == ["7.0", "5.0", "1.2", "1"]


def test_results_file_resumes_a_stopped_run(tmp_path, monkeypatch, capsys):
    # a run writes each outcome as it arrives; the next run with more fits runs only the
    # missing ones and tabulates all of them (a killed run's cut-off line is ignored)
    asked = []

    def fake_run_tasks(tasks, workers, time_limit):
        for name, seed, index in tasks:
            asked.append((name, index))
            yield dict(name=name, index=index, flags={"ok"}, N=10, D=2, seconds=0.5,
                       message="")

    monkeypatch.setattr(fuzz, "run_tasks", fake_run_tasks)
    environ = dict(os.environ)
    results = tmp_path / "fuzz.jsonl"
    name = "GFITCClassifier"
    assert fuzz.main(["--fits", "2", "--estimators", name, "--results", str(results)]) == 0
    assert asked == [(name, 0), (name, 1)]
    with open(results, "a") as f:
        f.write('{"name": "GFITCClassifier", "ind')          # cut off mid-line
    asked.clear()
    capsys.readouterr()
    assert fuzz.main(["--fits", "3", "--estimators", name, "--results", str(results)]) == 0
    assert asked == [(name, 2)]
    # the caller's thread settings are untouched: numba refuses to compile in a process whose
    # NUMBA_NUM_THREADS changes once its threads run (the suite after this test)
    assert dict(os.environ) == environ
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith(name))
    assert row.split()[1:3] == ["3", "3"]                # fits, ok
    # another seed shares nothing with this one
    asked.clear()
    fuzz.main(["--fits", "1", "--seed", "1", "--estimators", name, "--results", str(results)])
    assert asked == [(name, 0)]


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/stat"),
                    reason="the CPU-time hang clock reads /proc/PID/stat; without /proc the "
                           "harness falls back to wall time, which this test does not cover")
def test_hang_clock_counts_cpu_time_not_a_stopped_worker():
    import time
    from types import SimpleNamespace

    w = fuzz._Worker.__new__(fuzz._Worker)
    w.process = SimpleNamespace(pid=os.getpid())        # this process stands in for a worker
    w.started, w.cpu_started = time.perf_counter(), w.cpu_seconds()
    w.awake, w.polled = 0.0, w.started
    time.sleep(0.5)                                      # wall time passes, no CPU time
    assert not w.over(0.3)
    end = time.process_time() + 0.6
    while time.process_time() < end:                     # CPU time passes
        pass
    assert w.over(0.3)
    # blocked far too long while the harness kept polling
    w.awake = fuzz.HANG_WALL_FACTOR * 100.0
    w.cpu_started = w.cpu_seconds()
    assert w.over(100.0)


def test_a_stopped_harness_does_not_count_its_own_pause_as_a_hang():
    # the whole run stopped by SIGSTOP for half an hour (another job's timing, CI): on resuming,
    # the gap since the last poll counts at most MAX_POLL_GAP toward the fit's wall time
    import time
    from types import SimpleNamespace

    w = fuzz._Worker.__new__(fuzz._Worker)
    w.process = SimpleNamespace(pid=os.getpid())
    w.started = time.perf_counter() - 1800.0
    w.cpu_started = w.cpu_seconds()
    w.awake, w.polled = 1.0, w.started + 1.0              # polled for a second, then stopped
    assert not w.over(60.0)
    assert w.wall_seconds() <= 1.0 + 2 * fuzz.MAX_POLL_GAP
