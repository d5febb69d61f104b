"""sparsegp against peer libraries (GPflow, GPyTorch), every fit in a fresh process.

Three tasks, each with the same data (drawn from ``--seed``) and the same start for every
library: an SE-ARD kernel, unit hyper-parameters and the inducing inputs taken from one random
subset of the training inputs.

T1  Binary xor classification (``sparsegp.datasets.make_xor``), M = 50, N = 16 000 and 4 000,
    5 000 test points. ``GFITCClassifier`` from the shared start and otherwise at its
    defaults (L-BFGS-B on the EP evidence with inexact inner EP, stopped by the training
    driver's rule: ``benchmarks/DEFAULTS.md``) against SVGP with a probit Bernoulli likelihood and a constant mean (the counterpart of GFITC's
    probit bias): GPflow's ``SVGP`` with 200 L-BFGS iterations (``gpflow.optimizers.Scipy``)
    and a GPyTorch ``ApproximateGP`` (whitened Cholesky variational distribution, learnt
    inducing inputs) with 200 full-batch Adam steps (``--adam-lr``, default 0.1). Reported:
    fit time, test error and test NLP (``sparsegp.metrics``).
T2  Regression, N = 100 000 (10 000 test points), M = 100, D = 5, ARD. ``SparseGPRegressor
    ("fitc")`` and ``("vfe")`` from the shared start and at their defaults (the stopping
    rule; FITC's inducing inputs by the VFE bound first), with ``normalize_y=False`` (y is
    drawn with unit-ish variance, so that every library fits the same model), against the
    peers' 100 L-BFGS iterations of GPflow's
    ``GPRFITC`` and ``SGPR``, all from unit variance, length-scales and noise variance.
    Reported: fit time, the objective (log marginal likelihood, VFE/SGPR: the collapsed bound)
    at the start and at the end, test RMSE, and the time of one objective + gradient
    evaluation (sparsegp: the median of three fits with ``optimizer=None``, which also builds
    the predictive caches, so an upper bound; GPflow: optimisation time / function
    evaluations). Every evaluation's objective is traced with its time (a by-product of the
    search, so no time is taken out), and a second table compares the libraries at equal
    objective: the time each first reaches the worse of the two finals, and the peer's time
    over sparsegp's there. The 100 iterations are far from converged (the objective still
    climbs by tens of nats every ten iterations) and the paths differ: GPflow optimises
    softplus-transformed parameters, sparsegp their logs, and with
    ``GPFLOW_POSITIVE_BIJECTOR=exp`` GPflow's path follows sparsegp's, so the finals at equal
    iterations are no measure of speed. ``--t2-n`` and ``--t2-max-iter`` change the size
    and the iterations (development runs), ``--t2-noise`` the noise s.d. (0.3; issue 45's
    bound on FITC's RMSE, 0.11, was written for 0.1). A third table times each library to
    the peer's final test accuracy: the first traced point at which its model has both the
    peer's final test NLP and RMSE (every evaluated point scored after the fit).
T3  Multi-class, Satellite (6 435 rows, D = 36, C = 6) when ``SPARSEGP_DATA`` holds it, as
    ``bench_gpflow_satellite`` loads it: seed 002's split 0, 1 287 training and 5 148 test rows,
    features standardised with the training statistics; otherwise a synthetic stand-in of the
    same shape drawn from the seed (``bench_multiclass.synthetic``, near chance at D = 36: a
    smoke test only); ``--t3-data satellite80`` exchanges split 0's parts (5 148 training,
    1 287 test rows), the large-N version of the task issue 25 timed on all 6 435 rows; M = 50.
    ``MultiClassEPClassifier(method="sep")``, 250 iterations, against GPflow's SVGP with the
    robust-max likelihood, 200 L-BFGS iterations, from SEP's own starting point (its initial
    length-scales and amplitudes, not unit ones: this task reuses
    ``bench_gpflow_satellite.run_sep`` / ``run_svgp``). The test NLP is recorded every
    ``--every`` iterations with the evaluation time excluded; reported: test error and NLP and
    the time-to-equal-accuracy, the training time each method needs to first reach the
    other's final test NLP. The traces score GPflow's robust-max probabilities as they come
    (their rows sum to 1 only up to quadrature error); the table's NLP, from
    ``sparsegp.metrics``, renormalises the rows first, so the two can differ in the third
    decimal.

The table's ``iters`` column counts what each optimiser counts: L-BFGS
iterations (``nit``; the JSON also has GPflow's function evaluations ``nfev``), Adam steps,
SEP iterations. The JSON rows also hold each run's final objective (GFITC: the EP log
evidence; SVGP: the ELBO, GPyTorch's before its last step), versions and the thread counts
each library reported.

Every (task, library, thread setting) runs in a fresh subprocess with the right interpreter
and prints one JSON line; the driver computes the metrics from the saved predictions and prints
a table with each peer's time over sparsegp's time measured in the same run. Thread settings:
``one`` sets OMP/OPENBLAS/MKL/NUMBA_NUM_THREADS and TF_NUM_INTRAOP/INTEROP_THREADS to 1 and
inside the child ``tf.config.threading`` intra- and inter-op to 1 and
``torch.set_num_threads(1)``; ``default`` sets nothing. Compilation is outside the timing:
sparsegp fits a small problem first; GPflow runs two L-BFGS iterations on the real model,
puts every parameter back to its start and reuses the traced function (``Scipy`` caches it per
closure and variables); GPyTorch (nothing to compile) takes two steps on a small model first.
One process per cell: on a shared machine run it more than once and take the minimum.

The peers live in virtualenvs of their own (TensorFlow pins numpy below what the main
environment needs). Commands that worked with Python 3.11 (pip's resolver picked TF 2.18,
TFP 0.25, GPflow 2.11; torch 2.13.0 CPU, GPyTorch 1.15)::

    python3.11 -m venv /work/peer_envs/gpflow
    /work/peer_envs/gpflow/bin/pip install "gpflow==2.11.*" "tensorflow~=2.18.0" \\
        "tf-keras~=2.18.0" "tensorflow-probability==0.25.*"
    python3.11 -m venv /work/peer_envs/gpytorch
    /work/peer_envs/gpytorch/bin/pip install torch==2.13.0 gpytorch

(TFP 0.25 is built against TF 2.18, hence the pin; from TF 2.16 on, TFP needs ``tf-keras``.)
Run from the repository root with the main environment::

    export SPARSEGP_DATA=/path/to/datasets                     # for T3's Satellite data
    python benchmarks/bench_peers.py --quick                   # small sizes, a smoke run
    python benchmarks/bench_peers.py --tasks T1,T2 --json out.json
    python benchmarks/bench_peers.py --gpflow-python /path/to/venv/bin/python --threads one

A peer whose interpreter or package is missing is skipped with the reason printed.
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_PYTHON = {"gpflow": "/work/peer_envs/gpflow/bin/python",
                  "gpytorch": "/work/peer_envs/gpytorch/bin/python"}
PEER_PACKAGES = {"gpflow": ("gpflow", "tensorflow", "tensorflow_probability"),
                 "gpytorch": ("torch", "gpytorch")}
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "TF_NUM_INTRAOP_THREADS",
               "TF_NUM_INTEROP_THREADS")
RESULT_TAG = "BENCH_PEERS_RESULT "

# Sizes and iteration counts; --quick keeps the models and shrinks the problems.
CONFIG = {
    "T1": dict(sizes=(16000, 4000), n_test=5000, M=50, lbfgs_iter=200, every=5,
               adam_steps=200),
    "T2": dict(N=100000, n_test=10000, D=5, M=100, max_iter=100),
    "T3": dict(M=50, sep_iter=250, lbfgs_iter=200, every=10, n_train=None),
}
QUICK = {
    "T1": dict(sizes=(1000, 400), n_test=1000, M=20, lbfgs_iter=30, every=5,
               adam_steps=30),
    "T2": dict(N=3000, n_test=1000, D=5, M=20, max_iter=15),
    "T3": dict(M=10, sep_iter=20, lbfgs_iter=20, every=5, n_train=600),
}
# (library, variant) cells of each task; the first cell with library "sparsegp" and the same
# variant is the reference of a peer's ratio (T2 compares FITC with FITC and VFE with VFE)
CELLS = {
    "T1": (("sparsegp", "gfitc"), ("gpflow", "svgp"), ("gpytorch", "svgp")),
    "T2": (("sparsegp", "fitc"), ("sparsegp", "vfe"), ("gpflow", "fitc"), ("gpflow", "vfe")),
    "T3": (("sparsegp", "sep"), ("gpflow", "svgp")),
}
REFERENCE = {"svgp": {"T1": "gfitc", "T3": "sep"}}


# ------------------------------------------------------------------------------------------
# data (driver side, main environment)

def _random_subset(X, M, seed):
    """Starting inducing inputs: M distinct training rows, the same for every library."""
    rng = np.random.default_rng(seed)
    return X[np.sort(rng.choice(X.shape[0], M, replace=False))].copy()


def make_t1(N, cfg, seed):
    from sparsegp.datasets import make_xor
    Xtr, ytr = make_xor(N, random_state=seed)
    Xte, yte = make_xor(cfg["n_test"], random_state=seed + 1)
    return dict(Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte, Z=_random_subset(Xtr, cfg["M"], seed + 2))


def make_t2(cfg, seed):
    """y = f(x) + noise with f scaled to unit variance on the sample and noise sd 0.3
    (``cfg["noise"]`` if given).

    The dimensions get decreasing weights so that ARD has something to learn; var(y) ~ 1.09
    keeps unit starting hyper-parameters sensible without normalising y.
    """
    rng = np.random.default_rng(seed)
    N, n_test, D = cfg["N"], cfg["n_test"], cfg["D"]
    X = rng.standard_normal((N + n_test, D))
    w = rng.standard_normal((D, 3)) * np.linspace(1.0, 0.1, D)[:, None]
    f = np.sin(X @ w[:, 0]) + np.cos(X @ w[:, 1]) * np.sin(X @ w[:, 2])
    f = (f - f[:N].mean()) / f[:N].std()
    y = f + cfg.get("noise", 0.3) * rng.standard_normal(N + n_test)
    Xtr, ytr = X[:N], y[:N]
    return dict(Xtr=Xtr, ytr=ytr, Xte=X[N:], yte=y[N:], Z=_random_subset(Xtr, cfg["M"], seed + 2))


def _standardised_split(X, y, n_train):
    """The first ``n_train`` rows for training, both parts scaled by the training statistics."""
    Xtr, Xte = X[:n_train], X[n_train:]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, y[:n_train], (Xte - mu) / sd, y[n_train:]


def make_t3(cfg, seed, data="auto"):
    """T3's problem: satellite split 0 (20 % for training), the same split the other way round.

    ``data``: ``"satellite"`` (seed 002's split 0: 1 287 training and 5 148 test rows),
    ``"satellite80"`` (the same split with the parts exchanged: 5 148 training rows, 1 287
    test rows, the large-N version of the task issue 25 timed on all 6 435 rows) or
    ``"auto"`` (satellite from the data folder, fetched there if missing; when it cannot be
    had, a synthetic set of satellite's shape, 1 287 of 6 435 rows for training; it is close
    to chance at D = 36, a smoke test).
    Features are standardised with the training part's statistics.
    """
    try:
        from sparsegp.datasets import load_dataset
        # fetched (issue 46) when neither SPARSEGP_DATA nor the cache has it
        Xa, ya, Xb, yb = load_dataset("satellite", split=0, download=True)
        if data == "satellite80":
            Xa, ya, Xb, yb = Xb, yb, Xa, ya
        X, y, n_train = np.vstack([Xa, Xb]), np.concatenate([ya, yb]), Xa.shape[0]
        source = "satellite split 0" + (", parts exchanged" if data == "satellite80" else "")
    except Exception as exc:                   # DatasetNotFoundError, or an unreadable file
        if data != "auto":
            raise
        from bench_multiclass import synthetic
        X, y = synthetic(6435, 6, D=36, seed=seed)
        n_train = 1287
        source = f"synthetic stand-in ({type(exc).__name__})"
    Xtr, ytr, Xte, yte = _standardised_split(X, y, n_train)
    if cfg["n_train"]:
        keep = np.random.default_rng(seed).permutation(Xtr.shape[0])[:cfg["n_train"]]
        Xtr, ytr = Xtr[np.sort(keep)], ytr[np.sort(keep)]
    return dict(Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte), source


# ------------------------------------------------------------------------------------------
# children: one fit each, in whatever interpreter the driver chose

class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def _limit_threads(lib, threads):
    """Inside the child: the library's own thread knobs (the environment is set already)."""
    if threads != "one":
        return
    if lib == "gpflow":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    elif lib == "gpytorch":
        import torch
        torch.set_num_threads(1)


def _thread_report(lib):
    info = {}
    if lib == "sparsegp":
        import numba
        info["numba_threads"] = numba.get_num_threads()
    elif lib == "gpflow":
        import tensorflow as tf
        info["tf_intra_op"] = tf.config.threading.get_intra_op_parallelism_threads()
        info["tf_inter_op"] = tf.config.threading.get_inter_op_parallelism_threads()
    elif lib == "gpytorch":
        import torch
        info["torch_threads"] = torch.get_num_threads()
    try:
        from threadpoolctl import threadpool_info
        info["blas_threads"] = sorted({p["num_threads"] for p in threadpool_info()
                                       if p["user_api"] == "blas"})
    except ImportError:                        # not every peer environment has threadpoolctl
        pass
    return info


def _versions(lib):
    if lib == "sparsegp":
        import sparsegp
        return {"sparsegp": sparsegp.__version__, "sparsegp_file": sparsegp.__file__}
    if lib == "gpflow":
        import gpflow
        import tensorflow as tf
        import tensorflow_probability as tfp
        return {"gpflow": gpflow.__version__, "tensorflow": tf.__version__,
                "tensorflow_probability": tfp.__version__}
    import gpytorch
    import torch
    return {"gpytorch": gpytorch.__version__, "torch": torch.__version__}


def _warm_up_gpflow(optimizer, model, loss):
    """Trace ``loss`` and its gradient on the real model, then restore the starting values.

    ``gpflow.optimizers.Scipy`` keeps the compiled function per (closure, variables), so the
    timed ``minimize`` with the same optimizer and closure does no tracing.
    """
    import gpflow
    initial = {k: v.numpy().copy() for k, v in gpflow.utilities.parameter_dict(model).items()}
    optimizer.minimize(loss, model.trainable_variables, options=dict(maxiter=2))
    gpflow.utilities.multiple_assign(model, initial)


def _binary_nlp(p_positive, positive):
    """Mean negative log probability of the test labels (``positive`` True for class 1),
    in numpy alone (a peer's interpreter has no sparsegp)."""
    p = np.where(positive, p_positive, 1.0 - p_positive)
    return float(-np.mean(np.log(np.maximum(p, 1e-300))))


def child_t1_sparsegp(d, cfg, variant):
    import warnings

    from sklearn.base import clone

    import sparsegp
    from sparsegp.kernels import SquaredExponential
    D = d["Xtr"].shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # one iteration does not converge
        # compile first, at the timed size (a large N runs the parallel kernels, which a
        # small warm-up would not compile): one iteration from the shared start
        sparsegp.GFITCClassifier(inducing_points=d["Z"],
                                 kernel=SquaredExponential(1.0, np.ones(D)), bias=0.0,
                                 max_iter=1, tol=None,
                                 random_state=0).fit(d["Xtr"], d["ytr"])
    # the shared start (Z, unit SE-ARD, bias 0); everything else at the defaults, which stop
    # on the training driver's rule (issue 45)
    est = sparsegp.GFITCClassifier(inducing_points=d["Z"],
                                   kernel=SquaredExponential(1.0, np.ones(D)), bias=0.0,
                                   random_state=0)
    with Timer() as t:
        est.fit(d["Xtr"], d["ytr"])
    positive = list(est.classes_).index(1)
    proba = est.predict_proba(d["Xte"])[:, positive]
    # the test NLP along the path: a fit stopped after k iterations by tol=None, max_iter=k
    # takes the first k steps of the default fit (the rule only ends the search), and its
    # own fit time is the time to get there; every cfg["every"] iterations and the last
    trace = []
    for k in sorted(set(range(cfg["every"], est.n_iter_, cfg["every"])) | {est.n_iter_}):
        part = clone(est).set_params(max_iter=k, tol=None)
        with Timer() as tk:
            part.fit(d["Xtr"], d["ytr"])
        trace.append((tk.seconds, _binary_nlp(part.predict_proba(d["Xte"])[:, positive],
                                              d["yte"] > 0)))
    return dict(seconds=t.seconds, iterations=int(est.n_iter_),
                objective=float(est.log_evidence_), objective_name="log Z_EP",
                trace=trace), dict(proba=proba)


def child_t1_gpflow(d, cfg, variant):
    import gpflow
    import tensorflow as tf
    X, Y = d["Xtr"], (d["ytr"] > 0).astype(np.float64).reshape(-1, 1)
    D = X.shape[1]

    def build(Xb, Z):
        # the probit Bernoulli likelihood (GPflow's default link) with a constant mean: the
        # model GFITC fits, p(y = 1 | f) = Phi(f + beta), up to the approximation
        return gpflow.models.SVGP(
            gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.ones(D)),
            gpflow.likelihoods.Bernoulli(), gpflow.inducing_variables.InducingPoints(Z.copy()),
            mean_function=gpflow.mean_functions.Constant(np.zeros(1)),
            num_data=Xb.shape[0])

    from bench_gpflow_satellite import Clock
    model = build(X, d["Z"])
    optimizer = gpflow.optimizers.Scipy()
    loss = model.training_loss_closure((tf.constant(X), tf.constant(Y)))
    _warm_up_gpflow(optimizer, model, loss)
    trace = []

    def record(step, variables, values):
        # the test NLP every cfg["every"] iterations, its evaluation not counted as training
        if step > 0 and step % cfg["every"] == 0:
            p = clock.evaluate(lambda: model.predict_y(d["Xte"])[0].numpy().ravel())
            trace.append((clock.now(), _binary_nlp(p, d["yte"] > 0)))

    clock = Clock()
    result = optimizer.minimize(loss, model.trainable_variables,
                                options=dict(maxiter=cfg["lbfgs_iter"]), step_callback=record)
    seconds = clock.now()
    proba = model.predict_y(d["Xte"])[0].numpy().ravel()
    trace.append((seconds, _binary_nlp(proba, d["yte"] > 0)))
    return dict(seconds=seconds, iterations=int(result.nit), nfev=int(result.nfev),
                objective=float(model.elbo((X, Y))), objective_name="ELBO",
                trace=trace), dict(proba=proba)


def _gpytorch_model(Z, D):
    import gpytorch
    import torch

    class SVGPModel(gpytorch.models.ApproximateGP):
        """Whitened SVGP: learnt inducing inputs, full-covariance q(u), constant mean."""

        def __init__(self):
            q_u = gpytorch.variational.CholeskyVariationalDistribution(Z.shape[0])
            strategy = gpytorch.variational.VariationalStrategy(
                self, torch.as_tensor(Z), q_u, learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(ard_num_dims=D))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x),
                                                             self.covar_module(x))

    model = SVGPModel().double()
    # unit starting hyper-parameters (GPyTorch's own defaults are softplus(0) ~ 0.69)
    model.covar_module.outputscale = 1.0
    model.covar_module.base_kernel.lengthscale = torch.ones(1, D, dtype=torch.float64)
    return model


def _adam(model, likelihood, X, y, steps, lr):
    import gpytorch
    import torch
    model.train()
    likelihood.train()
    optimizer = torch.optim.Adam(list(model.parameters()) + list(likelihood.parameters()),
                                 lr=lr)
    elbo = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=y.shape[0])
    value = float("nan")
    for _ in range(steps):
        optimizer.zero_grad()
        loss = -elbo(model(X), y)
        loss.backward()
        optimizer.step()
        value = -float(loss.detach())
    return value


def child_t1_gpytorch(d, cfg, variant):
    import gpytorch
    import torch
    D = d["Xtr"].shape[1]
    X = torch.as_tensor(d["Xtr"])
    y = torch.as_tensor((d["ytr"] > 0).astype(np.float64))
    lr = cfg["adam_lr"]
    # nothing to compile; two steps on a small model load the kernels and thread pools
    _adam(_gpytorch_model(d["Z"][:5], D), gpytorch.likelihoods.BernoulliLikelihood(),
          X[:200], y[:200], 2, lr)
    model = _gpytorch_model(d["Z"], D)
    likelihood = gpytorch.likelihoods.BernoulliLikelihood()   # probit link
    with Timer() as t:
        elbo = _adam(model, likelihood, X, y, cfg["adam_steps"], lr)
    model.eval()
    likelihood.eval()
    with torch.no_grad():
        proba = likelihood(model(torch.as_tensor(d["Xte"]))).mean.numpy().ravel()
    # the ELBO of VariationalELBO is per data point; times N to compare with GPflow's
    return dict(seconds=t.seconds, iterations=cfg["adam_steps"],
                objective=elbo * X.shape[0], objective_name="ELBO (before last step)"), \
        dict(proba=proba)


class _Trace(list):
    """(perf_counter, objective) of every successful evaluation, in the order they ran."""

    def add(self, value):
        self.append((time.perf_counter(), float(value)))


def _since(trace, t0):
    """The trace with times counted from ``t0`` (the start of the timed fit)."""
    return [(t - t0, v) for t, v in trace]


@contextlib.contextmanager
def _traced_sparsegp_search(points=None):
    """Record the objective of every evaluation of ``SparseGPRegressor``'s search.

    The value is what the optimiser computed anyway, so recording costs one clock read an
    evaluation and the trace needs no time taken out (T3 evaluates test NLPs and must).
    A coarse start's evaluations (the regressor's search on a subset of the rows, whose
    label says so) are of another objective, the bound on that subset, and stay out of the
    objective trace. ``points``, a list, also gets (perf_counter, copy of the point, the
    search's label) of every evaluation, coarse ones included, to score the model there
    afterwards.
    """
    from sparsegp.regression import _search
    trace, maximize = _Trace(), _search.maximize

    def traced(evaluate, *args, **kwargs):
        coarse = "coarse start" in kwargs.get("label", "")

        def evaluate_and_record(x, warm):
            out = evaluate(x, warm)
            if not coarse:
                trace.add(out[0])
            if points is not None:
                points.append((time.perf_counter(), np.array(x, copy=True),
                               kwargs.get("label", "")))
            return out
        return maximize(evaluate_and_record, *args, **kwargs)

    _search.maximize = traced
    try:
        yield trace
    finally:
        _search.maximize = maximize


def _tracing_scipy(points=None):
    """A ``gpflow.optimizers.Scipy`` that records (time, -loss) of every evaluation, and in
    ``points`` (a list, if given) (perf_counter, copy of the packed variables)."""
    import gpflow

    class TracingScipy(gpflow.optimizers.Scipy):
        def __init__(self):
            super().__init__()
            self.trace = _Trace()

        def eval_func(self, *args, **kwargs):
            func = super().eval_func(*args, **kwargs)     # compiled and cached as usual

            def recorded(x):
                loss, grad = func(x)
                if np.isfinite(loss):
                    self.trace.add(-loss)
                    if points is not None:
                        points.append((time.perf_counter(), np.array(x, copy=True)))
                return loss, grad
            return recorded

    return TracingScipy()


def child_t2_sparsegp(d, cfg, variant):
    import warnings

    import sparsegp
    from sparsegp.kernels import SquaredExponential
    D = d["Xtr"].shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # compile first, at the timed size (a large N runs the parallel kernels)
        sparsegp.SparseGPRegressor(variant, inducing_points=d["Z"], normalize_y=False,
                                   kernel=SquaredExponential(1.0, np.ones(D)), max_iter=1,
                                   tol=None, random_state=0).fit(d["Xtr"], d["ytr"])

    # the shared start (Z, unit SE-ARD, unit noise); the search at the defaults, which stop
    # on the training driver's rule (issue 45). normalize_y=False keeps the model the peers
    # fit (zero mean, y as drawn)
    def estimator(**kw):
        return sparsegp.SparseGPRegressor(
            variant, inducing_points=d["Z"], kernel=SquaredExponential(1.0, np.ones(D)),
            noise_variance=1.0, normalize_y=False, random_state=0, **kw)

    # one objective + gradient at the start, timed three times
    evals = []
    for _ in range(3):
        start = estimator(optimizer=None)
        with Timer() as t:
            start.fit(d["Xtr"], d["ytr"])
        evals.append(t.seconds)
    est = estimator()
    points = []
    with _traced_sparsegp_search(points) as trace, Timer() as t:
        est.fit(d["Xtr"], d["ytr"])
    mean, std = est.predict(d["Xte"], return_std=True)
    accuracy = _sparsegp_accuracy_trace(est, variant, d, points, t.t0)
    return dict(seconds=t.seconds, iterations=int(est.n_iter_),
                coarse_rows=int(est.coarse_rows_), accuracy_trace=accuracy,
                start_objective=float(start.log_marginal_likelihood_),
                objective=float(est.log_marginal_likelihood_),
                objective_name="ELBO" if variant == "vfe" else "log ML",
                eval_seconds=float(np.median(evals)), trace=_since(trace, t.t0),
                hypers=dict(variance=float(est.variance_),
                            lengthscale=np.atleast_1d(est.lengthscale_).tolist(),
                            noise_variance=float(est.noise_variance_))), \
        dict(mean=mean, var=std ** 2 + est.noise_variance_)


def gaussian_scores(y, mean, var):
    """(test NLP, test RMSE) of Gaussian predictions of y, in numpy alone (a peer's
    interpreter has no sparsegp)."""
    r = y - mean
    nlp = float(np.mean(0.5 * np.log(2.0 * np.pi * var) + 0.5 * r * r / var))
    return nlp, float(np.sqrt(np.mean(r * r)))


def _sparsegp_accuracy_trace(est, variant, d, points, t0):
    """(seconds, test NLP, test RMSE) of the model at every traced point of a T2 search.

    Each point is scored afterwards, outside the timed fit: the same approximation with the
    point's hyper-parameters and inducing inputs, taken to the user's units, refitted with
    ``optimizer=None`` and predicting y (noise variance added). A point of a search over the
    hyper-parameters alone (FITC's second stage) has the fit's final inducing inputs, where
    that search held them. Reads the estimator's model units, a private layout.
    """
    import warnings

    import sparsegp
    from sparsegp.kernels import SquaredExponential
    D = d["Xtr"].shape[1]
    n_theta = est.theta_.size
    out = []
    for t, x, *_ in points:
        # T2's SE-ARD kernel has no constant summand, so the bias variance (4th) is None
        s2, ls, sn2, _ = est._unpack(x[:n_theta], D)
        Z = x[n_theta:].reshape(-1, D) if x.size > n_theta else est._Z
        model = sparsegp.SparseGPRegressor(
            variant, inducing_points=est._scaling.inverse_transform(Z),
            kernel=SquaredExponential(s2, ls * est._ls_unit), noise_variance=sn2,
            normalize_y=False, optimizer=None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(d["Xtr"], d["ytr"])
        mean, std = model.predict(d["Xte"], return_std=True)
        out.append((t - t0, *gaussian_scores(d["yte"], mean, std ** 2 + sn2)))
    return out


def child_t2_gpflow(d, cfg, variant):
    import gpflow
    import tensorflow as tf
    X, Y = d["Xtr"], d["ytr"].reshape(-1, 1)
    D = X.shape[1]
    kernel = gpflow.kernels.SquaredExponential(variance=1.0, lengthscales=np.ones(D))
    Model = gpflow.models.GPRFITC if variant == "fitc" else gpflow.models.SGPR
    model = Model((tf.constant(X), tf.constant(Y)), kernel, d["Z"].copy(), noise_variance=1.0)
    start_objective = float(model.maximum_log_likelihood_objective())
    points = []
    optimizer = _tracing_scipy(points)
    loss = model.training_loss_closure()
    _warm_up_gpflow(optimizer, model, loss)
    optimizer.trace.clear()
    points.clear()
    # a check on the warm-up: the timed run must start from the shared start
    restored_objective = float(model.maximum_log_likelihood_objective())
    with Timer() as t:
        result = optimizer.minimize(loss, model.trainable_variables,
                                    options=dict(maxiter=cfg["max_iter"]))
    mean, var = (a.numpy().ravel() for a in model.predict_y(d["Xte"]))
    final = [v.numpy().copy() for v in model.trainable_variables]
    # each traced point scored afterwards, outside the timed search
    accuracy = []
    for t_point, x in points:
        values = optimizer.unpack_tensors(model.trainable_variables, tf.constant(x))
        optimizer.assign_tensors(model.trainable_variables, values)
        m, v = (a.numpy().ravel() for a in model.predict_y(d["Xte"]))
        accuracy.append((t_point - t.t0, *gaussian_scores(d["yte"], m, v)))
    optimizer.assign_tensors(model.trainable_variables, final)
    return dict(seconds=t.seconds, iterations=int(result.nit), nfev=int(result.nfev),
                accuracy_trace=accuracy,
                start_objective=start_objective, restored_objective=restored_objective,
                objective=float(model.maximum_log_likelihood_objective()),
                objective_name="ELBO" if variant == "vfe" else "log ML",
                eval_seconds=t.seconds / max(int(result.nfev), 1),
                trace=_since(optimizer.trace, t.t0),
                hypers=dict(variance=float(model.kernel.variance.numpy()),
                            lengthscale=np.atleast_1d(model.kernel.lengthscales.numpy())
                            .tolist(),
                            noise_variance=float(model.likelihood.variance.numpy()))), \
        dict(mean=mean, var=var)


def _class_index(d):
    """Labels as 0..C-1 (GPflow's multi-class likelihood wants them so)."""
    classes, ytr_i = np.unique(d["ytr"], return_inverse=True)
    return classes, ytr_i, np.searchsorted(classes, d["yte"])


def child_t3_sparsegp(d, cfg, variant):
    from bench_gpflow_satellite import run_sep
    classes, _, yte_i = _class_index(d)
    trace, start, info = run_sep(d["Xtr"], d["ytr"], d["Xte"], yte_i, cfg["M"],
                                 cfg["sep_iter"], cfg["every"], details=True)
    proba = info["model"].predict_proba(d["Xte"])
    arrays = {f"start_{i}": np.asarray(a) for i, a in enumerate(start)}
    arrays["proba"] = proba
    return dict(seconds=info["seconds"], iterations=int(info["model"].n_iter_), trace=trace,
                n_start=len(start)), arrays


def child_t3_gpflow(d, cfg, variant):
    from bench_gpflow_satellite import run_svgp
    _, ytr_i, yte_i = _class_index(d)
    start = tuple(d[f"start_{i}"] for i in range(int(d["n_start"])))
    trace, nit, info = run_svgp(d["Xtr"], ytr_i, d["Xte"], yte_i, start, cfg["lbfgs_iter"],
                                cfg["every"], warm_up=True, details=True)
    proba = info["model"].predict_y(d["Xte"])[0].numpy()
    return dict(seconds=info["seconds"], iterations=nit, nfev=info["nfev"], trace=trace), \
        dict(proba=proba)


CHILDREN = {("T1", "sparsegp"): child_t1_sparsegp, ("T1", "gpflow"): child_t1_gpflow,
            ("T1", "gpytorch"): child_t1_gpytorch, ("T2", "sparsegp"): child_t2_sparsegp,
            ("T2", "gpflow"): child_t2_gpflow, ("T3", "sparsegp"): child_t3_sparsegp,
            ("T3", "gpflow"): child_t3_gpflow}


def run_child(args):
    """Child entry point: fit once, save the predictions, print one JSON line."""
    _limit_threads(args.lib, args.threads)
    cfg = json.loads(args.config)
    with np.load(args.data) as f:
        d = {k: f[k] for k in f.files}
    result, arrays = CHILDREN[(args.task, args.lib)](d, cfg, args.variant)
    np.savez(args.out, **arrays)
    result.update(threads_seen=_thread_report(args.lib), versions=_versions(args.lib))
    print(RESULT_TAG + json.dumps(result), flush=True)


# ------------------------------------------------------------------------------------------
# driver

def _child_env(lib, threads):
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    if threads == "one":
        env.update({k: "1" for k in THREAD_VARS})
    if lib == "sparsegp":
        # this checkout's sparsegp, not whichever one the environment has installed
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    else:
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"       # TensorFlow's start-up chatter
    return env


def peer_problem(python, lib):
    """Why ``lib`` cannot run under ``python`` (None if it can): missing interpreter or package."""
    if lib == "sparsegp":
        return None
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return f"interpreter {python} not found (pass --{lib}-python)"
    probe = ("import importlib.util, sys; missing = [m for m in sys.argv[1:] "
             "if importlib.util.find_spec(m) is None]; print(' '.join(missing))")
    out = subprocess.run([python, "-c", probe, *PEER_PACKAGES[lib]], capture_output=True,
                         text=True)
    if out.returncode != 0:
        return f"{python} failed: {out.stderr.strip()[-200:]}"
    if out.stdout.strip():
        return f"{python} lacks {out.stdout.strip()}"
    return None


def launch(python, task, lib, variant, threads, data_path, out_path, cfg, timeout):
    cmd = [python, os.path.abspath(__file__), "--child", "--task", task, "--lib", lib,
           "--variant", variant, "--threads", threads, "--data", data_path, "--out", out_path,
           "--config", json.dumps(cfg)]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=_child_env(lib, threads), capture_output=True,
                             text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout} s"
    wall = time.perf_counter() - t0
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith(RESULT_TAG)]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return None, f"exit {out.returncode}: {tail[:300]}"
    result = json.loads(lines[-1][len(RESULT_TAG):])
    result["process_seconds"] = wall
    with np.load(out_path) as f:
        result["_arrays"] = {k: f[k] for k in f.files}
    return result, None


def _classification_metrics(yte, proba, classes):
    from sparsegp.metrics import error_rate, mean_nlp
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 1:                         # binary: P(y = classes[1])
        proba = np.clip(proba, 0.0, 1.0)
        pred = np.where(proba > 0.5, classes[1], classes[0])
    else:
        proba = np.clip(proba, 0.0, None)
        proba = proba / proba.sum(1, keepdims=True)   # float32-ish rounding of peers
        pred = classes[np.argmax(proba, axis=1)]
    return dict(test_error=error_rate(yte, pred), test_nlp=mean_nlp(yte, proba, classes))


def time_to_reach(trace, target):
    from bench_gpflow_satellite import time_to_reach as reach
    return reach(trace, target)


#: How far below a target objective still counts as reaching it, relative to its size: the
#: finals are recomputed after the search (sparsegp) or read back from the model (GPflow), so
#: they can differ from the traced value of the same point in the last digits.
REACH_RTOL = 1e-9


def time_to_objective(trace, target):
    """Seconds until the traced objective (maximised) first reaches ``target``; None if never.

    Parameters
    ----------
    trace : list of (seconds, objective)
        Every evaluation of a T2 search, in order (times from the start of the fit).
    target : float
    """
    floor = target - REACH_RTOL * max(1.0, abs(target))
    return next((t for t, value in trace if value >= floor), None)


def t2_equal_objective(sparse, peer):
    """Times to a common objective of a sparsegp and a peer T2 row (same variant, threads).

    The common objective is the worse of the two finals, which both searches reach; the ratio
    at it is the peer's time over sparsegp's. Each row also gets the time to the other's final
    (None when its own search ended below it).

    Returns
    -------
    dict
        ``target``, ``sparsegp_seconds``, ``peer_seconds`` and ``ratio``.
    """
    target = min(sparse["objective"], peer["objective"])
    times = [time_to_objective(row["trace"], target) for row in (sparse, peer)]
    for row, other in ((sparse, peer), (peer, sparse)):
        row["reach_other_final"] = other["objective"]
        row["time_to_reach"] = time_to_objective(row["trace"], other["objective"])
    ratio = times[1] / times[0] if None not in times and times[0] > 0 else None
    return dict(target=target, sparsegp_seconds=times[0], peer_seconds=times[1], ratio=ratio)


def time_to_accuracy(trace, nlp, rmse):
    """Seconds until a traced model first has test NLP <= ``nlp`` and RMSE <= ``rmse``.

    Parameters
    ----------
    trace : list of (seconds, NLP, RMSE)
        A T2 search's ``accuracy_trace``.
    nlp, rmse : float
        The targets; a traced value above them by up to ``REACH_RTOL`` of their size counts
        (the final model is scored apart from its traced point, with other round-off).
    """
    return next((t for t, a, b in trace
                 if a <= nlp + REACH_RTOL * abs(nlp) and b <= rmse * (1.0 + REACH_RTOL)),
                None)


def t2_equal_accuracy(sparse, peer):
    """Times to the peer's final test accuracy (NLP and RMSE both) of a T2 pair.

    The peer's time is the first traced point at which it has its own final accuracy;
    sparsegp's is the first at which it is as accurate as that; the ratio is the first over
    the second (issue 45's measure). Each row also gets the time to the other's final.

    Returns
    -------
    dict
        ``nlp``, ``rmse`` (the peer's final), ``sparsegp_seconds``, ``peer_seconds`` and
        ``ratio``.
    """
    target = (peer["test_nlp"], peer["test_rmse"])
    times = [time_to_accuracy(row["accuracy_trace"], *target) for row in (sparse, peer)]
    for row, other in ((sparse, peer), (peer, sparse)):
        row["reach_other_final_accuracy"] = (other["test_nlp"], other["test_rmse"])
        row["time_to_reach_accuracy"] = time_to_accuracy(
            row["accuracy_trace"], other["test_nlp"], other["test_rmse"])
    ratio = times[1] / times[0] if None not in times and times[0] > 0 else None
    return dict(nlp=target[0], rmse=target[1], sparsegp_seconds=times[0],
                peer_seconds=times[1], ratio=ratio)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="T1,T2,T3", help="comma-separated: T1, T2, T3")
    parser.add_argument("--libs", default="sparsegp,gpflow,gpytorch",
                        help="comma-separated libraries to run")
    parser.add_argument("--threads", default="one,default",
                        help="thread settings: one, default or both (comma-separated)")
    parser.add_argument("--quick", action="store_true", help="small problems, a smoke run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--adam-lr", type=float, default=0.1, help="GPyTorch's Adam step")
    parser.add_argument("--gpflow-python", default=DEFAULT_PYTHON["gpflow"])
    parser.add_argument("--gpytorch-python", default=DEFAULT_PYTHON["gpytorch"])
    parser.add_argument("--t2-n", type=int, default=0,
                        help="T2's training size instead of the config's (development runs)")
    parser.add_argument("--t2-max-iter", type=int, default=0,
                        help="the peers' T2 L-BFGS iterations instead of the config's")
    parser.add_argument("--t2-noise", type=float, default=0.0,
                        help="T2's noise standard deviation instead of 0.3 (issue 45's FITC "
                             "RMSE bound of 0.11 was written for 0.1)")
    parser.add_argument("--t3-data", default="auto",
                        choices=("auto", "satellite", "satellite80"),
                        help="T3's data: satellite split 0 (1 287 training rows), the same "
                             "split with its parts exchanged (5 148 training rows), or auto "
                             "(satellite when SPARSEGP_DATA has it, else synthetic)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per child")
    parser.add_argument("--json", default="", help="also write every row to this file")
    # child mode (internal)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for name in ("task", "lib", "variant", "data", "out", "config"):
        parser.add_argument(f"--{name}", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.threads = args.threads if args.threads in ("one", "default") else "default"
        return run_child(args)

    # the driver's data and metrics come from this checkout's sparsegp too
    sys.path.insert(0, ROOT)
    tasks = [t.strip().upper() for t in args.tasks.split(",") if t.strip()]
    libs = {x.strip() for x in args.libs.split(",") if x.strip()}
    settings = [s.strip() for s in args.threads.split(",") if s.strip()]
    unknown = (set(tasks) - set(CONFIG)) | (set(settings) - {"one", "default"})
    if unknown:
        parser.error(f"unknown task or thread setting: {sorted(unknown)}")
    config = QUICK if args.quick else CONFIG
    pythons = {"sparsegp": sys.executable, "gpflow": args.gpflow_python,
               "gpytorch": args.gpytorch_python}
    problems = {lib: peer_problem(pythons[lib], lib) for lib in libs}
    for lib, why in problems.items():
        if why:
            print(f"skipping {lib}: {why}", flush=True)

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_peers_") as tmp:
        for task in tasks:
            cfg = dict(config[task], adam_lr=args.adam_lr)
            if task == "T2":
                cfg.update({k: v for k, v in (("N", args.t2_n), ("max_iter", args.t2_max_iter),
                                              ("noise", args.t2_noise)) if v})
            if task == "T1":
                problems_ = [(f"N={N}", make_t1(N, cfg, args.seed)) for N in cfg["sizes"]]
            elif task == "T2":
                problems_ = [(f"N={cfg['N']}", make_t2(cfg, args.seed))]
            else:
                data, source = make_t3(cfg, args.seed, args.t3_data)
                print(f"T3 data: {source}, N = {data['Xtr'].shape[0]}", flush=True)
                problems_ = [(f"N={data['Xtr'].shape[0]}", data)]
            for size, data in problems_:
                data_path = os.path.join(tmp, f"{task}_{size}.npz")
                np.savez(data_path, **data)
                for threads in settings:
                    rows.extend(run_cells(task, size, data, data_path, threads, cfg, libs,
                                          problems, pythons, tmp, args.timeout))
    print_table(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(quick=args.quick, seed=args.seed, config=config, rows=rows), fh,
                      indent=1)
        print(f"wrote {args.json}")


def run_cells(task, size, data, data_path, threads, cfg, libs, problems, pythons, tmp,
              timeout):
    """Every library of ``task`` on one problem at one thread setting; rows for the table."""
    rows, done = [], {}
    for lib, variant in CELLS[task]:
        if lib not in libs or problems.get(lib):
            continue
        path = data_path
        if task == "T3" and lib != "sparsegp":
            # GPflow starts where SEP started: the start comes out of SEP's process
            sep = done.get(("sparsegp", "sep"))
            if sep is None:
                print(f"{task} {size} {threads}: {lib} skipped, SEP's start is not available",
                      flush=True)
                continue
            path = os.path.join(tmp, f"{task}_{size}_{threads}_start.npz")
            starts = {k: v for k, v in sep["_arrays"].items() if k.startswith("start_")}
            np.savez(path, **data, **starts, n_start=sep["n_start"])
        out_path = os.path.join(tmp, f"{task}_{size}_{lib}_{variant}_{threads}_out.npz")
        print(f"{task} {size} {lib}/{variant} threads={threads} ...", end=" ", flush=True)
        result, error = launch(pythons[lib], task, lib, variant, threads, path, out_path,
                               cfg, timeout)
        if error:
            print(f"failed: {error}", flush=True)
            continue
        print(f"{result['seconds']:.2f} s", flush=True)
        arrays = result.pop("_arrays")
        if task == "T2":
            result["test_nlp"], result["test_rmse"] = gaussian_scores(
                data["yte"], arrays["mean"], arrays["var"])
        else:
            classes = np.unique(data["ytr"])
            result.update(_classification_metrics(data["yte"], arrays["proba"], classes))
        result.update(task=task, size=size, lib=lib, variant=variant, threads=threads)
        done[(lib, variant)] = dict(result, _arrays=arrays)
        rows.append(result)
    # ratios to sparsegp in the same run, same problem, same thread setting
    for row in rows:
        ref_variant = REFERENCE.get(row["variant"], {}).get(task, row["variant"])
        ref = done.get(("sparsegp", ref_variant))
        row["ratio"] = row["seconds"] / ref["seconds"] if ref else None
    # T1 and T3: each library's time to first reach the other's final test NLP (traced)
    ours = done.get(("sparsegp", {"T1": "gfitc", "T3": "sep"}.get(task)))
    peer = done.get(("gpflow", "svgp"))
    if task in ("T1", "T3") and ours is not None and peer is not None:
        ours_final, peer_final = ours["trace"][-1][1], peer["trace"][-1][1]
        for row in rows:
            if row["lib"] not in ("sparsegp", "gpflow"):
                continue
            mine, other = ((ours, peer_final) if row["lib"] == "sparsegp" else
                           (peer, ours_final))
            row["reach_other_final_nlp"] = other
            row["time_to_reach"] = time_to_reach(mine["trace"], other)
    if task == "T2":
        ours = {row["variant"]: row for row in rows if row["lib"] == "sparsegp"}
        for row in rows:
            if row["lib"] != "sparsegp" and row["variant"] in ours:
                row["equal_objective"] = t2_equal_objective(ours[row["variant"]], row)
                row["equal_accuracy"] = t2_equal_accuracy(ours[row["variant"]], row)
    return rows


def _fmt(x, spec):
    """``format(x, spec)``, or a dash as wide as the spec's width when x is missing."""
    width = int("".join(c for c in spec.split(".")[0] if c.isdigit()) or 0)
    return "-".rjust(width) if x is None else format(x, spec)


def _reach(value, seconds, spec):
    """The table's "reaches other's final" note."""
    return (f"  reaches other's final {format(value, spec)}: "
            + (f"{seconds:.1f} s" if seconds is not None else "never"))


def print_table(rows):
    if not rows:
        print("no results")
        return
    print()
    header = (f"{'task':4s} {'size':8s} {'library':16s} {'threads':7s} {'fit s':>8s} "
              f"{'/sparsegp':>9s} {'iters':>5s}  quality")
    print(header)
    print("-" * len(header))
    for r in rows:
        if r["task"] == "T2":
            quality = (f"NLP {r['test_nlp']:.4f} RMSE {r['test_rmse']:.4f}  {r['objective_name']} "
                       f"{r['start_objective']:.1f} -> {r['objective']:.1f}  "
                       f"eval {_fmt(r.get('eval_seconds'), '.3f')} s")
            if "reach_other_final" in r:
                quality += _reach(r["reach_other_final"], r["time_to_reach"], ".1f")
        else:
            quality = f"error {r['test_error']:.4f}  NLP {r['test_nlp']:.4f}"
            if "reach_other_final_nlp" in r:
                quality += _reach(r["reach_other_final_nlp"], r["time_to_reach"], ".4f")
        print(f"{r['task']:4s} {r['size']:8s} {r['lib'] + '/' + r['variant']:16s} "
              f"{r['threads']:7s} {r['seconds']:8.2f} {_fmt(r['ratio'], '9.2f')} "
              f"{r['iterations']:5d}  {quality}")
    print_t2_tables(rows)


#: T2's comparison tables: (row key, title, target columns as (heading, width, format, key))
T2_TABLES = (
    ("equal_objective", "T2 at equal objective: the worse final of each pair, and the fit time "
     "of the first evaluation reaching it", (("objective", 10, ".1f", "target"),)),
    ("equal_accuracy", "T2 at equal accuracy: the peer's final test NLP and RMSE, and the fit "
     "time at which each library's traced model first has both",
     (("NLP", 7, ".4f", "nlp"), ("RMSE", 7, ".4f", "rmse"))),
)


def print_t2_tables(rows):
    """T2's pair tables (:data:`T2_TABLES`): the target, each library's time to it, the ratio."""
    for key, title, targets in T2_TABLES:
        pairs = [r for r in rows if key in r]
        if not pairs:
            continue
        print()
        print(title)
        header = (f"{'size':8s} {'variant':7s} {'threads':7s} {'peer':8s} "
                  + "".join(f"{name:>{width}s} " for name, width, _, _ in targets)
                  + f"{'sparsegp s':>10s} {'peer s':>8s} {'peer/sparsegp':>13s}")
        print(header)
        print("-" * len(header))
        for r in pairs:
            e = r[key]
            print(f"{r['size']:8s} {r['variant']:7s} {r['threads']:7s} {r['lib']:8s} "
                  + "".join(f"{e[field]:{width}{spec}} " for _, width, spec, field in targets)
                  + f"{_fmt(e['sparsegp_seconds'], '10.2f')} {_fmt(e['peer_seconds'], '8.2f')} "
                  f"{_fmt(e['ratio'], '13.2f')}")


if __name__ == "__main__":
    main()
