"""Argument checks: each failure is a ParameterError naming the parameter and what would
fix it (the error classes live in :mod:`objpert.exceptions`)."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

from objpert.exceptions import (  # re-exported: the classes live there
    LossError,
    ObjpertError,
    ParameterError,
    PrivacyError,
    PrivacyLeakWarning,
    UnreachableTargetError,
    UnverifiedModelWarning,
)

__all__ = [
    "LossError",
    "ObjpertError",
    "ParameterError",
    "PrivacyError",
    "PrivacyLeakWarning",
    "UnreachableTargetError",
    "UnverifiedModelWarning",
    "check_finite",
    "check_int",
    "check_nonnegative",
    "check_open_unit",
    "check_positive",
    "renamed_keyword",
]


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


def renamed_keyword(old: str, new: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Accept the former keyword ``old`` of ``new`` for one release, with a
    DeprecationWarning (giving both is an error)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if old in kwargs:
                if new in kwargs:
                    raise ParameterError(f"give {new} only ({old} is its former name)")
                warnings.warn(
                    f"{fn.__name__}({old}=...) is deprecated: use {new}=",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper

    return decorate
