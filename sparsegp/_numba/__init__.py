"""Private compiled kernels: plain functions over arrays, no classes.

Every kernel is compiled with :func:`jit` (``nopython``, ``cache=True``, fastmath off) so that
EP's logs of tiny probabilities and its NaN checks are evaluated exactly as written.
"""
