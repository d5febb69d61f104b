"""Warnings raised by sparsegp estimators."""
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning


class ConvergenceWarning(_SklearnConvergenceWarning):
    """An iterative procedure (EP, an optimiser) stopped before meeting its tolerance, or a fit
    ended no better than a constant prediction.

    A subclass of scikit-learn's ``ConvergenceWarning`` (itself a ``UserWarning``), so a filter
    on scikit-learn's warning also covers sparsegp's.
    """


class JitterWarning(UserWarning):
    """The jitter on K_uu had to grow beyond its default to factorise the matrix."""
