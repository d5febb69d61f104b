"""Package-level behaviour: cheap import, lazy public names, the estimator base class."""
import os
import subprocess
import sys

import numpy as np
import pytest

import sparsegp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from sparsegp._base import SparseGPEstimator
from sparsegp import _validation as v


def _loaded_by(statement, modules):
    """Which of ``modules`` a fresh interpreter has loaded after running ``statement``."""
    code = (f"import sys; {statement}; "
            f"print(','.join(m for m in {tuple(modules)!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": ""})
    return out.stdout.strip()


def test_import_does_not_load_plotting_or_estimators():
    assert _loaded_by("import sparsegp", ("matplotlib", "matplotlib.pyplot", "sparsegp.plotting",
                                          "sparsegp.classification._gfitc")) == ""


def test_multiclass_engine_sits_below_the_estimators_and_dask():
    # the engine loads no estimator and no Dask code: the estimator reaches
    # sparsegp.distributed only when given a Dask array, through sparsegp._array_backends
    assert _loaded_by("import sparsegp.classification.multiclass.engine",
                      ("sparsegp.classification.multiclass._ep",
                       "sparsegp.classification.multiclass._base", "sparsegp.distributed",
                       "dask")) == ""


def test_a_numpy_fit_never_loads_dask_and_a_dask_array_finds_its_backend():
    # the estimator reaches the scale-out layer only through the table the front door fills
    # (sparsegp._array_backends): no import of it, and none of Dask for NumPy input
    fit = ("import numpy as np; from sparsegp import MultiClassEPClassifier; "
           "X = np.random.default_rng(0).normal(size=(30, 2)); y = np.arange(30) % 3; "
           "MultiClassEPClassifier(n_inducing=3, max_iter=2).fit(X, y)")
    assert _loaded_by(fit, ("sparsegp.distributed", "dask")) == ""
    from sparsegp._array_backends import backend_for
    assert backend_for(np.zeros((3, 2)), "MultiClassEPClassifier") is None
    da = pytest.importorskip("dask.array")
    from sparsegp.distributed import DASK_BACKEND
    X = da.zeros((4, 2), chunks=2)
    assert backend_for(X, "MultiClassEPClassifier") is DASK_BACKEND
    assert backend_for(X, "GFITCClassifier") is None


def test_a_backend_target_must_name_module_and_attribute():
    from sparsegp._array_backends import register_backend
    with pytest.raises(ValueError, match="module:attribute"):
        register_backend("dask", "MultiClassEPClassifier", "sparsegp.distributed")


def test_distributed_uses_only_public_names_of_the_multiclass_package():
    import ast
    import pathlib

    source = pathlib.Path(sparsegp.__file__).parent / "distributed" / "_multiclass.py"
    tree = ast.parse(source.read_text())
    modules, private = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and "classification" in (node.module or ""):
            private += [node.module] if any(p.startswith("_") for p in
                                            node.module.split(".")) else []
            for alias in node.names:
                modules.add(alias.asname or alias.name)
                private += [alias.name] if alias.name.startswith("_") else []
    assert modules, "the Dask driver no longer imports the multi-class engine?"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and node.attr.startswith("_")):
            private.append(f"{node.value.id}.{node.attr}")
    assert not private, f"sparsegp.distributed uses private names: {private}"


def test_public_names_resolve_lazily():
    for name in sparsegp.__all__:
        if name == "__version__":
            continue
        assert getattr(sparsegp, name) is not None
    with pytest.raises(AttributeError, match="no attribute"):
        sparsegp.NotAThing  # noqa: B018


class _Toy(SparseGPEstimator):
    def __init__(self, alpha=1.0, beta="x", gamma=None):
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma

    def fit(self, X, y=None):
        self.coef_ = np.zeros(np.shape(X)[1])
        return self


def test_get_set_params_roundtrip_and_clone():
    est = _Toy(alpha=2.0)
    assert est.get_params() == {"alpha": 2.0, "beta": "x", "gamma": None}
    assert est.set_params(beta="y") is est and est.beta == "y"
    with pytest.raises(ValueError, match="Invalid parameter 'delta'"):
        est.set_params(delta=1)
    twin = clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    assert repr(est) == "_Toy(alpha=2.0, beta='y')"
    with pytest.raises(NotFittedError, match="not fitted"):
        check_is_fitted(est)


def test_check_array_copies_and_rejects_bad_input():
    X = np.arange(6.0).reshape(3, 2)
    out = v.check_array(X)
    assert out is not X and out.flags.c_contiguous and out.dtype == np.float64
    out[0, 0] = 99
    assert X[0, 0] == 0
    with pytest.raises(ValueError, match="NaN or infinite"):
        v.check_array([[1.0, np.nan]])
    with pytest.raises(ValueError, match="2-D"):
        v.check_array(np.ones(3))
    with pytest.raises(ValueError, match="different lengths"):
        _Toy()._validate_fit_data(np.ones((3, 2)), np.ones(4), classifier=False)


def test_label_and_parameter_checks():
    classes, y = v.check_binary_labels(np.array(["b", "a", "b"]))
    assert list(classes) == ["a", "b"] and list(y) == [1.0, -1.0, 1.0]
    with pytest.raises(ValueError, match="at least 2 classes"):
        v.check_binary_labels(np.ones(4))
    with pytest.raises(ValueError, match="exactly 2 classes"):
        v.check_binary_labels(np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="variance must be positive"):
        v.check_positive(-1.0, "variance")
    with pytest.raises(ValueError, match="must be one of"):
        v.check_option("bfgs", "optimizer", ("cg", "lbfgs"))
    g1 = v.check_random_state(3).standard_normal(3)
    g2 = v.check_random_state(3).standard_normal(3)
    np.testing.assert_array_equal(g1, g2)


def test_inducing_initialisers(rng):
    from sparsegp.inducing import init_inducing, kmeans_blocks
    X = rng.standard_normal((50, 2))
    Z = init_inducing(X, 5, "random", np.random.default_rng(0))
    assert Z.shape == (5, 2) and all(any(np.all(z == x) for x in X) for z in Z)
    Zk = init_inducing(X, 5, "kmeans", np.random.default_rng(0))
    assert Zk.shape == (5, 2) and np.all(np.isfinite(Zk))
    with pytest.raises(ValueError, match="n_inducing must be <="):
        init_inducing(X, 51, "random", np.random.default_rng(0))
    blocks = kmeans_blocks(X, 4, np.random.default_rng(0))
    assert sorted(np.concatenate(blocks).tolist()) == list(range(50))
