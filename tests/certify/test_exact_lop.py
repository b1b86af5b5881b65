"""The exact-minimiser privacy profile of Gaussian objective perturbation (Redberg, Koskela
& Wang 2023, Section 3; objpert.mechanisms._certificates.redberg) against independent computations:
mpmath quadrature of its defining expectation, brute-force quadrature of the pointwise
loss bound over the noise with the corner maximum found by an optimiser, the privacy-loss
distribution of actual exact minimisers (d = 1, the minimiser found by a root solver), the
printed numbers of Watkins & Arora (2026, Example 4.8 and Section C.5), and Kifer et al.'s
closed form."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace

import mpmath
import numpy as np
import pytest
from scipy import integrate, optimize

from objpert._losses import get_loss
from objpert.accounting._gaussian_mechanism import gaussian_delta
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import problem
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates import plan_amp, plan_lop, plan_lop_clip
from objpert.mechanisms._certificates.kifer import lop_delta, lop_mean_form
from objpert.mechanisms._certificates.plan import PeerPlan
from objpert.mechanisms._certificates.redberg import (
    calibrate_exact_lop,
    exact_lop_constants,
    exact_lop_delta,
    exact_lop_epsilon,
    folded_gaussian_delta,
    pair_delta,
)


def mp_folded(eps: float, t: float, c0: float) -> float:
    """E[(1 - exp(eps - c0 - t^2/2 - t|Z|))_+] by mpmath quadrature over the half-normal."""
    with mpmath.workdps(30):
        e, t, c0 = mpmath.mpf(eps), mpmath.mpf(t), mpmath.mpf(c0)
        z0 = max(mpmath.mpf(0), (e - c0 - t * t / 2) / t)  # where the integrand starts

        def f(z):
            return (1 - mpmath.exp(e - c0 - t * t / 2 - t * z)) * 2 * mpmath.npdf(z)

        return float(mpmath.quad(f, [z0, z0 + 1, z0 + 5, mpmath.inf]))


@pytest.mark.parametrize(
    ("eps", "t", "c0"),
    [(1.0, 0.2, 2.5e-5), (0.1, 0.02, 0.0), (0.5, 1.0, 0.1), (0.01, 0.5, 0.0),
     (2.0, 3.0, 0.4), (0.3, 0.05, 0.29), (3.0, 0.5, 0.0), (0.0, 0.7, 0.0)],
)  # fmt: skip
def test_closed_form_is_the_defining_expectation(eps, t, c0):
    """Both branches of the closed form (epsilon - c0 above and below t^2/2) equal the
    expectation over the noise computed by mpmath."""
    got = folded_gaussian_delta(eps, t, c0)
    ref = mp_folded(eps, t, c0)
    assert got == pytest.approx(ref, rel=1e-9, abs=1e-300)


def brute_pair_bound(eps: float, t: float, angle: float, c0: float) -> float:
    """E_b[(1 - exp(eps - Lambda(b)))_+] over b ~ N(0, I_2) (unit noise), Lambda(b) = c0 +
    max over (a, a') in [-1, 1]^2 of (2 <b, v> + ||v||^2) / 2, v = (t/2)(a u - a' u'),
    |u| = |u'| = 1 at ``angle``: the maximum of this convex function is at a corner of the
    box (all four evaluated), the expectation a composite Simpson rule on a fine 2-d grid
    (no use of the sum/difference decomposition of :func:`pair_delta`)."""
    u = np.array([1.0, 0.0])
    w = np.array([math.cos(angle), math.sin(angle)])
    h = t / 2.0
    grid = np.linspace(-9.0, 9.0, 2401)
    b1, b2 = np.meshgrid(grid, grid, indexing="ij")
    best = np.full(b1.shape, -np.inf)
    for a in (-1.0, 1.0):
        for a2 in (-1.0, 1.0):
            v = h * (a * u - a2 * w)
            best = np.maximum(best, (2.0 * (b1 * v[0] + b2 * v[1]) + v @ v) / 2.0)
    f = np.maximum(-np.expm1(eps - c0 - best), 0.0) * np.exp(-0.5 * (b1**2 + b2**2)) / (2 * np.pi)
    return float(integrate.simpson(integrate.simpson(f, x=grid, axis=1), x=grid))


@pytest.mark.parametrize(("eps", "t", "angle"), [(0.3, 1.0, 0.0), (0.3, 1.0, 1.2), (0.6, 1.5, 2.0)])
def test_pair_profile_against_brute_force_over_the_noise(eps, t, angle):
    """The replace-one pair bound at any angle (sum/difference decomposition, independent
    folded Gaussians) equals a brute-force 2-d integral over the noise of the loss bound
    whose maximum over the two derivatives is found numerically (relative 1e-3)."""
    c0 = 0.05
    ref = brute_pair_bound(eps, t, angle, c0)
    assert pair_delta(eps, t, angle, c0) == pytest.approx(ref, rel=1e-3)
    if angle == 0.0:
        assert folded_gaussian_delta(eps, t, c0) == pytest.approx(ref, rel=1e-3)


def test_collinear_features_are_the_worst_pair():
    """At every angle between the two features the pair's profile is at most the collinear
    one, which the certificate uses (a numerical check on a grid of t, epsilon, c0)."""
    worst = 0.0
    for t in (0.05, 0.2, 0.5, 1.0, 2.0, 4.0):
        for eps in (0.0, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0):
            for c0 in (0.0, 0.1):
                top = folded_gaussian_delta(eps, t, c0)
                for angle in np.linspace(0.05, math.pi / 2, 12):
                    worst = max(worst, pair_delta(eps, t, angle, c0) / max(top, 1e-300))
    assert worst <= 1.0 + 1e-7


def exact_minimiser_pld_delta(loss_name, y1, y2, lam, s, eps):
    """delta(eps) of the actual exact minimiser, d = 1, sum form: S0 contributes nothing
    (zero rows), S = {(1, y1)}, S' = {(1, y2)}; objective l(theta, y) + lam theta^2 / 2 +
    b theta, b ~ N(0, s^2). For each b the minimiser theta(b) is found by a root solver,
    the privacy loss is log[phi(b_S) J_S] - log[phi(b_S') J_S'] at theta(b), and the
    hockey-stick expectation over b is integrated numerically; the larger direction."""
    loss = get_loss(loss_name)

    def grad(th, y):
        return float(loss.d1(np.array([th]), np.array([y]))[0])

    def hess(th, y):
        return float(loss.d2(np.array([th]), np.array([y]))[0])

    def direction(ya, yb):
        def theta_of(b):
            f = lambda th: grad(th, ya) + lam * th + b  # noqa: E731
            lo, hi = (-b - 2.0) / lam - 1.0, (-b + 2.0) / lam + 1.0
            return optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-15)

        def integrand(b):
            th = theta_of(b)
            b2 = -(grad(th, yb) + lam * th)
            loss_val = (b2 * b2 - b * b) / (2 * s * s) + math.log(
                (hess(th, ya) + lam) / (hess(th, yb) + lam)
            )
            val = -math.expm1(eps - loss_val)
            return max(val, 0.0) * math.exp(-0.5 * (b / s) ** 2) / (s * math.sqrt(2 * math.pi))

        edges = np.linspace(-14 * s, 14 * s, 57)
        return sum(
            integrate.quad(integrand, a, c, limit=200, epsabs=1e-15, epsrel=1e-8)[0]
            for a, c in itertools.pairwise(edges)
        )

    return max(direction(y1, y2), direction(y2, y1))


def test_exact_minimiser_pld_is_gaussian_for_a_saturated_loss():
    """Robust loss with labels far apart: on the noise's range the gradient difference is 2
    (both derivatives saturated) and the curvature vanishes, so the exact minimiser's
    privacy-loss distribution is the Gaussian mechanism's at sensitivity 2 (Redberg et al.
    2023, Example 3.4; Watkins & Arora 2026, Section C.5): brute force matches it at 1e-3,
    and the profile (which also covers sign-flipping gradients) is above it."""
    lam, s = 3.0, 2.5
    for eps in (0.5, 1.0):
        brute = exact_minimiser_pld_delta("robust", 1e5, -1e5, lam, s, eps)
        assert brute == pytest.approx(gaussian_delta(eps, 2.0, s), rel=1e-3)
        bound = folded_gaussian_delta(eps, 2.0 / s, math.log1p(1.0 / lam))
        assert brute <= bound


@pytest.mark.parametrize(
    ("loss_name", "y1", "y2"), [("logistic", 1.0, -1.0), ("robust", 3.0, -3.0)]
)
def test_exact_minimiser_pld_is_below_the_profile(loss_name, y1, y2):
    """Actual pairs (label flip, logistic; labels apart, robust): the brute-force delta of
    the exact minimiser never exceeds the profile at the pair's constants."""
    loss = get_loss(loss_name)
    lam, s = 1.0, 1.5
    t, c0 = 2.0 * float(loss.L1) / s, math.log1p(float(loss.L2) / lam)
    for eps in (0.2, 0.8, 1.5):
        brute = exact_minimiser_pld_delta(loss_name, y1, y2, lam, s, eps)
        assert 0.0 < brute <= folded_gaussian_delta(eps, t, c0)


def test_profile_certifies_at_most_half_of_kifers_delta_from_its_floor():
    """At mu >= Kifer's floor 2 L2 zeta^2 / (n epsilon) and Kifer's sigma (at the replace-one
    sensitivity 2 L1 zeta) the profile certifies at most half of Kifer's delta: its Jacobian
    term is at most log(1 + epsilon / 2) <= epsilon / 2, and Kifer's sigma keeps the
    Gaussian term t^2/2 + t|Z| <= epsilon / 2 except with probability
    2 Q(sqrt(2 log(2/delta))) <= delta / 2 (the argument in
    objpert.mechanisms._certificates.lop)."""
    for n in (100, 2000, 10**6):
        for eps in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0):
            for delta in (1e-3, 1e-6, 1e-9, 1e-12):
                mu_min, s_k = lop_mean_form(n, 1.0, 0.25, eps, delta)
                kifer = lop_delta(n, 1.0, s_k, eps)
                assert kifer == pytest.approx(delta, rel=1e-9)
                for factor in (1.0, 1.5, 3.0):
                    assert exact_lop_delta(n, 1.0, 0.25, factor * mu_min, s_k, eps) <= kifer / 2


def test_example_48_reproduces_the_reference_number():
    """Watkins & Arora (2026), Example 4.8: n = 1e6, mu = 1e-2, logistic, zeta = 1,
    sigma = 5 G = 1e-5. The exact-minimiser profile gives delta(1) = 3.51e-8 (the number
    of the reference implementation of Redberg et al.), 3.5% below the limit form of
    Watkins & Arora (Remark C.16), itself 3.64e-8 as printed."""
    n, mu, sigma = 10**6, 1e-2, 1e-5
    got = exact_lop_delta(n, 1.0, 0.25, mu, sigma, 1.0)
    assert f"{got:.2e}" == "3.51e-08"
    t, c0 = exact_lop_constants(n, 1.0, 0.25, mu, sigma)
    assert t == pytest.approx(0.2) and c0 == pytest.approx(2.5e-5, rel=1e-4)
    assert got == pytest.approx(2 * gaussian_delta(1.0 - c0, 0.2, 1.0), rel=1e-12)
    pc = problem("logistic", n=n, d=10**4, zeta=1.0, mu=mu)
    limit = float(theorem_c13.limit_delta(pc, sigma, 1.0))
    assert f"{limit:.2e}" == "3.64e-08"
    assert 1.0 - got / limit == pytest.approx(0.035, abs=0.002)


def test_section_c5_gaussian_number():
    """Section C.5 of Watkins & Arora (2026) prints delta_G(1) = 1.75463333e-8 at
    sigma / G = 5; the profile at c0 = 0 is twice it (both signs of the gradient)."""
    assert gaussian_delta(1.0, 1.0, 5.0) == pytest.approx(1.75463333e-8, rel=1e-8)
    assert folded_gaussian_delta(1.0, 0.2, 0.0) == pytest.approx(2 * 1.75463333e-8, rel=1e-8)


def test_monotone_in_epsilon_sigma_and_mu():
    n, g, beta = 1000, 1.0, 0.25
    eps_grid = np.linspace(0.0, 4.0, 41)
    for mu in (1e-3, 1e-2):
        for sigma in (1e-3, 3e-3, 1e-2):
            deltas = [exact_lop_delta(n, g, beta, mu, sigma, e) for e in eps_grid]
            assert all(a >= b for a, b in itertools.pairwise(deltas))
    for e in (0.1, 1.0):
        by_sigma = [exact_lop_delta(n, g, beta, 1e-2, s, e) for s in np.geomspace(1e-4, 1, 30)]
        assert all(a >= b for a, b in itertools.pairwise(by_sigma))
        by_mu = [exact_lop_delta(n, g, beta, m, 3e-3, e) for m in np.geomspace(1e-5, 1, 30)]
        assert all(a >= b for a, b in itertools.pairwise(by_mu))


def test_calibration_is_the_smallest_certifying_sigma_and_epsilon_inverts():
    n, g, beta, mu = 5000, 1.0, 0.25, 1e-3
    for eps, delta in ((1.0, 1e-6), (0.1, 1e-5), (3.0, 1e-8)):
        s = calibrate_exact_lop(n, g, beta, mu, eps, delta)
        assert exact_lop_delta(n, g, beta, mu, s, eps) <= delta
        assert exact_lop_delta(n, g, beta, mu, s * (1 - 1e-9), eps) > delta
        e = exact_lop_epsilon(n, g, beta, mu, s, delta)
        assert e == pytest.approx(eps, rel=1e-9)


def test_kifer_is_never_tighter_from_ten_times_its_ridge_floor():
    """At the same constants with mu >= 10 (2 L2 zeta^2 / (n epsilon)) the profile certifies a
    smaller delta at Kifer's sigma and needs a smaller sigma (as it does from the floor on:
    the tests above and below)."""
    n, g, beta = 2000, 1.0, 0.25
    for eps in (0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0):
        for delta in (1e-3, 1e-6, 1e-9, 1e-12):
            mu_min, s_k = lop_mean_form(n, g, beta, eps, delta)
            for factor in (10.0, 30.0, 1000.0):
                mu = factor * mu_min
                assert exact_lop_delta(n, g, beta, mu, s_k, eps) <= lop_delta(n, g, s_k, eps)
                assert calibrate_exact_lop(n, g, beta, mu, eps, delta) < s_k


def test_at_kifers_floor_the_profile_is_tighter():
    """At mu = 2 L2 zeta^2 / (n epsilon) the profile's sigma is below Kifer's (at the
    replace-one sensitivity), and ``tightest`` takes it; ``kifer`` gives Kifer's."""
    n, eps, delta = 2000, 1.0, 1e-6
    mu_min, s_k = lop_mean_form(n, 1.0, 0.25, eps, delta)
    s_p = calibrate_exact_lop(n, 1.0, 0.25, mu_min, eps, delta)
    assert s_p < s_k
    plan = plan_lop("logistic", n=n, d=5, zeta=1.0, epsilon=eps, delta=delta)
    assert plan.accountant == "profile" and plan.sigma == pytest.approx(s_p, rel=1e-12)
    kifer = plan_lop("logistic", n=n, d=5, zeta=1.0, epsilon=eps, delta=delta, accountant="kifer")
    assert kifer.accountant == "kifer" and kifer.sigma == pytest.approx(s_k, rel=1e-12)


# ---------------------------------------------------------------- the planners


COMPARE_LIKE = dict(n=30_000, d=20, zeta=1.0, delta=1e-6)


@pytest.mark.parametrize("eps", [1.0, 0.1])
def test_planners_use_the_profile_and_beat_kifer_at_a_public_ridge(eps):
    """With a ridge well above Kifer's floor (as the comparison's) LOP, LOP-Clip and AMP
    calibrate by the profile and get a smaller sigma than with accountant='kifer'; every
    plan certifies its target and recertifies from its fields (and through JSON)."""
    mu = 1e-2
    for planner, extra in ((plan_lop, {}), (plan_lop_clip, {"clip": 0.5}), (plan_amp, {})):
        kw = dict(COMPARE_LIKE, epsilon=eps, mu=mu, **extra)
        best = planner("logistic", **kw)
        kifer = planner("logistic", accountant="kifer", **kw)
        profile = planner("logistic", accountant="profile", **kw)
        assert best.sigma == profile.sigma < kifer.sigma
        assert best.accountant == "profile" and kifer.accountant == "kifer"
        for p in (best, kifer):
            cert = p.recertify()
            assert cert.certified and cert.delta <= p.delta and cert == p.certificate
            assert PeerPlan.from_dict(json.loads(p.to_json())) == p


def test_a_plan_names_the_accountant_that_certifies_it():
    """A stored plan recertifies under the accountant it names (an AMP plan without one is
    refused, not read with a default); 'tightest' is not a plan's accountant."""
    amp = plan_amp("logistic", accountant="kifer", epsilon=1.0, mu=1e-2, **COMPARE_LIKE)
    assert PeerPlan.from_dict(amp.to_dict()).recertify() == amp.certificate
    old = amp.to_dict()
    del old["accountant"]
    with pytest.raises(TypeError, match="accountant"):
        PeerPlan.from_dict(old)
    lop = plan_lop("logistic", accountant="kifer", epsilon=1.0, mu=1e-2, **COMPARE_LIKE)
    with pytest.raises(ParameterError, match="tightest"):
        replace(lop, accountant="tightest").recertify()
    with pytest.raises(ParameterError, match="accountant"):
        plan_lop("logistic", accountant="exactly", epsilon=1.0, **COMPARE_LIKE)
