"""Fitting one binary IVM task: selection, the bias, and the hyper-parameter searches.

:func:`_fit_binary` selects an active set (:mod:`sparsegp.classification._ivm_select`) with
fixed (s2, l, v_b, b), or chooses them first by one of two searches:

* ``optimizer="lbfgs"`` interleaves selection and hyper-parameter fitting as Lawrence's
  toolbox does (notes §2.6): repeat ``max_iter`` times {select I from scratch with the
  current (s2, l, v_b); maximise the approximate marginal likelihood
  log N(m_I | 0, K_II + Pi_I^-1) over (s2, l, v_b) with I and the sites fixed}, then select
  once more with the final parameters. v_b is learnt as the toolbox learns the variance of
  its "bias" kernel (its default kernel is rbf + bias + white, all parameters optimised; the
  white variance with its near-noiseless probit, sigma2 = 1e-6, plays our probit's unit
  noise, so its model is ours up to scale): when ``kernel`` has ``ConstantKernel`` summands
  that are not "fixed"; the default kernel has none (v_b = 0). With ``learn_noise=True`` a
  refit also moves that white variance: the probit's noise relative to the kernel, after
  which (s2, v_b) are divided by it (unit noise again). Parameters a given kernel holds
  "fixed" are left out of the optimisation; its other bounds constrain the L-BFGS-B run.
  The default kernel is searched within a guard box around the data scale.
* ``optimizer="grid"``: seed 003 §4's grid search, scored by held-out NLP
  (:func:`_validation_search`).

With ``bias="fit"`` the bias is refitted after every selection (:func:`_fit_bias`).
"""
import numpy as np
from scipy import optimize, special

from .._numba import adf as _adf
from .._optimize import maximize
from .._params import (BOX_OVERRIDES, Block, Packing, bias_variance_blocks, kernel_blocks,
                       kernel_log_bounds)
from ._frequencies import judged_rows
from ._ivm_model import _finish, _marginals, _mean_nlp, approx_log_likelihood
from ._ivm_select import select_active_set

#: The IVM's ``optimizer`` names (:data:`sparsegp._validation.OPTIMIZERS`): L-BFGS-B on the
#: approximate evidence between selections, or the held-out-NLP grid; and the names they had
#: before the vocabulary was one (the objective's, not the method's), accepted for one
#: release with a ``FutureWarning``.
OPTIMIZER_NAMES = ("auto", "lbfgs", "grid")
OPTIMIZER_RENAMED = {"evidence": "lbfgs", "validation": "grid"}

#: Optimiser iterations per hyper-parameter refit of ``optimizer="lbfgs"`` (toolbox
#: kernIters).
KERNEL_ITERS = 100

#: |b| limit of the fitted probit bias (Phi(-8) ~ 6e-16).
BIAS_LIMIT = 8.0

#: Guard of ``optimizer="lbfgs"`` for the default SE kernel: l stays within these factors of the
#: data-scaled length-scale (:func:`data_lengthscale`) and s2 within this range
#: (:data:`sparsegp._params.BOX_OVERRIDES`, where the reasons are).
LENGTHSCALE_RANGE = BOX_OVERRIDES["ivm_guard_lengthscale_factor"]
VARIANCE_RANGE = BOX_OVERRIDES["ivm_guard_variance"]

#: Box of one refit's probit noise variance with ``learn_noise=True``
#: (:data:`sparsegp._params.BOX_OVERRIDES`).
NOISE_RANGE = BOX_OVERRIDES["ivm_noise"]

#: Largest s2 + v_b the rescaling of ``learn_noise=True`` may reach over the rounds: the
#: predictive variance s2 + v_b - |L^-1 S k|^2 keeps ~8 digits there.
LATENT_VARIANCE_MAX = 1e8

#: Default grid of ``optimizer="grid"``: factors applied to the start (s2, l). Scored by
#: held-out NLP, the variance ended on the old grid's top (x 16) on every digit task and on
#: breast cancer: the larger s2, the nearer the noise-free probit and the sharper the
#: probabilities. Up to x 256 the standardised-digits log loss went 0.274 -> 0.120 (EP:
#: 0.151) and breast cancer's 0.098 -> 0.066; beyond (x 4096) only to 0.103 and 0.067, for
#: ten more grid points.
VALIDATION_GRID = {"variance": (1.0, 4.0, 16.0, 64.0, 256.0),
                   "lengthscale": (0.25, 0.5, 1.0, 2.0, 4.0)}


def _fit_bias(f, A, y, bias0):
    """b maximising the predictive log likelihood of (f, A, y) with the sites held fixed.

    The objective is convex in b (log Phi is concave), so a bounded scalar search finds its
    minimum; b is kept within |b| <= BIAS_LIMIT (Phi(-8) ~ 6e-16: no task needs more).
    """
    s = np.sqrt(1.0 + A)

    def objective(b):
        return -float(np.mean(special.log_ndtr(y * (f + b) / s)))

    res = optimize.minimize_scalar(objective, bounds=(-BIAS_LIMIT, BIAS_LIMIT),
                                   method="bounded", options={"xatol": 1e-6})
    b = float(res.x)
    return b if objective(b) <= objective(bias0) else float(bias0)


class _Fitter:
    """One binary task: selection, bias fit and the out-of-active-set criterion (notes §2.6).

    The criterion is the mean negative log predictive probability of the training points
    outside the active set (their labels never enter the sites), all points when every one
    is active. Unlike the approximate marginal likelihood it is not improved by the
    degenerate limits l -> 0 or s2 -> 0: a model that predicts 1/2 everywhere scores ln 2.
    """

    def __init__(self, X, y, spec, bias_variance, fit_bias, opts, rng, label):
        self.X, self.y, self.spec = X, y, spec
        self.bias_variance, self.fit_bias = bias_variance, fit_bias
        self.rng = rng
        self.exact = opts["randomized"] is None or opts["selection"] == "random"
        self.select_kw = dict(n_active=opts["n_active"], selection=opts["selection"],
                              randomized=opts["randomized"], verbose=opts["verbose"],
                              label=label, family=spec.family)

    def run(self, variance, lengthscale, bias, score=True):
        """Select with (s2, l, b); return (state, bias after the fit, criterion).

        With ``score=False`` and no bias to fit the criterion is None: the training
        marginals it needs cost as much as the selection itself when the randomized scheme
        leaves them to eq. 5 (MNIST, d = 1 130: 21 s of a 70 s fit), and only the evidence
        search reads it.
        """
        state = select_active_set(self.X, self.y, variance, lengthscale, self.bias_variance,
                                  bias, rng=self.rng, **self.select_kw)
        if not (score or self.fit_bias):
            return state, bias, None
        f, A = _marginals(self.X, state, self.exact, variance, lengthscale,
                          self.bias_variance, self.spec.family)
        out = ~state.is_active
        if not out.any():
            out[:] = True
        if self.fit_bias:
            bias = _fit_bias(f[out], A[out], self.y[out], bias)
        return state, bias, _mean_nlp(f[out], A[out], self.y[out], bias)


def _fit_binary(X, y, spec, bias_variance, bias, fit_bias, opts, rng, label):
    """Select (and optionally optimise) one binary IVM; ``y`` in {-1, +1}.

    ``spec`` (:class:`sparsegp.kernels.StationarySpec`) gives the family and the starting
    (s2, l); its "fixed" parameters stay at their values. ``fit_bias``: b starts at ``bias``
    and is refitted after every selection (:func:`_fit_bias`).
    """
    fitter = _Fitter(X, y, spec, bias_variance, fit_bias, opts, rng, label)
    variance, lengthscale = spec.variance, spec.lengthscale.copy()
    mode = opts["optimizer"]
    packing = _hyper_packing(spec, X.shape[1], variance, lengthscale, bias_variance)
    if mode == "grid" and _kernel_free(packing):
        variance, lengthscale, n_iter = _validation_search(X, y, spec, bias_variance, bias,
                                                           fit_bias, opts, rng, label)
        mode = None
    else:
        n_iter = 0
    if mode == "lbfgs" and packing.size:
        state, variance, lengthscale, bias_variance, bias, n_iter = _evidence_search(
            fitter, X, spec, variance, lengthscale, bias, opts, rng, label)
    else:
        state, bias, _ = fitter.run(variance, lengthscale, bias, score=False)
        if fit_bias:
            # one more selection with the fitted b, so that the sites were made with it
            state, bias, _ = fitter.run(variance, lengthscale, bias, score=False)
    model = _finish(X, state, variance, lengthscale, bias_variance, bias, n_iter, spec)
    # the end-of-fit check's rows (every row of a small set, an evenly spaced sample of a
    # large one: eq. 5 costs O(d^2) a row, so on all 59 000 MNIST rows at d = 1 130 the
    # check was a fifth of the fit)
    rows = judged_rows(X.shape[0])
    f, A = _marginals(X, state, fitter.exact, variance, lengthscale, bias_variance,
                      spec.family, rows)
    model.judged_z = (f + bias) / np.sqrt(1.0 + A)
    return model


def _hyper_packing(spec, D, variance, lengthscale, bias_variance, box=None,
                   learn_noise=False):
    """The :class:`sparsegp._params.Packing` of ``[log s2, log l (D with ARD, else 1),
    log v_b]``, the vector the evidence search moves, then ``log s_n^2`` with ``learn_noise``.

    The blocks, their free entries and bounds are the kernel's
    (:func:`sparsegp._params.kernel_blocks`; ``box`` replaces its bounds, e.g.
    :func:`_evidence_box`) and its constant summands' (v_b:
    :func:`sparsegp._params.bias_variance_blocks`, no block without them); the held entries
    sit at the logs of the values given (log 0 = -inf for a v_b of 0, which is never free)
    and come back through exp, as the search always took them. The noise is boxed by
    :data:`sparsegp._params.BOX_OVERRIDES` ``["ivm_noise"]``.
    """
    blocks = (kernel_blocks(spec, D, held=(variance, lengthscale), bounds=box)
              + bias_variance_blocks(spec, held=bias_variance))
    if learn_noise:
        blocks.append(Block("log_noise", 1, log=True, bounds=np.log(NOISE_RANGE)))
    return Packing(blocks)


def _kernel_free(packing):
    """Whether the search moves any of the kernel's stationary parameters (s2, l)."""
    return packing["log_variance"].free or packing["log_lengthscale"].free


def _hyper_values(packing, theta):
    """``(s2, lengthscale (D,), v_b, values)`` at ``theta`` of :func:`_hyper_packing`."""
    v = packing.natural(theta)
    vb = float(v["log_bias_variance"][0]) if "log_bias_variance" in v else 0.0
    return float(v["log_variance"][0]), v["log_lengthscale"], vb, v


def _hyper_gradient(packing, g_variance, g_lengthscale, g_bias_variance, values,
                    g_noise=None):
    """d/d theta of :func:`_hyper_packing` from d/ds2, the per-dimension d/dl_j (D,), d/dv_b
    (and d/ds_n^2) at ``values`` (:func:`_hyper_values`)."""
    return packing.gradient({"log_variance": g_variance, "log_lengthscale": g_lengthscale,
                             "log_bias_variance": g_bias_variance, "log_noise": g_noise},
                            values)


def _evidence_box(spec, start_ls):
    """L-BFGS-B log box of the default SE kernel's evidence search, ``(variance (2,),
    lengthscale (1 or D, 2))`` for :func:`_hyper_packing`: the guard of
    :data:`LENGTHSCALE_RANGE`/:data:`VARIANCE_RANGE` around the data scale (notes §2.6: the
    degenerate limits are at the box's far side). None for a given kernel, whose own bounds
    hold."""
    if not spec.guard:
        return None
    lo, hi = np.log(LENGTHSCALE_RANGE)
    ls_lims = np.column_stack([np.log(start_ls) + lo, np.log(start_ls) + hi])
    return np.log(VARIANCE_RANGE), (ls_lims if spec.ard else ls_lims[:1])


def _rescale_box(packing):
    """Log bounds rows ``[s2, v_b]`` of :func:`_hyper_packing`'s blocks for
    :func:`_noise_rescale` (v_b's row is read only when v_b > 0, when the block exists)."""
    rows = [packing["log_variance"].rows()]
    if "log_bias_variance" in packing.slices:
        rows.append(packing["log_bias_variance"].rows())
    return np.vstack(rows)


def _noise_rescale(noise, variance, bias_variance, lims):
    """The factor ``learn_noise`` divides (s2, v_b) by: the refit's noise variance, moved the
    least so that s2 and v_b stay inside their log bounds ``lims`` (first row s2's, last
    v_b's: :func:`_rescale_box`) and s2 + v_b <= :data:`LATENT_VARIANCE_MAX`. In logs: the
    kernel's bounds may be 1e-300 and 1e300."""
    log_s2 = np.log(variance)
    lo = [np.log(variance + bias_variance) - np.log(LATENT_VARIANCE_MAX), log_s2 - lims[0, 1]]
    hi = [log_s2 - lims[0, 0]]
    if bias_variance > 0:
        lo.append(np.log(bias_variance) - lims[-1, 1])
        hi.append(np.log(bias_variance) - lims[-1, 0])
    return float(np.exp(min(max(np.log(noise), *lo), min(hi))))


def _evidence_search(fitter, X, spec, variance, lengthscale, bias, opts, rng, label):
    """Interleaved selection and approximate-likelihood steps (notes §2.6), guarded.

    Each refit moves the free entries of [log s2, log l.., log v_b] (:func:`_hyper_packing`;
    v_b with the kernel's unfixed constant summands, as the toolbox's rbf + bias kernel);
    ``fitter.bias_variance`` follows the rounds. With ``opts["learn_noise"]`` a refit also
    moves the probit noise variance s_n^2 (start 1, box :data:`NOISE_RANGE`), the toolbox's
    white-kernel variance: the sites' variances 1/p_i are their noise-free parts
    1/p_i - 1 plus s_n^2 (their unit noise, notes §2.1), and after the refit (s2, v_b) are
    divided by s_n^2 (:func:`_noise_rescale`), the same model with unit noise again.
    Returns (state, s2, l, v_b, b, rounds).
    Every round's (s2, l, v_b, b) is scored by the out-of-active-set criterion of :class:`_Fitter`
    right after its selection; the best-scoring optimised round (1..max_iter) is returned
    with its state, so a round that drifted towards a degenerate limit is not the result
    when a better one exists. For the default SE kernel the L-BFGS-B box of
    :func:`_evidence_box` keeps every round away from the limits l -> 0 and s2 -> 0.
    """
    D = X.shape[1]
    family = spec.family
    box = _evidence_box(spec, spec.data_lengthscale)
    learn_noise = opts["learn_noise"]
    best = None
    n_iter = 0
    for it in range(opts["max_iter"] + 1):
        state, new_bias, score = fitter.run(variance, lengthscale, bias)
        if opts["verbose"]:
            print(f"[{label}] round {it}: out-of-active NLP {score:.4f}, bias {new_bias:.3f}")
        # the start itself is not a candidate: "evidence" asks for fitted values (the
        # validation search is the route that may keep a start)
        vb = fitter.bias_variance
        if it > 0 and (best is None or score < best[0]):
            best = (score, state, variance, lengthscale.copy(), vb, new_bias, it)
        if it == opts["max_iter"]:
            break
        bias = new_bias
        active, p, m, _ = _adf.active_sites(state)
        keep = p > 0
        if not keep.any():
            best = best or (score, state, variance, lengthscale.copy(), vb, new_bias, it)
            break
        Xa, pa, ma = X[active[keep]], p[keep], m[keep]
        packing = _hyper_packing(spec, D, variance, lengthscale, vb, box, learn_noise)
        # noise-free parts of the site variances (>= 0 for the probit, notes §2.1)
        base = np.maximum(1.0 / pa - 1.0, 0.0)

        def evaluate(x, warm, Xa=Xa, pa=pa, ma=ma, base=base, packing=packing):
            s2, ls, vb_, values = _hyper_values(packing, x)
            noise = float(values["log_noise"][0]) if learn_noise else 1.0
            sites = 1.0 / (base + noise) if learn_noise else pa
            v, gv, gl, gvb, gn = approx_log_likelihood(Xa, sites, ma, s2, ls, vb_, True,
                                                       family)
            return v, _hyper_gradient(packing, gv, gl, gvb, values, gn), None

        theta0 = packing.pack_natural({"log_variance": variance, "log_lengthscale": lengthscale,
                                       "log_bias_variance": vb, "log_noise": 1.0})
        # a refit is one round of the alternation: its cap is the toolbox's, not max_iter
        res = maximize(evaluate, theta0, method="lbfgs", bounds=packing.bounds(),
                       max_iter=KERNEL_ITERS, progress=opts["verbose"],
                       label=f"{label} kernel", value_name="approx. log likelihood",
                       warn_at_cap=False)
        variance, lengthscale, vb, values = _hyper_values(packing, res.theta)
        noise = 1.0
        if learn_noise:
            noise = _noise_rescale(float(values["log_noise"][0]), variance, vb,
                                   _rescale_box(packing))
            variance, vb = variance / noise, vb / noise
        fitter.bias_variance = vb
        n_iter = it + 1
        if opts["verbose"]:
            print(f"[{label}] round {it + 1}/{opts['max_iter']}: approx. log likelihood "
                  f"{res.value:.4f}, variance {variance:.4g}, lengthscale "
                  f"{np.array2string(lengthscale[:4], precision=4)}, bias variance "
                  f"{vb:.4g}, noise {noise:.4g}")
    _, state, variance, lengthscale, vb, bias, kept = best
    if opts["verbose"]:
        print(f"[{label}] kept round {kept} (lowest out-of-active NLP)")
    return state, variance, lengthscale, vb, bias, n_iter


def _validation_search(X, y, spec, bias_variance, bias, fit_bias, opts, rng, label):
    """Seed 003 §4's model selection, scored by held-out NLP: the grid point whose IVM
    predicts the held-out rows best.

    A random ``validation_fraction`` of the rows is held out; for every grid point (factors
    of :data:`VALIDATION_GRID` applied to the start's free parameters, clipped to the
    kernel's bounds) an IVM is fitted on the rest and scored on the held-out rows by NLP,
    ties broken by error. Returns the chosen (s2, l) and the number of grid points tried.

    The paper minimised the error; on a held-out part of tens of rows one point moves it by
    several per cent, and a grid point whose probabilities were all near 1/2 but on the
    right side won: breast cancer (398 rows, 80 held out) chose l = 1.37 (error 0/80, NLP
    0.633) over l = 5.48 (1/80, NLP 0.082) on one split in twelve, test log loss 0.653
    instead of 0.093-0.152 (issue 49). NLP is a proper score: it ranks such near-ties by
    how well the probabilities predict.
    """
    n, D = X.shape
    grid = opts["validation_grid"]
    n_val = int(round(opts["validation_fraction"] * n))
    order = rng.permutation(n)
    val, tr = np.sort(order[:n_val]), np.sort(order[n_val:])
    if n_val < 1 or np.unique(y[tr]).size < 2:
        raise ValueError(
            f"validation_fraction={opts['validation_fraction']} leaves {n - n_val} training "
            f"and {n_val} validation rows for {label}; both parts need rows and the training "
            f"part both classes")
    Xtr, ytr, Xval, yval = X[tr], y[tr], X[val], y[val]
    sub_opts = dict(opts, n_active=min(opts["n_active"], tr.size), optimizer=None)
    _, lims = kernel_log_bounds(spec, D)
    (v_lo, v_hi), l_lo, l_hi = np.exp(lims[0]), np.exp(lims[1:, 0]), np.exp(lims[1:, 1])
    best = None
    count = 0
    for fv in (grid["variance"] if spec.free_variance else (1.0,)):
        for fl in (grid["lengthscale"] if spec.free_lengthscale else (1.0,)):
            s2 = float(np.clip(spec.variance * fv, v_lo, v_hi))
            ls = np.clip(spec.lengthscale * fl, l_lo, l_hi)
            fitter = _Fitter(Xtr, ytr, spec, bias_variance, fit_bias, sub_opts, rng, label)
            state, b, _ = fitter.run(s2, ls, bias, score=False)
            if fit_bias:
                state, b, _ = fitter.run(s2, ls, b, score=False)
            model = _finish(Xtr, state, s2, ls, bias_variance, b, 0, spec)
            mean, var = model.latent(Xval)
            err = float(np.mean(np.where(mean + b > 0, 1.0, -1.0) != yval))
            nlp = _mean_nlp(mean, var, yval, b)
            count += 1
            if opts["verbose"]:
                print(f"[{label}] validation: variance {s2:.4g}, lengthscale "
                      f"{np.array2string(ls[:4], precision=4)}: error {err:.4f}, NLP {nlp:.4f}")
            if best is None or (nlp, err) < best[0]:
                best = ((nlp, err), s2, ls.copy())
    return best[1], best[2], count

