"""Messages show plain values, not NumPy reprs such as ``np.int64(1)`` (issue 49 item 5)."""
import warnings

import numpy as np
import pytest

import sparsegp
from sparsegp._validation import plain


def test_plain_turns_numpy_scalars_into_python_values():
    assert repr(plain(np.int64(1))) == "1" and repr(plain(np.float64(2.5))) == "2.5"
    assert repr(plain(np.str_("a"))) == "'a'" and plain("a") == "a"
    assert plain(None) is None


@pytest.mark.parametrize("make", [
    lambda: sparsegp.StagewiseGPClassifier(tol=np.float64(-1.0)),
    lambda: sparsegp.StagewiseGPClassifier(d_max=np.float64(2.5)),
    lambda: sparsegp.StagewiseGPClassifier(bias=np.float64(np.inf)),
    lambda: sparsegp.GFITCClassifier(ep_damping=np.float64(1.5)),
    lambda: sparsegp.GFITCClassifier(jitter=np.float64(-1.0)),
    lambda: sparsegp.IVMClassifier(validation_fraction=np.float64(1.5)),
    lambda: sparsegp.MultiClassSVGPClassifier(n_inducing=np.int64(0)),
])
def test_errors_show_plain_numbers(make):
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = np.arange(20) % 2
    with pytest.raises(ValueError) as err:
        make().fit(X, y)
    assert "np." not in str(err.value), str(err.value)


def test_one_vs_rest_labels_are_plain():
    # labels unrelated to X and a vanishing kernel variance: every task is flat, and the
    # warning names its task by the class label itself
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = np.arange(60) % 3                                      # np.int64 labels
    kernel = sparsegp.kernels.SquaredExponential(1e-10, 1.0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        sparsegp.IVMClassifier(n_active=5, kernel=kernel, optimizer=None,
                               random_state=0).fit(X, y)
    messages = [str(w.message) for w in seen]
    assert any(m.startswith("IVM 1 vs rest: ") for m in messages), messages
    assert not any("np." in m for m in messages)
