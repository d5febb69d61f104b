"""Named numerical constants shared by the estimators."""

#: Jitter added to K_uu's diagonal, as a multiple of the signal variance.
JITTER = 1e-6
#: Largest jitter multiple tried before a factorisation is declared failed.
MAX_JITTER = 1e-2
#: Default convergence tolerance on the largest change of EP site parameters.
EP_TOL = 1e-6
#: Default maximum number of EP sweeps.
EP_MAX_SWEEPS = 200
#: Rows from which a dense (exact GP, SoD) fit lets BLAS thread its N x N factorisations
#: (measured on 2 cores: threaded BLAS wins from N = 3000 and loses to the Numba/BLAS
#: contention below about 1500; see sparsegp._threads)
DENSE_BLAS_MIN_ROWS = 3000
#: Site precisions below this are treated as zero where a division would follow.
TINY = 1e-300
