"""Warnings raised by sparsegp estimators."""
from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning


class ConvergenceWarning(_SklearnConvergenceWarning):
    """An iterative procedure (EP, an optimiser) stopped before meeting its tolerance.

    A scikit-learn ``ConvergenceWarning``, so that filters written for scikit-learn's
    estimators (``ignore::sklearn.exceptions.ConvergenceWarning``) cover these too.
    """


class JitterWarning(UserWarning):
    """The jitter on K_uu had to grow beyond its default to factorise the matrix."""
