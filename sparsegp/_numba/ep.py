"""The EP site leaf: the scalar algebra of one Gaussian site, shared by every EP/ADF engine.

A site is exp(-tau f^2 / 2 + nu f) on one latent f (natural parameters ``tau``, ``nu``). Given
the posterior marginal N(f | mu, v) that includes the site, one update is

1. :func:`cavity` -- remove the site: N(mu_c, v_c) with 1/v_c = 1/v - tau,
   mu_c / v_c = mu / v - nu, written as v_c = v / (1 - tau v), mu_c = (mu - nu v) / (1 - tau v)
   (no 1/v, which overflows for tiny v; the 1 - tau v form of notes multiclass §8.1);
2. tilted moments of the likelihood against the cavity -- not here: they live beside the
   likelihood in :mod:`sparsegp._numba.probit` (alpha = d log Z / d mu_c and
   nu_hat = -d^2 log Z / d mu_c^2);
3. :func:`site_target` -- the undamped site matching those moments,
   tau* = nu_hat / (1 - v_c nu_hat), nu* = (alpha + mu_c nu_hat) / (1 - v_c nu_hat)
   (notes binary §0.4), with tau* clamped at :data:`TAU_MIN`;
4. :func:`damp_site` -- the stored site moves a fraction ``damping`` of the way there in
   natural parameters, (1 - damping) old + damping target (seed 002 appendix E);
5. :func:`site_residual` -- the convergence measure, max(|tau* - tau|, |nu* - nu|) of the
   UNDAMPED target, the fixed-point residual of the EP map;
6. :func:`marginal_step` -- how the marginal (and the posterior, along the site's covariance
   column) moves when the site changes by (dtau, dnu), for the engines' rank-one updates.

:func:`probit_site_step` runs steps 1-6 in that order for the probit-with-bias likelihood: the
whole scalar part of one sequential site update, shared by the dense and the FITC sweeps.

Choices (issue 22 item 2), one for every engine:

* **Clamp, then damp.** The target precision is clamped at ``TAU_MIN = 0`` (as GPML and notes
  binary §1.3 step 3 do, in that order) and damping is applied afterwards. Every EP map here
  is then tau -> max(tau*(tau), 0): the damped iterate is a convex combination of two
  feasible values, so a stored site never leaves the feasible set and needs no second clamp,
  and the damped step is exactly ``damping`` times the residual, so a residual test means the
  same thing at every damping. Clamping after damping has the same fixed points but makes the
  step and the residual disagree whenever the clamp is active. Why 0 and not a negative
  bound: the likelihoods served (probit, pairwise probit) are log-concave, so
  0 < v_c nu_hat < 1 and tau* > 0 in exact arithmetic (notes binary §0.4, multiclass §2.5);
  a negative target is round-off (or a bug), never information. Seed 000 allows negative
  *changes* of a site precision (footnote 3: a rank-one update instead of a downdate), which
  :func:`marginal_step` supports; it never needs a negative site.
* **Improper cavity: skip.** When 1 - tau v <= 0 (or v <= 0), or the matched Gaussian would
  have a non-positive variance (1 - v_c nu_hat <= 0), the site keeps its parameters for this
  update (its target is its current value, so its residual is 0) and the engine counts it.
  With sites >= 0 and a log-concave likelihood neither happens in exact arithmetic (notes
  binary §1.3 step 2, multiclass §2.5 "rho > 0 is automatic"), so skipping a round-off casualty
  is safer than failing the whole fit or storing an infinite site; the counts let Python warn
  or, where an improper cavity is a real signal (multi-class EP with stale site directions),
  retry with less damping.
* **Convergence on the undamped residual, absolute.** A damped step is ``damping`` times the
  residual, so testing the step stops damped runs ``1/damping`` times too early (STYLE §3a);
  absolute, not relative, because sites near 0 (confidently classified points) are the common
  case and a relative change there is noise.

All functions are scalar, O(1) and branch-light, so LLVM inlines them into the engines' loops.
"""
import math

from ._jit import jit
from .probit import probit_tilted

#: Lower bound of a site precision (see the module docstring: log-concave likelihoods only).
TAU_MIN = 0.0


@jit
def cavity(mu, v, tau, nu):
    """Cavity N(mu_c, v_c) of a site (tau, nu) from the marginal N(mu, v) that includes it.

    Parameters
    ----------
    mu, v : float
        Marginal mean and variance.
    tau, nu : float
        The site's precision and precision-times-mean.

    Returns
    -------
    mu_c, v_c : float
        v_c = v / (1 - tau v), mu_c = (mu - nu v) / (1 - tau v); ``(0, inf)`` when not proper.
    ok : bool
        False when v <= 0 or 1 - tau v <= 0 (improper cavity): skip the site.
    """
    den = 1.0 - tau * v
    if not (v > 0.0 and den > 0.0):
        return 0.0, math.inf, False
    return (mu - nu * v) / den, v / den, True


@jit
def site_target(mu_c, v_c, alpha, nu_hat):
    """The undamped site matching the tilted moments (alpha, nu_hat) against N(mu_c, v_c).

    Parameters
    ----------
    mu_c, v_c : float
        Cavity mean and variance.
    alpha, nu_hat : float
        d log Z / d mu_c and -d^2 log Z / d mu_c^2 of the tilted normaliser Z.

    Returns
    -------
    tau, nu : float
        tau = max(nu_hat / (1 - v_c nu_hat), TAU_MIN), nu = (alpha + mu_c nu_hat) / (1 - v_c
        nu_hat) (notes binary §0.4; equal to multiclass eqs. 47-55 with alpha = +-g).
    ok : bool
        False when 1 - v_c nu_hat <= 0 (the matched Gaussian would not be proper); the caller
        keeps the current site.
    """
    den = 1.0 - v_c * nu_hat
    if not (den > 0.0):
        return TAU_MIN, 0.0, False
    tau = nu_hat / den
    if tau < TAU_MIN:  # round-off only for log-concave likelihoods
        tau = TAU_MIN
    return tau, (alpha + mu_c * nu_hat) / den, True


@jit
def damp_site(tau_old, nu_old, tau_target, nu_target, damping):
    """Damped site ((1 - damping) old + damping target) in natural parameters.

    ``damping`` in (0, 1]; 1 returns the target exactly. No clamp: the target is already
    feasible (:func:`site_target`) and so is a convex combination with a feasible old site.
    """
    keep = 1.0 - damping
    return keep * tau_old + damping * tau_target, keep * nu_old + damping * nu_target


@jit
def site_residual(tau_old, nu_old, tau_target, nu_target):
    """The convergence measure: max(|tau_target - tau_old|, |nu_target - nu_old|) (undamped)."""
    return max(abs(tau_target - tau_old), abs(nu_target - nu_old))


@jit
def marginal_step(dtau, dnu, mu, v):
    """Rank-one move of the posterior when a site changes by (dtau, dnu).

    With s = Sigma[:, n] the posterior covariance column of the site's latent and (mu, v) its
    marginal, the new posterior is Sigma' = Sigma - c s s^T, m' = m + g s with

        c = dtau / (1 + dtau v),   g = (dnu - dtau mu) / (1 + dtau v)

    (seed 000 §3 / notes binary §1.3 step 5 in these terms; for an ADF inclusion
    (dtau, dnu) = (p, p m) they are seed 004 eq. 7's eta and alpha~). ``dtau`` may be
    negative. Returns ``(c, g, ok)``; ``ok`` is False when 1 + dtau v <= 0 (the new marginal
    variance v / (1 + dtau v) would not be positive): the caller rejects the update.
    """
    den = 1.0 + dtau * v
    if not (den > 0.0):
        return 0.0, 0.0, False
    return dtau / den, (dnu - dtau * mu) / den, True


@jit
def site_delta(tau, nu, v, mu):
    """G(cavity) - G(marginal) of a site (tau, nu) on the marginal N(mu, v) (notes multiclass §3).

    G is the Gaussian log-normaliser; this is the site's share of log Z_EP besides log Z:
    -1/2 log(1 - tau v) + (tau mu^2 - 2 nu mu + nu^2 v) / (2 (1 - tau v)). 0 for a zero site;
    -inf when the cavity is improper (1 - tau v <= 0).
    """
    den = 1.0 - tau * v
    if not (den > 0.0):
        return -math.inf
    return -0.5 * math.log(den) + (tau * mu * mu - 2.0 * nu * mu + nu * nu * v) / (2.0 * den)


@jit(inline="always")
def probit_site_step(y, mu, v, tau, nu, bias, damping):
    """Steps 1-6 of one sequential update of a probit site (tau, nu) on the marginal N(mu, v).

    Parameters
    ----------
    y : float
        The label, -1 or +1; the likelihood is Phi(y (f + bias)).
    mu, v : float
        Marginal mean and variance of the site's latent, site included.
    tau, nu : float
        The site's current parameters.
    bias, damping : float
        The likelihood bias and the step of :func:`damp_site`.

    Returns
    -------
    ok : bool
        False when the site keeps its parameters: an improper cavity or matched Gaussian
        (module docstring: skip) or a new marginal variance that would not be positive.
    change : float
        :func:`site_residual` of the undamped target; 0 when the cavity or the matched Gaussian
        was improper. It counts even when the update is then rejected (``ok`` False): that site
        has not converged.
    tau_new, nu_new : float
        The damped site.
    c, g : float
        :func:`marginal_step` of the change (tau_new - tau, nu_new - nu); 0 when not ``ok``.
    """
    mu_c, v_c, ok = cavity(mu, v, tau, nu)
    if not ok:
        return False, 0.0, tau, nu, 0.0, 0.0
    _, alpha, nu_hat = probit_tilted(y, mu_c, v_c, bias)
    tau_t, nu_t, ok = site_target(mu_c, v_c, alpha, nu_hat)
    if not ok:
        return False, 0.0, tau, nu, 0.0, 0.0
    change = site_residual(tau, nu, tau_t, nu_t)
    tau_new, nu_new = damp_site(tau, nu, tau_t, nu_t, damping)
    c, g, ok = marginal_step(tau_new - tau, nu_new - nu, mu, v)
    return ok, change, tau_new, nu_new, c, g
