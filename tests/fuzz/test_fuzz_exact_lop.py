"""Fuzz: the exact-minimiser privacy profile (objpert.mechanisms._certificates.redberg), the LOP
planners' accountants, and QOP's comparison with theta_ref
(objpert.mechanisms._certificates.qop)."""

from __future__ import annotations

import math

from fuzz_support import (
    check_certificate,
    check_delta,
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
from objpert.mechanisms._certificates import qop, redberg

PROFILE = dict(
    n=count(1, 10**8),
    grad=real(1e-3, 1e3),
    smooth=real(1e-3, 1e3),
    mu=real(1e-8, 10.0),
    sigma=real(1e-9, 1e2),
    epsilon=real(1e-3, 20.0, extra=(0.0,)),
    delta=real(1e-15, 0.5),
    ratio=real(1e-4, 50.0),
    log_det=real(1e-6, 5.0, extra=(0.0,)),
)


@fuzz(120)
@given(data=st.data())
def test_profile_functions(data):
    kw = draw_checked(data, **PROFILE)
    n, g, b, mu, s, e, dl, t, c0 = (
        kw[k] for k in ("n", "grad", "smooth", "mu", "sigma", "epsilon", "delta", "ratio",
                        "log_det")
    )  # fmt: skip
    ok, val = outcome(redberg.folded_gaussian_delta, e, t, c0)
    if ok:
        check_delta(val)
        ok2, larger = outcome(redberg.folded_gaussian_delta, e, t * 1.5, c0)
        assert not ok2 or larger >= val  # increasing in the sensitivity ratio
    ok, val = outcome(redberg.exact_lop_delta, n, g, b, mu, s, e)
    if ok:
        check_delta(val)
        ok2, later = outcome(redberg.exact_lop_delta, n, g, b, mu, s, e + 0.5)
        assert not ok2 or later <= val  # decreasing in epsilon
    ok, val = outcome(redberg.exact_lop_epsilon, n, g, b, mu, s, dl)
    if ok:
        assert val >= 0 and math.isfinite(val)
        assert redberg.exact_lop_delta(n, g, b, mu, s, val) <= dl
    ok, val = outcome(redberg.exact_lop_constants, n, g, b, mu, s)
    if ok:
        assert all(v >= 0 and math.isfinite(v) for v in val)


@fuzz(40)
@given(data=st.data())
def test_calibration(data):
    kw = draw_checked(data, **{k: PROFILE[k] for k in ("n", "grad", "smooth", "mu", "delta")},
                      epsilon=real(1e-2, 10.0))  # fmt: skip
    args = (kw["n"], kw["grad"], kw["smooth"], kw["mu"], kw["epsilon"], kw["delta"])
    ok, sigma = outcome(redberg.calibrate_exact_lop, *args)
    if ok:
        assert sigma > 0 and math.isfinite(sigma)
        n, g, b, mu, e, dl = args
        assert redberg.exact_lop_delta(n, g, b, mu, sigma, e) <= dl


@fuzz(15)
@given(data=st.data())
def test_pair_delta(data):
    kw = draw_checked(data, epsilon=real(1e-3, 5.0, extra=(0.0,)), ratio=real(1e-2, 5.0),
                      angle=real(0.0, math.pi), log_det=real(1e-6, 1.0, extra=(0.0,)))  # fmt: skip
    ok, val = outcome(redberg.pair_delta, kw["epsilon"], kw["ratio"], kw["angle"], kw["log_det"])
    if ok:
        check_delta(val)


@fuzz(40)
@given(data=st.data())
def test_planners_with_accountants(data):
    kw = draw_args(
        data, method=choice(("lop", "lop_clip", "amp")), n=count(2, 10**7), d=count(1, 50),
        zeta=real(1e-2, 1e2), epsilon=real(1e-2, 10.0), delta=real(1e-12, 0.5),
        mu=optional(real(1e-6, 10.0)),
        accountant=choice(("profile", "kifer", "tightest"), ("exact", "bogus", None, 1)),
    )  # fmt: skip
    opts = {"mu": kw["mu"], "accountant": kw["accountant"]}
    if kw["method"] == "lop_clip":
        opts["clip"] = 0.5
    ok, plan = outcome(
        objpert.plan, kw["method"], loss="logistic", n=kw["n"], d=kw["d"], zeta=kw["zeta"],
        epsilon=kw["epsilon"], delta=kw["delta"], **opts,
    )  # fmt: skip
    if ok:
        check_certificate(plan.certificate)
        assert plan.certificate.certified and plan.certificate.delta <= plan.delta
        assert plan.recertify() == plan.certificate


@fuzz(60)
@given(data=st.data())
def test_compare_to_reference(data):
    risks = data.draw(
        st.one_of(
            st.lists(st.floats(0.0, 1e6), min_size=1, max_size=8),
            st.lists(st.one_of(st.floats(allow_nan=True), st.just(-1.0)), max_size=3),
        ),
        label="risks",
    )
    ref = data.draw(st.one_of(st.floats(0.0, 1e6), st.sampled_from([math.nan, -1.0, "x"])))
    ok, rep = outcome(qop.compare_to_reference, risks, ref)
    if ok:
        assert len(rep.gains) == len(risks)
        assert rep.all_swamped == all(r >= ref for r in risks)
        assert rep.statement()
        assert ("swamps the data" in rep.statement()) == bool(rep.swamped)
