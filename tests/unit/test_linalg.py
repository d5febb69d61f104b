"""The one Cholesky-with-jitter ladder (sparsegp._linalg)."""
import numpy as np
import pytest

from sparsegp._linalg import cholesky_jitter
from sparsegp.exceptions import JitterWarning


def test_no_growth_no_warning_and_input_untouched():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    K = A @ A.T + np.eye(6)
    K0 = K.copy()
    L, used = cholesky_jitter(K, 2.0, 1e-6)
    assert used == 1e-6
    np.testing.assert_allclose(L @ L.T, K + 2e-6 * np.eye(6), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(K, K0)


def test_jitter_grows_tenfold_relative_to_the_scale_and_warns():
    K = np.ones((3, 3)) * 5.0                              # rank one: singular
    with pytest.warns(JitterWarning, match="increased"):
        L, used = cholesky_jitter(K, 5.0, 0.0)
    assert used >= 1e-10 and np.all(np.isfinite(L))
    np.testing.assert_allclose(L @ L.T, K + used * 5.0 * np.eye(3), rtol=1e-10, atol=1e-12)


def test_failure_says_what_to_try_and_escalate_false_fails_at_once():
    K = -np.eye(3)
    with pytest.raises(np.linalg.LinAlgError, match="raise jitter"):
        cholesky_jitter(K, 1e-6, 1e-6)
    with pytest.raises(np.linalg.LinAlgError, match=f"{1e-6:g}"):
        cholesky_jitter(np.ones((2, 2)) - 1e-3 * np.eye(2), 1.0, 1e-6, escalate=False)
