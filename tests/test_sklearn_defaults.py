"""scikit-learn's estimator checks at the defaults (issue 23: sizes that fit the data).

``test_sklearn.py`` runs the checks with small settings; here the estimators are built with no
argument but ``random_state``, as a user first writes them, and must pass the same checks with
no more expected failures than there.
"""
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsegp import SparseGPRegressor

from conftest import AT_THE_CAP

#: estimators whose defaults fit any data set the checks use (the others still have sizes
#: that refuse small data, e.g. n_active=100: their turn comes with the shared defaults)
AT_DEFAULTS = [SparseGPRegressor(random_state=0)]


@parametrize_with_checks(AT_DEFAULTS,
                         expected_failed_checks=lambda e: dict(type(e)._expected_failed_checks))
@AT_THE_CAP
def test_sklearn_estimator_checks_at_defaults(estimator, check):
    check(estimator)
