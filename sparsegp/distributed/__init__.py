"""Training on Dask arrays whose rows stay on the workers (``sparsegp[distributed]``).

``MultiClassEPClassifier().fit(X, y)`` with ``X`` a ``dask.array`` comes here (batch EP or SEP,
minibatch SEP): every
step sends the current posterior and hyper-parameters to the workers (O(C M^2 + C M D) numbers),
each worker runs the compiled factor pass over its own chunks and sends back sums, and this
process adds them. The client is the one in force (``distributed.Client(address)`` or a
``with Client(...)`` block), else an embedded ``LocalCluster`` of single-threaded workers, one
per core, started for the fit and closed after it.
"""
from ._multiclass import DaskRows, fit_on_dask

__all__ = ["DaskRows", "fit_on_dask"]
