"""Synthetic problems used by the papers' illustrations; deterministic given ``random_state``.

* :func:`make_xor` -- the four-cluster "xor" problem of seed 000, Figure 1.
* :func:`make_gp_classes` -- C latent functions drawn from an SE-kernel GP prior, label =
  argmax (seed 002, section 4.2 and Figure 3).
* :func:`make_regression_1d` -- a Snelson-style 1-D regression toy with a gap in the inputs
  (seed 001, Figure 5 compares the sparse approximations' predictive uncertainties on such data).
"""
import numpy as np

from .._config import JITTER, MAX_JITTER
from .._validation import check_int, check_positive, check_random_state

__all__ = ["make_xor", "make_gp_classes", "make_regression_1d", "regression_1d_function",
           "XOR_BAYES_ERROR"]

#: Offset of the xor cluster centres: (+-a, +-a).
_XOR_OFFSET = 1.5

#: Bayes error of :func:`make_xor`, 2 Phi(-1.5) Phi(1.5) = 0.124688... .
#: The Bayes rule of the four-cluster mixture is sign(x1 * x2) (the class densities are
#: proportional to exp(-|x|^2/2) cosh(a(x1 +- x2)), so +1 wins iff |x1 + x2| > |x1 - x2|); a
#: point of a cluster at (a, a) is misclassified when exactly one coordinate changes sign,
#: with probability 2 Phi(-a) (1 - Phi(-a)). The same value follows from 2-D numerical
#: integration of min(p(x, +1), p(x, -1)) (checked in tests/test_datasets.py).
XOR_BAYES_ERROR = 0.12468799825496071


def make_xor(n, random_state=None):
    """Draw the "xor" problem: four unit-variance Gaussian clusters at (+-1.5, +-1.5).

    Each point picks one of the four clusters with probability 1/4 and is drawn from an
    isotropic unit-variance Gaussian around its centre. The clusters at (1.5, 1.5) and
    (-1.5, -1.5) have label +1, the other two -1. The Bayes-optimal classifier is
    sign(x1 * x2) with error ``XOR_BAYES_ERROR`` = 2 Phi(-1.5) Phi(1.5) ~= 0.1247 (the "around
    13%" of seed 000, section 5).

    Parameters
    ----------
    n : int
        Number of points, n >= 1.
    random_state : None, int or numpy.random.Generator
        Seed or generator; the same seed always gives the same data.

    Returns
    -------
    X : ndarray of shape (n, 2)
        float64 inputs.
    y : ndarray of shape (n,)
        int64 labels in {-1, +1}.

    Examples
    --------
    >>> X, y = make_xor(400, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((400, 2), [-1, 1])
    """
    n = check_int(n, "n", minimum=1)
    rng = check_random_state(random_state)
    signs = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    labels = np.array([1, 1, -1, -1], dtype=np.int64)
    cluster = rng.integers(0, 4, size=n)
    X = _XOR_OFFSET * signs[cluster] + rng.standard_normal((n, 2))
    return X, labels[cluster]


def make_gp_classes(n, n_classes=3, lengthscale=0.5, variance=1.0, noise=0.01,
                    random_state=None, return_latent=False):
    """Labels from the argmax of C latent functions drawn from an SE-kernel GP prior.

    Inputs are uniform on the box [-1, 1]^2. For each class c a latent function
    g_c ~ GP(0, k) with k(x, x') = variance * exp(-|x - x'|^2 / (2 lengthscale^2)) is drawn
    jointly at the n inputs (Cholesky of K + jitter * variance * I); independent Gaussian noise
    of variance ``noise`` is added, f_c = g_c + eps_c, which is the "additive noise"
    parameter of the model of seed 002 (section 2.1; notes/multiclass_ep.md §1.1), and the
    label is argmax_c f_c(x).

    The box bounds and the "true" hyper-parameters of the paper's Figure 3 were lost in our
    copy (notes/multiclass_ep.md §9-10); the defaults here (box [-1, 1]^2, lengthscale 0.5,
    variance 1, noise 0.01) are our choice and give a few curved regions per class. The
    paper's experiment uses n = 1000 training points and C = 3.

    The draw costs O(n^3) time and O(n^2) memory (a dense n x n Cholesky), fine for n up to a
    few thousand (n = 2000 takes about a second); it is not meant for larger n. Because each
    call draws new latent functions, draw training and test points in ONE call and split them
    (``X[:n_train]``, ``X[n_train:]``); two calls give two different problems. Class sizes
    vary a lot between draws and a small sample can miss a class altogether (with the
    defaults, 1 of seeds 0..39 at n = 60).

    Parameters
    ----------
    n : int
        Number of points, n >= 1.
    n_classes : int, default=3
        Number of classes C >= 2.
    lengthscale : float, default=0.5
        SE length-scale (not squared), the same for both input dimensions.
    variance : float, default=1.0
        Signal variance of each latent function.
    noise : float, default=0.01
        Variance of the Gaussian noise added to every latent value before the argmax
        (0 gives noise-free labels).
    random_state : None, int or numpy.random.Generator
        Seed or generator; the same seed always gives the same data.
    return_latent : bool, default=False
        Also return the noisy latent values.

    Returns
    -------
    X : ndarray of shape (n, 2)
        float64 inputs, uniform on [-1, 1]^2.
    y : ndarray of shape (n,)
        int64 labels in 0..C-1 (argmax over the columns of ``F``).
    F : ndarray of shape (n, C)
        Only when ``return_latent``: the noisy latent values f_c(x_i).

    Raises
    ------
    numpy.linalg.LinAlgError
        If K + jitter * variance * I cannot be factorised even with the largest jitter
        (``sparsegp._config.MAX_JITTER``); does not happen for the SE kernel in practice.
    """
    from ..kernels import se_kernel

    n = check_int(n, "n", minimum=1)
    n_classes = check_int(n_classes, "n_classes", minimum=2)
    lengthscale = check_positive(lengthscale, "lengthscale", allow_array=False)
    variance = check_positive(variance, "variance", allow_array=False)
    noise = float(noise)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite variance >= 0; got {noise!r}")
    rng = check_random_state(random_state)

    X = rng.uniform(-1.0, 1.0, size=(n, 2))
    K = se_kernel(X, None, variance, np.full(2, lengthscale))
    L = _cholesky_with_jitter(K, variance)
    # One joint draw per class: the columns of L @ W are independent GP samples.
    G = L @ rng.standard_normal((n, n_classes))
    F = G + np.sqrt(noise) * rng.standard_normal((n, n_classes))
    y = np.argmax(F, axis=1).astype(np.int64)
    if return_latent:
        return X, y, F
    return X, y


def _cholesky_with_jitter(K, variance):
    """Lower Cholesky factor of K + j * variance * I, j from JITTER (the library's ladder)."""
    from .._linalg import cholesky_jitter

    return cholesky_jitter(K, variance, JITTER, name="K", warn=False)[0]


def regression_1d_function(x):
    """The noise-free mean function of :func:`make_regression_1d`.

    f(x) = sin(2 x) + 0.4 cos(5 x) + 0.1 x, a smooth wiggly function on [0, 6].

    Parameters
    ----------
    x : array_like of shape (n,) or (n, 1)

    Returns
    -------
    f : ndarray of shape (n,)
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    return np.sin(2.0 * x) + 0.4 * np.cos(5.0 * x) + 0.1 * x


def make_regression_1d(n, noise_std=0.25, gap=(2.5, 3.7), random_state=None):
    """A 1-D regression toy in the spirit of Snelson's data, with a gap in the inputs.

    Inputs are uniform on [0, 6] with the interval ``gap`` removed (the two remaining pieces
    are sampled in proportion to their lengths); targets are
    ``regression_1d_function(x) + noise_std * N(0, 1)``. Inside the gap there is no data, so
    SoR/DTC, FITC and the exact GP give visibly different predictive variances there (the
    comparison of seed 001, Figure 5).

    Parameters
    ----------
    n : int
        Number of points, n >= 1.
    noise_std : float, default=0.25
        Standard deviation of the Gaussian target noise (>= 0).
    gap : tuple of two floats or None, default=(2.5, 3.7)
        Interval (lo, hi) inside [0, 6] without inputs; ``None`` for no gap.
    random_state : None, int or numpy.random.Generator
        Seed or generator; the same seed always gives the same data.

    Returns
    -------
    X : ndarray of shape (n, 1)
        float64 inputs in [0, 6] minus the gap, in random order.
    y : ndarray of shape (n,)
        float64 noisy targets.
    """
    n = check_int(n, "n", minimum=1)
    noise_std = float(noise_std)
    if not np.isfinite(noise_std) or noise_std < 0:
        raise ValueError(f"noise_std must be finite and >= 0; got {noise_std!r}")
    lo_all, hi_all = 0.0, 6.0
    if gap is None:
        lo, hi = lo_all, lo_all
    else:
        try:
            lo, hi = (float(v) for v in gap)
        except (TypeError, ValueError):
            raise ValueError(f"gap must be None or a pair (lo, hi); got {gap!r}") from None
        if not (lo_all <= lo < hi <= hi_all) or (hi - lo) >= (hi_all - lo_all):
            raise ValueError(
                f"gap must satisfy 0 <= lo < hi <= 6 and leave some of [0, 6] uncovered; "
                f"got {gap!r}"
            )
    rng = check_random_state(random_state)
    # Sample u uniformly on a segment of the combined length, then shift past the gap.
    u = rng.uniform(0.0, (hi_all - lo_all) - (hi - lo), size=n) + lo_all
    x = np.where(u < lo, u, u + (hi - lo))
    y = regression_1d_function(x) + noise_std * rng.standard_normal(n)
    return x.reshape(-1, 1), y
