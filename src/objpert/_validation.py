"""Argument checks: each failure is a ParameterError naming the parameter and what would
fix it (the error classes are in :mod:`objpert.exceptions`, and only there).

The one validation layer of every public numeric argument (estimators, certificates,
calibrations, accountants, the command line). Its rules:

- a number is a Python or numpy real number (or a 0-d numeric array); booleans (``True``,
  ``np.True_``), strings (``"1.0"``), bytes, complex numbers and other objects are not;
- NaN and +-inf are refused, and so is a number beyond the float64 range (``10**400``):
  refused with a ParameterError, never an OverflowError;
- a count (:func:`check_int`) is an integer (or an integral float) in [minimum, 2^53]:
  float64 holds every integer up to 2^53 exactly, and every formula evaluates counts in
  float64;
- ranges are stated in the message: ``> 0``, ``>= 0``, ``in (0, 1)``, ``in [0, 1]``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import numbers
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from objpert.exceptions import ParameterError

__all__ = [
    "MAX_INT",
    "NUMERIC_FAILURES",
    "check_array",
    "check_bool",
    "check_broadcast",
    "check_choice",
    "check_computed",
    "check_finite",
    "check_int",
    "check_nonnegative",
    "check_open_unit",
    "check_positive",
    "check_positive_array",
    "check_unit",
    "count",
    "named",
    "numeric_guard",
    "optional",
    "public",
    "rule",
    "validated",
]


#: The largest integer a count (n, d, N, k, ...) may take: every formula evaluates counts in
#: float64, which holds integers exactly up to 2^53. Larger integers are refused with a
#: ParameterError (never converted to an inexact or infinite float).
MAX_INT = 2**53

_FLOAT_MAX = sys.float_info.max


def _bad(name: str, value: Any, allowed: str) -> ParameterError:
    return ParameterError(f"{name} must be {allowed}; got {_shown(value)}")


def _shown(value: Any) -> str:
    """``value`` for a message: its repr on one line, shortened (an integer of 400 digits
    is not shown whole)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 60 else f"{text[:28]}...{text[-8:]} ({len(text)} characters)"


def _is_bool_or_text(value: Any) -> bool:
    """Booleans (Python or numpy) and text are not numbers, whatever float() makes of them."""
    return isinstance(value, bool | np.bool_ | str | bytes | bytearray)


def _real(name: str, value: Any) -> float:
    """``value`` as a float: a Python or numpy real number or a 0-d numeric array.

    Refused (ParameterError naming ``name``): booleans, strings and bytes, complex numbers,
    arrays with more than one value, objects without a real value, NaN, +-inf, and numbers
    beyond the float64 range (an integer such as 10**400 is refused, never overflowed).
    """
    kind = type(value)
    if kind is float or kind is np.float64:  # the common case, without the checks below
        if math.isfinite(value):
            return float(value)
        raise _bad(name, value, "finite")
    if isinstance(value, np.ndarray):
        if value.ndim != 0 or value.dtype.kind not in "iuf":
            raise _bad(name, value, "a real number (a scalar, not an array)")
        value = value[()]
    if _is_bool_or_text(value):
        raise _bad(name, value, "a real number (not a bool or a string)")
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        raise _bad(name, value, "a real number (not complex)")
    try:
        v = float(value)
    except OverflowError:
        raise _bad(name, value, f"finite (at most {_FLOAT_MAX:.4g} in magnitude)") from None
    except (TypeError, ValueError):
        raise _bad(name, value, "a real number") from None
    if not math.isfinite(v):
        raise _bad(name, value, "finite")
    return v


def check_finite(name: str, value: Any) -> float:
    """A finite real number (see :func:`_real` for what is refused), as a float."""
    return _real(name, value)


def check_positive(name: str, value: Any) -> float:
    """``value`` in (0, inf)."""
    v = _real(name, value)
    if v <= 0:
        raise _bad(name, value, "> 0")
    return v


def check_nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """``value`` in [0, inf) (``allow_inf``: [0, inf], for a quantity computed as +inf past
    the float64 range, such as a zCDP parameter)."""
    if allow_inf and isinstance(value, float | np.floating) and value == math.inf:
        return math.inf
    v = _real(name, value)
    if v < 0:
        raise _bad(name, value, ">= 0")
    return v


def check_open_unit(name: str, value: Any) -> float:
    """``value`` in the open interval (0, 1)."""
    v = _real(name, value)
    if not 0 < v < 1:
        raise _bad(name, value, "in the open interval (0, 1)")
    return v


def check_unit(name: str, value: Any) -> float:
    """``value`` in the closed interval [0, 1] (a delta, 1 being the trivial bound)."""
    v = _real(name, value)
    if not 0 <= v <= 1:
        raise _bad(name, value, "in [0, 1]")
    return v


def check_int(name: str, value: Any, minimum: int, maximum: int = MAX_INT) -> int:
    """An integer in [minimum, maximum] (default maximum :data:`MAX_INT` = 2^53).

    Python and numpy integers are taken exactly (no float conversion, so 10**400 is refused
    as too large rather than overflowing); floats with an integral value are accepted
    (1000.0, as a command line gives). Booleans, strings, NaN, inf and fractions are refused.
    """
    if type(value) is int and minimum <= value <= maximum:  # the common case
        return value
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if _is_bool_or_text(value):
        raise _bad(name, value, f"an integer >= {minimum} (not a bool or a string)")
    if isinstance(value, numbers.Integral):
        v = int(value)
    else:
        f = _real(name, value) if isinstance(value, numbers.Real) else None
        if f is None or f != math.floor(f):
            raise _bad(name, value, f"an integer >= {minimum}")
        if abs(f) > maximum:  # before int(): no 300-digit integers from floats
            raise _bad(name, value, f"an integer <= {maximum}")
        v = int(f)
    if v < minimum:
        raise _bad(name, value, f"an integer >= {minimum}")
    if v > maximum:
        raise _bad(name, value, f"an integer <= {maximum}")
    return v


def check_bool(name: str, value: Any) -> bool:
    """``True`` or ``False`` (Python or numpy); 0, 1, strings and None are refused."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise _bad(name, value, "True or False")


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """One of ``choices`` (strings); anything else, of any type, is refused."""
    if isinstance(value, str) and value in choices:
        return value
    raise ParameterError(f"{name} must be one of {choices}; got {_shown(value)}")


def check_array(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    integral: bool = False,
    allow_inf: bool = False,
    allow_neginf: bool = False,
) -> np.ndarray:
    """A numeric array (or scalar) as float64: no booleans, strings or objects, no NaN, no
    infinity (unless ``allow_inf``: +inf, ``allow_neginf``: -inf), every entry >= ``minimum``
    and <= ``maximum`` and, with ``integral``, a whole number. The vectorised formulas take
    their N and epsilon here."""
    if isinstance(value, np.ndarray):
        arr = value
    elif _is_bool_or_text(value):
        raise _bad(name, value, "a real number or an array of real numbers")
    elif isinstance(value, float | np.floating) and math.isinf(value):
        arr = np.asarray(float(value))  # the infinity checks below
    elif isinstance(value, numbers.Real):  # a scalar: the rules of check_finite (10**400)
        arr = np.asarray(_real(name, value))
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError, OverflowError):
            raise _bad(name, value, "a real number or an array of real numbers") from None
    if arr.dtype.kind not in "iuf":
        raise _bad(name, value, "a real number or an array of real numbers")
    try:
        arr = np.asarray(arr, dtype=np.float64)
    except OverflowError:  # pragma: no cover - numeric dtypes always fit float64
        raise _bad(name, value, "within the float64 range") from None
    if arr.size:
        if np.isnan(arr).any():
            raise _bad(name, value, "free of NaN")
        if (not allow_neginf and np.isneginf(arr).any()) or (
            not allow_inf and np.isposinf(arr).any()
        ):
            raise _bad(name, value, "finite")
        if minimum is not None and not arr.min() >= minimum:
            raise _bad(name, value, f">= {minimum:g} everywhere")
        if maximum is not None and not arr.max() <= maximum:
            raise _bad(name, value, f"<= {maximum:g} everywhere")
        if integral:
            fin = arr[np.isfinite(arr)]
            if (fin != np.floor(fin)).any():
                raise _bad(name, value, "whole numbers")
            if (np.abs(fin) > MAX_INT).any():
                raise _bad(name, value, f"at most {MAX_INT}")
    return arr


def check_positive_array(name: str, value: Any) -> Any:
    """A positive finite number or array of them (:func:`check_array`, every entry > 0);
    a Python float or a float64 array passes without a copy (the searches' hot path)."""
    if type(value) is float and 0.0 < value < math.inf:
        return value
    if (
        type(value) is np.ndarray
        and value.dtype == np.float64
        and value.size
        and value.min() > 0.0
        and value.max() < math.inf
    ):
        return value
    arr = check_array(name, value, minimum=0.0)
    if arr.size and not arr.min() > 0.0:
        raise _bad(name, value, "> 0 everywhere")
    return arr if arr.ndim else float(arr)


def check_broadcast(**arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays broadcast to one shape; ParameterError naming them when they cannot be."""
    try:
        return list(np.broadcast_arrays(*arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in arrays.items())
        raise ParameterError(f"the shapes of {shapes} do not broadcast together") from None


def check_computed(name: str, value: float, why: str) -> float:
    """A computed noise scale, ridge or sensitivity: finite and > 0, or a ParameterError
    saying that ``why`` (the inputs that made it leave the float64 range)."""
    if not (math.isfinite(value) and value > 0.0):
        raise ParameterError(f"{name} = {value!r} is outside the float64 range: {why}")
    return value


#: What a formula raises when its (legal) inputs are so extreme that a float64 computation
#: overflows, underflows to a division by zero, or leaves a numpy routine's domain.
NUMERIC_FAILURES = (OverflowError, ZeroDivisionError, FloatingPointError)


def _extreme_argument(bound: inspect.BoundArguments) -> tuple[str, Any] | None:
    """The numeric argument farthest from 1 in magnitude (the likeliest culprit of an
    overflow): among the arguments and the fields of dataclass arguments (a
    ProblemConstants' n, zeta, mu, eta, ...)."""
    best: tuple[float, str, Any] | None = None

    def consider(name: str, v: Any) -> None:
        nonlocal best
        if isinstance(v, bool) or not isinstance(v, int | float):
            return
        try:
            size = abs(math.log10(abs(v))) if v else 0.0
        except (OverflowError, ValueError):
            size = math.inf
        if best is None or size > best[0]:
            best = (size, name, v)

    for name, v in bound.arguments.items():
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            for f in dataclasses.fields(v):
                consider(f.name, getattr(v, f.name))
        elif isinstance(v, dict):
            for k, item in v.items():
                consider(str(k), item)
        else:
            consider(name, v)
    return None if best is None else (best[1], best[2])


def numeric_guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a float64 failure inside ``fn`` (:data:`NUMERIC_FAILURES`) into a one-line
    :class:`ParameterError` naming the most extreme argument.

    For planners and calibrations only, where a legal but extreme input (epsilon = 1e-300,
    zeta = 1e-300) has no plan representable in double precision, so an error is the right
    answer. Functions whose answer exists for every legal input (a certificate, a bound)
    compute it instead (log domain, clamping) and are not wrapped.
    """
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NUMERIC_FAILURES as exc:
            try:
                bound = signature.bind(*args, **kwargs)
                culprit = _extreme_argument(bound)
            except TypeError:
                culprit = None
            what = (
                "the arguments are"
                if culprit is None
                else f"{culprit[0]} = {_shown(culprit[1])} is"
            )
            raise ParameterError(
                f"{fn.__name__}: {what} too extreme for double precision "
                f"({type(exc).__name__}: {' '.join(str(exc).split())}); use values closer to 1"
            ) from None

    return wrapper


def count(minimum: int, maximum: int = MAX_INT) -> Callable[[str, Any], int]:
    """The rule "an integer in [minimum, maximum]" for :func:`validated`."""
    return functools.partial(_count, minimum=minimum, maximum=maximum)


def _count(name: str, value: Any, *, minimum: int, maximum: int) -> int:
    return check_int(name, value, minimum, maximum)


def optional(rule: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """The rule "None, or a value passing ``rule``" for :func:`validated`."""
    return functools.partial(_optional, rule=rule)


def _optional(name: str, value: Any, *, rule: Callable[[str, Any], Any]) -> Any:
    return None if value is None else rule(name, value)


def named(name: str, rule: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """``rule``, its message naming the argument ``name`` (``N`` called "iterations")."""
    return functools.partial(_named, display=name, rule=rule)


def _named(_: str, value: Any, *, display: str, rule: Callable[[str, Any], Any]) -> Any:
    return rule(display, value)


def rule(check: Callable[..., Any], *args: Any, **options: Any) -> Callable[[str, Any], Any]:
    """``check`` with its further arguments fixed (``rule(check_array, minimum=0.0)``,
    ``rule(check_choice, ("paper", "exact"))``), as a rule for :func:`validated`."""
    return functools.partial(_with, check=check, args=args, options=options)


def _with(name: str, value: Any, *, check: Callable[..., Any], args: tuple, options: dict) -> Any:
    return check(name, value, *args, **options)


def public(impl: Callable[..., Any], **rules: Callable[[str, Any], Any]) -> Callable[..., Any]:
    """The public door of the private implementation ``impl`` (``_divergence`` ->
    ``divergence``): ``impl`` behind :func:`validated` with ``rules``, named without its
    leading underscore. The library calls ``impl``; users call the door."""
    fn = validated(**rules)(impl)
    fn.__name__ = fn.__qualname__ = impl.__name__.lstrip("_")
    return fn


def validated(**rules: Callable[[str, Any], Any]) -> Callable[[Callable[..., Any]], Any]:
    """The door of a public function: each argument named in ``rules`` passes its rule
    (``check_positive``, ``check_open_unit``, ``count(1)``, ...) once, on the way in, and
    the function receives the rule's result (a float or an int). Arguments left at their
    defaults are not checked (a default is the library's own value).

    The declarative form of scikit-learn's ``validate_params`` for functions: the check
    sits at the public entry point only, and the private functions behind it take
    already-checked values without checking them again.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(fn)
        unknown = set(rules) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{fn.__name__} has no parameter(s) {sorted(unknown)}")

        @functools.wraps(fn)
        def door(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            arguments = bound.arguments
            for name, rule in rules.items():
                if name in arguments:
                    arguments[name] = rule(name, arguments[name])
            return fn(*bound.args, **bound.kwargs)

        return door

    return decorate
