"""SEP against GPflow's SVGP (robust-max likelihood) on seed 002's Satellite split (issue 13).

Both models get the same split (authors' split 0, features standardised with the training
statistics), the same M inducing points per class and the same starting point: SEP's own
initial length-scales, amplitudes and inducing inputs (the paper's M training rows per class
drawn at random, ``init="random"``), drawn with ``random_state=0``. SEP runs its 250 batch
iterations at the library defaults; SVGP (GPflow's defaults: whitened, robust-max
``MultiClass`` likelihood, one SE-ARD kernel and inducing set per class) runs full-batch L-BFGS
through ``gpflow.optimizers.Scipy`` for up to 250 iterations.

Every ``--every`` iterations each run's test NLL is recorded against its training time, the
evaluation itself excluded. Printed: each trace, the final NLLs, and the training time each
method needs to reach the other's final test NLL. Needs the ``bench`` extra (gpflow)::

    SPARSEGP_DATA=... python benchmarks/bench_gpflow_satellite.py [--M 100] [--json out.json]

GPflow's TensorFlow thread pools keep spinning after its run, so SEP runs first.
"""
import argparse
import json
import time
import warnings

import numpy as np

from bench_multiclass import standardised_satellite


class Clock:
    """Training time with the evaluations taken out."""

    def __init__(self):
        self.start = time.perf_counter()
        self.paused = 0.0

    def now(self):
        return time.perf_counter() - self.start - self.paused

    def evaluate(self, fn):
        t = time.perf_counter()
        value = fn()
        self.paused += time.perf_counter() - t
        return value


def test_nll(proba, y):
    return float(-np.mean(np.log(np.maximum(proba[np.arange(y.size), y], 1e-300))))


def run_sep(Xtr, ytr, Xte, yte, M, max_iter, every, details=False):
    """SEP's trace and its initial parameters (the shared starting point).

    With ``details=True`` a third item is returned: a dict with the fitted ``model`` and
    ``seconds``, the training time of the whole fit with the evaluations taken out (the trace
    ends at the last callback, slightly before ``fit`` returns).
    """
    import sparsegp
    # init="random": seed 002's start, M training rows drawn at random for each class
    est = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, init="random",
                                          max_iter=max_iter, random_state=0)
    # the start SEP will use, drawn exactly as its fit draws it (a benchmark may look inside)
    Xc, _, _, classes, y_idx, *_ = est._validate(Xtr, ytr)
    start = est._initial_parameters(Xc, y_idx, classes.size, est._check_random_state())
    # compile outside the timing: two iterations at the timed shapes, since which compiled
    # paths a fit takes depends on N x M x D x C (the stacked-GEMM kernel above a work
    # threshold), and a 200-row warm-up left 14 s of compilation inside a cold-cache timing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                         # 2 iterations: max_iter
        warm = sparsegp.MultiClassEPClassifier(method="sep", n_inducing=M, init="random",
                                               max_iter=2, random_state=0).fit(Xtr, ytr)
    warm.predict_proba(Xte)
    trace = []

    def record(model, iteration):
        if iteration % every == 0 or iteration == max_iter - 1:
            nll = clock.evaluate(lambda: test_nll(model.predict_proba(Xte), yte))
            trace.append((clock.now(), nll))

    est.set_params(callback=record)
    clock = Clock()
    est.fit(Xtr, ytr)
    if details:
        return trace, start, dict(model=est, seconds=clock.now())
    return trace, start


def run_svgp(Xtr, ytr, Xte, yte, start, max_iter, every, warm_up=False, details=False):
    """SVGP's trace and its L-BFGS iteration count, from SEP's ``start``.

    ``warm_up=True`` traces TensorFlow's loss-and-gradient function before the clock starts:
    two L-BFGS iterations, then every parameter is put back to its starting value, and the
    timed run reuses the compiled function (``gpflow.optimizers.Scipy`` caches it per closure
    and variables). Without it the tracing is inside the first trace interval. ``details=True``
    adds a third item: a dict with the ``model``, ``seconds`` (training time, evaluations
    excluded) and the optimiser's function evaluations ``nfev``.
    """
    import gpflow
    import tensorflow as tf
    variance, _, lengthscale, Z = start
    C = Z.shape[0]
    kernel = gpflow.kernels.SeparateIndependent(
        [gpflow.kernels.SquaredExponential(variance=float(variance[c]),
                                           lengthscales=lengthscale[c].copy())
         for c in range(C)])
    inducing = gpflow.inducing_variables.SeparateIndependentInducingVariables(
        [gpflow.inducing_variables.InducingPoints(Z[c].copy()) for c in range(C)])
    model = gpflow.models.SVGP(kernel, gpflow.likelihoods.MultiClass(C), inducing,
                               num_latent_gps=C)
    data = (tf.constant(Xtr), tf.constant(ytr.reshape(-1, 1).astype(np.float64)))
    trace = []

    def record(step, variables, values):
        if step % every == 0:
            proba = clock.evaluate(lambda: model.predict_y(Xte)[0].numpy())
            trace.append((clock.now(), test_nll(proba, yte)))

    optimizer = gpflow.optimizers.Scipy()
    loss = model.training_loss_closure(data)
    if warm_up:
        initial = {k: v.numpy().copy()
                   for k, v in gpflow.utilities.parameter_dict(model).items()}
        optimizer.minimize(loss, model.trainable_variables, options=dict(maxiter=2))
        gpflow.utilities.multiple_assign(model, initial)
    clock = Clock()
    result = optimizer.minimize(loss, model.trainable_variables,
                                options=dict(maxiter=max_iter), step_callback=record)
    seconds = clock.now()
    proba = model.predict_y(Xte)[0].numpy()
    trace.append((seconds, test_nll(proba, yte)))      # the final evaluation is not training
    if details:
        return trace, int(result.nit), dict(model=model, seconds=seconds, nfev=int(result.nfev))
    return trace, int(result.nit)


def time_to_reach(trace, target):
    for t, nll in trace:
        if nll <= target:
            return t
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--M", type=int, default=100)
    parser.add_argument("--max-iter", type=int, default=250)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    Xtr, ytr, Xte, yte = standardised_satellite(args.fold)
    # GPflow wants labels 0..C-1
    classes, ytr_i = np.unique(ytr, return_inverse=True)
    yte_i = np.searchsorted(classes, yte)

    sep, start = run_sep(Xtr, ytr, Xte, yte_i, args.M, args.max_iter, args.every)
    svgp, nit = run_svgp(Xtr, ytr_i, Xte, yte_i, start, args.max_iter, args.every)
    for name, trace in (("SEP", sep), ("SVGP", svgp)):
        print(f"{name:5s} " + "  ".join(f"{t:6.1f}s:{nll:.4f}" for t, nll in trace))
    sep_final, svgp_final = sep[-1][1], svgp[-1][1]
    print(f"SEP  ({args.max_iter} iterations): final test NLL {sep_final:.4f} after "
          f"{sep[-1][0]:.1f} s")
    print(f"SVGP ({nit} L-BFGS iterations): final test NLL {svgp_final:.4f} after "
          f"{svgp[-1][0]:.1f} s")
    for name, trace, target, other in (("SVGP", svgp, sep_final, "SEP"),
                                       ("SEP", sep, svgp_final, "SVGP")):
        t = time_to_reach(trace, target)
        reached = f"{t:.1f} s" if t is not None else "never"
        print(f"{name} reaches {other}'s final NLL {target:.4f}: {reached}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(M=args.M, fold=args.fold, sep=sep, svgp=svgp, svgp_iterations=nit),
                      fh, indent=1)


if __name__ == "__main__":
    main()
