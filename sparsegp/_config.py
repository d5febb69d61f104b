"""Named numerical constants shared by the estimators."""

#: Jitter added to K_uu's diagonal, as a multiple of the signal variance.
JITTER = 1e-6
#: Largest jitter multiple tried before a factorisation is declared failed.
MAX_JITTER = 1e-2
#: Default convergence tolerance on the largest change of EP site parameters.
EP_TOL = 1e-6
#: Default stopping tolerance of an evidence search, in nats per training row: the search has
#: converged once its best evidence gains less than TOL * max(N, TOL_MIN_ROWS) over the
#: driver's window of iterations (sparsegp._optimize, "Stopping rule"; measured in
#: benchmarks/DEFAULTS.md).
TOL = 3e-4
#: The regressor's default: its evaluations are cheap, and on Friedman #1 the inducing inputs
#: still improve the test R² at gains of 1e-4 nats a row (benchmarks/DEFAULTS.md).
REGRESSION_TOL = 3e-5
#: Multi-class GFITC's default: ten times finer than TOL, as on folds 0-2 of seed 002's six
#: sets of at most 486 rows TOL stopped glass and vowel6 early (test NLP up to +0.26), while
#: this one's median test NLP is 0.003 below the 250-iteration budget's, and it runs 0.38 of
#: its time (benchmarks/DEFAULTS.md, "Multi-class GFITC: a stopping rule measured"). Not yet
#: the default: one of the six sets (vowel6) ends higher on average, two are not measured.
MC_GFITC_TOL = 3e-5
#: Rows a tolerance is counted on at the least: at TOL, one nat. Below about 3 000 rows,
#: TOL * N is a fraction of a nat, finer than the EP evidence's own approximation error and
#: than any Bayes factor worth stating (ln B < 1 is "not worth more than a bare mention",
#: Kass & Raftery 1995), and the pseudo-inputs spend such gains fitting noise: xor with 400
#: rows and M = 4 ends with two pseudo-inputs in one cluster and a worse test NLP.
TOL_MIN_ROWS = 3000
#: Default iteration cap of a search with a stopping rule: a safety net that ordinary data
#: never reaches, not a schedule.
MAX_ITER = 1000
#: The regressor's coarse start (``coarse_rows="auto"``): a search that places the inducing
#: inputs by the VFE bound runs first on a subset of this many rows, or of COARSE_ROWS_PER_UNKNOWN
#: rows per unknown of the search if more, when the training set has at least
#: COARSE_MIN_FACTOR times as many rows; then on subsets COARSE_LEVEL_FACTOR times larger, each
#: at most 1/COARSE_LEVEL_FACTOR of the training set, and last on every row. Measured on issue
#: 45's T2 (N = 100 000, M = 100, D = 5; benchmarks/COARSE_START.md).
COARSE_ROWS = 10_000
COARSE_ROWS_PER_UNKNOWN = 20
COARSE_MIN_FACTOR = 4
COARSE_LEVEL_FACTOR = 3
#: Default maximum number of EP sweeps.
EP_MAX_SWEEPS = 200
#: Rows from which a dense (exact GP, SoD) fit lets BLAS thread its N x N factorisations
#: (measured on 2 cores: threaded BLAS wins from N = 3000 and loses to the Numba/BLAS
#: contention below about 1500; see sparsegp._threads)
DENSE_BLAS_MIN_ROWS = 3000
#: Site precisions below this are treated as zero where a division would follow.
TINY = 1e-300

# -- sizes: blocks, and the work from which a pass is worth Numba's or BLAS's threads --------
# (measured on 2 cores; below a threshold, waking the threads costs more than the work, and
# far more on a loaded machine)

#: Rows a thread pushes through one pass at a time (regression FITC/DTC passes, the phases of
#: GFITC's parallel EP): three (ROW_BLOCK, M) blocks stay in the core's cache between the BLAS
#: call and the compiled loop that follows it.
ROW_BLOCK = 1024
#: Row ranges of every regression pass that sums over rows: fixed, not one per thread, so
#: the reduction order (and the result, bit for bit) does not depend on the thread count.
ROW_PARTS = 16
#: Test points per block in predictions (bounds the (M, block) temporaries).
PREDICT_BLOCK = 2048
#: N M D above which the regression's SE kernels run in parallel.
REGRESSION_PARALLEL_SIZE = 2_000_000
#: An IVM/ADF column pass runs multi-threaded from |cols| (k + D) flops on.
ADF_PARALLEL_MIN_WORK = 200_000
#: Greedy-selection candidates from which scoring runs multi-threaded (~0.1 us a score).
SCORING_PARALLEL_MIN_CANDIDATES = 20_000
#: Multi-class: below this many N M D terms a covariance is built in numpy.
MC_SMALL_KERNEL = 50_000
#: Multi-class: from this many features on (and enough terms), covariances and their
#: gradients go through BLAS products instead of element-wise compiled loops.
MC_GEMM_MIN_D = 8
#: Multi-class EP: below this many multiply-adds (B C M) the factor pass runs serially.
MC_PARALLEL_WORK = 20_000
#: Multi-class EP: above this many multiply-adds the per-class products share row blocks
#: among Numba's threads; below it they are one numpy call.
MC_PARALLEL_GEMM = 2_000_000
#: Multi-class EP, ``training="outer"``: EP runs to this largest undamped site residual (the
#: authors' GFITC criterion, notes §8) between hyper-parameter steps, or this many sweeps.
MC_OUTER_EP_TOL = 1e-3
MC_OUTER_EP_MAX_SWEEPS = 100
#: Multi-class EP: rows per block of the whole-data evidence with the sites held fixed
#: (``log_marginal_likelihood``), which bounds its (C, rows, M) temporaries.
MC_EVIDENCE_BLOCK = 4096
#: Multi-class GFITC: below this many rows a parallel-EP site update runs in one piece.
MC_GFITC_MIN_UPDATE_ROWS = 2000
#: Multi-class GFITC ``ep_schedule="auto"``: sequential EP while one sweep is at most this
#: many multiply-adds (N C M^2), where the fit takes seconds and reaches the exact fixed point.
MC_GFITC_AUTO_SEQUENTIAL_WORK = 1e6
#: Fits and predictions on fewer rows run on one thread (too little work per parallel region
#: to pay for the hand-off); from this many rows on they run their threads on the cores other
#: programs leave free (sparsegp._threads.load_aware_threads).
PARALLEL_MIN_ROWS = 1000
