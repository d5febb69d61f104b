"""One meaning per public name (issue 48 item 4): ``optimizer`` takes one vocabulary, whose
per-estimator names are README's table; old spellings still fit, with a ``FutureWarning``."""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import sparsegp
from sparsegp._validation import OPTIMIZERS

README = Path(__file__).resolve().parents[1] / "README.md"

ESTIMATORS = ["EPClassifier", "GFITCClassifier", "IVMClassifier", "StagewiseGPClassifier",
              "MultiClassEPClassifier", "MultiClassGFITCClassifier",
              "MultiClassSVGPClassifier", "SparseGPRegressor"]


def _data(n=40, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.arange(n) % n_classes


def _readme_optimizer_names():
    """``{estimator: names}`` from README's table "optimizer and max_iter per estimator":
    the quoted names of its second column (None left out), before any "; " remark."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("#### `optimizer` and `max_iter` per estimator"):]
    out = {}
    table = section[section.index("\n|"):]
    for line in table[:table.index("\n\n")].split("\n"):
        m = re.match(r"\| `(\w+)` \| ([^|]*) \|", line)
        if m:
            out[m.group(1)] = re.findall(r'`"([\w-]+)"`', m.group(2).split(";")[0])
    return out


@pytest.mark.parametrize("name", ESTIMATORS)
def test_optimizer_names_are_the_readme_table_and_one_vocabulary(name):
    # an unknown name is refused before any work, and the message lists the names taken
    X, y = _data()
    with pytest.raises(ValueError, match="optimizer must be one of") as err:
        getattr(sparsegp, name)(optimizer="lbfgsb").fit(X, y)
    taken = re.findall(r"'([\w-]+)'", str(err.value).split(";")[0])
    assert "None" in str(err.value)
    assert set(taken) <= set(OPTIMIZERS), (name, taken)
    assert sorted(taken) == sorted(_readme_optimizer_names()[name]), (name, taken)
    # the default is a name of the vocabulary, listed first in README's row
    default = getattr(sparsegp, name)().optimizer
    assert default == _readme_optimizer_names()[name][0]


@pytest.mark.filterwarnings("ignore::sparsegp.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name, kw, old, new", [
    ("IVMClassifier", dict(n_active=10, max_iter=2), "evidence", "lbfgs"),
    ("IVMClassifier", dict(n_active=10), "validation", "grid"),
    ("EPClassifier", dict(max_iter=3), "l-bfgs-b", "lbfgs"),
    ("GFITCClassifier", dict(n_inducing=3, max_iter=3), "l-bfgs-b", "lbfgs"),
    ("StagewiseGPClassifier", dict(d_max=5, max_iter=2), "l-bfgs-b", "lbfgs"),
])
def test_old_optimizer_spellings_warn_and_fit_as_the_new(name, kw, old, new):
    X, y = _data(60)
    cls = getattr(sparsegp, name)
    with pytest.warns(FutureWarning, match=f"optimizer='{old}' is now spelt "
                                           f"optimizer='{new}'"):
        was = cls(optimizer=old, random_state=0, **kw).fit(X, y)
    now = cls(optimizer=new, random_state=0, **kw).fit(X, y)
    assert was.optimizer == old                         # the argument is left as given
    np.testing.assert_array_equal(was.log_marginal_likelihood_value_,
                                  now.log_marginal_likelihood_value_)
    np.testing.assert_array_equal(was.predict_proba(X), now.predict_proba(X))


MULTICLASS = ["MultiClassEPClassifier", "MultiClassGFITCClassifier", "MultiClassSVGPClassifier"]


@pytest.mark.parametrize("name", MULTICLASS)
def test_old_noise_names_fit_as_the_latent_ones_with_a_future_warning(name):
    # the multi-class noise is on the latent functions, not on the labels: renamed from
    # noise_variance, which stays the regressor's observation noise
    X, y = _data(60, n_classes=3)
    cls = getattr(sparsegp, name)
    kw = dict(n_inducing=4, max_iter=3, random_state=0)
    with pytest.warns(FutureWarning) as seen:
        was = cls(noise_variance=0.5, noise_variance_bounds=(0.1, 2.0), **kw).fit(X, y)
    messages = " ".join(str(w.message) for w in seen)
    assert "noise_variance is renamed latent_noise_variance" in messages
    assert "noise_variance_bounds is renamed latent_noise_variance_bounds" in messages
    now = cls(latent_noise_variance=0.5, latent_noise_variance_bounds=(0.1, 2.0), **kw).fit(X, y)
    np.testing.assert_array_equal(was.noise_, now.noise_)
    np.testing.assert_array_equal(was.predict_proba(X), now.predict_proba(X))
    # the old names are parameters while they last: get_params, set_params and clone keep them
    params = clone(was).get_params()
    assert params["noise_variance"] == 0.5 and params["noise_variance_bounds"] == (0.1, 2.0)
    assert cls().get_params()["noise_variance"] == "deprecated"
    assert cls().set_params(noise_variance=0.3).noise_variance == 0.3


@pytest.mark.parametrize("name", MULTICLASS)
def test_the_new_names_fit_without_a_warning_and_errors_name_the_argument_given(name):
    X, y = _data(60, n_classes=3)
    cls = getattr(sparsegp, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        cls(n_inducing=4, max_iter=2, latent_noise_variance=0.5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="give only latent_noise_variance"):
        cls(noise_variance=0.5, latent_noise_variance=0.3).fit(X, y)
    with pytest.raises(ValueError, match="latent_noise_variance_bounds must be None"):
        cls(latent_noise_variance_bounds=(2.0, 1.0)).fit(X, y)
    with pytest.raises(ValueError, match="^noise_variance_bounds must be None"), \
            pytest.warns(FutureWarning):
        cls(noise_variance_bounds=(2.0, 1.0)).fit(X, y)


# -- init: the inducing inputs' start -----------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
INIT_MD = ROOT / "benchmarks" / "INIT.md"


def _init_md_defaults():
    """``{estimator: default init}`` from the table "The defaults" of ``benchmarks/INIT.md``."""
    text = INIT_MD.read_text(encoding="utf-8")
    section = text[text.index("## The defaults"):]
    table = section[section.index("\n|"):]
    out = {}
    for line in table[:table.index("\n\n")].split("\n"):
        m = re.match(r'\| `(\w+)` \| `"(\w+)"` \|', line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_init_defaults_are_the_measured_ones_in_one_vocabulary():
    # issue 48 item 4: one start everywhere if one wins by measurement; benchmarks/INIT.md
    # holds the measurement, and its table is what every estimator with an init defaults to
    from inspect import signature
    with_init = [name for name in ESTIMATORS
                 if "init" in signature(getattr(sparsegp, name)).parameters]
    table = _init_md_defaults()
    assert sorted(with_init) == sorted(table)
    for name in with_init:
        cls = getattr(sparsegp, name)
        assert cls().init == table[name], name
        # the two candidates the measurement compared mean the same in every estimator
        assert {"random", "kmeans"} <= set(cls._inits), name


#: seed 002's experiments: its inducing inputs "are chosen at random from the training
#: instances", so their constructions pass init="random" (the paper's protocol, whatever the
#: default)
SEED002_SCRIPTS = sorted(ROOT.glob("figures/multiclass_*.py")) + [
    ROOT / "benchmarks" / name for name in ("authors_multiclass.py", "bench_multiclass.py",
                                            "bench_gpflow_satellite.py")]


def _inducing_draws(path):
    """``(pinned, unpinned)`` line numbers of the calls and dicts in ``path`` that set
    ``n_inducing`` (so that the estimator draws its inducing inputs by ``init``): pinned when
    they pass ``init="random"``. One that spreads another dict (``**kw``) inherits its init,
    checked where that dict is written, and counts as neither."""
    import ast
    pinned, unpinned = [], []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            items = {k.arg: k.value for k in node.keywords}
        elif isinstance(node, ast.Dict):
            items = {(k.value if isinstance(k, ast.Constant) else "?") if k is not None
                     else None: v for k, v in zip(node.keys, node.values, strict=True)}
        else:
            continue
        if "n_inducing" not in items:
            continue
        init = items.get("init")
        if isinstance(init, ast.Constant) and init.value == "random":
            pinned.append(node.lineno)
        elif None not in items:
            unpinned.append(node.lineno)
    return pinned, unpinned


@pytest.mark.parametrize("path", SEED002_SCRIPTS, ids=lambda p: p.name)
def test_seed002_experiments_draw_the_papers_random_start(path):
    pinned, unpinned = _inducing_draws(path)
    assert unpinned == [], f"{path.name}: lines {unpinned} draw Z by the default init"
    if path.name in ("multiclass_fig1_schedules.py", "multiclass_fig7_vi_bound.py",
                     "authors_multiclass.py", "bench_multiclass.py",
                     "bench_gpflow_satellite.py"):
        assert pinned                       # the scan saw the draws these scripts make


@pytest.mark.parametrize("method", ["ep", "sep", "gfitc", "vi"])
def test_the_grid_runner_starts_seed002_methods_at_random_training_rows(method):
    from sparsegp.experiments.grid import Cell, build_estimator
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), np.arange(50) % 3
    est = build_estimator(Cell("wine", 0, method, {}, 0.1), X, y)
    assert est.init == "random"
    Z = np.asarray(est.inducing_points)
    assert Z.shape == (3, 5, 3)
    # every start row is a training row, as the paper's protocol draws them
    assert all(np.any(np.all(X == z, axis=1)) for z in Z.reshape(-1, 3))
