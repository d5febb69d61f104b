"""Test-suite configuration: BLAS threads, benchmark data location, shared helpers."""
import os

# The tests use small matrices, where BLAS threads cost more in start-up and contention with
# numba's threads than they return; set before numpy loads (a user's own setting wins).
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

_SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"

#: Set to 1 to run as a clean clone does: ../shared/datasets is then not used even when it
#: exists (.ci/run does so once, with SPARSEGP_DATA at an empty folder, so that a test which
#: needs data and does not skip without it fails in CI, not on a user's machine).
NO_SHARED_DATA_ENV_VAR = "SPARSEGP_NO_SHARED_DATA"

# Point the library at ../shared/datasets when it exists and the user has not chosen a folder.
if ("SPARSEGP_DATA" not in os.environ and _SHARED_DATA.is_dir()
        and os.environ.get(NO_SHARED_DATA_ENV_VAR, "") in ("", "0")):
    os.environ["SPARSEGP_DATA"] = str(_SHARED_DATA)


def data_available(name):
    """True when ``<SPARSEGP_DATA>/<name>.npz`` exists."""
    root = os.environ.get("SPARSEGP_DATA")
    return bool(root) and (Path(root) / f"{name}.npz").is_file()


def require_data(name):
    """Skip the calling test, with a visible reason, when a benchmark data set is absent."""
    if not data_available(name):
        pytest.skip(
            f"benchmark data '{name}.npz' not found: set SPARSEGP_DATA to the folder holding "
            f"it (../shared/datasets in the development layout), or fetch it there with "
            f"'python -m sparsegp data fetch {name}' where it is registered"
        )


@pytest.fixture
def rng():
    """A fresh, seeded generator per test (no global seeding)."""
    return np.random.default_rng(20071203)


def readonly(*arrays):
    """Mark arrays read-only so any estimator that writes into user input fails loudly."""
    for a in arrays:
        a.setflags(write=False)
    return arrays if len(arrays) > 1 else arrays[0]


@pytest.fixture
def one_numba_thread():
    """Numba at one thread for the test, as every fit under ``PARALLEL_MIN_ROWS`` rows runs
    (a count the user set is left alone by the thread policy), then back."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


@pytest.fixture
def openblas_at_two_threads():
    """Every loaded BLAS set to two threads for the test, then back to what it was.

    Yields a function returning the current thread counts (one per library). Skips, with the
    reason, where threadpoolctl finds no BLAS it can control.
    """
    from threadpoolctl import threadpool_limits

    from sparsegp import _threads

    if not _threads.blas_thread_counts():
        pytest.skip("threadpoolctl finds no controllable BLAS in this process: the one-thread "
                    "pin is a no-op here")
    with threadpool_limits(limits=2, user_api="blas"):
        yield _threads.blas_thread_counts


@pytest.fixture
def blas_threads_at_calls(monkeypatch, openblas_at_two_threads):
    """``watch(module, name)``: wrap ``module.name`` so that every call records the OpenBLAS
    thread counts in force at that moment; returns the (growing) list of records. Starts from
    two threads per library (:func:`openblas_at_two_threads`)."""
    def watch(module, name):
        seen = []
        original = getattr(module, name)

        def spy(*args, **kwargs):
            seen.append(openblas_at_two_threads())
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
        return seen

    return watch


def assert_pinned_during_optimisation(seen, pinned, counts_after):
    """Every optimiser evaluation (all records but fit's final one) saw one thread when
    ``pinned``, else the two set by the fixture; the two threads are back after ``fit``."""
    optimiser_calls = seen[:-1]
    assert len(optimiser_calls) >= 3
    expected = 1 if pinned else 2
    assert all(set(c) == {expected} for c in optimiser_calls)
    assert set(counts_after) == {2}


#: For tests that run every estimator on small budgets (or at its defaults) for speed: EP, GFITC
#: and the regressor then stop at max_iter, which the training driver reports. That warning is
#: not what those tests check, so only it is set aside (any other warning still fails them).
AT_THE_CAP = pytest.mark.filterwarnings(
    "ignore:.*stopped at max_iter=:sparsegp.exceptions.ConvergenceWarning")
# scikit-learn's checks fit regression targets drawn independently of X; the right fit is
# then a constant, and the regressor says so ("no better than their mean"). The checks pass
# with that warning shown; only this suite's warnings-as-errors filter would fail them.
ON_NOISE_TARGETS = pytest.mark.filterwarnings(
    "ignore:.*no better than their mean:sparsegp.exceptions.ConvergenceWarning")
# and class labels drawn independently of X: the right classifier predicts their frequencies,
# and every classifier says when it ends no better than them (issue 49)
ON_NOISE_LABELS = pytest.mark.filterwarnings(
    "ignore:.*no better than the class frequencies:sparsegp.exceptions.ConvergenceWarning")
# A fit of a few iterations (the checks' budgets) or of such labels on ten rows can predict one
# class for every row while a logistic regression fits those rows better, and says so (issue
# 49); the checks and pipelines are not about that warning
ONE_CLASS = pytest.mark.filterwarnings(
    r"ignore:.*for all \d+ training rows though:sparsegp.exceptions.ConvergenceWarning")
