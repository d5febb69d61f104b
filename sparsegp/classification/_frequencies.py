"""The end-of-fit check every classifier runs: is the fit better than the class frequencies?

A classifier that learnt nothing from X is at best the constant predictor that gives every
row the training class frequencies. Its accuracy is then the majority rate and its log loss
the entropy of the frequencies (by Gibbs' inequality no constant does better on the log loss).
A fit is judged *no better than the class frequencies* when, on the training rows,

* its accuracy is at most the majority rate, and
* its mean log loss is at least the entropy of the class frequencies, or its probabilities
  are flat: the same (within ``FLAT_PROBA``, median absolute deviation) on most rows.

So neither a fit that ranks the rows well but leans to the majority (better log loss, varied
probabilities) nor a fit that is poorly calibrated but classifies (better accuracy) is called
a failure. Every exact constant predictor meets both conditions, whatever its value; so does
a fit whose kernel vanishes between the training rows, constant except at a few inducing
inputs, whose log loss those few rows can take just below the entropy (GFITC on a 30-row,
18-feature problem: 0.6514 against 0.6572, 29 of 30 probabilities equal). A fit to labels X
does not explain follows the noise on its training rows and beats both. Sets of any size are judged (issue 49: fits of 2-60 rows that predicted one class with
no warning); on large ones an evenly spaced sample of ``JUDGED_SAMPLE`` rows is read, since
some predictions cost O(M^2) a row.

A fit can beat the frequencies and still predict one class for every row: on a few rows
with unequal classes it may rank them (log loss below the entropy, varied probabilities)
without any probability crossing the decision threshold. A user then gets ``predict``
returning one class everywhere although the data hold several. That fit is reported too,
with its own message, when a simple model separates the same rows better: a standardised
logistic regression (scikit-learn's defaults) classifies at least ``LINEAR_MARGIN`` more of
the judged rows correctly (:func:`one_class_verdict`). Where no linear model beats one
class, predicting one class is what the data support, and nothing is said. The fuzz suite's
"silent flat" count (``benchmarks/fuzz.py``) is a fit predicting one class with no warning
while the same logistic regression beats the majority rate by that margin, so the check and
the count read one definition.

A row whose two largest probabilities are within ``TIE_PROBA`` of each other is a tie: which
class it gets is decided by round-off, and another path to the same probabilities (a larger
batch in ``predict``, another thread count) can turn it. Both verdicts read such a row as
evidence for neither class: it earns 1/t of a correct answer when its label is among the t
tied classes, and it does not count as predicting a class (issue 49's fuzz problem 1901, three
rows, two of them at probability 1/2 to the last bit, where ``predict`` and the check broke the
tie differently and a one-class fit went unreported).

Every public classifier mixes in :class:`FrequencyCheckMixin` and calls
:meth:`FrequencyCheckMixin._check_against_frequencies` at the end of ``fit``; it provides
``_judged_proba(X, rows)`` (its probabilities on those rows of the fit's X, columns as
``classes_``) and ``_frequency_advice()`` (what to try, naming only its own parameters).
"""

import warnings

import numpy as np

from .._docstrings import fill_doc
from .._inducing_base import take_rows
from .._validation import plain
from ..exceptions import ConvergenceWarning, warn

__all__ = ["FrequencyCheckMixin", "judged_rows", "credited", "compare_with_frequencies",
           "one_class_verdict"]

#: At most this many evenly spaced training rows are judged (:func:`judged_rows`)
JUDGED_SAMPLE = 300
#: Median absolute deviation of the probabilities below which a fit is flat (the collapse of
#: seed 000 Table 1's IVM cells left them constant to 1e-15; the fits of issue 49 to 1e-5)
FLAT_PROBA = 1e-3
#: A log loss this close to the entropy (relative) counts as no better: an exact constant at
#: the frequencies reaches the entropy only to round-off
LOG_LOSS_RTOL = 1e-9
#: Probabilities are clipped to [CLIP, 1 - CLIP] in the log loss, as scikit-learn's
#: ``log_loss`` does for float64, so that one row predicted with probability 0 gives a finite
#: (large) loss
CLIP = 1e-15
#: A fit predicting one class for every judged row is reported when a standardised logistic
#: regression classifies at least this much more of them correctly (accuracy, absolute); the
#: fuzz suite's SIGNAL_MARGIN
LINEAR_MARGIN = 0.1

#: Two probabilities closer than this are a tie (module docstring): far above the round-off of
#: two paths to one probability (~1e-16 times the latent's scale), far below any probability
#: difference a fit means
TIE_PROBA = 1e-12

#: The judged rows as both verdicts read them (filled into their docstrings by fill_doc)
_JUDGED = {"judged": """proba : ndarray of shape (k, n_classes)
    Predicted probabilities of the judged rows, columns in label order.
y_index : ndarray of shape (k,), int
    Their labels as column indices of ``proba``."""}


def judged_rows(n_samples):
    """Indices of the training rows the check reads, shape (k,): every row up to
    ``JUDGED_SAMPLE`` rows, else ``JUDGED_SAMPLE`` evenly spaced ones."""
    return np.unique(np.linspace(0, n_samples - 1, min(n_samples, JUDGED_SAMPLE))
                     .astype(np.int64))


@fill_doc(_JUDGED)
def credited(proba, y_index):
    """Each judged row's share of a correct answer, shape (k,): 1 when its label has the
    largest probability alone, 1/t when the label is one of t classes tied at the top (within
    ``TIE_PROBA``), else 0; and whether the row is decided (no tie), shape (k,), bool.

    Parameters
    ----------
    %(judged)s
    """
    proba = np.asarray(proba, dtype=np.float64)
    top = proba.max(axis=1, keepdims=True)
    tied = proba >= top - TIE_PROBA
    n_top = tied.sum(axis=1)
    share = tied[np.arange(proba.shape[0]), y_index] / n_top
    return share, n_top == 1


@fill_doc(_JUDGED)
def compare_with_frequencies(proba, y_index):
    """The fit's accuracy and log loss against the constant predictor of the frequencies.

    Parameters
    ----------
    %(judged)s

    Returns
    -------
    verdict : dict
        ``accuracy`` (ties credited by :func:`credited`) and ``majority`` (the majority
        rate), ``log_loss`` and ``entropy`` (of
        the class frequencies, nats), ``spread`` (largest median absolute deviation of a
        column of ``proba``), ``rows`` (k) and ``no_better`` (bool: accuracy <= majority,
        and log loss >= entropy or spread < ``FLAT_PROBA``; see the module docstring).
    """
    proba = np.asarray(proba, dtype=np.float64)
    y_index = np.asarray(y_index, dtype=np.int64)
    k, n_classes = proba.shape
    freq = np.bincount(y_index, minlength=n_classes) / k
    accuracy = float(np.mean(credited(proba, y_index)[0]))
    majority = float(freq.max())
    log_loss = -float(np.mean(np.log(np.clip(proba[np.arange(k), y_index], CLIP, 1.0))))
    entropy = -float(np.sum(freq[freq > 0] * np.log(freq[freq > 0])))
    spread = float(np.max(np.median(np.abs(proba - np.median(proba, axis=0)), axis=0)))
    no_better = accuracy <= majority and (
        log_loss >= entropy - LOG_LOSS_RTOL * max(entropy, 1.0) or spread < FLAT_PROBA)
    return dict(accuracy=accuracy, majority=majority, log_loss=log_loss, entropy=entropy,
                spread=spread, rows=k, no_better=no_better)


def linear_accuracy(X, y_index):
    """Training accuracy of a logistic regression on the standardised rows ``X`` (shape (k, D))
    with labels ``y_index`` (k,): scikit-learn's ``LogisticRegression`` at its defaults (L2,
    C = 1) but ``max_iter=1000``, after ``StandardScaler``. Its own warnings (an lbfgs that
    stopped early) are not the user's concern and are not shown."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler
    X = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(max_iter=1000).fit(X, y_index)
    return float(model.score(X, y_index))


@fill_doc(_JUDGED)
def one_class_verdict(proba, y_index, X):
    """Does the fit predict one class for every judged row while a linear model does better?

    Parameters
    ----------
    %(judged)s
    X : ndarray of shape (k, n_features), or a callable returning it
        Their inputs (any units: the baseline standardises them); a callable is called only
        when the predictions take one class.

    Returns
    -------
    verdict : dict or None
        None when the decided rows (:func:`credited`) take more than one class, or the
        labels only one.
        Otherwise ``predicted`` (the column index every decided row gets), ``accuracy`` (the
        fit's, ties credited),
        ``linear`` (the logistic regression's training accuracy, :func:`linear_accuracy`),
        ``rows`` (k), ``ties`` (rows not decided), ``features`` (D) and ``one_class`` (bool: ``linear - accuracy >=
        LINEAR_MARGIN``).
    """
    proba = np.asarray(proba, dtype=np.float64)
    y_index = np.asarray(y_index, dtype=np.int64)
    share, decided = credited(proba, y_index)
    # a tie predicts no class: the classes the decided rows get (all rows tied: the tie-break
    # predict applies, the first of the tied classes)
    predicted = np.argmax(proba[decided] if decided.any() else proba, axis=1)
    if np.unique(predicted).size > 1 or np.unique(y_index).size < 2:
        return None
    accuracy = float(np.mean(share))
    X = X() if callable(X) else X
    linear = linear_accuracy(X, y_index)
    return dict(predicted=int(predicted[0]), accuracy=accuracy, linear=linear,
                rows=int(y_index.size), ties=int(np.sum(~decided)),
                features=int(np.shape(X)[1]),
                one_class=linear - accuracy >= LINEAR_MARGIN)


def _join_advice(advice):
    """"a, b, or c" from a list of suggestions."""
    advice = list(advice)
    if len(advice) < 2:
        return "".join(advice)
    return ", ".join(advice[:-1]) + ", or " + advice[-1]


class FrequencyCheckMixin:
    """The end-of-fit comparison with the class frequencies (module docstring), one for every
    classifier. Subclasses provide ``_judged_proba(X, rows)`` and ``_frequency_advice()``."""

    def _check_against_frequencies(self, X, y_index):
        """Warn when the fit is no better than the class frequencies on its training rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The fit's training inputs, in the form ``_judged_proba`` reads them.
        y_index : ndarray of shape (n_samples,), int
            Their labels as indices into ``classes_``.

        Returns
        -------
        verdict : dict
            :func:`compare_with_frequencies` on the judged rows.
        """
        rows = judged_rows(np.shape(y_index)[0])
        proba = self._judged_proba(X, rows)
        # the rows' inputs are read again only for a fit that predicts one class (a row
        # store is read once per batch otherwise)
        return self._warn_if_no_better(proba, np.asarray(y_index)[rows],
                                       X_rows=lambda: take_rows(X, rows))

    def _warn_if_no_better(self, proba, y_index, label=None, X_rows=None):
        """:func:`compare_with_frequencies`, and a ``ConvergenceWarning`` with this
        estimator's advice when the fit is no better; ``label`` names the part of the model
        judged (default: the class name). Given ``X_rows``, the judged rows' inputs (an array,
        or a callable returning it, called only when needed), a fit that is better than the
        frequencies but predicts one class for every row is judged too
        (:meth:`_warn_if_one_class`); pass them only where ``proba`` is what ``predict``
        reads, not for one part of a model. Returns the verdict."""
        v = compare_with_frequencies(proba, y_index)
        if not v["no_better"] and X_rows is not None:
            self._warn_if_one_class(proba, y_index, X_rows, v, label)
        if v["no_better"]:
            flat = (f"; its probabilities are flat (median absolute deviation "
                    f"{v['spread']:.1e}): a constant predictor" if v["spread"] < FLAT_PROBA
                    else "")
            warn(
                f"{label or type(self).__name__}: training ended no better than the class "
                f"frequencies: on {v['rows']} training rows its accuracy {v['accuracy']:.3f} "
                f"is no better than always predicting the most frequent class "
                f"({v['majority']:.3f}), its log loss {v['log_loss']:.4f} against the "
                f"frequencies' entropy {v['entropy']:.4f}{flat}; try "
                f"{_join_advice(self._frequency_advice())}",
                ConvergenceWarning)
        return v

    def _warn_if_one_class(self, proba, y_index, X_rows, v, label=None):
        """A ``ConvergenceWarning`` when the fit, though better than the frequencies (verdict
        ``v``), predicts one class for every judged row while a logistic regression
        classifies them better (:func:`one_class_verdict`). Returns that verdict or None."""
        w = one_class_verdict(proba, y_index, X_rows)
        if w is None or not w["one_class"]:
            return w
        classes = getattr(self, "classes_", None)
        name = (plain(classes[w["predicted"]]) if classes is not None
                else w["predicted"])
        k, D = w["rows"], w["features"]
        others = int(np.sum(y_index != w["predicted"]))
        few = (f"; with {k} rows and {D} features a linear model can fit almost any labels, "
               f"so its lead may not carry over to new rows" if k <= D + 1 else "")
        tied = (f" ({w['ties']} tied at equal probabilities, counted for neither class)"
                if w["ties"] else "")
        threshold = ("a threshold on predict_proba other than 1/2" if proba.shape[1] == 2
                     else "ranking by predict_proba instead of predict")
        warn(
            f"{label or type(self).__name__}: predicts class {name!r} for all {k} training "
            f"rows though {others} of them {'is' if others == 1 else 'are'} of another "
            f"class{tied}: its accuracy {w['accuracy']:.3f} against {w['linear']:.3f} for a "
            f"logistic regression on the standardised inputs{few}. Its probabilities beat the "
            f"class frequencies (log loss {v['log_loss']:.4f} against their entropy "
            f"{v['entropy']:.4f}) but none crosses the decision boundary; try more training "
            f"rows or {threshold}; else {_join_advice(self._frequency_advice())}",
            ConvergenceWarning)
        return w
