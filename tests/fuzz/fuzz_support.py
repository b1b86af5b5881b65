"""What the fuzz tests share: strategies of hostile arguments and the contract checks.

The contract of every public entry point: it either raises an objpert error (an
:class:`objpert.exceptions.ObjpertError`) with a non-empty one-line message, or returns a
valid result: certificates with delta in [0, 1] and epsilon >= 0, finite weights,
probabilities in [0, 1] summing to 1, no NaN anywhere.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from objpert.exceptions import ObjpertError

__all__ = [
    "BAD",
    "HOSTILE",
    "Arg",
    "check_certificate",
    "check_delta",
    "check_not_nan",
    "choice",
    "count",
    "draw_args",
    "draw_checked",
    "examples",
    "fixed",
    "fuzz",
    "log_floats",
    "optional",
    "outcome",
    "real",
]


def _env_number(name: str, kind: type[int] | type[float]) -> int | float | None:
    """The environment variable ``name`` as a positive finite number, None when unset."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name}={text!r}: expected a positive {kind.__name__}")
    return value


def examples(n: int) -> int:
    """A test's example count: ``n`` by default, ``OBJPERT_FUZZ_EXAMPLES`` when set, 40 n
    with ``HYPOTHESIS_PROFILE=long``; then times ``OBJPERT_FUZZ_SCALE`` (a positive number,
    rounded up), so that a campaign keeps each test's share of the run."""
    forced = _env_number("OBJPERT_FUZZ_EXAMPLES", int)
    if forced is not None:
        n = int(forced)
    elif os.environ.get("HYPOTHESIS_PROFILE") == "long":
        n = 40 * n
    scale = _env_number("OBJPERT_FUZZ_SCALE", float)
    return max(1, math.ceil(n * scale)) if scale is not None else max(1, n)


_PROFILES = {"long": "objpert-fuzz-random", "random": "objpert-fuzz-random",
             "noshrink": "objpert-fuzz-noshrink",
             "random-noshrink": "objpert-fuzz-random-noshrink"}  # fmt: skip


def fuzz(n: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@settings`` of a fuzz test: the profile ``HYPOTHESIS_PROFILE`` names (default:
    deterministic, ``derandomize=True``, no deadline; see conftest.py) with :func:`examples`
    (n) examples."""
    name = _PROFILES.get(os.environ.get("HYPOTHESIS_PROFILE", ""), "objpert-fuzz")
    return settings(settings.get_profile(name), max_examples=examples(n))


#: Values that are not valid numbers, or are numbers at the edge of the float64 range.
BAD: tuple[Any, ...] = (
    0,
    -0.0,
    -1,
    -1e-300,
    5e-324,
    1e-300,
    1e300,
    1.7e308,
    -1e300,
    10**400,
    -(10**400),
    2**53 + 1,
    math.nan,
    math.inf,
    -math.inf,
    True,
    False,
    np.True_,
    "1.0",
    "",
    None,
    [1.0],
    1 + 1j,
    np.float64(0.25),
    np.int64(7),
    np.float32(3.0),
    np.array(2.0),
    np.array([1.0, 2.0]),
)


def log_floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Floats log-uniform in [lo, hi] (lo > 0)."""
    a, b = math.log10(lo), math.log10(hi)
    return st.floats(a, b).map(lambda e: float(min(max(10.0**e, lo), hi)))


#: Hostile values of any numeric argument: not numbers, NaN and infinities, magnitudes at
#: the edges of the float64 range, huge integers.
HOSTILE: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(BAD),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-300.0, 300.0).map(lambda e: 10.0**e),
    st.floats(-300.0, 300.0).map(lambda e: -(10.0**e)),
    st.integers(-(10**30), 10**30),
    st.integers(min_value=2**60, max_value=10**500),
)


class Arg:
    """An argument under fuzz: its plausible values and its hostile ones (``Arg(plausible,
    hostile)``)."""

    def __init__(
        self,
        plausible: st.SearchStrategy[Any],
        hostile: st.SearchStrategy[Any],
        checked: st.SearchStrategy[Any] | None = None,
    ):
        self.plausible = plausible
        self.hostile = hostile
        #: what a door hands inward: plausible values of the checked type (counts as int)
        self.checked = plausible if checked is None else checked


def real(lo: float, hi: float, *, extra: tuple[Any, ...] = ()) -> Arg:
    """A real argument whose plausible range is [lo, hi] (log-uniform when lo > 0)."""
    plausible = log_floats(lo, hi) if lo > 0 else st.floats(lo, hi)
    if extra:
        plausible = st.one_of(plausible, st.sampled_from(extra))
    return Arg(plausible, HOSTILE)


def count(lo: int, hi: int) -> Arg:
    """An integer argument whose plausible range is [lo, hi] (some as integral floats)."""
    plausible = st.integers(lo, hi)
    return Arg(
        st.one_of(plausible, plausible.map(float)),
        st.one_of(HOSTILE, st.integers(2**53 - 2, 2**53 + 2), st.floats(lo - 1, hi + 1)),
        plausible,
    )


def choice(values: tuple[Any, ...], bad: tuple[Any, ...] = ("bogus", 3, None)) -> Arg:
    """An argument taking one of ``values``."""
    return Arg(st.sampled_from(values), st.sampled_from(bad))


def optional(arg: Arg) -> Arg:
    """``arg`` or None."""
    return Arg(st.one_of(st.none(), arg.plausible), arg.hostile, st.one_of(st.none(), arg.checked))


def fixed(value: Any) -> Arg:
    """An argument held at ``value`` (never hostile)."""
    return Arg(st.just(value), st.just(value))


def draw_args(data: st.DataObject, **spec: Arg) -> dict[str, Any]:
    """Arguments drawn from ``spec``: plausible, except (half the time) one or two of them,
    chosen at random, drawn hostile, so that every hostile value meets the deep code."""
    names = sorted(spec)
    pick = st.sampled_from(names)
    hostile = data.draw(
        st.one_of(st.just(()), st.just(()), st.tuples(pick), st.tuples(pick, pick)),
        label="hostile",
    )
    return {
        k: data.draw(spec[k].hostile if k in hostile else spec[k].plausible, label=k) for k in names
    }


def draw_checked(data: st.DataObject, **spec: Arg) -> dict[str, Any]:
    """Arguments as a door hands them inward: plausible values of the checked types. For the
    private formulas behind the doors, which take checked values and do not check them
    again (the hostile values are fuzzed at the doors)."""
    return {k: data.draw(spec[k].checked, label=k) for k in sorted(spec)}


def _event(text: str) -> None:
    """A hypothesis event (shown by --hypothesis-show-statistics), outside tests a no-op."""
    with contextlib.suppress(InvalidArgument):
        event(text)


def outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """(True, result) when ``fn`` returns, (False, error) when it raises an objpert error
    with a non-empty one-line message; anything else (a raw exception) fails the test."""
    name = getattr(fn, "__name__", "call")
    try:
        result = fn(*args, **kwargs)
    except ObjpertError as exc:
        msg = str(exc)
        assert msg.strip(), f"{type(exc).__name__} with an empty message"
        assert "\n" not in msg.strip(), f"{type(exc).__name__} on several lines: {msg!r}"
        _event(f"{name}: {type(exc).__name__}")
        return False, exc
    _event(f"{name}: returned")
    return True, result


def check_not_nan(value: Any, what: str = "result") -> None:
    """No NaN in ``value`` (a number, an array, or a tuple/list/dict of them)."""
    if isinstance(value, dict):
        for k, v in value.items():
            check_not_nan(v, f"{what}[{k!r}]")
        return
    if isinstance(value, tuple | list):
        for i, v in enumerate(value):
            check_not_nan(v, f"{what}[{i}]")
        return
    if isinstance(value, bool | str) or value is None:
        return
    arr = np.asarray(value)
    if arr.dtype.kind in "fc":
        assert not np.isnan(arr).any(), f"{what} has NaN: {value!r}"


def check_delta(value: Any, what: str = "delta") -> None:
    """A delta (scalar or array): in [0, 1], no NaN."""
    arr = np.asarray(value, dtype=float)
    assert not np.isnan(arr).any(), f"{what} has NaN: {value!r}"
    assert ((arr >= 0.0) & (arr <= 1.0)).all(), f"{what} outside [0, 1]: {value!r}"


def check_certificate(cert: Any) -> None:
    """A certificate (W&A, a peer's, QOP's or a composed one): delta in [0, 1], epsilon >= 0,
    a certified delta in (0, 1) (never 0.0 from an underflow) with a finite epsilon."""
    eps, delta = float(cert.epsilon), float(cert.delta)
    check_delta(delta, "certificate delta")
    assert eps >= 0.0 and not math.isnan(eps), f"certificate epsilon {eps!r}"
    certified = getattr(cert, "certified", True)
    if certified:
        assert 0.0 < delta < 1.0, f"certified delta {delta!r}"
        assert math.isfinite(eps), f"certified epsilon {eps!r}"
    for name in ("truncation_mass", "divergence_term"):
        v = getattr(cert, name, None)
        if v is not None:
            assert not math.isnan(v) and v >= 0.0, f"{name} = {v!r}"
    for inner in getattr(cert, "certificates", ()):
        check_certificate(inner)
