"""BLAS-3 calls on row ranges of C-ordered arrays, callable from compiled kernels.

Numba's ``np.dot`` is the only BLAS-3 routine nopython code has. The O(N M²) passes of the
sparse models also need a symmetric rank-k update (``syrk``: half a general product) and a
triangular multiply (``trmm``), and they need them on a range of rows, so that each Numba
thread can push its own block of rows through several steps while the block is in cache.

The routines are scipy's (``scipy.linalg.cython_blas``, the BLAS scipy itself links), bound
by symbol name rather than by a ctypes function pointer: a kernel that holds a pointer cannot
be cached on disk, while a named external symbol is resolved again in every process.

Conventions: a C-ordered (n, M) array is, to Fortran BLAS, its (M, n) transpose with leading
dimension M; a C-ordered lower-triangular (M, M) factor is an upper-triangular one. All
arrays must be C-contiguous float64. Callers hold OpenBLAS to one thread while several Numba
threads call these at once (:func:`sparsegp._threads.single_threaded_blas`); the results are
the same either way, only the speed differs.
"""
import llvmlite.binding as _llvm
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from ._jit import jit


def _bind(name, n_args):
    symbol = "sparsegp_cython_blas_" + name
    _llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_blas", name))
    return types.ExternalFunction(symbol, types.void(*([types.voidptr] * n_args)))


_dgemm = _bind("dgemm", 13)
_dsyrk = _bind("dsyrk", 10)
_dtrmm = _bind("dtrmm", 11)

_N, _T, _U, _L = ord("N"), ord("T"), ord("U"), ord("L")


@jit
def _check_c_order(a):
    # a raw pointer into an F-ordered array would be read as its transpose: refuse it
    if not a.flags.c_contiguous:
        raise ValueError("BLAS row kernels need C-contiguous float64 arrays")


@jit(inline="always")
def _gemm_dims(A, B, out):
    """``(M, K)``: the column counts of A (., M) and B (., K) of a row-range product, after
    refusing any of A, B and ``out`` that is not C-contiguous (:func:`_check_c_order`)."""
    _check_c_order(A)
    _check_c_order(B)
    _check_c_order(out)
    return A.shape[1], B.shape[1]


@jit
def _fortran_gemm(trans_a, trans_b, m, n, k, A, lda, B, ldb, beta, out, ldc):
    """Fortran dgemm: out (m × n) = op(A) op(B) + beta out, on raw C-ordered buffers."""
    ta = np.array([trans_a], np.int8)
    tb = np.array([trans_b], np.int8)
    dims = np.array([m, n, k, lda, ldb, ldc], np.int32)
    alpha = np.array([1.0])
    b = np.array([beta])
    _dgemm(ta.ctypes, tb.ctypes, dims[0:].ctypes, dims[1:].ctypes, dims[2:].ctypes,
           alpha.ctypes, A.ctypes, dims[3:].ctypes, B.ctypes, dims[4:].ctypes, b.ctypes,
           out.ctypes, dims[5:].ctypes)


@jit
def gemm_rows(A, B, out, lo, hi, beta):
    """``out[lo:hi] = A[lo:hi] @ B + beta * out[lo:hi]``.

    A (N, M), B (M, K), out (N, K). Rows outside lo..hi-1 are not touched.
    """
    M, K = _gemm_dims(A, B, out)
    if hi <= lo:
        return
    # outᵀ (K × n) = Bᵀ (K × M) · Aᵀ (M × n), all in Fortran terms
    _fortran_gemm(_N, _N, K, hi - lo, M, B, K, A[lo:hi], M, beta, out[lo:hi], K)


@jit
def gemm_tn_rows(A, B, out, lo, hi, beta):
    """``out = A[lo:hi]ᵀ @ B[lo:hi] + beta * out``.

    A (N, M), B (N, K), out (M, K): the contribution of one row range to a product that sums
    over rows, for a caller that adds the ranges' results.
    """
    M, K = _gemm_dims(A, B, out)
    if hi <= lo:
        if beta == 0.0:
            out[:] = 0.0
        return
    # outᵀ (K × M) = B[lo:hi]ᵀ (K × n) · A[lo:hi] (n × M): Fortran sees B's rows as (K × n)
    # and A's as (M × n), transposed
    _fortran_gemm(_N, _T, K, M, hi - lo, B[lo:hi], K, A[lo:hi], M, beta, out, K)


@jit
def _syrk(A, lo, hi, C, fortran_uplo):
    """``C += A[lo:hi]ᵀ A[lo:hi]`` on one triangle: Fortran's ``fortran_uplo`` (ord U or L)."""
    M = A.shape[1]
    _check_c_order(A)
    _check_c_order(C)
    if hi <= lo:
        return
    uplo = np.array([fortran_uplo], np.int8)
    trans = np.array([_N], np.int8)
    m = np.array([M], np.int32)
    k = np.array([hi - lo], np.int32)
    one = np.array([1.0])
    rows = A[lo:hi]
    _dsyrk(uplo.ctypes, trans.ctypes, m.ctypes, k.ctypes, one.ctypes, rows.ctypes, m.ctypes,
           one.ctypes, C.ctypes, m.ctypes)


@jit
def syrk_rows(A, lo, hi, C):
    """Add ``A[lo:hi]ᵀ A[lo:hi]`` to the lower triangle of C (M, M); the upper is not written.

    A is (N, M). Symmetrise C once after all row ranges are in (:func:`symmetrize_lower`).
    """
    _syrk(A, lo, hi, C, _U)               # C's lower triangle is Fortran's upper


@jit
def syrk_rows_upper(A, lo, hi, C):
    """:func:`syrk_rows` into the upper triangle of C; the lower is not written.

    The same product through Fortran's lower-triangle kernel, which OpenBLAS (0.3.30,
    Haswell kernels) runs about 20% faster than the upper one at M = 50, N = 16 000 in blocks
    of 1 024 rows. The caller mirrors the upper triangle into the lower.
    """
    _syrk(A, lo, hi, C, _L)


@jit
def trmm_rows(A, T, lo, hi, transpose):
    """``A[lo:hi] <- A[lo:hi] @ T`` (or ``@ Tᵀ`` when ``transpose``), in place.

    T (M, M) is lower triangular (its upper triangle is not read); A is (N, M).
    """
    M = A.shape[1]
    _check_c_order(A)
    _check_c_order(T)
    if hi <= lo:
        return
    side = np.array([_L], np.int8)
    uplo = np.array([_U], np.int8)        # T lower in C order is upper to Fortran
    # (A T)ᵀ = Tᵀ Aᵀ, and Tᵀ is what Fortran sees: no transpose; A Tᵀ needs one
    ta = np.array([_T if transpose else _N], np.int8)
    diag = np.array([_N], np.int8)
    m = np.array([M], np.int32)
    n = np.array([hi - lo], np.int32)
    one = np.array([1.0])
    rows = A[lo:hi]
    _dtrmm(side.ctypes, uplo.ctypes, ta.ctypes, diag.ctypes, m.ctypes, n.ctypes, one.ctypes,
           T.ctypes, m.ctypes, rows.ctypes, m.ctypes)


@jit
def symmetrize_lower(C):
    """Copy the lower triangle of the square C into its upper triangle, in place."""
    M = C.shape[0]
    for i in range(M):
        for j in range(i):
            C[j, i] = C[i, j]


@jit
def sum_lower_parts(C):
    """The symmetric sum over the first axis of per-thread lower-triangle Grams C (T, M, M)."""
    total = sum_parts(C)
    symmetrize_lower(total)
    return total


@jit
def add_parts(parts, total):
    """``total += parts.sum(axis=0)`` for C-contiguous ``parts`` (T, ...) and ``total`` (...).

    The parts are added one after another, as ``sum(axis=0)`` does, so into a zero ``total``
    the result is that sum bit for bit; written as a loop because Numba's axis sum compiles
    an axis check with its formatted error message.
    """
    size = total.size
    flat = total.reshape(size)
    rows = parts.reshape((parts.shape[0], size))
    for p in range(rows.shape[0]):
        for i in range(size):
            flat[i] += rows[p, i]


@jit
def sum_parts(parts):
    """``parts.sum(axis=0)`` of C-contiguous ``parts`` (T, ...), bit for bit, as a new array
    (:func:`add_parts` into zeros)."""
    total = np.zeros(parts.shape[1:])
    add_parts(parts, total)
    return total


@jit
def copy_rows(src, dst, lo, hi, at):
    """``dst[at:at + hi - lo] = src[lo:hi]`` for (., M) arrays, as a loop: a slice assignment
    would make Numba compile its shape-mismatch error message (string formatting, seconds of
    a first run's compile) for a shape that cannot mismatch here."""
    for i in range(hi - lo):
        for m in range(src.shape[1]):
            dst[at + i, m] = src[lo + i, m]


@jit
def thread_ranges(N, n_parts):
    """Start offsets (n_parts + 1,) splitting 0..N into ``n_parts`` near-equal row ranges."""
    edges = np.empty(n_parts + 1, np.int64)
    for t in range(n_parts + 1):
        edges[t] = (N * t) // n_parts
    return edges
