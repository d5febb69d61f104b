"""Warnings raised by sparsegp estimators."""


class ConvergenceWarning(UserWarning):
    """An iterative procedure (EP, an optimiser) stopped before meeting its tolerance."""


class JitterWarning(UserWarning):
    """The jitter on K_uu had to grow beyond its default to factorise the matrix."""
