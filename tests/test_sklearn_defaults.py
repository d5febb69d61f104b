"""scikit-learn's estimator checks at the defaults (issue 23: sizes that fit the data).

``test_sklearn.py`` runs the checks with small settings; here the estimators are built with no
argument but ``random_state``, as a user first writes them, and must pass the same checks with
no more expected failures than there.
"""
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsegp

#: every public estimator, as a user first writes it: sizes default to "auto" (capped by the
#: number of rows), so the checks' small data sets are accepted
AT_DEFAULTS = [getattr(sparsegp, name)(random_state=0)
               for name in sorted(n for n in sparsegp.__all__ if n[0].isupper())]


# scikit-learn runs these checks on its own estimators with ConvergenceWarning ignored: several
# checks fit pure noise (random labels, X about 100), where a model no better than the class
# frequencies is the right answer and the warning that says so is expected, not a failure
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks(AT_DEFAULTS,
                         expected_failed_checks=lambda e: dict(type(e)._expected_failed_checks))
def test_sklearn_estimator_checks_at_defaults(estimator, check):
    check(estimator)
