"""Row-range BLAS-3 calls from compiled code, and the OpenBLAS thread pin around them."""
import numpy as np
import pytest

from sparsegp import _threads
from sparsegp._numba import blas


@pytest.fixture
def arrays(rng):
    N, M, K = 53, 7, 5
    A = rng.normal(size=(N, M))
    B = rng.normal(size=(M, K))
    L = np.tril(rng.normal(size=(M, M))) + 3.0 * np.eye(M)
    L[np.triu_indices(M, 1)] = 99.0             # the upper triangle must not be read
    return A, B, L


@pytest.mark.parametrize("lo, hi", [(0, 53), (10, 31), (52, 53), (20, 20)])
def test_gemm_rows_touches_only_its_rows(arrays, lo, hi):
    A, B, _ = arrays
    out = np.full((A.shape[0], B.shape[1]), 7.0)
    blas.gemm_rows(A, B, out, lo, hi, 0.0)
    expected = np.full_like(out, 7.0)
    expected[lo:hi] = A[lo:hi] @ B
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)
    blas.gemm_rows(A, B, out, lo, hi, 1.0)        # beta = 1 accumulates
    expected[lo:hi] += A[lo:hi] @ B
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("lo, hi", [(0, 53), (10, 31), (52, 53), (20, 20)])
def test_gemm_tn_rows_is_one_row_range_of_a_sum_over_rows(arrays, rng, lo, hi):
    A, _, _ = arrays
    Bn = rng.normal(size=(A.shape[0], 4))
    out = np.full((A.shape[1], 4), 7.0)
    blas.gemm_tn_rows(A, Bn, out, lo, hi, 0.0)
    np.testing.assert_allclose(out, A[lo:hi].T @ Bn[lo:hi], rtol=1e-13, atol=1e-13)
    blas.gemm_tn_rows(A, Bn, out, lo, hi, 1.0)    # beta = 1 accumulates
    np.testing.assert_allclose(out, 2.0 * A[lo:hi].T @ Bn[lo:hi], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("C, N, parts", [(3, 101, 2), (2, 10, 4), (1, 3, 5), (6, 40, 1)])
def test_stacked_products_equal_numpy_per_class(rng, C, N, parts):
    from sparsegp._numba import multiclass as nbmc
    A = rng.normal(size=(C, N, 7))
    B = rng.normal(size=(C, 7, 5))
    out = np.empty((C, N, 5))
    nbmc.stacked_gemm(A, B, out, parts)           # more parts than rows leaves some empty
    np.testing.assert_allclose(out, A @ B, rtol=1e-13, atol=1e-13)
    Bn = rng.normal(size=(C, N, 5))
    out_tn = np.empty((C, 7, 5))
    nbmc.stacked_gemm_tn(A, Bn, out_tn, parts)
    np.testing.assert_allclose(out_tn, np.swapaxes(A, 1, 2) @ Bn, rtol=1e-12, atol=1e-12)


def test_syrk_rows_accumulates_the_lower_triangle(arrays):
    A, _, _ = arrays
    C = np.zeros((A.shape[1], A.shape[1]))
    for lo, hi in ((0, 20), (20, 20), (20, 53)):  # three ranges add up to the whole Gram
        blas.syrk_rows(A, lo, hi, C)
    assert np.all(C[np.triu_indices_from(C, 1)] == 0.0)
    blas.symmetrize_lower(C)
    np.testing.assert_allclose(C, A.T @ A, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("transpose", [False, True])
def test_trmm_rows_multiplies_by_the_lower_triangle_in_place(arrays, transpose):
    A, _, L = arrays
    Lt = np.tril(L)
    lo, hi = 5, 40
    out = A.copy()
    blas.trmm_rows(out, L, lo, hi, transpose)
    expected = A.copy()
    expected[lo:hi] = A[lo:hi] @ (Lt.T if transpose else Lt)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-12)


def test_fortran_ordered_operands_are_refused(arrays):
    A, B, L = arrays
    with pytest.raises(ValueError, match="C-contiguous"):
        blas.trmm_rows(A.copy(), np.asfortranarray(L), 0, 10, False)
    with pytest.raises(ValueError, match="C-contiguous"):
        blas.gemm_rows(A, np.asfortranarray(B), np.zeros((A.shape[0], B.shape[1])), 0, 5, 0.0)


@pytest.mark.parametrize("N, parts", [(10, 3), (7, 7), (3, 4), (0, 2)])
def test_thread_ranges_cover_all_rows_once(N, parts):
    edges = blas.thread_ranges(N, parts)
    assert edges[0] == 0 and edges[-1] == N
    sizes = np.diff(edges)
    assert np.all(sizes >= 0) and sizes.max() - sizes.min() <= 1


def test_single_threaded_blas_pins_and_restores_every_openblas(openblas_at_two_threads):
    counts = openblas_at_two_threads
    with _threads.single_threaded_blas():
        assert set(counts()) == {1}
        with _threads.single_threaded_blas():        # re-entrant: the inner pin changes nothing
            assert set(counts()) == {1}
        assert set(counts()) == {1}
    assert set(counts()) == {2}
    with pytest.raises(RuntimeError):                # restored on the way out of an error too
        with _threads.single_threaded_blas():
            raise RuntimeError
    assert set(counts()) == {2}


def test_single_threaded_blas_disabled_leaves_the_counts_alone(openblas_at_two_threads):
    counts = openblas_at_two_threads
    with _threads.single_threaded_blas(False):
        assert set(counts()) == {2}
    assert set(counts()) == {2}
