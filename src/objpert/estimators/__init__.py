"""scikit-learn estimators releasing differentially private GLMs (Watkins & Arora 2026).

:class:`PrivateLogisticRegression` and :class:`PrivateRobustRegression` follow the
scikit-learn estimator API (``fit``/``predict``/``score``, ``get_params``/``set_params``,
``clone``, pipelines, ``GridSearchCV``). Each ``fit`` is one private release (K releases
for a K-class one-vs-rest classifier) by gradient descent on a perturbed objective; the
shared machinery (parameter checks, data contract, releases) is in
:mod:`objpert.estimators._base`; a fit plans through :func:`objpert.plan` with the
estimator's settings (:mod:`objpert.estimators._planning`), whose defaults are the
estimators' defaults. Statistics of the private rows (rows clipped, the time
of the releases) are shown at fit time only (:func:`fit_statistics`), never kept.
"""

from objpert.estimators._base import LABEL_SET
from objpert.estimators._bounds import FitStatistics, fit_statistics
from objpert.estimators._logistic import PrivateLogisticRegression
from objpert.estimators._planning import (
    CALIBRATIONS,
    DEFAULT_COMPARATOR_NORM,
    DEFAULT_MAX_ITER,
    plan_for,
)
from objpert.estimators._robust import PrivateRobustRegression

__all__ = [
    "CALIBRATIONS",
    "DEFAULT_COMPARATOR_NORM",
    "DEFAULT_MAX_ITER",
    "LABEL_SET",
    "FitStatistics",
    "PrivateLogisticRegression",
    "PrivateRobustRegression",
    "fit_statistics",
    "plan_for",
]
