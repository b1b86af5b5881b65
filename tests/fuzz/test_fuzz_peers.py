"""Fuzz: the peers' planners, certificates and accountants (objpert.mechanisms._certificates) and
QOP's planner and formulas (objpert.mechanisms._certificates.qop).

Hostile values are fuzzed at the doors (``objpert.plan``, ``qop_plan``, the accountants);
the formulas behind the doors take checked values (:func:`fuzz_support.draw_checked`)."""

from __future__ import annotations

import math

from fuzz_support import (
    check_certificate,
    check_delta,
    check_not_nan,
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
from objpert.accounting import _conversions as zcdp
from objpert.accounting import _gaussian_mechanism as cgauss
from objpert.accounting import _gaussian_steps as gsteps
from objpert.mechanisms import _certificates as peers
from objpert.mechanisms._certificates import PeerPlan, qop

COMMON = dict(
    loss=choice(("logistic", "robust"), ("squared", "hinge", None)),
    n=count(2, 10**7),
    d=count(1, 100),
    zeta=real(1e-2, 1e2),
    epsilon=real(1e-2, 10.0),
    delta=real(1e-12, 0.5),
)

OPTIONS = {
    "lop": dict(mu=optional(real(1e-6, 10.0)), tolerance=optional(real(1e-12, 1e-3)),
                max_iter=count(1, 10**4)),
    "lop_clip": dict(clip=real(1e-3, 1e3), mu=optional(real(1e-6, 10.0))),
    "amp": dict(mu=optional(real(1e-6, 10.0)), gamma=optional(real(1e-12, 1e-3)),
                output_share=real(1e-3, 0.5),
                gaussian_calibration=choice(("analytic", "classical")),
                grid_bits=count(4, 24)),
    "output_perturbation": dict(mu=optional(real(1e-6, 10.0)), radius=real(1e-2, 1e2),
                                gaussian_calibration=choice(("analytic", "classical")),
                                grid_bits=count(4, 24)),
    "noisy_gd": dict(iterations=count(1, 1000), mu=real(0.0, 1.0, extra=(0.0,)),
                     accountant=choice(("zcdp", "rdp")), grid_bits=count(4, 24)),
}  # fmt: skip


@fuzz(40)
@given(method=st.sampled_from(sorted(OPTIONS)), data=st.data())
def test_peer_planners(method, data):
    kw = draw_args(data, **COMMON, **OPTIONS[method])
    if method == "noisy_gd" and kw["loss"] == "robust":
        kw["loss_params"] = {"scale": 1.0}
        kw["loss"] = "robust"
    loss = kw.pop("loss")
    n, d, zeta, eps, delta = (kw.pop(k) for k in ("n", "d", "zeta", "epsilon", "delta"))
    ok, plan = outcome(
        objpert.plan, method, loss=loss, n=n, d=d, zeta=zeta, epsilon=eps, delta=delta, **kw
    )
    if ok:
        assert isinstance(plan, PeerPlan)
        check_certificate(plan.certificate)
        assert plan.certificate.certified
        assert plan.certificate.delta <= float(delta) and plan.certificate.epsilon <= float(eps)
        assert math.isfinite(plan.sigma) and plan.sigma > 0 and math.isfinite(plan.mu)
        again = PeerPlan.from_dict(plan.to_dict())
        assert peers.certify_peer(again) == plan.certificate


SENS = real(1e-4, 1e4)
SIGMA = real(1e-4, 1e4)


@fuzz(120)
@given(data=st.data())
def test_gaussian_mechanism(data):
    # private formulas: the values their doors hand them (hostile ones are fuzzed there)
    kw = draw_checked(
        data, epsilon=real(0.0, 50.0, extra=(0.0,)), delta=real(1e-12, 0.5), sensitivity=SENS,
        sigma=SIGMA,
    )  # fmt: skip
    e, d, g, s = (kw[k] for k in ("epsilon", "delta", "sensitivity", "sigma"))
    ok, val = outcome(cgauss.gaussian_delta, e, g, s)
    if ok:
        check_delta(val)
    ok, val = outcome(cgauss.gaussian_epsilon, d, g, s)
    if ok:
        assert val >= 0 and not math.isnan(val)
    if e == 0.0:  # the calibrations' doors refuse epsilon = 0
        return
    ok, val = outcome(cgauss.calibrate_gaussian, g, e, d)
    if ok:
        assert math.isfinite(val) and val > 0
        assert cgauss.gaussian_delta(e, g, val) <= float(d)
    ok, val = outcome(cgauss.classical_gaussian_sigma, g, e, d)
    if ok:
        assert math.isfinite(val) and val > 0


@fuzz(100)
@given(data=st.data())
def test_discrete_and_zcdp(data):
    kw = draw_checked(
        data, rho=real(1e-8, 1e3, extra=(0.0,)), epsilon=real(1e-3, 50.0),
        delta=real(1e-12, 0.5), sensitivity=SENS, sigma=SIGMA, d=count(1, 1000),
        steps=count(1, 1000), bits=count(4, 24),
    )  # fmt: skip
    rho, e, dl, g, s, d, T, k = (
        kw[x] for x in ("rho", "epsilon", "delta", "sensitivity", "sigma", "d", "steps", "bits")
    )
    ok, val = outcome(zcdp.cdp_delta, rho, e)
    if ok:
        check_delta(val)
    ok, val = outcome(zcdp.cdp_epsilon, rho, dl)
    if ok:
        assert val >= 0 and not math.isnan(val)
    for fn, args in (
        (peers.grid_noise, (s, k)),
        (peers.grid_sigma, (s, k)),
        (peers.grid_sensitivity, (g, s, d, k)),
        (peers.discrete_gaussian_rho, (g, s, d, T, k)),
        (peers.discrete_gaussian_epsilon, (dl, g, s, d, T, k)),
    ):
        ok, val = outcome(fn, *args)
        if ok:
            check_not_nan(val, fn.__name__)
    ok, val = outcome(peers.discrete_gaussian_delta, e, g, s, d, T, k)
    if ok:
        check_delta(val)


@fuzz(30)
@given(data=st.data())
def test_discrete_calibration(data):
    kw = draw_checked(
        data, sensitivity=SENS, d=count(1, 100), epsilon=real(1e-2, 10.0),
        delta=real(1e-10, 0.1), steps=count(1, 100), bits=count(4, 24),
        report=choice(("delta", "epsilon")),
    )  # fmt: skip
    ok, sigma = outcome(peers.calibrate_discrete_gaussian, **kw)
    if ok:
        assert math.isfinite(sigma) and sigma > 0
    ok, sigma = outcome(
        peers.classical_grid_sigma, kw["sensitivity"], kw["d"], kw["epsilon"], kw["delta"],
        kw["bits"],
    )  # fmt: skip
    if ok:
        assert math.isfinite(sigma) and sigma > 0


@fuzz(100)
@given(data=st.data())
def test_kifer_and_output_constants(data):
    kw = draw_checked(
        data, n=count(2, 10**7), grad=real(1e-3, 1e3), smooth=real(1e-3, 1e3),
        epsilon=real(1e-3, 10.0), delta=real(1e-12, 0.5), sigma=SIGMA, mu=real(1e-6, 10.0),
        tolerance=real(0.0, 1e-3, extra=(0.0,)), d=count(1, 1000), radius=real(1e-2, 1e2),
    )  # fmt: skip
    n, g, sm, e, dl, s, mu, tol, d, rad = (
        kw[x]
        for x in ("n", "grad", "smooth", "epsilon", "delta", "sigma", "mu", "tolerance", "d",
                  "radius")
    )  # fmt: skip
    ok, val = outcome(peers.lop_delta, n, g, s, e)
    if ok:
        check_delta(val)
    for fn, args in (
        (peers.lop_mean_form, (n, g, sm, e, dl)),
        (peers.lop_noise, (g, e, dl)),
        (peers.lop_regulariser, (sm, e)),
        (peers.output_sensitivity, (n, g, mu, tol)),
        (peers.default_output_mu, (n, d, g, e, dl, rad)),
    ):
        ok, val = outcome(fn, *args)
        if ok:
            check_not_nan(val, fn.__name__)
            assert all(v >= 0 and math.isfinite(v) for v in (val if isinstance(val, tuple)
                       else (val,))), (fn.__name__, val)  # fmt: skip


@fuzz(80)
@given(data=st.data())
def test_continuous_accountants(data):
    kw = draw_checked(  # private accountants: checked values (hostile ones at the doors)
        data, epsilon=real(1e-3, 20.0), delta=real(1e-12, 0.5), iterations=count(1, 10**4),
        z=real(1e-2, 1e3), accountant=choice(("gdp", "rdp")),
    )  # fmt: skip
    e, dl, T, z, acc = (kw[x] for x in ("epsilon", "delta", "iterations", "z", "accountant"))
    ok, val = outcome(gsteps.noisy_gd_delta, e, T, z)
    if ok:
        check_delta(val)
    ok, val = outcome(gsteps.gdp_mu, T, z)
    if ok:
        assert val > 0 and not math.isnan(val)
    ok, val = outcome(gsteps.noisy_gd_epsilon, dl, T, z, acc)
    if ok:
        assert val >= 0 and not math.isnan(val)
    ok, val = outcome(gsteps.rdp_epsilon, dl, T, z)
    if ok:
        assert val[0] >= 0 and not math.isnan(val[0])
    if data.draw(st.integers(0, 3)) == 0:
        ok, val = outcome(gsteps.calibrate_noise_multiplier, e, dl, T, acc)
        if ok:
            assert math.isfinite(val) and val > 0


@fuzz(30)
@given(data=st.data())
def test_qop_plan(data):
    kw = draw_args(
        data, d=count(1, 60), epsilon=real(1e-2, 10.0), delta=real(1e-10, 0.5),
        smoothness=real(1e-3, 1e3), rank=count(1, 3), m=optional(count(1, 200)),
        inexact=choice((False, True), (1, "yes", None)), tau=real(0.0, 1e-3, extra=(0.0,)),
        eta=real(0.0, 1e-3, extra=(0.0,)), reading=choice(("authors", "half")),
    )  # fmt: skip
    if not kw["inexact"]:
        kw["tau"] = kw["eta"] = None
    d, eps, delta = kw.pop("d"), kw.pop("epsilon"), kw.pop("delta")
    ok, plan = outcome(qop.qop_plan, d, eps, delta, **kw)
    if ok:
        check_certificate(plan.certificate)
        assert plan.certificate.delta <= float(delta) * (1 + 1e-9)
        assert math.isfinite(plan.sigma2) and plan.sigma2 > 0
        assert plan.recompute() == plan


@fuzz(80)
@given(data=st.data())
def test_qop_formulas(data):
    kw = draw_checked(
        data, d=count(1, 500), m=real(1.0, 2000.0), delta1=real(1e-12, 0.5),
        delta3=real(1e-12, 0.5), delta4=real(1e-12, 0.5), smoothness=real(1e-3, 1e3),
        epsilon=real(1e-3, 10.0), a=real(1e-3, 1e3), x=real(0.0, 1e3, extra=(0.0,)),
        reading=choice(("authors", "half")), distance=real(0.0, 10.0),
        sigma2=real(1e-6, 1e6), n=count(1, 10**6), tau=real(0.0, 1e-2),
    )  # fmt: skip
    d, m, d1, d3, d4 = (kw[x] for x in ("d", "m", "delta1", "delta3", "delta4"))
    m = max(m, float(d))  # the plan's m >= d (qop_plan checks it)
    calls = (
        (qop.log_wishart_constant, (d, m)),
        (qop.wishart_constant, (d, m)),
        (qop.min_eigenvalue_bound, (d, m, d3)),
        (qop.max_eigenvalue_bound, (d, m, d3, d4)),
        (qop.log_alpha1, (d, m, d1, d3)),
        (qop.log_lower_gamma, (kw["a"], kw["x"])),
        (qop.inverse_lower_gamma, (kw["x"], kw["a"])),
        (qop.log_sigma2, (kw["smoothness"], kw["epsilon"], d1, d3, d, m)),
        (qop.utility_exact, (kw["sigma2"], m, kw["distance"])),
        (qop.utility_inexact, (kw["n"], d, kw["smoothness"], kw["sigma2"], 0.0, kw["tau"],
                               kw["sigma2"], m, kw["distance"], kw["tau"])),
    )  # fmt: skip
    for fn, args in calls:
        ok, val = outcome(fn, *args)
        if ok:
            check_not_nan(val, fn.__name__)
