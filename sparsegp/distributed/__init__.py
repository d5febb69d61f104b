"""Training on Dask arrays whose rows stay on the workers (``sparsegp[distributed]``).

``MultiClassEPClassifier().fit(X, y)`` with ``X`` a ``dask.array`` trains here (batch EP or
SEP, minibatch SEP): the estimator runs its usual training loop over a :class:`DaskRows`,
which answers every step's questions from the chunks. Every step sends the current posterior
and hyper-parameters to the workers (O(C M^2 + C M D) numbers), each worker runs the compiled
factor pass of :mod:`sparsegp.classification.multiclass.engine` over its own chunks and sends
back sums, and this process adds them. The client is the one in force
(``distributed.Client(address)`` or a ``with Client(...)`` block, or :func:`fit_on_dask`'s
``client``), else an embedded ``LocalCluster`` of single-threaded workers, one per core,
started for the fit and closed after it.
"""
from ._multiclass import (DASK_BACKEND, ClientInForce, DaskBackend, DaskRows, check_dask_input,
                          column_moments, fit_on_dask)

__all__ = ["ClientInForce", "DASK_BACKEND", "DaskBackend", "DaskRows", "check_dask_input",
           "column_moments", "fit_on_dask"]
