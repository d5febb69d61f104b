"""Covariance functions: kernel objects over one compiled stationary family switch.

A kernel is a small Python object holding hyper-parameters (natural values, bounds, fixed or
free) and computing through :mod:`sparsegp._numba.covfuncs`; the maths stays compiled.

``SquaredExponential`` and ``Matern`` (ν = 1/2, 3/2, 5/2) are stationary kernels
s² g(‖(x − z)/ℓ‖²), isotropic (one ℓ) or ARD (one ℓ per feature); ``ConstantKernel`` is the
bias c; ``k1 + k2`` is a :class:`Sum`, and a constant scale (``2.0 * k`` or
``ConstantKernel(c) * k``) multiplies a stationary kernel's variance. As in scikit-learn's
``sklearn.gaussian_process.kernels``, ``theta`` holds the logs of the free hyper-parameters,
``bounds`` their log bounds, ``clone_with_theta`` gives a copy at other values, and nested
names (``k1__lengthscale``) work through ``get_params``/``set_params`` (so an estimator's
``kernel__lengthscale`` does). Unlike there, the gradient is never an (N, M, n_θ) tensor:
:meth:`Kernel.gradient` contracts the adjoint W of K(X, Z) with every derivative in one
compiled pass and returns the gradients for θ, Z and X.

:func:`as_kernel` turns a scikit-learn kernel built from ``ConstantKernel``, ``RBF`` and
``Matern`` into ours. The function forms (``kernel_matrix``, ``grad_contract``) that the
estimators' engines call with plain arrays are in :mod:`sparsegp._covariance`, imported here.

This module is the public door; the code is in modules named for what they hold:
:mod:`sparsegp._kernel_objects` (the kernel classes and their algebra),
:mod:`sparsegp._kernel_spec` (:func:`as_kernel` and what an engine takes from a kernel,
:func:`stationary_spec`, :func:`kernel_spec` and :func:`split_bias_variance`) and
:mod:`sparsegp._covariance`.
"""
from ._params import UNBOUNDED
from ._kernel_objects import ConstantKernel, Kernel, Matern, SquaredExponential, Sum
# StationarySpec is not in __all__, but a fitted SparseGPRegressor holds one: pickles made
# before the split name it here
from ._kernel_spec import (StationarySpec, as_kernel, kernel_spec,  # noqa: F401
                           split_bias_variance, stationary_spec)
# the function forms live with the other covariance operations; imported here, where the
# estimators and users have always found them
from ._covariance import (grad_contract, kernel_matrix, kuu, se_grad_contract,  # noqa: F401
                          se_kernel, se_kernel_diag)

__all__ = ["Kernel", "SquaredExponential", "Matern", "ConstantKernel", "Sum", "as_kernel",
           "kernel_matrix", "grad_contract", "stationary_spec", "kernel_spec",
           "split_bias_variance", "UNBOUNDED"]
