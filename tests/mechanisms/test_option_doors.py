"""Every mechanism option is checked at the door, ``objpert.plan``: a bad value of any
option is a ParameterError naming it, before any calibration runs. The planners and the
formulas behind the door take checked values and do not check them again, so this is
where the property "bad input gives a ParameterError naming the parameter" is tested.
"""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import objpert
from objpert.exceptions import ParameterError
from objpert.mechanisms import names

PUBLIC = dict(n=500, d=3, zeta=1.0, epsilon=1.0, delta=1e-5)

_NOT_A_NUMBER = st.one_of(
    st.just(math.nan), st.just(math.inf), st.just(-math.inf), st.booleans(),
    st.text(max_size=3), st.just(10**400), st.just(1j),
)  # fmt: skip
#: rule -> bad values of that rule
BAD = {
    "positive": st.one_of(_NOT_A_NUMBER, st.floats(max_value=0.0), st.integers(max_value=0)),
    "nonnegative": st.one_of(
        _NOT_A_NUMBER, st.floats(max_value=-1e-300), st.integers(max_value=-1)
    ),
    "unit": st.one_of(
        _NOT_A_NUMBER, st.floats(max_value=0.0), st.floats(min_value=1.0, allow_infinity=False)
    ),
    "count": st.one_of(
        _NOT_A_NUMBER, st.integers(max_value=0), st.floats(0.01, 1e6).filter(lambda x: x % 1)
    ),
    "grid_bits": st.one_of(
        _NOT_A_NUMBER, st.integers(max_value=3), st.integers(min_value=25, max_value=10**6)
    ),
}

#: (mechanism, loss, option, rule): every numeric option of every registered planner.
OPTIONS = [
    *[("lop", "logistic", o, r) for o, r in
      [("mu", "positive"), ("tolerance", "positive"), ("max_iter", "count")]],
    *[("lop_clip", "logistic", o, r) for o, r in
      [("clip", "positive"), ("mu", "positive"), ("tolerance", "positive"),
       ("max_iter", "count")]],
    *[("amp", "logistic", o, r) for o, r in
      [("mu", "positive"), ("gamma", "positive"), ("output_share", "unit"),
       ("output_delta_share", "unit"), ("max_iter", "count"), ("grid_bits", "grid_bits")]],
    *[("output_perturbation", "logistic", o, r) for o, r in
      [("mu", "positive"), ("radius", "positive"), ("tolerance", "positive"),
       ("max_iter", "count"), ("grid_bits", "grid_bits")]],
    *[("noisy_gd", "logistic", o, r) for o, r in
      [("iterations", "count"), ("mu", "nonnegative"), ("eta", "positive"),
       ("grid_bits", "grid_bits")]],
    *[("dp_sgd", "logistic", o, r) for o, r in
      [("epochs", "positive"), ("iterations", "count"), ("clip", "positive"),
       ("mu", "nonnegative"), ("eta", "positive"), ("discretization", "positive")]],
    *[("dp_newton", "logistic", o, r) for o, r in
      [("mu", "positive"), ("iterations", "count"), ("eta", "positive")]],
    *[("multinomial", "softmax", o, r) for o, r in
      [("mu", "positive"), ("comparator_norm", "positive"), ("gamma", "positive"),
       ("output_share", "unit"), ("max_iter", "count"), ("grid_bits", "grid_bits")]],
    *[("qop", "squared", o, r) for o, r in
      [("smoothness", "positive"), ("rank", "count"), ("m", "count")]],
]  # fmt: skip


def _plan(mechanism: str, loss: str, **options):
    if mechanism == "multinomial":
        options.setdefault("n_classes", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return objpert.plan(mechanism, loss=loss, **PUBLIC, **options)


@pytest.mark.parametrize(("mechanism", "loss", "option", "rule"), OPTIONS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_a_bad_option_is_refused_at_objpert_plan_naming_it(mechanism, loss, option, rule, data):
    value = data.draw(BAD[rule], label=option)
    with pytest.raises(ParameterError, match=option):
        _plan(mechanism, loss, **{option: value})


ONE_VECTOR_PEERS = ["lop", "lop_clip", "amp", "output_perturbation", "noisy_gd", "dp_sgd"]


@pytest.mark.parametrize("mechanism", [*ONE_VECTOR_PEERS, "dp_newton", "multinomial"])
def test_one_row_is_refused_where_a_neighbour_must_share_a_row(mechanism):
    loss = "softmax" if mechanism == "multinomial" else "logistic"
    options = {"n_classes": 3} if mechanism == "multinomial" else {}
    with pytest.raises(ParameterError, match="n must be"):
        objpert.plan(mechanism, loss=loss, **{**PUBLIC, "n": 1}, **options)


@pytest.mark.parametrize("mechanism", [*names(), "multinomial"])
def test_an_unknown_option_is_a_parameter_error_naming_it(mechanism):
    loss = {"multinomial": "softmax", "qop": "squared"}.get(mechanism, "logistic")
    options = {"n_classes": 3} if mechanism == "multinomial" else {}
    with pytest.raises(ParameterError, match="bogus"):
        objpert.plan(mechanism, loss=loss, **PUBLIC, **options, bogus=3)


def test_the_multinomial_class_count_is_checked_at_the_door():
    with pytest.raises(ParameterError, match="n_classes"):
        _plan("multinomial", "softmax", n_classes=1)


def test_dp_newton_refuses_a_dimension_beyond_its_dense_hessian():
    with pytest.raises(ParameterError, match="d must be at most"):
        objpert.plan("dp_newton", loss="logistic", **{**PUBLIC, "d": 1001})


@pytest.mark.parametrize(("mechanism", "option"), [("noisy_gd", "accountant"),
                                                   ("dp_sgd", "accountant"),
                                                   ("amp", "gaussian_calibration"),
                                                   ("output_perturbation",
                                                    "gaussian_calibration")])  # fmt: skip
def test_a_bad_option_name_value_is_refused_naming_it(mechanism, option):
    with pytest.raises(ParameterError, match=option):
        _plan(mechanism, "logistic", **{option: "no_such"})


# ------------------------------------------------- the plan's fields at the privacy boundary

_PLANS = {
    name: _plan(name, "softmax" if name == "multinomial" else "logistic")
    for name in [*ONE_VECTOR_PEERS, "dp_newton", "multinomial"]
}
_FIELDS = [(name, field) for name, plan in _PLANS.items() for field in plan.field_rules]
_BAD_FIELD = st.one_of(
    st.just(math.nan), st.just(math.inf), st.just(-1.0), st.just(0.0), st.just(10**400)
)


@pytest.mark.parametrize(("mechanism", "field"), _FIELDS)
@settings(max_examples=5, deadline=None)
@given(value=_BAD_FIELD)
def test_a_plan_field_out_of_its_range_is_refused_when_the_plan_is_recertified(
    mechanism, field, value
):
    """A plan built by hand (or read from a file) has its fields checked where it is
    re-certified, before any formula reads them; a release refuses it (PrivacyError)."""
    import dataclasses

    from objpert.mechanisms._peers.checks import check_peer_plan

    plan = _PLANS[mechanism]
    rule = getattr(plan.field_rules[field], "__name__", "")
    if value == 0.0 and rule == "check_nonnegative":
        value = -1.0  # 0 is legal here (a ridge mu = 0, an exact solve's tolerance)
    bad = dataclasses.replace(plan, **{field: value})
    with pytest.raises(ParameterError, match=field):
        bad.recertify()
    if mechanism != "multinomial":
        with pytest.raises(objpert.PrivacyError, match=field):
            check_peer_plan(bad, mechanism)


def test_the_fields_of_a_planned_plan_pass_their_rules():
    for plan in _PLANS.values():
        assert plan.recertify().to_dict() == plan.certificate.to_dict()


def test_a_solver_tolerance_that_overflows_the_output_sensitivity_is_refused():
    """AMP's output sensitivity 2 gamma / mu beyond the float range: a ParameterError, not
    a calibration that doubles an infinite scale for ever."""
    with pytest.raises(ParameterError, match="overflows"):
        objpert.plan("amp", loss="logistic", n=1000, d=5, zeta=1.0, epsilon=1.0, delta=1e-6,
                     gamma=1e306)  # fmt: skip


def test_the_smallest_passing_scale_stops_at_the_float_range():
    from objpert.accounting._bisection import smallest_passing
    from objpert.exceptions import UnreachableTargetError

    with pytest.raises(UnreachableTargetError, match="never"):
        smallest_passing(lambda s: False, 1e300, limit=None, unreachable="never")


@pytest.mark.parametrize("loss", ["logistic", "robust"])
def test_an_unknown_watkins_arora_option_is_named_as_an_option_not_a_loss_parameter(loss):
    """rows=3 (the option is rows_per_unit): the error lists the options, not only the
    loss's parameters."""
    with pytest.raises(ParameterError, match=r"no option 'rows'.*rows_per_unit"):
        objpert.plan("watkins_arora", loss=loss, **PUBLIC, rows=3)
