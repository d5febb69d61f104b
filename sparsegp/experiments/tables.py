"""The papers' tables as grids, with the published numbers beside each cell.

``multiclass``: seed 002 Tables 2 (test NLL) and 3 (test error); notes multiclass_ep.md §9.
``gfitc_table1``: seed 000 Table 1 (GPC, SVM, IVM, SPGPC columns) on the data sets present,
plus the USPS 4-vs-rest figures of its §5 text.
``ivm_mnist``: seed 003 Table 1 (SVM and IVM rows), MNIST digit c against the rest, 10 runs.
"""
from dataclasses import dataclass, field

import numpy as np

from .grid import DATASETS, METHODS, Cell


@dataclass(frozen=True)
class Table:
    """A paper table: its grid and its published numbers.

    Attributes
    ----------
    name, title : str
    datasets, methods : tuple of str
    sizes : dict
        (dataset, method) -> tuple of sizes (None for methods without one).
    params : dict
        method -> constructor arguments shared by every cell of that method, in the cells'
        JSON vocabulary (:func:`sparsegp.experiments.grid.constructor_arguments`: the keys of
        committed cells stay as they were run).
    folds : int
        Splits per data set in the paper (fewer when the file holds fewer).
    paper : dict
        (dataset, method, size) -> published numbers: "error" and "nlp", and for an SVM
        "n_support_vectors" (a paper that prints no NLP has none); "error_se" and "nlp_se"
        where the paper prints error bars (seed 002).
    paper_resolution : float, default=0.0
        The unit of the last digit the paper prints (0.01 for "0.31"): a printed value stands
        for any value within half of it (:func:`sparsegp.experiments.report.outside`).
    repeat_official : bool, default=False
        A data set with only its official split gets ``folds`` runs on that split, run i
        seeded with i (seed 003 averages 10 runs on MNIST's one split). Otherwise such a data
        set has one cell per method and size.
    comparisons : tuple of (str, str), default=()
        Pairs of methods (a, b) whose difference the paper's text draws conclusions from;
        the report reads a - b on the same splits beside the paper's a - b
        (:func:`sparsegp.experiments.report.comparison_rows`).
    paper_time : dict, default={}
        (method, size) -> the paper's mean training time (s) over every data set and fold
        (seed 002's "Avg. Time" rows); only ratios between methods carry over to our machine
        (:func:`sparsegp.experiments.report.time_ratios`).
    dataset_params : dict, default={}
        dataset -> method -> parameters that data set's cells of that method add to (or set
        over) ``params``: a paper's model that differs by data set (e.g. ``inputs``,
        :data:`sparsegp.experiments.grid.INPUTS`, with the kernel's start).
    """

    name: str
    title: str
    datasets: tuple
    methods: tuple
    sizes: dict
    params: dict
    folds: int
    paper: dict
    repeat_official: bool = False
    paper_resolution: float = 0.0
    comparisons: tuple = ()
    paper_time: dict = field(default_factory=dict)
    dataset_params: dict = field(default_factory=dict)

    def cells(self, folds=None, datasets=None, methods=None, params=None):
        """The grid's cells, breadth first (every data set and method at split 0 first).

        Parameters
        ----------
        folds : int, optional
            First ``folds`` splits of each file (default the paper's number).
        datasets, methods : sequence of str, optional
            Subsets of the table's; a name outside the table is a ValueError.
        params : dict, optional
            Constructor arguments that override the table's for every method that takes
            them (e.g. ``{"max_iter": 5}`` for a quick run).

        Returns
        -------
        list of Cell
        """
        datasets = self._subset(datasets, self.datasets, "data set")
        methods = self._subset(methods, self.methods, "method")
        folds = self.folds if folds is None else int(folds)
        out = []
        for split in range(folds):
            for d in datasets:
                splits = _splits(d)
                if self.repeat_official and splits == ["official"]:
                    splits = ["official"] * folds  # runs differ by their seed only
                if split >= len(splits):
                    continue
                for m in methods:
                    for size in self.sizes.get((d, m), ()):
                        p = {**self.params.get(m, {}),
                             **self.dataset_params.get(d, {}).get(m, {})}
                        for k, v in (params or {}).items():
                            if k in p:
                                p[k] = v
                        out.append(Cell(d, splits[split], m, p, size, seed=split))
        return out

    def _subset(self, chosen, valid, what):
        if chosen is None:
            return self.datasets if what == "data set" else self.methods
        bad = [c for c in chosen if c not in valid]
        if bad:
            raise ValueError(f"{what}(s) {bad} not in table {self.name!r}; valid: "
                             f"{', '.join(valid)}")
        return tuple(chosen)


def _splits(dataset):
    """Split identifiers a data set offers: ints for resampled files, else ["official"]."""
    from sparsegp.datasets import get_data_home

    if dataset == "crabs":
        return list(range(10))  # drawn by the runner from the split number
    path = f"{get_data_home()}/{DATASETS[dataset][0]}.npz"
    try:
        with np.load(path) as f:
            if "train_idx" in f.files:
                return list(range(f["train_idx"].shape[0]))
    except FileNotFoundError:
        return [0]  # validation names the missing file before anything runs
    return ["official"]


# ------------------------------------------------------------------ seed 002, Tables 2-3
_MC_SETS = ("glass", "new_thyroid", "satellite", "svmguide2", "vehicle", "vowel6",
            "waveform3", "wine")
_MC_ORDER = ("gfitc", "ep", "sep", "vi")
# Tables 2 (test NLL) and 3 (test error) of the paper (notes §9), as it prints them: per M
# (a fraction of N) and data set, "mean±error bar" of the four methods in _MC_ORDER (the
# error's bars are in Table 3 of appendix I; "0" where the paper prints 0)
_MC_PAPER = """
M     data set     NLL: GFITC EP SEP VI                error: GFITC EP SEP VI
0.05  glass        .61±.05 .78±.06 .77±.07 2.45±.14    .23±.02 .31±.02 .31±.02 .35±.02
0.05  new_thyroid  .06±.01 .11±.03 .06±.01 .09±.02     .02±.01 .04±.01 .02±.01 .03±.01
0.05  satellite    .33±.00 .31±.00 .33±.00 .61±.01     .12±0 .11±0 .12±0 .12±0
0.05  svmguide2    .63±.06 .63±.06 .67±.06 1.03±.08    .20±.01 .20±.01 .20±.02 .19±.01
0.05  vehicle      .32±.01 .34±.02 .34±.02 .76±.05     .17±.01 .17±.01 .16±.01 .17±.01
0.05  vowel6       .16±.01 .25±.01 .25±.01 .41±.05     .05±.01 .09±.01 .09±.01 .06±.01
0.05  waveform3    .42±.01 .36±.00 .39±.01 .89±.02     .17±0 .15±0 .16±0 .17±0
0.05  wine         .08±.02 .07±.01 .08±.01 .08±.02     .03±.01 .03±.01 .03±.01 .04±.01
0.10  glass        .58±.05 .74±.06 .79±.07 2.18±.14    .20±.01 .29±.02 .30±.02 .35±.02
0.10  new_thyroid  .07±.01 .06±.01 .06±.01 .05±.01     .03±.01 .02±.01 .03±.01 .03±.01
0.10  satellite    .34±.00 .30±.00 .34±.00 .58±.01     .11±0 .11±0 .12±0 .12±0
0.10  svmguide2    .67±.05 .67±.05 .74±.07 .90±.10     .19±.02 .20±.02 .20±.02 .17±.02
0.10  vehicle      .33±.01 .33±.02 .34±.02 .72±.04     .17±.01 .16±.01 .16±.01 .15±.01
0.10  vowel6       .14±.01 .19±.01 .19±.01 .30±.04     .03±.01 .05±.01 .06±.01 .06±0
0.10  waveform3    .42±.01 .36±.01 .41±.01 .85±.01     .17±0 .16±0 .16±0 .18±0
0.10  wine         .07±.01 .06±.01 .07±.01 .07±.01     .04±.01 .02±.01 .03±.01 .03±.01
0.20  glass        .60±.07 .75±.06 .81±.07 2.30±.15    .20±.02 .28±.02 .28±.02 .36±.02
0.20  new_thyroid  .07±.01 .06±.01 .05±.01 .05±.01     .03±0 .02±.01 .02±.01 .03±.01
0.20  satellite    .34±.01 .30±.00 .36±.00 .53±.01     .11±0 .11±0 .12±0 .11±0
0.20  svmguide2    .67±.05 .65±.06 .74±.07 .94±.08     .20±.01 .19±.01 .20±.02 .19±.02
0.20  vehicle      .33±.01 .33±.02 .34±.02 .63±.04     .17±.01 .16±.01 .16±.01 .15±.01
0.20  vowel6       .12±.01 .16±.01 .18±.01 .15±.03     .03±0 .03±0 .05±.01 .03±.01
0.20  waveform3    .43±.01 .37±.01 .45±.01 .80±.01     .17±0 .16±0 .17±0 .18±0
0.20  wine         .07±.01 .05±.01 .06±.01 .06±.02     .04±.01 .01±.01 .03±.01 .03±.01
"""


# Table 2's "Avg. Time" rows (s; mean over the eight sets and their folds), per M, in _MC_ORDER
_MC_TIME = {(m, f): t for f, row in {0.05: (131, 53.8, 48.5, 157),
                                     0.10: (264, 102, 96.6, 179),
                                     0.20: (683, 228, 216, 248)}.items()
            for m, t in zip(_MC_ORDER, row)}


def _multiclass_paper():
    paper, rows = {}, _MC_PAPER.strip().splitlines()[1:]
    # one row: M, data set, then the NLL's and the error's cells "mean±bar", in _MC_ORDER
    cells = {(float(f), d): [[float(x) for x in c.split("±")] for c in printed]
             for f, d, *printed in (row.split() for row in rows)}
    for f in dict.fromkeys(f for f, _ in cells):
        for k, m in enumerate(_MC_ORDER):
            for d in _MC_SETS:
                nlp, err = cells[(f, d)][k], cells[(f, d)][4 + k]
                paper[(d, m, f)] = {"error": err[0], "nlp": nlp[0], "error_se": err[1],
                                    "nlp_se": nlp[1]}
    return paper


MULTICLASS = Table(
    name="multiclass",
    title="Seed 002, Tables 2-3: multi-class EP / SEP / GFITC / VI on eight UCI sets",
    datasets=_MC_SETS, methods=("ep", "sep", "gfitc", "vi"),
    sizes={(d, m): (0.05, 0.10, 0.20) for d in _MC_SETS for m in _MC_ORDER},
    params={m: {"max_iter": 250} for m in _MC_ORDER}, folds=20, paper=_multiclass_paper(),
    paper_resolution=0.01,
    # §5: EP "very similar" to GFITC and SEP as good at less cost; VI "much worse" in NLL
    # on some sets (Glass, Svmguide2, Waveform) but similar in error
    comparisons=(("ep", "gfitc"), ("sep", "gfitc"), ("vi", "ep")),
    paper_time=_MC_TIME)

# ------------------------------------------------------------------ seed 000, Table 1
# data set -> (GPC err, nlp), (IVM err, nlp, size), (SPGPC err, nlp, M); rows whose data are
# not shipped (diabetes, flare-solar, splice, thyroid) are left out.
# The SVM column (error, number of support vectors; the paper prints no SVM NLP) is in _T1_SVM.
_T1 = {
    "synth": ((0.097, 0.227), (0.096, 0.235, 150), (0.087, 0.234, 4)),
    "crabs": ((0.039, 0.096), (0.066, 0.134, 60), (0.043, 0.105, 10)),
    "banana": ((0.105, 0.237), (0.105, 0.242, 200), (0.107, 0.261, 20)),
    "breast_cancer": ((0.288, 0.558), (0.307, 0.691, 120), (0.281, 0.557, 2)),
    "german": ((0.230, 0.482), (0.290, 0.658, 450), (0.236, 0.491, 4)),
    "heart": ((0.178, 0.423), (0.203, 0.455, 120), (0.172, 0.414, 2)),
    "image": ((0.027, 0.078), (0.028, 0.082, 400), (0.031, 0.087, 200)),
    "ringnorm": ((0.016, 0.071), (0.016, 0.101, 100), (0.014, 0.089, 2)),
    "titanic": ((0.221, 0.514), (0.242, 0.578, 100), (0.231, 0.520, 2)),
    "twonorm": ((0.031, 0.085), (0.031, 0.085, 300), (0.026, 0.086, 2)),
    "waveform": ((0.100, 0.229), (0.100, 0.232, 250), (0.099, 0.228, 10)),
}
_T1_SVM = {
    "synth": (0.098, 98), "crabs": (0.168, 67), "banana": (0.106, 151),
    "breast_cancer": (0.277, 122), "german": (0.247, 461), "heart": (0.166, 92),
    "image": (0.040, 462), "ringnorm": (0.016, 157), "titanic": (0.223, 118),
    "twonorm": (0.027, 220), "waveform": (0.107, 148),
}
# USPS 4 vs rest (text of §5): size -> (err, nlp); no GPC figure is given.
_USPS = {"spgpc": {200: (0.0194, 0.051), 400: (0.0179, 0.048)},
         "ivm": {200: (0.0997, 0.421), 400: (0.0154, 0.085)}}


def _table1():
    sizes, paper = {}, {}
    for d, (gpc, ivm, spgpc) in _T1.items():
        sizes[(d, "gpc")] = (None,)
        paper[(d, "gpc", None)] = {"error": gpc[0], "nlp": gpc[1]}
        for m, row in (("ivm", ivm), ("spgpc", spgpc)):
            sizes[(d, m)] = (row[2],)
            paper[(d, m, row[2])] = {"error": row[0], "nlp": row[1]}
        err, n_sv = _T1_SVM[d]
        sizes[(d, "svm")] = (None,)
        paper[(d, "svm", None)] = {"error": err, "n_support_vectors": n_sv}
    for m, rows in _USPS.items():
        sizes[("usps_4_vs_rest", m)] = tuple(rows)
        for size, (err, nlp) in rows.items():
            paper[("usps_4_vs_rest", m, size)] = {"error": err, "nlp": nlp}
    return sizes, paper


_T1_SIZES, _T1_PAPER = _table1()
# 20 CG iterations of the evidence, best of three starts (n_restarts=2 adds two random ones);
# the SVM's C and gamma come from 5-fold CV over SVMBaseline's default log2 grid (the paper
# says only "set by cross-validation"). No SVM cell for USPS: §5 gives no SVM figure.
# The IVM as seed 000 §5 ran it: "For the IVM, hyperparameter optimization is interleaved with
# active set selection as described in [2]" (optimizer="lbfgs"), with [2]'s model, whose
# kernel carries a constant v_b "to account for the variance of the bias" (seed 003 §4). The
# toolbox's default kernel is rbf + bias + white beside a noise-free probit (sigma2 = 1e-6),
# and each refit optimises all their parameters: v_b is learnt (learn_bias_variance), and the
# white variance, which with that probit is the probit's noise, is learnt relative to the
# kernel (learn_noise). Without v_b the zero-mean prior pulls every test point far from the
# active set to p = 1/2, which on ringnorm (one class the outer shell) cost error 0.067 and
# NLP 0.49 by validation, 0.48 / 0.69 by the evidence (splits 0-2). With v_b = 1 fixed and
# unit probit noise: error .018 but NLP .230 (10 splits): the rounds raise s2 only through
# the sites (about 30% a round, no fixed point in 30 rounds), so after the toolbox's 8 the
# latent scale is small beside the unit noise and test points keep a predictive variance
# near the prior's; v_b learnt: NLP .14 (splits 0-2); the noise learnt too, it goes to the
# noise-free limit on ringnorm, image and USPS: error / NLP .017 / .099, .027 / .080 (10
# splits) and .018 / .079 (paper .016 / .101, .028 / .082, .015 / .085), and stays near 1 on
# noisy sets (german, titanic, waveform: as before). Titanic's errors are .21-.23 or .43-.44
# (2 splits of 10, before and after): in its largest input group (39% of the test rows, 26%
# positive) the entropy score keeps including the label the current mean disagrees with,
# so the active points there end half positive and p = 1/2 +- 0.01 decides a 0.2 swing.
# Starts s2 = v_b = 1 (the IVM toolbox's rbf, bias and white variances, all 1), l = sqrt(D);
# b = 0 (the offset is learnt through v_b).
_T1_IVM = {"optimize": "evidence", "lengthscale": "sqrt(D)", "bias_variance": 1.0,
           "learn_bias_variance": True, "learn_noise": True}
# Seed 000 §5: "In all cases, we employed the isotropic squared exponential kernel", in the
# units of the data. Rätsch's files hold their features standardised already, so the
# runner's per-feature standardisation keeps that model. Ripley's synth holds two coordinates
# of one plane (standard deviations .489 and .254): standardised, the GPs' default covariance
# (isotropic on standardised inputs) and any isotropic kernel would hold the two length-scales
# at 1.92 : 1 in the plane (SPGPC M = 4: error .102, NLP .257, log evidence -82.8; the paper
# .087 / .234). So synth's inputs keep their one unit (inputs="common": centred, divided by
# one common scale) for every method, and the GPC and SPGPC cells pass the isotropic kernel
# as a user's, started and searched as the default is: length-scale start_lengthscale(2) = 1
# in those units (the features' root-mean-square spread), variance 1, no bounds (UNBOUNDED,
# whose restarts are drawn as the default's; sparsegp._optimize.OPEN_SIDE). The IVM's kernel
# is a user's already, and the SVM's RBF is isotropic. Crabs (five lengths in mm) and USPS
# (grey levels) share a unit too but are still standardised per feature (issue 47: moving
# them is a refit of their 44 cells, left to decide).
_T1_ISOTROPIC = {"inputs": "common", "variance": 1.0, "lengthscale": 1.0}
_T1_DATA_UNITS = {"synth": {"gpc": _T1_ISOTROPIC, "spgpc": _T1_ISOTROPIC,
                            "ivm": {"inputs": "common"}, "svm": {"inputs": "common"}}}
GFITC_TABLE1 = Table(
    name="gfitc_table1",
    title="Seed 000, Table 1: GPC / SVM / IVM / SPGPC (generalized FITC), plus USPS 4 vs rest",
    datasets=tuple(_T1) + ("usps_4_vs_rest",), methods=("gpc", "svm", "ivm", "spgpc"),
    sizes=_T1_SIZES,
    params={"gpc": {"optimizer": "cg", "max_iter": 20, "n_restarts": 2},
            "spgpc": {"optimizer": "cg", "max_iter": 20, "n_restarts": 2},
            "ivm": _T1_IVM, "svm": {}},
    folds=10, paper=_T1_PAPER, paper_resolution=0.001,
    # §5: the sparsest SPGPC that stays competitive with the full GPC, the IVM at far larger
    # active sets, the SVM as the discriminative reference
    comparisons=(("spgpc", "gpc"), ("ivm", "gpc"), ("svm", "gpc")),
    dataset_params=_T1_DATA_UNITS)

# ------------------------------------------------------------------ seed 003, Table 1
# digit c -> test error (%) and d for the SVM (d = mean number of support vectors) and the IVM
# (d = final active-set size), means over 10 runs; the paper's training times (s) are kept
# for reference only (SMO with its own kernel cache, and the IVM, on 2002 hardware).
_MNIST_SVM = {"gen": (0.22, 0.20, 0.40, 0.41, 0.40, 0.29, 0.28, 0.54, 0.50, 0.58),
              "d": (1247, 798, 2240, 2610, 1826, 2306, 1331, 1759, 2636, 2731),
              "time": (1281, 864, 2977, 3687, 2442, 2771, 1520, 2251, 3909, 3469)}
_MNIST_IVM = {"gen": (0.18, 0.26, 0.40, 0.39, 0.33, 0.32, 0.29, 0.51, 0.53, 0.55),
              "d": (1130, 820, 2150, 2500, 1740, 2200, 1270, 1660, 2470, 2740),
              "time": (627, 427, 1690, 2191, 1210, 1758, 765, 1110, 2024, 2444)}
_MNIST_SETS = tuple(f"mnist_{c}_vs_rest" for c in range(10))


def _ivm_mnist():
    sizes, paper = {}, {}
    for c, d in enumerate(_MNIST_SETS):
        ivm_d = _MNIST_IVM["d"][c]
        sizes[(d, "ivm")] = (ivm_d,)
        paper[(d, "ivm", ivm_d)] = {"error": _MNIST_IVM["gen"][c] / 100.0,
                                    "time": float(_MNIST_IVM["time"][c])}
        sizes[(d, "svm")] = (None,)
        paper[(d, "svm", None)] = {"error": _MNIST_SVM["gen"][c] / 100.0,
                                   "n_support_vectors": _MNIST_SVM["d"][c],
                                   "time": float(_MNIST_SVM["time"][c])}
    return sizes, paper


_MNIST_SIZES, _MNIST_PAPER = _ivm_mnist()
# IVM: the paper's kernel C exp(-gamma |x - x'|^2 / (2 * 169)) + v_b with v_b = 0.1 and the
# fixed bias b = Phi^-1(fraction of positives) ("auto"), randomized greedy selection with its
# footnote-7 settings (randomized=True), d = the paper's final active-set size per digit.
# (gamma, C) = (32, 20): the values figures/ivm_fig1_rejection.py chose on a 1 000-point
# validation set, training on 5 000-point subsets as the paper's model selection did; one pair
# for all digits (the paper selected per run), so lengthscale = sqrt(169 / 32), variance = 20.
# SVM: the paper used SMO with (C, gamma) chosen on validation error, training on 5 000-point
# subsets. Here: 5-fold CV on a random stratified 5 000 of the training rows over a 5 x 5 grid
# (the paper's grids had one size for both methods): C = 2^-1, 2^1, ..., 2^7 and gamma =
# 2^-6, ..., 2^-2, which spans the IVM's selection grid gamma / 338 for gamma in {4, ..., 64}
# (a first grid ending at 2^-3 chose its edge on digit 9), then the chosen SVC on 59 000
# rows; the other 1 000 (the paper's validation set size) fit Platt's sigmoid, since libsvm's
# probability mode would cost five more SVC fits on about 47 000 rows each. Our SVM fit time
# includes this model selection; the paper's times are of training alone. Seed 003 prints no
# NLP, so both paper NLP columns are empty.
IVM_MNIST = Table(
    name="ivm_mnist",
    title="Seed 003, Table 1: SVM and IVM on MNIST (13 x 13) digit c against the rest",
    datasets=_MNIST_SETS, methods=("svm", "ivm"), sizes=_MNIST_SIZES,
    params={"ivm": {"lengthscale": float(np.sqrt(169.0 / 32.0)), "variance": 20.0,
                    "bias": "auto", "bias_variance": 0.1, "randomized": True},
            "svm": {"C_grid": [2.0 ** k for k in (-1, 1, 3, 5, 7)],
                    "gamma_grid": [2.0 ** k for k in (-6, -5, -4, -3, -2)],
                    "cv_subsample": 5000, "calibration": 1000, "cache_size": 2000}},
    folds=10, paper=_MNIST_PAPER, repeat_official=True, paper_resolution=0.0001,
    # §4: "IVM shows comparable performance to the SVM, while achieving significantly lower
    # training times"
    comparisons=(("ivm", "svm"),))

TABLES = {t.name: t for t in (MULTICLASS, GFITC_TABLE1, IVM_MNIST)}
assert all(m in METHODS for t in TABLES.values() for m in t.methods)
