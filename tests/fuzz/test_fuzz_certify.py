"""Fuzz: the certificates of Watkins & Arora (2026) from public constants (Theorem 4.1,
Theorem C.13, the limit form, the search for N, the calibrations, the utility bounds, the
Gaussian benchmark)."""

from __future__ import annotations

import math

import numpy as np
from fuzz_support import (
    check_certificate,
    check_delta,
    check_not_nan,
    choice,
    count,
    draw_args,
    draw_checked,
    fixed,
    fuzz,
    optional,
    outcome,
    real,
)
from hypothesis import given
from hypothesis import strategies as st

from objpert.accounting import _gaussian_mechanism as gaussian
from objpert.certify import _calibration as calibration
from objpert.certify import _search as search
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _utility as utility
from objpert.certify._calibration import WatkinsAroraPlan
from objpert.certify._constants import problem
from objpert.certify._truncation import TRUNCATIONS

PROBLEM = dict(
    n=count(2, 10**7),
    d=count(1, 10**4),
    zeta=real(1e-3, 1e3),
    mu=real(1e-8, 1e2),
)
N = count(1, 10**6)
SIGMA = real(1e-4, 1e4)
EPSILON = real(1e-4, 1e3)


def arrays(arg, size: int = 4):
    """A scalar argument or a short list of its values (vectorised formulas)."""
    return type(arg)(st.one_of(arg.plausible, st.lists(arg.plausible, max_size=size)), arg.hostile)


def constants(data, loss: str = "logistic"):
    """Problem constants from generated n, d, zeta, mu (None when problem() refuses them)."""
    ok, pc = outcome(problem, loss, **draw_args(data, **PROBLEM))
    return pc if ok else None


@fuzz(150)
@given(data=st.data())
def test_problem(data):
    kw = draw_args(
        data,
        loss=choice(("logistic", "robust", "squared"), ("hinge", 3, None)),
        eta=optional(real(1e-6, 1.0)),
        **PROBLEM,
    )
    ok, pc = outcome(problem, kw.pop("loss"), **kw)
    if ok:
        assert isinstance(pc.n, int) and pc.n >= 2 and isinstance(pc.d, int) and pc.d >= 1
        for name in ("zeta", "mu", "eta", "L", "M", "G", "kappa", "log_det_term"):
            v = getattr(pc, name)
            assert math.isfinite(v) and v >= 0, (name, v)
        assert 0 < pc.eta * pc.mu < 1


@fuzz(120)
@given(data=st.data())
def test_theorem41_certify(data):
    pc = constants(data)
    kw = draw_args(
        data, sigma=SIGMA, u=real(0.0, 60.0), N=N, epsilon=EPSILON,
        truncation=choice(TRUNCATIONS),
    )  # fmt: skip
    if pc is None:
        return
    ok, cert = outcome(theorem41.certify, pc, **kw)
    if ok:
        check_certificate(cert)


@fuzz(100)
@given(data=st.data())
def test_theorem41_profile(data):
    """delta(epsilon) (eq. 10) in [0, 1]; its inverse and its pieces never NaN."""
    pc = constants(data)
    kw = draw_args(
        data, sigma=SIGMA, u=real(0.0, 60.0), N=arrays(N), epsilon=arrays(EPSILON),
        target=real(1e-12, 0.5), truncation=choice(TRUNCATIONS),
    )  # fmt: skip
    if pc is None:
        return
    s, u, n, e, t, tr = (kw[k] for k in ("sigma", "u", "N", "epsilon", "target", "truncation"))
    ok, val = outcome(theorem41.delta, pc, s, u, n, e, tr)
    if ok:
        check_delta(val)
    ok, eps = outcome(theorem41.epsilon_for_delta, pc, s, u, n, t, tr)
    if ok:
        check_not_nan(eps)
        assert (np.asarray(eps) >= 0).all()
    for fn, args in (
        (theorem41.epsilon0, (pc, s, n)),
        (theorem41.tau_star, (pc, n)),
        (theorem41.threshold_iterations, (pc, s, u)),
        (theorem41.slack_for_divergence, (pc, s, t)),
        (theorem41.divergence, (pc, s, e)),
        (theorem41.radii, (pc, s, u)),
    ):
        ok, out = outcome(fn, *args)
        if ok:
            check_not_nan(out, fn.__name__)


@fuzz(120)
@given(data=st.data())
def test_theorem_c13_certify(data):
    pc = constants(data)
    kw = draw_args(
        data, sigma=SIGMA, N=N, epsilon=EPSILON, u=optional(real(0.0, 60.0)),
        r=optional(real(1e-3, 1e4)), r_outer=optional(real(1e-3, 1e4)),
        truncation=choice(TRUNCATIONS),
    )  # fmt: skip
    if pc is None:
        return
    if kw["u"] is None and kw["r"] is None:
        kw["u"] = 6.0
    ok, cert = outcome(theorem_c13.certify, pc, **kw)
    if ok:  # the radii of checked arguments (resolve_radii is private: the door checks them)
        check_certificate(cert)
        ok, out = outcome(
            theorem_c13.resolve_radii, pc, kw["sigma"], kw["u"], kw["r"], kw["r_outer"]
        )
        if ok:
            check_not_nan(out)


@fuzz(80)
@given(data=st.data())
def test_theorem_c13_profile(data):
    pc = constants(data)
    kw = draw_args(
        data, sigma=SIGMA, r=real(1e-3, 1e4), N=arrays(N), epsilon=arrays(EPSILON),
        target=real(1e-12, 0.5),
    )  # fmt: skip
    if pc is None:
        return
    s, r, n, e, t = (kw[k] for k in ("sigma", "r", "N", "epsilon", "target"))
    ok, val = outcome(theorem_c13.delta_n, pc, s, r, r, n, e)
    if ok:
        check_delta(val)
    ok, val = outcome(theorem_c13.epsilon_for_delta, pc, s, r, r, n, t)
    if ok:
        check_not_nan(val)
    ok, terms = outcome(theorem_c13.c13_terms, pc, s, r, r, n)
    if ok:
        check_not_nan(terms.s_n, "s_n")


@fuzz(120)
@given(data=st.data())
def test_limit_form(data):
    pc = constants(data)
    kw = draw_args(data, sigma=SIGMA, epsilon=arrays(EPSILON))
    if pc is None:
        return
    if not isinstance(kw["epsilon"], list):
        ok, cert = outcome(theorem_c13.certify_limit, pc, kw["sigma"], kw["epsilon"])
        if ok:
            check_certificate(cert)
    ok, val = outcome(theorem_c13.limit_delta, pc, kw["sigma"], kw["epsilon"])
    if ok:
        check_delta(val)
    ok, val = outcome(theorem_c13.limit_s, pc, kw["sigma"])
    if ok:
        check_not_nan(val)


@fuzz(60)
@given(data=st.data())
def test_min_iterations(data):
    pc = constants(data)
    kw = draw_args(
        data, sigma=real(1e-3, 1e3), epsilon=real(1e-3, 1e2), delta=real(1e-12, 0.5),
        u=real(0.0, 40.0), form=choice(("c13", "theorem41")),
        truncation=choice(TRUNCATIONS), n_max=count(1, 10**5),
    )  # fmt: skip
    if pc is None:
        return
    sigma, epsilon, delta = kw.pop("sigma"), kw.pop("epsilon"), kw.pop("delta")
    ok, cert = outcome(search.min_iterations, pc, sigma, epsilon, delta, **kw)
    if ok:
        check_certificate(cert)
        assert cert.certified and cert.delta <= float(delta)
        assert 1 <= cert.iterations <= int(kw["n_max"])


@fuzz(60)
@given(data=st.data())
def test_minimal_sigma_limit(data):
    pc = constants(data)
    kw = draw_checked(data, epsilon=EPSILON, delta=real(1e-12, 0.5))
    if pc is None:
        return
    ok, val = outcome(search.minimal_sigma_limit, pc, kw["epsilon"], kw["delta"])
    if ok:
        assert not math.isnan(val) and val > 0


def check_plan(plan: WatkinsAroraPlan, epsilon, delta) -> None:
    assert isinstance(plan, WatkinsAroraPlan)
    check_certificate(plan.certificate)
    assert plan.certificate.certified and plan.certificate.delta <= float(delta)
    assert plan.certificate.epsilon <= float(epsilon)
    for name in ("sigma", "mu", "eta", "u", "radius", "radius_outer"):
        v = getattr(plan, name)
        assert math.isfinite(v) and v >= 0, (name, v)
    assert isinstance(plan.iterations, int) and plan.iterations >= 1
    assert not math.isnan(plan.utility_bound) and not math.isnan(plan.theorem410_bound)


@fuzz(60)
@given(data=st.data())
def test_corollary_413(data):
    kw = draw_args(
        data, loss=choice(("logistic", "robust"), ("squared", "hinge", None)),
        n=count(2, 10**7), d=count(1, 200), zeta=real(1e-2, 1e2), epsilon=real(1e-3, 1.0),
        delta=real(1e-12, 0.5), comparator_norm=real(1e-2, 1e2),
        delta_sample=real(1e-6, 0.5),
    )  # fmt: skip
    ok, plan = outcome(calibration.corollary_413, kw.pop("loss"), **kw)
    if ok:
        check_plan(plan, kw["epsilon"], kw["delta"])
        assert calibration.rederive_plan(plan) == plan.certificate
        assert not math.isnan(calibration.corollary_413_bound(plan))


@fuzz(14)
@given(data=st.data())
def test_calibrate(data):
    """The tight calibration (about a second each: few examples, few distinct constants)."""
    kw = draw_args(
        data,
        calibration=choice(("tight", "tight", "corollary413")),
        n=count(50, 50) if data.draw(st.booleans()) else count(2, 10**7),
        d=count(1, 5),
        zeta=real(1.0, 1.0),
        epsilon=real(0.5, 2.0, extra=(0.5, 2.0)),
        delta=real(1e-6, 1e-6),
        max_iter=count(300, 300),
        mu=optional(real(1e-4, 10.0)),
        comparator_norm=fixed(1.0),
    )
    if kw["calibration"] != "tight":
        kw.pop("mu"), kw.pop("max_iter")
    ok, plan = outcome(calibration.calibrate, "logistic", **kw)
    if ok:
        check_plan(plan, kw["epsilon"], kw["delta"])
        if kw["calibration"] == "tight":
            assert plan.iterations <= int(kw["max_iter"])


@fuzz(100)
@given(data=st.data())
def test_utility(data):
    pc = constants(data)
    kw = draw_args(
        data, sigma=SIGMA, N=N, comparator_norm=real(1e-2, 1e2),
        delta_sample=real(1e-6, 0.5), beta=real(1e-6, 0.5),
        grad=optional(real(1e-3, 10.0)),
    )  # fmt: skip
    if pc is None:
        return
    s, n, w, ds, b = (kw[k] for k in ("sigma", "N", "comparator_norm", "delta_sample", "beta"))
    calls = [
        (utility.e_opt, (pc, s, n, kw["grad"])),
        (utility.perturbation_term, (pc, s)),
        (utility.sample_term, (pc, ds)),
        (utility.theorem_410, (pc, s, n)),
        (utility.theorem_49, (pc, s, n, ds)),
        (utility.theorem_47, (pc, s, n, w, ds)),
        (utility.corollary_411, (pc, s, n, b, w, ds)),
    ]
    for fn, args in calls:
        ok, val = outcome(fn, *args)
        if ok:
            values = list(val.to_dict().values()) if hasattr(val, "to_dict") else val
            check_not_nan(values, fn.__name__)
            assert (np.asarray(values) >= 0).all(), (fn.__name__, values)


@fuzz(120)
@given(data=st.data())
def test_gaussian_benchmark(data):
    kw = draw_checked(
        data, epsilon=arrays(real(0.0, 1e3)), sensitivity=real(1e-4, 1e4), sigma=SIGMA
    )
    for fn in (gaussian.gaussian_profile, gaussian.gaussian_integrated_tail_bound):
        ok, val = outcome(fn, kw["epsilon"], kw["sensitivity"], kw["sigma"])
        if ok:
            check_delta(val, fn.__name__)
