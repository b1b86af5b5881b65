"""Fuzz: the DP-SGD and DP Newton planners (at their door, ``objpert.plan``) and DP-SGD's accountant
(objpert.mechanisms._certificates.dp_sgd, .dp_newton). Ranges are kept where the privacy loss
distributions are quick to compose (a few examples each)."""

from __future__ import annotations

import math

from fuzz_support import (
    check_certificate,
    choice,
    count,
    draw_args,
    draw_checked,
    fuzz,
    optional,
    outcome,
    real,
)
from hypothesis import given
from hypothesis import strategies as st

import objpert
from objpert.accounting._gaussian_steps import subsampled_gaussian_epsilon
from objpert.mechanisms._certificates.dp_newton import DPNewtonPlan
from objpert.mechanisms._certificates.dp_sgd import DPSGDPlan

COMMON = dict(
    loss=choice(("logistic", "robust"), ("hinge", None)),
    n=count(2, 2000),
    d=count(1, 20),
    zeta=real(1e-2, 1e2),
    epsilon=real(0.3, 10.0),
    delta=real(1e-10, 0.1),
)


def _check(plan, cls, eps, delta):
    assert isinstance(plan, cls)
    check_certificate(plan.certificate)
    assert plan.certificate.certified
    assert plan.certificate.epsilon <= float(eps) and plan.certificate.delta <= float(delta)
    assert math.isfinite(plan.sigma) and plan.sigma > 0
    assert cls.from_dict(plan.to_dict()).recertify().to_dict() == plan.certificate.to_dict()


@fuzz(8)
@given(data=st.data())
def test_plan_dp_sgd(data):
    kw = draw_args(
        data, **COMMON, batch_size=optional(count(1, 40)), epochs=optional(real(0.1, 3.0)),
        clip=optional(real(1e-2, 1e2)), mu=real(0.0, 1.0, extra=(0.0,)),
    )  # fmt: skip
    loss, n, eps, delta = kw.pop("loss"), kw.pop("n"), kw.pop("epsilon"), kw.pop("delta")
    ok, plan = outcome(objpert.plan, "dp_sgd", loss=loss, n=n, epsilon=eps, delta=delta, **kw)
    if ok:
        _check(plan, DPSGDPlan, eps, delta)
        assert 1 <= plan.batch_size <= plan.n and plan.iterations >= 1


@fuzz(8)
@given(data=st.data())
def test_plan_dp_newton(data):
    kw = draw_args(
        data, **COMMON, mu=real(1e-4, 10.0), iterations=count(1, 20), eta=real(1e-2, 2.0),
        accountant=choice(("gdp", "rdp")),
    )  # fmt: skip
    loss, n, eps, delta = kw.pop("loss"), kw.pop("n"), kw.pop("epsilon"), kw.pop("delta")
    ok, plan = outcome(objpert.plan, "dp_newton", loss=loss, n=n, epsilon=eps, delta=delta, **kw)
    if ok:
        _check(plan, DPNewtonPlan, eps, delta)


@fuzz(10)
@given(data=st.data())
def test_dp_sgd_epsilon(data):
    kw = draw_checked(
        data, delta=real(1e-10, 0.5), iterations=count(1, 200), sampling_rate=real(1e-3, 1.0),
        noise_multiplier=real(0.5, 20.0),
    )  # fmt: skip
    ok, val = outcome(subsampled_gaussian_epsilon, **kw)
    if ok:
        assert val >= 0 and not math.isnan(val)
