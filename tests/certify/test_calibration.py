"""Tests of objpert.certify._calibration: every plan's certificate is recomputed independently.

``tight`` plans are re-certified with Theorem C.13 (exact chi-tail truncation) and
``corollary_413`` plans with Theorem 4.1 (paper truncation), from the plan's public constants
alone; Corollary 4.13's choices are recomputed from its displayed formulas. Calibration is
slow (about a second per tight plan), so plans are built once per test run and shared.
"""

from __future__ import annotations

import functools
import json
import math
import re

import numpy as np
import pytest

from objpert._losses import get_loss
from objpert._special import chi_tail
from objpert.certify import _calibration as calibration
from objpert.certify import _sigma_search as sigma_search
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _utility as utility
from objpert.certify import problem
from objpert.certify._calibration import WatkinsAroraPlan
from objpert.exceptions import ObjpertError, ParameterError

ZETA, W, DELTA_S = 1.0, 1.0, 0.01


@functools.cache
def tight_plan(
    loss: str, n: int, d: int, epsilon: float, delta: float, scale=None
) -> WatkinsAroraPlan:
    params = {} if scale is None else {"scale": scale}
    target = dict(epsilon=epsilon, delta=delta, comparator_norm=W, delta_sample=DELTA_S)
    return calibration.tight(loss, n=n, d=d, zeta=ZETA, **target, **params)


@functools.cache
def corollary_plan(
    loss: str, n: int, d: int, epsilon: float, delta: float, scale=None
) -> WatkinsAroraPlan:
    params = {} if scale is None else {"scale": scale}
    target = dict(epsilon=epsilon, delta=delta, comparator_norm=W, delta_sample=DELTA_S)
    return calibration.corollary_413(loss, n=n, d=d, zeta=ZETA, **target, **params)


# The README grid (logistic, d = 100, delta = 1e-6) and a few other settings.
GRID = [("logistic", n, 100, eps, 1e-6, None) for n in (10**4, 10**5, 10**6) for eps in (0.1, 1.0)]
OTHER = [
    ("robust", 10**4, 10, 4.0, 1e-8, 2.0),
    ("logistic", 10**6, 10, 0.1, 1e-8, None),
    ("robust", 10**6, 100, 1.0, 1e-6, None),
]
TIGHT_CASES = GRID + OTHER
COROLLARY_CASES = [c for c in GRID + OTHER if c[3] <= 1.0]


def _id(case) -> str:
    loss, n, d, eps, delta, scale = case
    tail = "" if scale is None else f"-scale{scale}"
    return f"{loss}-n{n:.0e}-d{d}-eps{eps}-delta{delta:.0e}{tail}"


def _raw_constants(loss: str, scale):
    obj = get_loss(loss) if scale is None else get_loss(loss, scale=scale)
    return obj.L1, obj.L2, obj.L3


def eq7_bound(pc, sigma: float, u: float) -> float:
    """Right side of eq. (7), recomputed from the raw constants."""
    L = pc.mu + pc.L2 * pc.zeta**2
    M = pc.L3 * pc.zeta**3
    G = 2 * pc.L1 * pc.zeta / pc.n
    rho = 1 - pc.eta * pc.mu
    r = sigma * (math.sqrt(min(pc.d, pc.n + 1)) + u)
    r_outer = r + 2 * L * G / pc.mu
    r_bar = (r_outer + pc.L1 * pc.zeta) / pc.mu
    first = 2 * pc.mu * r_bar * r_outer / (G * sigma)
    second = 8 * L * M * (1 / pc.mu) * r_bar / (math.e * rho * pc.mu * min(1.0, M * G / L))
    return 2 / (pc.eta * pc.mu) * math.log(max(first, second, 4.0))


def c_n(pc, sigma: float, N: int) -> float:
    """c_N of Corollary 4.13."""
    L = pc.mu + pc.L2 * pc.zeta**2
    M = pc.L3 * pc.zeta**3
    G = 2 * pc.L1 * pc.zeta / pc.n
    half = (1 - pc.eta * pc.mu) ** (N / 2)
    return (
        G / sigma * half
        + G**2 / (2 * sigma**2) * (2 * half + half * half)
        + min(1.0, M * G / L) * (math.e * pc.eta * pc.mu / 2) * N * half
    )


def theorem47_direct(pc, sigma: float, N: int) -> float:
    """Theorem 4.7 at W and delta_S, with eq. (12) at a_R = L1 zeta / mu, written out."""
    L = pc.mu + pc.L2 * pc.zeta**2
    rho_n = (1 - pc.eta * pc.mu) ** N
    a, b, d = pc.L1 * pc.zeta / pc.mu, 1 / pc.mu, pc.d
    e_opt = (L / 2) * rho_n**2 * (b * b * d * sigma**2 + 2 * a * b * sigma * math.sqrt(d) + a * a)
    e_opt += rho_n * (b * d * sigma**2 + a * sigma * math.sqrt(d))
    sample = 16 * (pc.L1 * pc.zeta) ** 2 * (32 + math.log(1 / DELTA_S)) / (pc.mu * pc.n)
    return 2 * (d * sigma**2 / (2 * pc.mu) + e_opt) + sample + pc.mu * W**2 / 2


def _check_plan_common(plan: WatkinsAroraPlan, case) -> None:
    loss, n, d, eps, delta, scale = case
    pc = plan.constants
    L1, L2, L3 = _raw_constants(loss, scale)
    assert (pc.L1, pc.L2, pc.L3) == (L1, L2, L3)
    assert (plan.loss, plan.n, plan.d, plan.zeta) == (loss, n, d, ZETA)
    assert (plan.epsilon, plan.delta) == (eps, delta)
    assert (pc.n, pc.d, pc.zeta, pc.mu, pc.eta) == (n, d, ZETA, plan.mu, plan.eta)
    assert plan.eta == pytest.approx(1 / (plan.mu + L2 * ZETA**2), rel=1e-15)  # eta = 1/L
    assert plan.iterations >= 1 and plan.sigma > 0 and plan.mu > 0
    # the recorded bounds are Theorems 4.7 and 4.10 at the plan's own values
    assert plan.utility_bound == pytest.approx(theorem47_direct(pc, plan.sigma, plan.iterations))
    assert plan.theorem410_bound == pytest.approx(
        float(utility.theorem_410(pc, plan.sigma, plan.iterations)), rel=1e-14
    )
    # the plan re-certifies from its own public constants
    again = plan.recertify()
    assert again.certified and again.delta <= delta
    assert again.delta == pytest.approx(plan.certificate.delta, rel=1e-14)
    assert again.form == plan.certificate.form
    # serialisation
    data = json.loads(plan.to_json(allow_nan=False))
    assert data["sigma"] == plan.sigma and data["iterations"] == plan.iterations
    assert data["certificate"]["certified"] is True
    assert data["certificate"]["delta"] <= delta


# ----------------------------------------------------------------------------- tight


@pytest.mark.parametrize("case", TIGHT_CASES, ids=[_id(c) for c in TIGHT_CASES])
def test_tight_plan_certifies_by_theorem_c13_recomputed(case):
    plan = tight_plan(*case)
    _check_plan_common(plan, case)
    pc = plan.constants
    assert plan.calibration == "tight" and plan.truncation == "exact"
    assert plan.certificate.form == "c13"
    cert = theorem_c13.certify(
        pc,
        plan.sigma,
        plan.iterations,
        plan.epsilon,
        r=plan.radius,
        r_outer=plan.radius_outer,
        truncation="exact",
    )
    assert cert.certified, cert.reasons
    assert cert.delta <= plan.delta
    assert cert.details["radius_ok"] and cert.details["alpha_bar"] > 0
    # the truncation mass is the exact chi tail at the plan's radius
    d_star = min(plan.d, plan.n + 1)
    mass = float(chi_tail(plan.radius / plan.sigma, d_star))
    assert cert.truncation_mass == pytest.approx(mass, rel=1e-12)
    assert plan.delta_truncation == pytest.approx(mass, rel=1e-12)
    assert plan.delta_truncation + plan.delta_divergence <= plan.delta
    # the paper's outer radius r' = r + 2 L G / mu
    L = plan.mu + pc.L2 * ZETA**2
    G = 2 * pc.L1 * ZETA / plan.n
    assert plan.radius_outer == pytest.approx(plan.radius + 2 * L * G / plan.mu, rel=1e-14)
    assert plan.u == pytest.approx(plan.radius / plan.sigma - math.sqrt(d_star), rel=1e-12)
    # sigma is minimal for the plan's N: the certificate uses most of the delta budget
    assert cert.delta > 0.5 * plan.delta


# ----------------------------------------------------------------------------- Corollary 4.13


@pytest.mark.parametrize("case", COROLLARY_CASES, ids=[_id(c) for c in COROLLARY_CASES])
def test_corollary_413_plan_certifies_by_theorem_41_recomputed(case):
    plan = corollary_plan(*case)
    _check_plan_common(plan, case)
    assert plan.calibration == "corollary413" and plan.truncation == "paper"
    assert plan.certificate.form == "theorem41"
    cert = theorem41.certify(
        plan.constants, plan.sigma, plan.u, plan.iterations, plan.epsilon, truncation="paper"
    )
    assert cert.certified, cert.reasons
    assert cert.delta <= plan.delta
    assert cert.truncation_mass == pytest.approx(plan.delta / 2, rel=1e-12)  # e^{-u^2/2}


@pytest.mark.parametrize("case", COROLLARY_CASES, ids=[_id(c) for c in COROLLARY_CASES])
def test_corollary_413_plan_follows_the_corollary(case):
    loss, n, d, eps, delta, scale = case
    plan = corollary_plan(*case)
    pc = plan.constants
    L1, L2, _ = _raw_constants(loss, scale)
    l_ell = L1 * ZETA
    G = 2 * l_ell / n
    u = math.sqrt(2 * math.log(2 / delta))
    sigma = 4 * G * u / eps
    mu_priv = L2 * ZETA**2 / (n * (math.exp(eps / 4) - 1))
    A = d * sigma**2 + 16 * l_ell**2 * (32 + math.log(1 / DELTA_S)) / n
    mu_util = math.sqrt(2 * A) / W
    assert plan.u == pytest.approx(u, rel=1e-14)
    assert plan.sigma == pytest.approx(sigma, rel=1e-14)
    assert plan.mu == pytest.approx(max(mu_util, mu_priv), rel=1e-12)
    assert plan.eta == pytest.approx(1 / (plan.mu + L2 * ZETA**2), rel=1e-14)
    assert plan.radius == pytest.approx(sigma * (math.sqrt(min(d, n + 1)) + u), rel=1e-14)
    N = plan.iterations
    bound = eq7_bound(pc, plan.sigma, plan.u)
    assert bound <= N and c_n(pc, plan.sigma, N) <= eps / 4
    # N is the first integer meeting both conditions
    first = max(1, math.ceil(bound))
    assert all(c_n(pc, plan.sigma, k) > eps / 4 for k in range(first, N))
    assert first == N or c_n(pc, plan.sigma, N - 1) > eps / 4
    # its stated utility bound W sqrt(2A) + [mu_priv W^2/2] + 2 E_opt(N)
    e_opt = float(utility.e_opt(pc, plan.sigma, N))
    extra = 0.0 if mu_util >= mu_priv else mu_priv * W**2 / 2
    stated = W * math.sqrt(2 * A) + extra + 2 * e_opt
    assert calibration.corollary_413_bound(plan) == pytest.approx(stated, rel=1e-12)
    # Theorem 4.7 at the corollary's mu is at most the stated bound (equal when mu = mu_util)
    assert plan.utility_bound <= stated * (1 + 1e-12)
    if mu_util >= mu_priv:
        assert plan.utility_bound == pytest.approx(stated, rel=1e-12)


def test_calibrate_dispatches():
    case = GRID[0]
    loss, n, d, eps, delta, _ = case
    target = dict(epsilon=eps, delta=delta, comparator_norm=W, delta_sample=DELTA_S)
    budget = dict(max_iter=10, rtol=0.5, knee_tolerance=0.2)  # tight-only: dropped
    via = calibration.calibrate(
        loss, calibration="corollary413", n=n, d=d, zeta=ZETA, **target, **budget
    )
    assert via == corollary_plan(*case)
    with pytest.raises(ParameterError, match="calibration"):
        calibration.calibrate(
            loss, calibration="magic", n=n, d=d, zeta=ZETA, epsilon=eps, delta=delta
        )


# ----------------------------------------------------------------------------- calibration targets


@pytest.mark.parametrize("case", GRID, ids=[_id(c) for c in GRID])
def test_tight_beats_corollary_413_on_the_readme_grid(case):
    tight, cor = tight_plan(*case), corollary_plan(*case)
    assert tight.sigma <= cor.sigma / 3
    assert tight.theorem410_bound <= cor.theorem410_bound / 5
    assert tight.utility_bound <= cor.utility_bound
    # both certify the same target
    for plan in (tight, cor):
        assert plan.certificate.certified and plan.certificate.delta <= plan.delta


# ----------------------------------------------------------------------------- bad input

GOOD = dict(n=10**4, d=10, zeta=1.0, epsilon=0.5, delta=1e-6)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        (dict(epsilon=0.0), "epsilon"),
        (dict(epsilon=-1.0), "epsilon"),
        (dict(epsilon=math.nan), "epsilon"),
        (dict(delta=0.0), "delta"),
        (dict(delta=1.0), "delta"),
        (dict(delta=1.5), "delta"),
        (dict(delta=-1e-6), "delta"),
        (dict(comparator_norm=0.0), "comparator_norm"),
        (dict(delta_sample=1.0), "delta_sample"),
        (dict(n=1), "n"),
    ],
)
@pytest.mark.parametrize("method", ["tight", "corollary413"])
def test_calibration_rejects_bad_targets(change, name, method):
    kwargs = dict(GOOD, **change)
    with pytest.raises(ObjpertError) as err:
        calibration.calibrate("logistic", calibration=method, **kwargs)
    assert isinstance(err.value, ValueError)
    assert re.match(rf"{name} must", str(err.value)), str(err.value)


@pytest.mark.parametrize("epsilon", [1.0 + 1e-9, 2.0, 8.0])
def test_corollary_413_needs_epsilon_at_most_one(epsilon):
    with pytest.raises(ParameterError, match="epsilon") as err:
        calibration.corollary_413("logistic", **dict(GOOD, epsilon=epsilon))
    assert "tight" in str(err.value)  # it says what to use instead


@pytest.mark.parametrize("method", ["tight", "corollary413"])
def test_calibration_rejects_unbounded_gradient_losses(method):
    with pytest.raises(ParameterError, match="L1"):
        calibration.calibrate("squared", calibration=method, **GOOD)


@pytest.mark.parametrize(
    ("change", "name"), [(dict(max_iter=0), "max_iter"), (dict(rtol=0.0), "rtol")]
)
def test_tight_rejects_bad_budget(change, name):
    with pytest.raises(ParameterError, match=name):
        calibration.tight("logistic", **dict(GOOD, **change))


def test_plan_constants_round_trip():
    plan = tight_plan(*GRID[0])
    pc = plan.constants
    assert pc == problem("logistic", n=plan.n, d=plan.d, zeta=plan.zeta, mu=plan.mu)
    assert np.isfinite(plan.utility_bound) and np.isfinite(plan.theorem410_bound)


def test_tree_bisection_equals_the_step_by_step_bisection_bit_for_bit():
    """The calibration's bisection decides several levels per evaluation; its brackets must
    be those of the plain loop (mid = sqrt(lo hi); hi = mid where it passes, else lo = mid)."""
    from objpert._special import chi_radius
    from objpert.certify._constants import problem

    pc = problem("logistic", n=5000, d=20, zeta=1.0, mu=0.01)
    epsilon, delta, N = 1.0, 1e-6, 2000
    shares = sigma_search._SPLITS
    rfac = chi_radius(shares * delta, pc.d_star)

    def passes(s):
        return sigma_search._passes(pc, epsilon, delta, N, s, shares[:, None], rfac[:, None])

    lo = pc.G * np.full(shares.size, 1e-2)
    hi = pc.G * np.full(shares.size, 1e5)
    ref_lo, ref_hi = lo.copy(), hi.copy()
    for _ in range(sigma_search._BISECTIONS):
        mid = np.sqrt(ref_lo * ref_hi)
        good = sigma_search._passes(pc, epsilon, delta, N, mid, shares, rfac)
        ref_hi, ref_lo = np.where(good, mid, ref_hi), np.where(good, ref_lo, mid)
    got_lo, got_hi = sigma_search._bisect(passes, lo, hi)
    assert np.array_equal(got_lo, ref_lo) and np.array_equal(got_hi, ref_hi)
    assert np.all(got_hi > got_lo)
