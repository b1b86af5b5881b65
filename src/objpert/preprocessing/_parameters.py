"""Parameter checks of objpert's estimators and transformers: scikit-learn's
``_parameter_constraints``, raising :class:`objpert.exceptions.ParameterError`.

Every estimator and transformer of objpert takes keyword-only parameters and declares
each of them in ``_parameter_constraints`` (scikit-learn's
:mod:`sklearn.utils._param_validation`). ``fit`` validates them first, always: privacy
parameters are checked even where scikit-learn's own validation is switched off
(``sklearn.set_config(skip_parameter_validation=True)``). What a constraint cannot say
(finite numbers, no booleans for numbers, pairs lo < hi) is checked after it, once.
This is the lowest package with estimators, so the other packages take it from here.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, InvalidParameterError

from objpert.exceptions import ParameterError

__all__ = ["RANDOM_STATE", "ValidatedParameters"]

#: The constraint of a ``random_state``: None (OS entropy), or a seed for testing: an
#: integer >= 0, a SeedSequence, a Generator or a RandomState.
RANDOM_STATE = [
    None,
    Interval(Integral, 0, None, closed="left"),
    np.random.Generator,
    np.random.RandomState,
    np.random.SeedSequence,
]


class ValidatedParameters:
    """Mixin (before ``BaseEstimator``): ``_validate_params`` checks
    ``_parameter_constraints`` and raises ParameterError, one line naming the parameter."""

    def _validate_params(self) -> None:
        try:
            super()._validate_params()  # type: ignore[misc]
        except InvalidParameterError as exc:
            raise ParameterError(" ".join(str(exc).split())) from None
