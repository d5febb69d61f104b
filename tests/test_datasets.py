"""sparsegp.datasets: synthetic generators, the .npz loaders and the format converters."""
import json
import os
import sys
from pathlib import Path

import numpy as np
import pooch
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal

from conftest import require_data
from sparsegp.datasets import (
    XOR_BAYES_ERROR,
    DatasetNotFoundError,
    convert_libsvm,
    convert_raetsch,
    convert_ripley,
    get_data_home,
    list_datasets,
    load_dataset,
    load_table,
    make_gp_classes,
    make_regression_1d,
    make_xor,
    regression_1d_function,
)
from sparsegp.kernels import se_kernel


# --------------------------------------------------------------------------------------------
# synthetic generators
# --------------------------------------------------------------------------------------------
GENERATORS = [
    lambda rs: make_xor(50, random_state=rs),
    lambda rs: make_gp_classes(40, random_state=rs),
    lambda rs: make_regression_1d(30, random_state=rs),
]


@pytest.mark.parametrize("gen", GENERATORS, ids=["xor", "gp_classes", "regression_1d"])
def test_generators_are_deterministic_given_random_state(gen):
    a, b, c = gen(7), gen(7), gen(8)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    # A Generator gives the stream of its seed; None draws fresh data.
    for u, v in zip(gen(np.random.default_rng(7)), a):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(gen(None)[0], gen(None)[0])


def test_xor_shapes_labels_and_cluster_geometry():
    X, y = make_xor(40000, random_state=0)
    assert X.shape == (40000, 2) and X.dtype == np.float64
    assert y.shape == (40000,) and y.dtype.kind == "i"
    assert set(np.unique(y).tolist()) == {-1, 1}
    assert abs(np.mean(y == 1) - 0.5) < 0.01
    # Each class mixes two opposite unit-variance clusters at (a, a), (-a, -a) for +1 and
    # (a, -a), (-a, a) for -1, a = 1.5: mean 0, var 1 + a^2, E[x1 x2] = +-a^2.
    for label, sign in ((1, 1.0), (-1, -1.0)):
        Xc = X[y == label]
        np.testing.assert_allclose(Xc.mean(axis=0), 0.0, atol=0.05)
        np.testing.assert_allclose(Xc.var(axis=0), 1 + 1.5 ** 2, rtol=0.03)
        assert abs(np.mean(Xc[:, 0] * Xc[:, 1]) - sign * 1.5 ** 2) < 0.05
        # Rotated coordinates: along the line joining a class's two clusters the data are
        # a mixture of N(+-a sqrt2, 1); across it exactly N(0, 1) (unit-variance clusters).
        along = (Xc[:, 0] + sign * Xc[:, 1]) / np.sqrt(2)
        across = (Xc[:, 0] - sign * Xc[:, 1]) / np.sqrt(2)
        assert abs(across.mean()) < 0.03 and abs(across.var() - 1.0) < 0.04
        assert abs(along.var() - (1 + 2 * 1.5 ** 2)) < 0.15
        assert abs(np.mean(np.abs(along)) - 1.5 * np.sqrt(2)) < 0.05
    # Points of the +1 class sit mostly in quadrants 1 and 3, the -1 class in 2 and 4.
    assert np.mean(np.sign(X[:, 0] * X[:, 1]) == y) > 0.85


def test_xor_bayes_error_by_integration_and_monte_carlo():
    a = 1.5
    cov = np.eye(2)
    dens = {
        1: lambda x: 0.25 * (multivariate_normal.pdf(x, [a, a], cov)
                             + multivariate_normal.pdf(x, [-a, -a], cov)),
        -1: lambda x: 0.25 * (multivariate_normal.pdf(x, [a, -a], cov)
                              + multivariate_normal.pdf(x, [-a, a], cov)),
    }
    # The Bayes rule is sign(x1 x2): check it against the joint densities on a grid.
    g = np.linspace(-5, 5, 41) + 0.01
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    bayes = np.where(dens[1](G) > dens[-1](G), 1, -1)
    np.testing.assert_array_equal(bayes, np.sign(G[:, 0] * G[:, 1]))
    # Bayes error = int min(p(x, +1), p(x, -1)) dx = 4 x (mass of class -1 in quadrant 1).
    def wrong_class_density(x2, x1):
        return 0.25 * (np.exp(-0.5 * ((x1 - a) ** 2 + (x2 + a) ** 2))
                       + np.exp(-0.5 * ((x1 + a) ** 2 + (x2 - a) ** 2))) / (2 * np.pi)

    np.testing.assert_allclose(wrong_class_density(0.3, -0.7),
                               dens[-1](np.array([-0.7, 0.3])), rtol=1e-12)
    val, abserr = integrate.dblquad(wrong_class_density, 0.0, 12.0, 0.0, 12.0, epsabs=1e-11)
    assert abserr < 1e-9
    assert abs(4 * val - XOR_BAYES_ERROR) < 1e-8        # 0.124688 (the paper's "about 13%")
    # Monte Carlo: the Bayes classifier's error on a large sample (sd ~ 7e-4).
    X, y = make_xor(200000, random_state=1)
    mc = np.mean(np.sign(X[:, 0] * X[:, 1]) != y)
    assert abs(mc - XOR_BAYES_ERROR) < 0.003


def test_gp_classes_shapes_labels_and_latent():
    X, y, F = make_gp_classes(300, n_classes=4, random_state=3, return_latent=True)
    assert X.shape == (300, 2) and X.dtype == np.float64
    assert np.all(np.abs(X) <= 1.0)
    assert y.shape == (300,) and y.dtype.kind == "i"
    assert set(np.unique(y).tolist()) <= {0, 1, 2, 3}
    assert F.shape == (300, 4)
    np.testing.assert_array_equal(y, np.argmax(F, axis=1))
    X2, y2 = make_gp_classes(300, n_classes=4, random_state=3)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(y2, y)


def test_gp_classes_latents_follow_the_se_prior():
    # E[f_c(x) f_c(x')] = k(x, x') + noise [x = x']: regress the products on k over many
    # independent functions (many classes per call keep the number of calls small). Over 20
    # repetitions of this test the slope had sd 0.021 and the diagonal mean sd 0.019.
    ls, s2, noise, n, C = 0.5, 1.3, 0.05, 60, 200
    num = den = diag = 0.0
    iu = np.triu_indices(n, 1)
    for seed in range(8):
        X, _, F = make_gp_classes(n, C, lengthscale=ls, variance=s2, noise=noise,
                                  random_state=seed, return_latent=True)
        K = se_kernel(X, None, s2, np.full(2, ls))
        S = F @ F.T                                   # sum over classes of f_c(x_i) f_c(x_j)
        num += np.sum(S[iu] * K[iu])
        den += C * np.sum(K[iu] ** 2)
        diag += np.trace(S) / (8 * n * C)
    assert abs(num / den - 1.0) < 0.08
    assert abs(diag - (s2 + noise)) < 0.08
    # A wrong length-scale convention (e.g. squared) would be far off:
    K_wrong = se_kernel(X, None, s2, np.full(2, ls ** 2))
    assert abs(np.sum(S[iu] * K_wrong[iu]) / (C * np.sum(K_wrong[iu] ** 2)) - 1.0) > 0.3


def test_gp_classes_noise_free_latents_whiten_to_standard_normals():
    from sparsegp._config import JITTER

    X, y, F = make_gp_classes(150, 3, lengthscale=0.7, variance=2.0, noise=0.0,
                              random_state=5, return_latent=True)
    K = se_kernel(X, None, 2.0, np.full(2, 0.7)) + JITTER * 2.0 * np.eye(150)
    W = np.linalg.solve(np.linalg.cholesky(K), F)      # L^-1 f ~ N(0, I) iff cov(f) = K
    assert abs(W.mean()) < 0.15 and abs(W.var() - 1.0) < 0.15
    np.testing.assert_array_equal(y, F.argmax(axis=1))


def test_regression_1d_gap_noise_and_truth():
    X, y = make_regression_1d(4000, noise_std=0.25, gap=(2.5, 3.7), random_state=0)
    assert X.shape == (4000, 1) and y.shape == (4000,)
    x = X[:, 0]
    assert x.min() >= 0.0 and x.max() <= 6.0
    assert not np.any((x > 2.5) & (x < 3.7))
    assert np.any(x < 0.3) and np.any(x > 5.7) and np.any((x > 2.2) & (x < 2.5))
    resid = y - regression_1d_function(x)
    assert abs(resid.mean()) < 0.02 and abs(resid.std() - 0.25) < 0.015
    Xn, _ = make_regression_1d(2000, gap=None, random_state=0)
    assert np.any((Xn > 2.6) & (Xn < 3.6))


def test_generators_with_a_single_point():
    assert make_xor(1, random_state=0)[0].shape == (1, 2)
    assert make_gp_classes(1, random_state=0)[1].shape == (1,)
    assert make_regression_1d(1, random_state=0)[0].shape == (1, 1)


@pytest.mark.parametrize("call, match", [
    (lambda: make_xor(0), "n must be >= 1"),
    (lambda: make_xor(2.5), "n must be an integer"),
    (lambda: make_xor(10, random_state="x"), "random_state"),
    (lambda: make_gp_classes(10, n_classes=1), "n_classes must be >= 2"),
    (lambda: make_gp_classes(10, lengthscale=-1.0), "lengthscale must be positive"),
    (lambda: make_gp_classes(10, noise=-0.1), "noise must be"),
    (lambda: make_regression_1d(10, gap=(4.0, 3.0)), "gap must"),
    (lambda: make_regression_1d(10, noise_std=np.nan), "noise_std"),
])
def test_generator_argument_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------------------------------------
# loaders on the real data (skipped when absent)
# --------------------------------------------------------------------------------------------
def _check_split(split, n_train, n_test, d, labels):
    X_tr, y_tr, X_te, y_te = split
    assert X_tr.shape == (n_train, d) and X_te.shape == (n_test, d)
    assert y_tr.shape == (n_train,) and y_te.shape == (n_test,)
    assert set(np.unique(np.concatenate([y_tr, y_te])).tolist()) == set(labels)
    assert y_tr.dtype == np.int64
    assert not any(np.shares_memory(a, b) for a in split for b in split if a is not b)


@pytest.mark.data
def test_real_banana_realisations():
    require_data("raetsch_banana")
    first = load_dataset("raetsch_banana", split=0)
    _check_split(first, 400, 4900, 2, {-1, 1})
    assert first[0].dtype == np.float64
    for u, v in zip(load_dataset("banana"), first):          # alias, default = realisation 0
        np.testing.assert_array_equal(u, v)
    last = load_dataset("Banana", split=9)
    _check_split(last, 400, 4900, 2, {-1, 1})
    assert not np.array_equal(last[0], first[0])
    with pytest.raises(ValueError, match=r"split must be in 0\.\.9"):
        load_dataset("banana", split=10)
    with pytest.raises(ValueError, match="no official split"):
        load_dataset("banana", split="official")


@pytest.mark.data
def test_real_synth_official_split():
    require_data("synth")
    split = load_dataset("synth")
    _check_split(split, 250, 1000, 2, {0, 1})
    assert np.bincount(split[1]).tolist() == [125, 125]
    assert np.bincount(split[3]).tolist() == [500, 500]
    for u, v in zip(load_dataset("ripley"), split):
        np.testing.assert_array_equal(u, v)
    with pytest.raises(ValueError, match="no realisations/folds"):
        load_dataset("synth", split=0)


@pytest.mark.data
def test_real_satellite_official_and_folds():
    require_data("satellite")
    _check_split(load_dataset("satellite"), 4435, 2000, 36, range(6))
    _check_split(load_dataset("satellite", split=0), 1287, 5148, 36, range(6))
    X, y, info = load_table("satellite")
    assert X.shape == (6435, 36) and info["n_splits"] == 100 and info["official_split"]
    assert info["n_train"] == 4435 and len(info["classes"]) == 6


@pytest.mark.data
def test_real_glass_folds():
    require_data("glass")
    X, y, info = load_table("glass")
    assert info["n_splits"] == 20
    for r in range(20):
        X_tr, y_tr, X_te, y_te = load_dataset("glass", split=r)
        assert X_tr.shape == (192, 9) and X_te.shape == (22, 9)
        assert set(np.unique(np.concatenate([y_tr, y_te]))) <= set(range(6))


@pytest.mark.data
def test_real_crabs_has_no_split():
    require_data("crabs")
    with pytest.raises(ValueError, match=r"no train/test split.*load_table\('crabs'\)"):
        load_dataset("crabs")
    X, y, info = load_table("crabs")
    assert X.shape == (200, 5) and set(y.tolist()) == {-1, 1}
    assert info["n_splits"] == 0 and not info["official_split"]
    assert set(info["arrays"]) >= {"sp", "sex", "index"}
    np.testing.assert_array_equal(y, 2 * info["arrays"]["sex"] - 1)


@pytest.mark.data
def test_real_usps_and_mnist_dtypes():
    require_data("usps")
    X_tr, y_tr, X_te, y_te = load_dataset("usps")
    assert X_tr.shape == (7291, 256) and X_te.shape == (2007, 256)
    assert X_tr.dtype == np.float64                      # stored float32, returned float64
    require_data("mnist")
    X_tr, y_tr, X_te, y_te = load_dataset("mnist")
    assert X_tr.dtype == np.uint8 and X_tr.shape == (60000, 784)   # stored dtype kept
    assert X_te.shape == (10000, 784) and y_te[:5].tolist() == [7, 2, 1, 0, 4]


@pytest.mark.data
def test_real_list_and_fresh_copies():
    require_data("raetsch_heart")
    assert "raetsch_heart" in list_datasets()
    a = load_dataset("heart", split=2)
    a[0][:] = np.nan
    b = load_dataset("heart", split=2)
    assert np.all(np.isfinite(b[0]))


# --------------------------------------------------------------------------------------------
# loaders on tiny files written here (always run)
# --------------------------------------------------------------------------------------------
def _save(folder, name, info=None, **arrays):
    if info is None:
        info = {"name": name}
    if not isinstance(info, np.ndarray):
        info = np.array(json.dumps(info))
    path = Path(folder) / f"{name}.npz"
    np.savez_compressed(path, info=info, **arrays)
    return path


def _tiny_resampled(rng):
    X = rng.standard_normal((10, 3))
    y = np.array([-1, 1] * 5, dtype=np.int8)
    tr = np.array([[0, 1, 2, 3, 4, 5], [9, 8, 7, 6, 5, 4]], dtype=np.int32)
    te = np.array([[6, 7, 8, 9], [0, 1, 2, 3]], dtype=np.int32)
    return dict(X=X, y=y, train_idx=tr, test_idx=te)


def _tiny_official(rng):
    return dict(X_train=rng.standard_normal((6, 2)), y_train=np.array([0, 1, 2, 0, 1, 2], np.int8),
                X_test=rng.standard_normal((3, 2)), y_test=np.array([2, 1, 0], np.int8),
                classes=np.array([10, 20, 30]))


def test_tiny_resampled_file(tmp_path, rng):
    arrays = _tiny_resampled(rng)
    _save(tmp_path, "toy", **arrays)
    for r in range(2):
        X_tr, y_tr, X_te, y_te = load_dataset("toy", split=r, data_home=tmp_path)
        tr, te = arrays["train_idx"][r], arrays["test_idx"][r]
        np.testing.assert_array_equal(X_tr, arrays["X"][tr])
        np.testing.assert_array_equal(y_tr, arrays["y"][tr])
        np.testing.assert_array_equal(X_te, arrays["X"][te])
        np.testing.assert_array_equal(y_te, arrays["y"][te])
    default = load_dataset("toy", data_home=tmp_path)
    np.testing.assert_array_equal(default[0], arrays["X"][arrays["train_idx"][0]])
    X, y, info = load_table("toy", data_home=str(tmp_path))
    np.testing.assert_array_equal(X, arrays["X"])
    assert info["n_splits"] == 2 and info["label_values"] == [-1, 1]
    np.testing.assert_array_equal(info["arrays"]["train_idx"], arrays["train_idx"])
    for bad in (2, -1, 1.0, "first"):
        with pytest.raises(ValueError, match="split"):
            load_dataset("toy", split=bad, data_home=tmp_path)


def test_tiny_official_file_and_table(tmp_path, rng):
    arrays = _tiny_official(rng)
    _save(tmp_path, "toy3", **arrays)
    X_tr, y_tr, X_te, y_te = load_dataset("toy3", data_home=tmp_path)
    np.testing.assert_array_equal(X_tr, arrays["X_train"])
    np.testing.assert_array_equal(y_te, arrays["y_test"])
    same = load_dataset("toy3", split="official", data_home=tmp_path)
    np.testing.assert_array_equal(same[0], X_tr)
    X, y, info = load_table("toy3", data_home=tmp_path)
    np.testing.assert_array_equal(X, np.vstack([arrays["X_train"], arrays["X_test"]]))
    assert info["n_train"] == 6 and info["n_test"] == 3 and info["classes"] == [10, 20, 30]
    assert info["label_values"] == [0, 1, 2]
    assert load_dataset("toy3", data_home=tmp_path, dtype=np.float32)[0].dtype == np.float32


def test_tiny_file_with_both_layouts(tmp_path, rng):
    arrays = _tiny_official(rng)
    X = np.vstack([arrays["X_train"], arrays["X_test"]])
    y = np.concatenate([arrays["y_train"], arrays["y_test"]])
    tr = np.array([[0, 2, 4, 6, 8]], np.int32)
    te = np.array([[1, 3, 5, 7]], np.int32)
    _save(tmp_path, "both", X=X, y=y, train_idx=tr, test_idx=te, **arrays)
    assert load_dataset("both", data_home=tmp_path)[0].shape == (6, 2)       # official
    np.testing.assert_array_equal(load_dataset("both", split=0, data_home=tmp_path)[0], X[tr[0]])
    # X must be the official train rows followed by the test rows
    X_bad = X.copy()
    X_bad[0, 0] += 1.0
    _save(tmp_path, "both_bad", X=X_bad, y=y, train_idx=tr, test_idx=te, **arrays)
    with pytest.raises(ValueError, match="differ from X_train"):
        load_table("both_bad", data_home=tmp_path)


def test_uint8_inputs_keep_their_dtype(tmp_path, rng):
    arrays = _tiny_official(rng)
    arrays["X_train"] = rng.integers(0, 256, (6, 4)).astype(np.uint8)
    arrays["X_test"] = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    _save(tmp_path, "pix", **arrays)
    X_tr, _, X_te, _ = load_dataset("pix", data_home=tmp_path)
    assert X_tr.dtype == np.uint8
    np.testing.assert_array_equal(X_tr, arrays["X_train"])
    X_tr64 = load_dataset("pix", data_home=tmp_path, dtype=np.float64)[0]
    assert X_tr64.dtype == np.float64 and np.array_equal(X_tr64, arrays["X_train"])


def test_data_home_defaults(tmp_path, monkeypatch, rng):
    _save(tmp_path, "toy", **_tiny_resampled(rng))
    monkeypatch.setenv("SPARSEGP_DATA", str(tmp_path))
    assert get_data_home() == tmp_path
    assert load_dataset("toy")[0].shape == (6, 3)
    assert list_datasets() == ["toy"]
    monkeypatch.delenv("SPARSEGP_DATA")
    # the default is pooch's per-user cache folder, which follows XDG_CACHE_HOME on Linux
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert get_data_home() == Path(pooch.os_cache("sparsegp"))      # on every platform
    if sys.platform.startswith("linux"):
        assert get_data_home() == tmp_path / "cache" / "sparsegp"
    assert list_datasets() == []
    monkeypatch.setenv("SPARSEGP_DATA", "")          # empty counts as unset
    assert get_data_home() == Path(pooch.os_cache("sparsegp"))


def test_aliases_resolve_to_prefixed_files(tmp_path, rng):
    _save(tmp_path, "raetsch_breast_cancer", **_tiny_resampled(rng))
    a = load_dataset("breast-cancer", data_home=tmp_path)
    b = load_dataset("RAETSCH_BREAST_CANCER.npz", data_home=tmp_path)
    np.testing.assert_array_equal(a[0], b[0])


def test_missing_file_message_names_path_and_remedies(tmp_path):
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset("banana", data_home=tmp_path)
    assert isinstance(exc.value, FileNotFoundError)
    msg = str(exc.value)
    assert str(tmp_path / "raetsch_banana.npz") in msg
    assert "SPARSEGP_DATA" in msg and "data_home" in msg and "convert_raetsch" in msg
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_table("synth", data_home=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="bare data set name"):
        load_dataset("../synth", data_home=tmp_path)


def _corrupt_cases():
    rng = np.random.default_rng(0)
    base = _tiny_resampled(rng)
    off = _tiny_official(rng)

    def with_(d, **changes):
        out = dict(d)
        for k, v in changes.items():
            if v is None:
                out.pop(k)
            else:
                out[k] = v
        return out

    X_nan = base["X"].copy()
    X_nan[3, 1] = np.nan
    tr_out = base["train_idx"].copy()
    tr_out[0, 0] = 10
    tr_dup = base["train_idx"].copy()
    tr_dup[0, 0] = 6                                   # also in test row 0
    return [
        ("no_info", dict(base, info=None), "key 'info' is missing"),
        ("info_not_json", dict(base, info=np.array("{oops")), "not valid JSON"),
        ("info_list", dict(base, info=np.array("[1, 2]")), "must be an object"),
        ("no_y", with_(base, y=None), "key 'y' is missing"),
        ("short_y", with_(base, y=base["y"][:9]), r"'y' must have shape \(10,\)"),
        ("X_1d", with_(base, X=base["X"][:, 0]), "non-empty 2-D"),
        ("X_nan", with_(base, X=X_nan), r"NaN/inf value\(s\) in 1 row"),
        ("X_text", with_(base, X=np.array([["a"] * 3] * 10)), "must be numeric"),
        ("y_label_2", with_(base, y=np.where(base["y"] > 0, 2, -1).astype(np.int8)),
         r"label\(s\) \[2\] outside the expected set \[-1, 1\]"),
        ("y_float", with_(base, y=base["y"] * 0.5), "non-integer labels"),
        ("idx_range", with_(base, train_idx=tr_out), "outside 0..9"),
        ("idx_overlap", with_(base, train_idx=tr_dup), "repeats indices"),
        ("idx_1d", with_(base, train_idx=base["train_idx"][0]), "2-D integer array"),
        ("idx_rows", with_(base, test_idx=base["test_idx"][:1]), "same number R"),
        ("only_train_idx", with_(base, test_idx=None), "only one of"),
        ("official_incomplete", with_(off, y_test=None), "official split incomplete"),
        ("official_label", with_(off, y_test=np.array([0, 3, 1], np.int8)),
         r"label\(s\) \[3\] outside"),
        ("official_cols", with_(off, X_test=np.ones((3, 5))), "X_test has 5"),
        ("classes_2d", with_(off, classes=np.ones((3, 1))), "'classes' must be 1-D"),
        ("no_data", {"classes": off["classes"]}, "neither 'X'/'y' nor"),
    ]


@pytest.mark.parametrize("name, arrays, match", _corrupt_cases(),
                         ids=[c[0] for c in _corrupt_cases()])
def test_corrupt_files_are_refused(tmp_path, name, arrays, match):
    arrays = dict(arrays)
    info = arrays.pop("info", np.array(json.dumps({"name": name})))
    path = tmp_path / f"{name}.npz"
    if info is None:
        np.savez_compressed(path, **arrays)
    else:
        np.savez_compressed(path, info=info, **arrays)
    with pytest.raises(ValueError, match="corrupt data file") as exc:
        X_tr, *_ = load_dataset(name, data_home=tmp_path)
        if "train_idx" in arrays and "test_idx" in arrays:
            load_dataset(name, split=1, data_home=tmp_path)
        load_table(name, data_home=tmp_path)
    assert exc.match(match)
    assert str(path) in str(exc.value)


def test_not_an_npz_is_refused(tmp_path):
    (tmp_path / "junk.npz").write_bytes(b"this is not a zip archive")
    with pytest.raises(ValueError, match="corrupt data file .*junk.npz"):
        load_dataset("junk", data_home=tmp_path)
    np.save(tmp_path / "single.npy", np.ones(3))
    os.replace(tmp_path / "single.npy", tmp_path / "single.npz")
    with pytest.raises(ValueError, match="corrupt data file"):
        load_dataset("single", data_home=tmp_path)


# --------------------------------------------------------------------------------------------
# converters (round trip through the loaders)
# --------------------------------------------------------------------------------------------
def _write_asc(path, arr):
    np.savetxt(path, arr.reshape(arr.shape[0], -1), fmt="%15.7e")


def _raetsch_files(folder, name, rng, ids=(1, 2, 3)):
    # 12 rows: rows 4 and 5 have the same pattern with different labels, rows 6 and 7 are
    # identical (pattern and label), so matching must consume duplicates in order.
    X = np.round(rng.standard_normal((12, 3)), 4)
    y = np.array([1, -1, 1, -1, 1, -1, 1, 1, -1, -1, 1, -1], dtype=float)
    X[5] = X[4]
    X[7] = X[6]
    X[2, 0] = -0.0
    truth = {}
    for r in ids:
        perm = rng.permutation(12) if r != ids[0] else np.arange(12)
        tr, te = perm[:8], perm[8:]
        _write_asc(folder / f"{name}_train_data_{r}.asc", X[tr])
        _write_asc(folder / f"{name}_train_labels_{r}.asc", y[tr])
        _write_asc(folder / f"{name}_test_data_{r}.asc", X[te])
        _write_asc(folder / f"{name}_test_labels_{r}.asc", y[te])
        truth[r] = (X[tr], y[tr], X[te], y[te])
    return truth


def test_convert_raetsch_round_trip(tmp_path, rng):
    src = tmp_path / "asc"
    src.mkdir()
    truth = _raetsch_files(src, "banana", rng, ids=(1, 2, 10))
    (src / "banana_train_data_1.asc.bak").write_text("ignored")
    out = convert_raetsch(src, "banana", tmp_path / "data" / "raetsch_banana")
    assert out == tmp_path / "data" / "raetsch_banana.npz"
    for k, r in enumerate((1, 2, 10)):                 # numeric, not lexical, order
        got = load_dataset("banana", split=k, data_home=tmp_path / "data")
        for u, v in zip(got, truth[r]):
            np.testing.assert_array_equal(u, v)
    X, y, info = load_table("raetsch_banana", data_home=tmp_path / "data")
    assert X.shape == (12, 3) and info["n_splits"] == 3
    np.testing.assert_array_equal(info["arrays"]["realisation_ids"], [1, 2, 10])


@pytest.mark.data
def test_convert_raetsch_rebuilds_the_shared_heart_file(tmp_path):
    # Write the shared file's realisations back out as .asc text and convert them again:
    # the splits must come back identical (the real files have duplicates and 10 splits).
    require_data("raetsch_heart")
    ids = load_table("heart")[2]["arrays"]["realisation_ids"]
    splits = [load_dataset("heart", split=k) for k in range(len(ids))]
    for r, (X_tr, y_tr, X_te, y_te) in zip(ids, splits):
        for kind, arr in (("train_data", X_tr), ("train_labels", y_tr.astype(float)),
                          ("test_data", X_te), ("test_labels", y_te.astype(float))):
            np.savetxt(tmp_path / f"heart_{kind}_{r}.asc", arr.reshape(arr.shape[0], -1),
                       fmt="%.17g")
    convert_raetsch(tmp_path, "heart", tmp_path / "out" / "raetsch_heart.npz")
    for k in range(len(ids)):
        for u, v in zip(load_dataset("heart", split=k, data_home=tmp_path / "out"), splits[k]):
            np.testing.assert_array_equal(u, v)


def test_convert_raetsch_errors(tmp_path, rng):
    with pytest.raises(FileNotFoundError, match="no Raetsch realisation files"):
        convert_raetsch(tmp_path, "banana", tmp_path / "out.npz")
    _raetsch_files(tmp_path, "toy", rng)
    (tmp_path / "toy_test_labels_2.asc").unlink()
    with pytest.raises(FileNotFoundError, match="realisation 2 of 'toy' lacks"):
        convert_raetsch(tmp_path, "toy", tmp_path / "out.npz")
    _raetsch_files(tmp_path, "lab", rng, ids=(1,))
    _write_asc(tmp_path / "lab_test_labels_1.asc", np.array([1.0, 2.0, 1.0, -1.0]))
    with pytest.raises(ValueError, match="labels must be -1/\\+1"):
        convert_raetsch(tmp_path, "lab", tmp_path / "out.npz")
    _raetsch_files(tmp_path, "mix", rng, ids=(1, 2))
    other = np.loadtxt(tmp_path / "mix_train_data_2.asc")
    other[0, 0] += 1.0
    _write_asc(tmp_path / "mix_train_data_2.asc", other)
    with pytest.raises(ValueError, match="re-partitions of the same data"):
        convert_raetsch(tmp_path, "mix", tmp_path / "out.npz")
    assert not (tmp_path / "out.npz").exists()


LIBSVM_TRAIN = """# a comment line
3 1:0.5 3:-1.25
1 2:2   # trailing comment
2 1:1e-3 2:4 3:7

1 3:0.25
"""
LIBSVM_TEST = """2 2:1.5
3
"""


def test_convert_libsvm_round_trip(tmp_path):
    (tmp_path / "tr.txt").write_text(LIBSVM_TRAIN)
    (tmp_path / "te.txt").write_text(LIBSVM_TEST)
    out = convert_libsvm(tmp_path / "tr.txt", tmp_path / "te.txt", tmp_path / "lib.npz",
                         n_features=4)
    X_tr, y_tr, X_te, y_te = load_dataset("lib", data_home=tmp_path)
    np.testing.assert_array_equal(X_tr, [[0.5, 0, -1.25, 0], [0, 2, 0, 0],
                                         [1e-3, 4, 7, 0], [0, 0, 0.25, 0]])
    np.testing.assert_array_equal(X_te, [[0, 1.5, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(y_tr, [2, 0, 1, 0])
    np.testing.assert_array_equal(y_te, [1, 2])
    info = load_table("lib", data_home=tmp_path)[2]
    assert info["classes"] == [1, 2, 3] and out.name == "lib.npz"
    # D inferred from the largest index
    convert_libsvm(tmp_path / "tr.txt", tmp_path / "te.txt", tmp_path / "lib3.npz")
    assert load_dataset("lib3", data_home=tmp_path)[0].shape == (4, 3)


def test_convert_libsvm_binary_single_file(tmp_path):
    (tmp_path / "b.txt").write_text("+1 1:1 2:2\n-1 2:-1\n+1 1:3\n")
    convert_libsvm(tmp_path / "b.txt", out_path=tmp_path / "bin.npz")
    X, y, info = load_table("bin", data_home=tmp_path)
    np.testing.assert_array_equal(X, [[1, 2], [0, -1], [3, 0]])
    np.testing.assert_array_equal(y, [1, -1, 1])
    assert "classes" not in info and info["n_splits"] == 0
    with pytest.raises(ValueError, match="no train/test split"):
        load_dataset("bin", data_home=tmp_path)


@pytest.mark.parametrize("text, kwargs, match", [
    ("1 0:1.0\n2 1:1\n", {}, "1-based"),
    ("1 1:1 1:2\n2 1:1\n", {}, "repeated"),
    ("1 1:x\n2 1:1\n", {}, "expected 'label idx:val"),
    ("1 1:1\n1 2:1\n", {}, "at least 2 classes"),
    ("1 3:1\n2 1:1\n", {"n_features": 2}, "n_features must be an integer >= 3"),
    ("# nothing\n\n", {}, "no data lines"),
])
def test_convert_libsvm_errors(tmp_path, text, kwargs, match):
    (tmp_path / "f.txt").write_text(text)
    with pytest.raises(ValueError, match=match):
        convert_libsvm(tmp_path / "f.txt", out_path=tmp_path / "f.npz", **kwargs)
    with pytest.raises(ValueError, match="out_path is required"):
        convert_libsvm(tmp_path / "f.txt")


def test_convert_ripley_round_trip(tmp_path, rng):
    tr = np.column_stack([np.round(rng.standard_normal((8, 2)), 6), rng.integers(0, 2, 8)])
    te = np.column_stack([np.round(rng.standard_normal((5, 2)), 6), [0, 1, 0, 1, 1]])
    for path, arr in ((tmp_path / "synth.tr", tr), (tmp_path / "synth.te", te)):
        lines = ["        xs        ys yc"] + [f"{a:.6f} {b:.6f} {int(c)}" for a, b, c in arr]
        path.write_text("\n".join(lines) + "\n")
    convert_ripley(tmp_path / "synth.tr", tmp_path / "synth.te", tmp_path / "synth.npz")
    X_tr, y_tr, X_te, y_te = load_dataset("ripley", data_home=tmp_path)
    np.testing.assert_array_equal(X_tr, tr[:, :2])
    np.testing.assert_array_equal(y_tr, tr[:, 2])
    np.testing.assert_array_equal(X_te, te[:, :2])
    np.testing.assert_array_equal(y_te, [0, 1, 0, 1, 1])
    (tmp_path / "bad.te").write_text("xs ys yc\n0.1 0.2 2\n")
    with pytest.raises(ValueError, match="labels yc must be 0 or 1"):
        convert_ripley(tmp_path / "synth.tr", tmp_path / "bad.te", tmp_path / "x.npz")
    (tmp_path / "bad2.te").write_text("xs ys yc\n0.1 0.2\n")
    with pytest.raises(ValueError, match="3 columns"):
        convert_ripley(tmp_path / "synth.tr", tmp_path / "bad2.te", tmp_path / "x.npz")
