"""The declarative door of public functions: each rule runs once, on the way in."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from objpert._validation import check_open_unit, check_positive, count, validated
from objpert.exceptions import ParameterError


@validated(epsilon=check_positive, delta=check_open_unit, n=count(1))
def _door(epsilon, delta=0.5, *, n=1):
    return epsilon, delta, n


def test_rules_convert_and_pass_values():
    assert _door(2, 0.25, n=3.0) == (2.0, 0.25, 3)
    assert type(_door(2)[0]) is float and type(_door(1.0, n=4.0)[2]) is int


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: _door(0.0), "epsilon"),
        (lambda: _door(math.inf), "epsilon"),
        (lambda: _door(True), "epsilon"),
        (lambda: _door(1.0, 1.0), "delta"),
        (lambda: _door(1.0, n=0), "n"),
        (lambda: _door(1.0, n=1.5), "n"),
    ],
)
def test_bad_arguments_name_the_parameter(call, name):
    with pytest.raises(ParameterError, match=name):
        call()


def test_defaults_are_not_checked():
    @validated(x=check_positive)
    def f(x=-1.0):
        return x

    assert f() == -1.0
    with pytest.raises(ParameterError):
        f(-1.0)


def test_a_rule_for_a_missing_parameter_is_a_programming_error():
    with pytest.raises(TypeError, match="no parameter"):
        validated(nope=check_positive)(lambda x: x)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_epsilon_rule_agrees_with_check_positive(value):
    try:
        expected = check_positive("epsilon", value)
    except ParameterError:
        with pytest.raises(ParameterError):
            _door(value)
    else:
        assert _door(value)[0] == expected
