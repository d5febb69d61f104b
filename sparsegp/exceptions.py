"""Warnings raised by sparsegp estimators, and the one way they are raised."""
import os
import sys
import warnings

from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning

#: The package's folder: frames below it are the library's, not the user's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ConvergenceWarning(_SklearnConvergenceWarning):
    """An iterative procedure (EP, an optimiser) stopped before meeting its tolerance, or a fit
    ended no better than a constant prediction.

    A subclass of scikit-learn's ``ConvergenceWarning`` (itself a ``UserWarning``), so a filter
    on scikit-learn's warning also covers sparsegp's.
    """


class JitterWarning(UserWarning):
    """The jitter on K_uu had to grow beyond its default to factorise the matrix."""


def user_stacklevel():
    """The ``stacklevel`` of :func:`warnings.warn`, called by the caller of this function, that
    names the first frame outside sparsegp: the user's own line.

    A fixed stacklevel points into the library whenever the warning is raised one call deeper
    or shallower than its author counted (an estimator's ``fit`` through the training driver,
    a meta-estimator, a figure script's helper); walking the stack finds the user's line
    however deep the library is. When every frame is the library's (``python -m sparsegp``),
    the outermost one is named.
    """
    frame = sys._getframe(1)            # whoever asks for the level, inside sparsegp
    level = 1                           # warnings.warn called from that frame: 1 names it
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def warn(message, category):
    """:func:`warnings.warn` of ``message`` as ``category``, attributed to the user's line.

    Parameters
    ----------
    message : str
    category : type of Warning
    """
    warnings.warn(message, category, stacklevel=user_stacklevel())
