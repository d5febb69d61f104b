"""A scikit-learn-compatible estimator base without depending on scikit-learn."""
import inspect

import numpy as np


class BaseEstimator:
    """``get_params``/``set_params``/``repr`` from the ``__init__`` signature.

    Subclasses store every constructor argument unchanged under its own name and do all
    validation in ``fit``, as scikit-learn requires.
    """

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name for p in sig.parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )

    def get_params(self, deep=True):
        """Return the constructor parameters of this estimator as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"invalid parameter {key!r} for estimator {type(self).__name__}; "
                    f"valid parameters are {valid}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self):
        sig = inspect.signature(type(self).__init__)
        changed = []
        for name in self._param_names():
            default = sig.parameters[name].default
            value = getattr(self, name)
            same = value is default or (
                not isinstance(value, np.ndarray) and not isinstance(default, np.ndarray)
                and _safe_equal(value, default)
            )
            if not same:
                changed.append(f"{name}={value!r}" if not isinstance(value, np.ndarray)
                               else f"{name}=<array {value.shape}>")
        return f"{type(self).__name__}({', '.join(changed)})"

    def _check_is_fitted(self, attribute):
        if not hasattr(self, attribute):
            raise NotFittedError(
                f"this {type(self).__name__} instance is not fitted yet; call 'fit' first"
            )


class NotFittedError(ValueError, AttributeError):
    """Raised when a method that needs a fitted model is called before ``fit``."""


def _safe_equal(a, b):
    try:
        return bool(a == b)
    except Exception:
        return False


def clone(estimator):
    """A new unfitted estimator with the same constructor parameters."""
    return type(estimator)(**estimator.get_params())
