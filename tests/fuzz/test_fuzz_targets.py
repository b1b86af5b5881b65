"""Fuzz: the target delta every planner takes (:func:`objpert.accounting._certificate.
check_target_delta`): in (0, 1) and at least the smallest delta a certificate reports."""

from __future__ import annotations

import math

from fuzz_support import HOSTILE, fuzz, log_floats, outcome
from hypothesis import given
from hypothesis import strategies as st

from objpert.accounting._certificate import DELTA_FLOOR, check_target_delta
from objpert.exceptions import ParameterError

DELTAS = st.one_of(
    HOSTILE,
    log_floats(1e-320, 0.999),
    st.sampled_from([DELTA_FLOOR, math.nextafter(DELTA_FLOOR, 0.0), 5e-324, 0.5]),
)


@fuzz(150)
@given(delta=DELTAS)
def test_check_target_delta(delta):
    """The delta as a float iff it is a real number in [DELTA_FLOOR, 1), else a one-line
    ParameterError naming delta."""
    ok, got = outcome(check_target_delta, delta)
    if ok:
        assert type(got) is float and DELTA_FLOOR <= got < 1.0
        assert got == float(delta)
    else:
        assert isinstance(got, ParameterError) and "delta" in str(got)
        if type(delta) is float and DELTA_FLOOR <= delta < 1.0:
            raise AssertionError(f"a valid delta {delta!r} was refused: {got}")
