"""The README's demo: GFITC on the xor problem of seed 000, Figure 1 (right) in miniature."""
import os
import time

import numpy as np


def run_demo(n_train=400, n_test=2000, n_inducing=4, out="sparsegp_demo.png", seed=0,
             stream=None):
    """Fit :class:`~sparsegp.GFITCClassifier` on xor data, report, and save a contour figure.

    Parameters
    ----------
    n_train, n_test : int
        Sizes of the synthetic training and test sets (``make_xor``).
    n_inducing : int
        Number of pseudo-inputs, learnt from the EP evidence.
    out : str
        Path of the PNG to write.
    seed : int
        Seed for the data and for the random initial pseudo-inputs.
    stream : file-like, optional
        Where to print the report (default: standard output).

    Returns
    -------
    dict
        ``error``, ``nlp``, ``fit_seconds``, ``log_evidence`` and ``figure`` (the path written).
    """
    from ._optimize import stopping_gain
    from .classification import GFITCClassifier
    from .datasets import make_xor
    from .inducing import init_inducing
    from .metrics import error_rate, mean_nlp
    from .plotting import plot_decision_contours
    from .plotting._mpl import pyplot

    def say(*parts):
        print(*parts, file=stream, flush=True)

    X, y = make_xor(n_train, random_state=seed)
    X_test, y_test = make_xor(n_test, random_state=seed + 1)
    say("sparsegp demo: generalized FITC classifier (seed 000) on the xor problem")
    say(f"  data      : {n_train} training / {n_test} test points in 2-D, labels -1/+1 "
        f"(Bayes error about 13%)")
    # The estimator's defaults, as a new user would call it: k-means centres as the initial
    # pseudo-inputs, one start. The same centres are recomputed here (same seed, same public
    # initialiser) only so the figure can show where the evidence moved them from.
    model = GFITCClassifier(n_inducing=n_inducing, random_state=seed)
    initial = init_inducing(X, n_inducing, model.init, np.random.default_rng(seed))
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    proba = model.predict_proba(X_test)
    error = error_rate(y_test, model.predict(X_test))
    nlp = mean_nlp(y_test, proba, classes=model.classes_)
    say(f"  model     : M = {n_inducing} pseudo-inputs (k-means start), isotropic SE kernel, EP "
        f"over the FITC prior; L-BFGS-B on the EP evidence, stopped after "
        f"{model.n_iter_} iterations once five gained under "
        f"{stopping_gain(model.tol, n_train):.2g} nats")
    say(f"  fit time  : {seconds:.2f} s (first run includes numba compilation; cached after)")
    say(f"  learnt    : variance {model.variance_:.3g}, length-scale "
        f"{np.atleast_1d(model.lengthscale_)[0]:.3g}, bias {model.bias_:.3g}, "
        f"log evidence {model.log_evidence_:.2f}")
    say(f"  test error: {error:.3f}    test NLP: {nlp:.3f}")
    ax = plot_decision_contours(model, X, y, initial_inducing=initial)
    ax.set_title(f"GFITC on xor: M = {n_inducing}, test error {error:.3f}")
    fig = ax.figure
    out = os.path.abspath(out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fig.savefig(out, dpi=120, bbox_inches="tight")
    pyplot().close(fig)
    say(f"  figure    : {out}")
    return {"error": error, "nlp": nlp, "fit_seconds": seconds,
            "log_evidence": model.log_evidence_, "figure": out}
