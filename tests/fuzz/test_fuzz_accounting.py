"""Fuzz: the privacy accountant's public entry points (privacy losses, composition,
queries, the budget, the profiles)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from fuzz_support import (
    HOSTILE,
    Arg,
    check_delta,
    count,
    draw_args,
    draw_checked,
    fuzz,
    outcome,
    real,
)
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("dp_accounting")

import itertools

from objpert import accounting
from objpert.accounting._pld import distribution as pld_distribution
from objpert.certify import _multiclass as multiclass
from objpert.certify import _profile as wa_profile
from objpert.certify import problem
from objpert.exceptions import BudgetExceededError

STEP = real(1e-3, 0.05, extra=(1e-3,))
SCALED = dict(sensitivity=real(0.1, 3.0), count=count(1, 20))
LOSSES = {
    "gaussian": dict(sigma=real(0.3, 50.0), **SCALED),
    "laplace": dict(scale=real(0.3, 50.0), **SCALED),
    "point": dict(epsilon=real(0.0, 3.0), delta=real(1e-12, 1.0, extra=(0.0,)), count=count(1, 20)),
    "zcdp": dict(rho=real(1e-4, 2.0), count=count(1, 5)),
}


def _loss(data):
    kind = data.draw(st.sampled_from(sorted(LOSSES)), label="kind")
    kw = draw_args(data, **LOSSES[kind])
    return outcome(getattr(accounting, kind), **kw)


@fuzz(40)
@given(data=st.data())
def test_losses_compose_and_query(data):
    ok, loss = _loss(data)
    if not ok:
        return
    kw = draw_args(data, discretization=STEP, epsilon=real(0.0, 20.0), delta=real(1e-12, 0.5))
    ok, pld = outcome(accounting.compose, [loss, loss], kw["discretization"])
    if not ok:
        return
    ok, d = outcome(accounting.delta_for_epsilon, pld, kw["epsilon"])
    if ok:
        check_delta(d)
        single = pld_distribution(loss, kw["discretization"]).get_delta_for_epsilon(kw["epsilon"])
        assert d >= min(single, 1.0) - 1e-12  # two releases lose no less than one
    ok, e = outcome(accounting.epsilon_for_delta, pld, kw["delta"])
    if ok:
        assert e >= 0.0 and not math.isnan(e)


@fuzz(40)
@given(data=st.data())
def test_accountant(data):
    kw = draw_args(data, epsilon=real(1e-2, 20.0), delta=real(1e-12, 0.5))
    ok, acc = outcome(accounting.PrivacyAccountant, kw["epsilon"], kw["delta"])
    if not ok:
        return
    for _ in range(data.draw(st.integers(1, 3), label="spends")):
        ok, loss = _loss(data)
        if not ok:
            continue
        ok, fits = outcome(acc.can_spend, loss)  # a PLD too large to build is refused
        before = acc.spent
        if not ok:
            ok, _ = outcome(acc.spend, loss, name="x")
            assert not ok and acc.spent == before
            continue
        try:
            acc.spend(loss, name="x")
        except BudgetExceededError as exc:
            assert not fits and "remaining" in str(exc) and acc.spent == before
        else:
            assert fits and acc.spent_delta <= acc.delta
    left = acc.remaining()
    assert 0.0 <= left.epsilon <= acc.epsilon and 0.0 <= left.delta <= acc.delta
    if acc.steps:
        cert = acc.certificate()
        assert cert.epsilon <= acc.epsilon * (1 + 1e-9) and cert.to_dict()["method"] == "pld"


@fuzz(40)
@given(data=st.data())
def test_wa_profile(data):
    kw = draw_args(
        data, sigma=real(1e-3, 10.0), iterations=count(1, 500),
        eps=Arg(st.lists(real(0.0, 30.0).plausible, min_size=1, max_size=5), HOSTILE),
    )  # fmt: skip
    pc = problem("logistic", n=500, d=5, zeta=1.5, mu=0.05)
    ok, out = outcome(
        wa_profile.watkins_arora_profile, pc, kw["sigma"], kw["iterations"], kw["eps"]
    )
    if ok:
        check_delta(out)
        eps = [float(e) for e in np.ravel(kw["eps"])]
        flat = np.ravel(out)
        order = sorted(range(len(eps)), key=lambda i: eps[i])
        vals = [float(flat[i]) for i in order]
        assert all(a >= b for a, b in itertools.pairwise(vals))  # non-increasing


@fuzz(30)
@given(data=st.data())
def test_joint_plan_arguments(data):
    """Bad targets are refused with a one-line error before any calibration runs."""
    kw = draw_checked(data, epsilon=real(1e-2, 5.0), delta=real(1e-12, 0.5), k=count(2, 10))
    calls = []

    def plan_at(e, d):
        calls.append((e, d))
        raise RuntimeError("stop")  # only reached with valid arguments

    try:
        _ok, _ = outcome(multiclass.joint_plan, plan_at, kw["epsilon"], kw["delta"], kw["k"])
    except RuntimeError:
        assert calls and all(e > 0 and 0 < d < 1 for e, d in calls)


@fuzz(25)
@given(data=st.data())
def test_certificates_compose(data):
    """Theorem C.13 certificates (certified or not) compose by PLD or are refused."""
    from objpert.certify import _theorem_c13 as theorem_c13

    kw = draw_args(
        data, sigma=real(1e-3, 1.0), iterations=count(1, 300), epsilon=real(1e-2, 5.0),
        k=count(1, 4),
    )  # fmt: skip
    pc = problem("logistic", n=500, d=5, zeta=1.5, mu=0.05)
    ok, cert = outcome(theorem_c13.certify, pc, kw["sigma"], kw["iterations"], kw["epsilon"], u=3.0)
    if not ok or not isinstance(kw["k"], int) or not 1 <= kw["k"] <= 4:
        return
    ok, composed = outcome(accounting.compose_certificates, [cert] * kw["k"], kw["epsilon"])
    if ok:
        check_delta(composed.delta)
        one = accounting.compose_certificates([cert], kw["epsilon"]).delta
        assert composed.delta >= one * (1 - 1e-9) - 1e-15  # k releases lose no less than one
        up = math.ceil(kw["epsilon"] / 1e-3) * 1e-3  # on the grid: within the certificate
        single = pld_distribution(accounting.from_certificate(cert))
        assert accounting.delta_for_epsilon(single, up) <= cert.delta * (1 + 1e-9) + 1e-15
        assert composed.method == "pld" and composed.k == kw["k"]


@fuzz(20)
@given(value=st.one_of(HOSTILE, st.sampled_from([None, [], "pipeline", object()])))
def test_pipeline_certificate_refuses_what_is_not_a_fitted_pipeline(value):
    ok, _ = outcome(accounting.pipeline_certificate, value, composition="pld", delta=1e-6)
    assert not ok
