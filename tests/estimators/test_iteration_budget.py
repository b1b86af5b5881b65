"""No silent iteration ceiling: objpert.certify._budget.ceiling and the fit warning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from objpert.certify._budget import NOTABLE_GAIN, ceiling
from objpert.certify._calibration import corollary_413, tight
from objpert.certify._knee import KNEE_TOLERANCE
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import IterationBudgetWarning, ParameterError

pytestmark = pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning")

# TV16-like public constants: 37,591 rows, 25 features + intercept, rows of norm sqrt(18)
TV16 = dict(n=37591, d=26, zeta=6.0, epsilon=1.0, delta=1e-6, comparator_norm=3.0)


def test_tv16_like_plan_below_its_knee_is_at_its_ceiling():
    """At 1,000 steps the knee of the bound lies beyond the budget: doubling it (mu
    re-chosen) lowers the bound by more than the knee tolerance."""
    plan = tight("logistic", **TV16, max_iter=1000, objective="empirical")
    report = ceiling(plan, 1000)
    assert plan.iterations <= 1000 and report.at_ceiling and report.notable
    # the doubled budget, recalibrated independently
    doubled = tight("logistic", **TV16, max_iter=2000, objective="empirical")
    assert report.sigma_with_double_budget == doubled.sigma
    assert report.iterations_with_double_budget == doubled.iterations > 1000
    assert report.bound_now - report.bound_with_double_budget > NOTABLE_GAIN > KNEE_TOLERANCE
    assert doubled.recertify().certified and doubled.recertify().epsilon <= 1.0
    assert "max_iter=2000" in report.advice()
    assert ceiling(plan, 1000) == report  # cached, pure
    # at the default budget a doubling gains less than NOTABLE_GAIN: no warning
    assert not ceiling(tight("logistic", **TV16, objective="empirical", max_iter=5000),
                       5000).notable  # fmt: skip


def test_a_plan_below_its_budget_or_of_corollary_413_is_not_at_a_ceiling():
    plan = tight(
        "logistic", n=400, d=4, zeta=math.sqrt(2), epsilon=2.0, delta=1e-6,
        comparator_norm=3.0, max_iter=300, objective="empirical", mu=0.2,
    )  # fmt: skip
    assert plan.iterations < 300
    report = ceiling(plan, 300, mu_fixed=True)
    assert not report.at_ceiling and report.relative_gain == 0.0 and report.advice() == ""
    c413 = corollary_413("logistic", n=5000, d=4, zeta=1.0, epsilon=1.0, delta=1e-6)
    assert not ceiling(c413, c413.iterations).at_ceiling
    with pytest.raises(ParameterError):
        ceiling("plan", 10)
    with pytest.raises(ParameterError):
        ceiling(plan, 0)


def _data(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / math.sqrt(3)
    y = (X @ [2.0, -1.0, 0.5] + 0.3 * rng.logistic(size=n) > 0).astype(int)
    return X, y


def test_fit_warns_when_the_budget_binds_and_not_otherwise():
    X, y = _data()
    model = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], max_iter=100,
                                      random_state=0)  # fmt: skip
    with pytest.warns(IterationBudgetWarning, match="max_iter=200"):
        model.fit(X, y)
    report = ceiling(model.plan_, 100)
    assert report.notable and model.n_iter_.tolist() == [100]
    assert report.bound_now - report.bound_with_double_budget > NOTABLE_GAIN
    with warnings.catch_warnings():
        warnings.simplefilter("error", IterationBudgetWarning)
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], mu=0.2,
                                  random_state=0).fit(X[:400], y[:400])  # fmt: skip
