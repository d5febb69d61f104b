"""Grid cells: what one fit of one method on one split is, and checking a grid before it runs.

A :class:`Cell` is fully determined by its key (data set, split, method, parameters, size,
seed): :func:`run_cell` derives every random choice from those fields, so the same cell gives
the same numbers on any worker, in any order.
"""
import json
import time
import traceback
import warnings
from dataclasses import dataclass, field
from inspect import signature
from pathlib import Path

import numpy as np

from ..exceptions import ConvergenceWarning

# Data sets a grid may name: grid name -> (file in SPARSEGP_DATA, positive class or None).
# A positive class turns a multi-class file into a one-vs-rest binary problem (+1 / -1).
DATASETS = {
    "synth": ("synth", None), "crabs": ("crabs", None),
    "banana": ("raetsch_banana", None), "breast_cancer": ("raetsch_breast_cancer", None),
    "german": ("raetsch_german", None), "heart": ("raetsch_heart", None),
    "image": ("raetsch_image", None), "ringnorm": ("raetsch_ringnorm", None),
    "titanic": ("raetsch_titanic", None), "twonorm": ("raetsch_twonorm", None),
    "waveform": ("raetsch_waveform", None), "usps_4_vs_rest": ("usps", 4),
    "glass": ("glass", None), "new_thyroid": ("new_thyroid", None),
    "satellite": ("satellite", None), "svmguide2": ("svmguide2", None),
    "vehicle": ("vehicle", None), "vowel6": ("vowel6", None), "waveform3": ("waveform3", None),
    "wine": ("wine", None),
    # seed 003 §4: MNIST digit c against the rest, images box-downsampled to 13 x 13
    **{f"mnist_{c}_vs_rest": ("mnist", c) for c in range(10)},
}

# crabs ships without splits; the paper's 80:120 realisations are drawn from the split number.
_CRABS_TRAIN = 80

# Method name -> (estimator, how `size` is used). The estimator is a public sparsegp class name,
# or the dotted path of a scikit-learn classifier for a non-GP baseline (see baselines.py).
#   "n_inducing"/"n_active": size is that count; "fraction": size is M / N_train, and the
#   runner draws M inducing inputs per class and the shared initial length-scale (seed 002 §5.3).
METHODS = {
    "gpc": ("EPClassifier", None),
    "ivm": ("IVMClassifier", "n_active"),
    "spgpc": ("GFITCClassifier", "n_inducing"),
    "ep": ("MultiClassEPClassifier", "fraction"),
    "sep": ("MultiClassEPClassifier", "fraction"),
    "gfitc": ("MultiClassGFITCClassifier", "fraction"),
    "vi": ("MultiClassSVGPClassifier", "fraction"),
    "svm": ("sparsegp.experiments.baselines.SVMBaseline", None),
}

# Methods scored with their own predict() rather than the argmax of predict_proba: the SVM's
# label is the sign of its margin, and Platt's sigmoid (fitted afterwards, for the NLP only)
# can put the probability-1/2 point off the margin's zero.
_LABEL_FROM_PREDICT = {"svm"}

# Constructor arguments the runner sets itself from the cell, so a grid may not give them.
_RUNNER_SET = {"random_state", "n_inducing", "n_active", "inducing_points", "method"}

# Cell parameters the runner consumes itself (not constructor arguments): ``n_train`` keeps
# the first n training rows of the split (quick runs of the large tables; keyed apart);
# ``inputs`` is how the runner scales the inputs (:data:`INPUTS`).
_RUNNER_PARAMS = ("n_train", "inputs")

#: A cell's ``inputs`` -> how :func:`_load_split` scales train and test inputs (training
#: statistics only). "standardised", the default when a cell gives none: each feature to mean
#: 0 and standard deviation 1. "common": centred and divided by one common scale, the root
#: mean square of the features' standard deviations (the scale the library gives a user's
#: isotropic kernel, :class:`sparsegp._scaling.InputScaling`), so that an isotropic kernel
#: in the runner's units is isotropic in the file's units: a paper's kernel on data whose
#: features share one unit.
INPUTS = ("standardised", "common")

# Fitted attributes recorded as "hyper-parameters" when an estimator has them.
_FITTED = ("variance_", "lengthscale_", "noise_", "bias_", "theta_", "log_evidence_", "n_iter_",
           "C_", "gamma_", "cv_accuracy_")


@dataclass(frozen=True)
class Cell:
    """One fit: ``method`` with ``params`` at ``size`` on split ``split`` of ``dataset``.

    Parameters
    ----------
    dataset : str
        A key of :data:`DATASETS`.
    split : int or "official"
        Row of the file's resampled splits, or its one official split.
    method : str
        A key of :data:`METHODS`.
    params : dict
        Further constructor arguments of the method's estimator (JSON values only).
    size : int, float or None
        Active-set size / number of pseudo-inputs, or for multi-class methods the fraction of
        the training size used as M per class. None for methods without one (``gpc``).
    seed : int
        Seeds the estimator and every random choice the runner makes for this cell.
    """

    dataset: str
    split: object
    method: str
    params: dict = field(default_factory=dict)
    size: object = None
    seed: int = 0

    @property
    def key(self):
        """Canonical JSON text of every field; equal cells have equal keys."""
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    def as_dict(self):
        return {"dataset": self.dataset, "split": self.split, "method": self.method,
                "params": dict(self.params), "size": self.size, "seed": int(self.seed)}

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Cell) and self.key == other.key


def _estimator_class(method):
    from importlib import import_module

    name = METHODS[method][0]
    module, _, attr = name.rpartition(".")
    return getattr(import_module(module or "sparsegp"), attr)


def _allowed_params(method):
    names = set(signature(_estimator_class(method).__init__).parameters) - {"self"}
    return sorted(names - _RUNNER_SET)


#: A cell's ``lengthscale`` start that means sqrt(n_features): on the standardised inputs the
#: runner fits (:func:`_load_split`) the start of ``IVMClassifier(kernel=None)``
#: (:func:`sparsegp._scaling.data_lengthscale`), for cells that give the kernel another part.
SQRT_D = "sqrt(D)"


#: Constructor defaults that changed after committed cells ran, per method: the values those
#: cells ran with, so that they refit as they were (GFITC's inexact EP inside the search
#: became the default with the stopping rule, issue 45; multi-class GFITC's, issue 49).
DEFAULTS_OF_THE_DAY = {"spgpc": {"ep_search_rtol": 0.0}, "gfitc": {"ep_search_rtol": 0.0}}


def constructor_arguments(method, params, n_features):
    """The estimator's keyword arguments for a cell's ``params``.

    A cell's parameters are JSON and part of its key, so the cells of committed results
    (``figures/*.jsonl``) keep the constructor names of the day they ran: ``optimize`` (now
    ``optimizer``; the IVM's "evidence" and "validation" now "lbfgs" and "grid"), ``noise``
    (now the multi-class ``latent_noise_variance``), and the kernel's start as scalars
    ``variance``, ``lengthscale``, ``ard`` and the IVM's ``bias_variance`` (now one
    ``kernel``, searched without bounds as those names were; ``lengthscale`` may be
    :data:`SQRT_D`; ``bias_variance`` is held fixed unless ``learn_bias_variance`` is true,
    then searched without bounds too). A cell that gives ``max_iter`` ran that many steps,
    the paper's schedule, before estimators had a stopping rule: it keeps that schedule
    (``tol=None``) unless it gives ``tol`` too; and a cell keeps the defaults of the day it
    ran where they have changed since (:data:`DEFAULTS_OF_THE_DAY`). Anything else passes
    as given.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    params : dict
    n_features : int
        The multi-class kernels and ``ard`` have one length-scale per feature.

    Returns
    -------
    dict
    """
    from sparsegp.classification._ivm_search import OPTIMIZER_RENAMED as IVM_OPTIMIZER_RENAMED
    from sparsegp.kernels import UNBOUNDED, ConstantKernel, SquaredExponential

    kw = {**DEFAULTS_OF_THE_DAY.get(method, {}), **params}
    if "max_iter" in kw and "tol" not in kw and "tol" in _allowed_params(method):
        kw["tol"] = None
    if "optimize" in kw:
        mode = kw.pop("optimize")
        if mode is False or mode is True:
            if not mode:
                kw["optimizer"] = None
            elif method == "ivm":
                kw["optimizer"] = "lbfgs"
        else:
            # the IVM's named modes, spelt in the one vocabulary of ``optimizer``: committed
            # cells keep "evidence" and "validation" in their keys
            kw["optimizer"] = IVM_OPTIMIZER_RENAMED.get(mode, mode)
    if "noise" in kw:
        kw["latent_noise_variance"] = kw.pop("noise")
    start = {k: kw.pop(k) for k in ("variance", "lengthscale", "ard", "bias_variance",
                                    "learn_bias_variance") if k in kw}
    if start:
        if start.get("lengthscale") is None:
            raise ValueError(f"a grid cell that sets the kernel's start needs its lengthscale; "
                             f"got {start}")
        if start["lengthscale"] == SQRT_D:
            # the IVM's data-scaled start on the runner's standardised inputs
            start["lengthscale"] = float(np.sqrt(n_features))
        ls = np.asarray(start["lengthscale"], dtype=np.float64)
        if METHODS[method][1] == "fraction" or start.get("ard"):
            ls = np.broadcast_to(ls, (n_features,)).copy()
        kernel = SquaredExponential(float(start.get("variance", 1.0)), ls if ls.ndim else
                                    float(ls), UNBOUNDED, UNBOUNDED)
        if start.get("bias_variance"):
            kernel = kernel + ConstantKernel(
                float(start["bias_variance"]),
                UNBOUNDED if start.get("learn_bias_variance") else "fixed")
        kw["kernel"] = kernel
    return kw


def validate_cells(cells, data_home=None):
    """Raise before any cell runs if a grid names something that does not exist.

    Parameters
    ----------
    cells : sequence of Cell
    data_home : str or Path, optional
        Folder of the data files; default ``$SPARSEGP_DATA`` (then pooch's cache folder,
        :func:`sparsegp.datasets.get_data_home`).

    Raises
    ------
    ValueError
        Unknown data set, method or parameter (the message lists the valid choices), a bad
        size, or a missing data file (the message names the path and ``SPARSEGP_DATA``).
    """
    from sparsegp.datasets import DATA_ENV_VAR, get_data_home

    root = Path(get_data_home(data_home))
    checked = set()
    for cell in cells:
        if cell.dataset not in DATASETS:
            raise ValueError(f"unknown data set {cell.dataset!r} in a grid cell; valid: "
                             f"{', '.join(sorted(DATASETS))}")
        if cell.method not in METHODS:
            raise ValueError(f"unknown method {cell.method!r} in a grid cell; valid: "
                             f"{', '.join(sorted(METHODS))}")
        inputs = cell.params.get("inputs", INPUTS[0])
        if inputs not in INPUTS:
            raise ValueError(f"inputs must be one of {', '.join(map(repr, INPUTS))}; got "
                             f"{inputs!r}")
        n_train = cell.params.get("n_train")
        if n_train is not None and not (isinstance(n_train, int) and n_train >= 2):
            raise ValueError(f"n_train must be an integer >= 2 (the first rows of the training "
                             f"split); got {n_train!r}")
        bad = sorted(set(constructor_arguments(cell.method, _estimator_params(cell), 1))
                     - set(_allowed_params(cell.method)))
        if bad:
            raise ValueError(f"unknown parameter(s) {bad} for method {cell.method!r}; valid: "
                             f"{', '.join(_allowed_params(cell.method))}")
        use = METHODS[cell.method][1]
        if use is None and cell.size is not None:
            raise ValueError(f"method {cell.method!r} takes no size; got {cell.size!r}")
        if use == "fraction" and not (isinstance(cell.size, float) and 0 < cell.size <= 1):
            raise ValueError(f"method {cell.method!r} needs size = fraction of N in (0, 1]; "
                             f"got {cell.size!r}")
        if use in ("n_inducing", "n_active") and not (
                isinstance(cell.size, int) and cell.size >= 1):
            raise ValueError(f"method {cell.method!r} needs an integer size >= 1 ({use}); "
                             f"got {cell.size!r}")
        fname = DATASETS[cell.dataset][0]
        if fname not in checked:
            path = root / f"{fname}.npz"
            if not path.is_file():
                raise ValueError(f"data file {path} for data set {cell.dataset!r} not found; "
                                 f"set {DATA_ENV_VAR} to the folder holding {fname}.npz, or "
                                 f"download it there with 'python -m sparsegp data fetch "
                                 f"{fname}'")
            checked.add(fname)


def fetch_missing(datasets, data_home=None):
    """Download and convert the files that grid data sets need and the data folder lacks.

    Parameters
    ----------
    datasets : iterable of str
        Grid data set names (keys of :data:`DATASETS`); unknown names are left to
        :func:`validate_cells` to report.
    data_home : str or Path, optional
        The data folder (:func:`sparsegp.datasets.get_data_home`).

    Returns
    -------
    list of str
        The files fetched (``<name>.npz`` base names), in order.

    Raises
    ------
    ValueError
        A file that is registered without a download route.
    sparsegp.datasets.DownloadError
        A source file could not be had (the message names the URL and the manual route).
    """
    from sparsegp.datasets import fetch, get_data_home

    root = Path(get_data_home(data_home))
    fetched = []
    for fname in dict.fromkeys(DATASETS[d][0] for d in datasets if d in DATASETS):
        if not (root / f"{fname}.npz").is_file():
            fetch(fname, data_home=data_home)
            fetched.append(fname)
    return fetched


def _mnist_13x13(X):
    """Grey values / 255 in [0, 1], 28 x 28 box-downsampled to 13 x 13 (seed 003 §4).

    The 1-pixel border is dropped and 2 x 2 blocks are averaged, giving 169 features; the
    same map as figures/ivm_fig1_rejection.py, so the kernel settings chosen there apply.
    """
    X = np.asarray(X, dtype=np.float64) / 255.0
    return X.reshape(-1, 28, 28)[:, 1:27, 1:27].reshape(-1, 13, 2, 13, 2).mean(
        axis=(2, 4)).reshape(-1, 169)


# File -> map applied to train and test inputs instead of standardisation: pixels keep their
# common [0, 1] scale (standardising would blow up the nearly constant border pixels).
_PIXEL_MAPS = {"mnist": _mnist_13x13}


def _estimator_params(cell):
    """The cell's parameters without those the runner consumes (:data:`_RUNNER_PARAMS`)."""
    return {k: v for k, v in cell.params.items() if k not in _RUNNER_PARAMS}


def _load_split(cell):
    """Train/test arrays of the cell: scaled as its ``inputs`` says (:data:`INPUTS`, training
    statistics only), or for image files mapped by :data:`_PIXEL_MAPS`; the first
    ``params["n_train"]`` training rows when the cell sets it."""
    from sparsegp._scaling import InputScaling
    from sparsegp.datasets import load_dataset, load_table

    fname, positive = DATASETS[cell.dataset]
    if cell.dataset == "crabs":
        X, y, _ = load_table(fname)
        X, y = np.asarray(X, dtype=np.float64), np.asarray(y)
        order = np.random.default_rng(cell.split).permutation(len(y))
        tr, te = order[:_CRABS_TRAIN], order[_CRABS_TRAIN:]
        Xtr, ytr, Xte, yte = X[tr], y[tr], X[te], y[te]
    else:
        Xtr, ytr, Xte, yte = load_dataset(fname, split=cell.split)
        Xtr, Xte = np.asarray(Xtr, dtype=np.float64), np.asarray(Xte, dtype=np.float64)
    if cell.params.get("n_train") is not None:
        Xtr, ytr = Xtr[:cell.params["n_train"]], ytr[:cell.params["n_train"]]
    if positive is not None:
        ytr = np.where(ytr == positive, 1, -1)
        yte = np.where(yte == positive, 1, -1)
    if fname in _PIXEL_MAPS:
        return _PIXEL_MAPS[fname](Xtr), ytr, _PIXEL_MAPS[fname](Xte), yte
    if cell.params.get("inputs") == "common":
        scaling = InputScaling.from_data(Xtr, per_feature=False)
        return scaling.transform(Xtr), ytr, scaling.transform(Xte), yte
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, ytr, (Xte - mu) / sd, yte


def _multiclass_start(Xtr, ytr, fraction, seed):
    """Shared start of the four multi-class methods (seed 002 §5.3).

    Returns
    -------
    Z0 : ndarray, shape (C, M, D)
        Training rows drawn independently per class, M = round(fraction * N).
    ls0 : float
        sqrt of the median pairwise distance of (at most 1000) training rows.
    """
    N = Xtr.shape[0]
    C = np.unique(ytr).size
    M = max(1, int(round(fraction * N)))
    rng = np.random.default_rng(seed)
    Z0 = np.stack([Xtr[np.sort(rng.choice(N, M, replace=False))] for _ in range(C)])
    sub = Xtr[rng.choice(N, min(N, 1000), replace=False)]
    d2 = np.sum((sub[:, None] - sub[None]) ** 2, -1)
    ls0 = float(np.sqrt(np.median(np.sqrt(d2[np.triu_indices(len(sub), 1)]))))
    return Z0, ls0


def build_estimator(cell, Xtr, ytr):
    """The unfitted estimator of ``cell`` (public constructor arguments only)."""
    cls = _estimator_class(cell.method)
    kwargs = _estimator_params(cell)
    kwargs["random_state"] = int(cell.seed)
    use = METHODS[cell.method][1]
    if use in ("n_inducing", "n_active"):
        kwargs[use] = int(cell.size)
    elif use == "fraction":
        Z0, ls0 = _multiclass_start(Xtr, ytr, cell.size, cell.seed)
        # Z0 follows init="random" (M training rows drawn at random per class, seed 002 §5.3),
        # which the estimator then records
        start = dict(inducing_points=Z0, init="random", lengthscale=ls0, variance=1.0,
                     noise=1.0)
        kwargs = {**start, **kwargs}
        if cell.method in ("ep", "sep"):
            kwargs["method"] = cell.method
    return cls(**constructor_arguments(cell.method, kwargs, Xtr.shape[1]))


def _jsonable(value):
    arr = np.asarray(value)
    if arr.dtype.kind in "biuf" and arr.size <= 256:
        return arr.tolist()
    return f"<array shape {arr.shape}>"


def run_cell(cell):
    """Fit and score one cell; never raises.

    BLAS and Numba are held at one thread for the fit so that the result does not depend on
    the process that runs it (a row split changes the order of floating-point sums), and so
    that cells running side by side do not oversubscribe the cores.

    Parameters
    ----------
    cell : Cell or dict
        A dict is what :meth:`Cell.as_dict` gives (that is what travels to workers).

    Returns
    -------
    dict
        ``key``, the cell's fields, ``status`` ("ok" or "failed") and, when ok, ``error``
        (test error rate), ``nlp`` (mean negative log predictive probability, nats),
        ``fit_time`` (wall s), ``cpu_time`` (CPU s of the thread that ran the fit: the fit's
        own cost, as BLAS and Numba are held to that thread, which a niced run on a busy
        machine stretches only in wall time; the process's other threads, idle BLAS workers
        still spinning or a Dask worker's heartbeats, are not the fit's and do not count),
        ``n_train``, ``n_test``, ``M`` and ``hyper`` (fitted hyper-parameters; for the
        SVM the chosen ``C_``, ``gamma_`` and ``cv_accuracy_``), plus for the SVM
        ``n_support_vectors`` and ``refit_time`` (CPU s of its final SVC alone, without the
        grid search: what the papers time), and ``warnings`` (the messages of any
        ``ConvergenceWarning`` of the fit); when failed, ``traceback``. The error uses the
        class of highest predictive probability, except for the SVM (sign of its margin).
    """
    import numba
    from threadpoolctl import threadpool_limits

    from sparsegp.metrics import error_rate, mean_nlp

    if isinstance(cell, dict):
        cell = Cell(**cell)
    record = {"key": cell.key, **cell.as_dict()}
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        with threadpool_limits(limits=1):
            Xtr, ytr, Xte, yte = _load_split(cell)
            est = build_estimator(cell, Xtr, ytr)
            t0, c0 = time.perf_counter(), time.thread_time()
            with warnings.catch_warnings(record=True) as caught:
                # a fit that stops at its iteration budget (the papers' protocol, e.g. seed
                # 000's 20 CG steps) is a result to note beside the cell, not a failure
                warnings.simplefilter("always", ConvergenceWarning)
                est.fit(Xtr, ytr)
            fit_time = time.perf_counter() - t0
            cpu_time = time.thread_time() - c0
            for w in caught:
                if not issubclass(w.category, ConvergenceWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            proba = est.predict_proba(Xte)
            if cell.method in _LABEL_FROM_PREDICT:
                pred = est.predict(Xte)
            else:
                pred = est.classes_[np.argmax(proba, axis=1)]
        record.update(
            status="ok", error=float(error_rate(yte, pred)),
            nlp=float(mean_nlp(yte, proba, classes=est.classes_)), fit_time=fit_time,
            cpu_time=cpu_time,
            n_train=int(len(ytr)), n_test=int(len(yte)),
            hyper={name: _jsonable(getattr(est, name)) for name in _FITTED
                   if hasattr(est, name)})
        if METHODS[cell.method][1] == "fraction":
            record["M"] = int(est.inducing_points_.shape[1])
        elif METHODS[cell.method][1] is not None:
            record["M"] = int(cell.size)
        if hasattr(est, "n_support_vectors_"):
            record["n_support_vectors"] = int(est.n_support_vectors_)
        if hasattr(est, "refit_time_"):
            record["refit_time"] = float(est.refit_time_)
        notes = sorted({str(w.message) for w in caught
                        if issubclass(w.category, ConvergenceWarning)})
        if notes:
            record["warnings"] = notes
    except Exception:  # a failing cell is a result, not the end of the grid
        record.update(status="failed", traceback=traceback.format_exc())
    finally:
        numba.set_num_threads(threads)
    return record
