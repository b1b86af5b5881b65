"""The rules of the mechanisms' options and plan fields, each stated once.

Values are checked at the doors only: ``objpert.plan`` checks the target and the public
constants (:class:`objpert.Target`, :class:`objpert.PublicConstants`), each planner its own
options (``@validated(...)`` with the rules here), and a plan's fields are checked where the
plan crosses the privacy boundary (:func:`check_fields`, from the plan's ``recertify``).
The formulas behind them take checked values and do not check them again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from objpert._validation import check_choice, count, rule
from objpert.accounting._certificate import check_target_delta
from objpert.accounting._pld_grid import check_discretization
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.discrete import GRID_BITS_RANGE

__all__ = ["check_fields", "choice", "discretization", "grid_bits", "target_delta"]

Rule = Callable[[str, Any], Any]


def choice(names: tuple[str, ...]) -> Rule:
    """The rule "one of ``names``" (:func:`~objpert._validation.check_choice`)."""
    return rule(check_choice, names)


def grid_bits(name: str, value: Any) -> int:
    """The exponent k of a published noise's grid, in :data:`~.discrete.GRID_BITS_RANGE`."""
    lo, hi = GRID_BITS_RANGE
    bits = count(lo)(name, value)
    if bits > hi:
        raise ParameterError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
    return bits


def target_delta(name: str, value: Any) -> float:
    """A target delta (:func:`~objpert.accounting._certificate.check_target_delta`)."""
    return check_target_delta(value, name)


def discretization(name: str, value: Any) -> float:
    """A PLD grid step (:func:`~objpert.accounting._pld_grid.check_discretization`)."""
    return check_discretization(value)


def check_fields(plan: Any, rules: Mapping[str, Rule]) -> None:
    """Every field of ``plan`` named in ``rules`` passes its rule (ParameterError naming
    the field otherwise): the one check of a plan's public fields, where a plan built
    outside the planners (by hand, from a file) is re-certified."""
    for name, check in rules.items():
        check(name, getattr(plan, name))
