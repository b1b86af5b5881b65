"""Errors raised by objpert: each names the parameter and what would fix it."""

from __future__ import annotations

import math
from typing import Any


class ObjpertError(ValueError):
    """Base class of objpert's errors (a ``ValueError``: the input was wrong)."""


class ParameterError(ObjpertError):
    """A public constant is outside the range its theorem allows."""


class UnreachableTargetError(ObjpertError):
    """No admissible choice certifies the requested (epsilon, delta)."""


class PrivacyError(ObjpertError):
    """The release would not be covered by its certificate; nothing was released."""


class LossError(ParameterError):
    """A loss cannot be used: unregistered, a name taken by another loss, or constants
    (L1, L2, L3) that its derivatives violate."""


class PrivacyLeakWarning(UserWarning):
    """A structural choice of the model (the label set, a bound) was read from the private
    data instead of being declared by the caller: the certificate does not cover it, and the
    model records it as not public."""


class UnverifiedModelWarning(PrivacyLeakWarning):
    """A model file was loaded without a signature check: its weights are unverified (the
    numbers of its plans are re-derived and checked, but anyone could have written them)."""


def _bad(name: str, value: Any, allowed: str) -> ParameterError:
    return ParameterError(f"{name} must be {allowed}; got {value!r}")


def check_finite(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise _bad(name, value, "a real number") from None
    if not math.isfinite(v):
        raise _bad(name, value, "finite")
    return v


def check_positive(name: str, value: Any) -> float:
    """``value`` in (0, inf)."""
    v = check_finite(name, value)
    if v <= 0:
        raise _bad(name, value, "> 0")
    return v


def check_nonnegative(name: str, value: Any) -> float:
    v = check_finite(name, value)
    if v < 0:
        raise _bad(name, value, ">= 0")
    return v


def check_open_unit(name: str, value: Any) -> float:
    """``value`` in the open interval (0, 1)."""
    v = check_finite(name, value)
    if not 0 < v < 1:
        raise _bad(name, value, "in the open interval (0, 1)")
    return v


def check_int(name: str, value: Any, minimum: int) -> int:
    """An integer ``>= minimum`` (floats with integral value are accepted)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise _bad(name, value, f"an integer >= {minimum}") from None
    if not math.isfinite(f) or f != int(f) or f < minimum:
        raise _bad(name, value, f"an integer >= {minimum}")
    return int(f)
