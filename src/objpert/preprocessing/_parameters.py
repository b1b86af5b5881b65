"""Parameter checks of objpert's estimators and transformers: scikit-learn's
``_parameter_constraints``, raising :class:`objpert.exceptions.ParameterError`.

Every estimator and transformer of objpert takes keyword-only parameters and declares
each of them in ``_parameter_constraints`` (scikit-learn's
:mod:`sklearn.utils._param_validation`). ``fit`` validates them first, always: privacy
parameters are checked even where scikit-learn's own validation is switched off
(``sklearn.set_config(skip_parameter_validation=True)``). What a constraint cannot say
(pairs lo < hi, a label set) is checked after it, once; numbers are declared with
:class:`Number`, scikit-learn's ``Interval`` under the library's number rules, so that the
constraints are the whole check of a numeric parameter.
This is the lowest package with estimators, so the other packages take it from here.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

import numpy as np
from sklearn.utils._param_validation import Interval, InvalidParameterError

from objpert._validation import MAX_INT
from objpert.exceptions import ParameterError

__all__ = ["NONNEGATIVE", "POSITIVE", "RANDOM_STATE", "Number", "ValidatedParameters"]


class Number(Interval):
    """scikit-learn's ``Interval`` under the library's number rules
    (:mod:`objpert._validation`): never a bool (Python or numpy), never NaN or +-inf, never
    a number beyond the float64 range (``10**400``); an ``Integral`` interval takes
    integers up to :data:`~objpert._validation.MAX_INT` (2^53) only (a count evaluated in
    float64; a seed has no such bound: ``largest=None``)."""

    largest: int | None = MAX_INT

    def is_satisfied_by(self, val: Any) -> bool:
        if isinstance(val, bool | np.bool_) or not super().is_satisfied_by(val):
            return False
        if self.type is Integral:
            return self.largest is None or abs(val) <= self.largest
        try:
            return math.isfinite(val)
        except OverflowError:  # an integer such as 10**400
            return False

    def __str__(self) -> str:
        return f"{super().__str__()} (finite, not a bool)"


class Seed(Number):
    """An integer seed: :class:`Number` without the 2^53 bound."""

    largest = None


#: A finite number > 0.
POSITIVE = Number(Real, 0, None, closed="neither")
#: A finite number >= 0.
NONNEGATIVE = Number(Real, 0, None, closed="left")

#: The constraint of a ``random_state``: None (OS entropy), or a seed for testing: an
#: integer >= 0, a SeedSequence, a Generator or a RandomState.
RANDOM_STATE = [
    None,
    Seed(Integral, 0, None, closed="left"),
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
