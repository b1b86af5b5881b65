"""Replace-one neighbours: the certificates of LOP, LOP-Clip and AMP's objective noise
against the exact hockey-stick divergence of explicit replace-one pairs and against an
independently computed replace-one floor on sigma.

Two datasets of n rows that differ in one row: S = S0 + {row a}, S' = S0 + {row b}, S0 of
zero rows (which contribute nothing, the worst case for the log-determinant). In d = 1 the
exact minimiser of the sum form l_a(theta) + lam theta^2 / 2 + b theta, b ~ N(0, s^2)
(lam = n mu, s = n sigma: objpert's mean form times n), is found by a root solver for
each noise value b; its privacy loss against S' at that point is the Gaussian ratio of the
two preimages of the noise plus the log ratio of the two Jacobians, and
delta(epsilon) = E_b[(1 - exp(epsilon - loss))_+] is integrated by quadrature (the
computation of ``tests/certify/test_exact_lop.py``, for any row given by its derivative
and curvature).

The pair that hurts a per-row bound in place of the replace-one sensitivity: row a at the
edge of its curved region (derivative near +c, curvature 1: the Jacobian ratio
(1 + lam) / lam) and row b saturated at -c, far away (derivative -c, curvature 0): the
gradient difference is near 2 c while the Jacobian term is at its largest.
"""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from objpert._losses import get_loss
from objpert.certify import REPLACE_ONE, replace_one_sensitivity
from objpert.certify._neighbours import two_radii
from objpert.mechanisms._certificates import plan_amp, plan_lop, plan_lop_clip

# ------------------------------------------------------------ the exact pair, d = 1


def exact_pair_delta(row_a, row_b, lam, s, eps, knots=()):
    """delta(eps) of the exact minimiser for S = {row a} against S' = {row b}, sum form, one
    direction. A row is (derivative, curvature) as functions of theta; ``knots``: values
    of theta where a row's curvature jumps (split points of the quadrature)."""
    grad_a, hess_a = row_a
    grad_b, hess_b = row_b

    def theta_of(b):
        def f(th):
            return grad_a(th) + lam * th + b

        lo, hi = -1.0, 1.0
        while f(lo) > 0:
            lo *= 2.0
        while f(hi) < 0:
            hi *= 2.0
        return optimize.brentq(f, lo, hi, xtol=1e-15, rtol=1e-15)

    def integrand(b):
        th = theta_of(b)
        b2 = -(grad_b(th) + lam * th)  # the noise that gives theta under S'
        loss = (b2 * b2 - b * b) / (2 * s * s) + math.log((hess_a(th) + lam) / (hess_b(th) + lam))
        value = -math.expm1(eps - loss)
        return max(value, 0.0) * math.exp(-0.5 * (b / s) ** 2) / (s * math.sqrt(2 * math.pi))

    edges = set(np.linspace(-14 * s, 14 * s, 57))
    for th in knots:  # the noise values at which theta crosses a knot
        b = -(grad_a(th) + lam * th)
        if abs(b) < 14 * s:
            edges.add(b)
    with warnings.catch_warnings():  # roundoff notices on pieces whose mass is ~1e-300
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        return sum(
            integrate.quad(integrand, lo, hi, limit=200, epsabs=1e-16, epsrel=1e-9)[0]
            for lo, hi in itertools.pairwise(sorted(edges))
        )


def clipped_squared_row(y, c):
    """The squared loss (theta - y)^2 / 2 with its derivative clipped to [-c, c] (x = 1):
    derivative clip(theta - y, -c, c), curvature 1 inside, 0 outside."""
    return (lambda th: min(max(th - y, -c), c)), (lambda th: 1.0 if abs(th - y) < c else 0.0)


def robust_row(y, scale=1.0):
    """The pseudo-Huber loss scale^2 (sqrt(1 + (r / scale)^2) - 1), r = theta - y (x = 1):
    derivative scale z / sqrt(1 + z^2) and curvature (1 + z^2)^(-3/2), z = r / scale."""

    def grad(th):
        z = (th - y) / scale
        return scale * z / math.sqrt(1.0 + z * z)

    def hess(th):
        z = (th - y) / scale
        return (1.0 + z * z) ** -1.5

    return grad, hess


def test_the_robust_row_is_the_librarys_loss():
    loss = get_loss("robust", scale=2.0)
    t, y = np.linspace(-30.0, 30.0, 61), 1.5
    grad, hess = robust_row(y, 2.0)
    assert np.allclose([grad(v) for v in t], loss.d1(t, np.full_like(t, y)), rtol=1e-13)
    assert np.allclose([hess(v) for v in t], loss.d2(t, np.full_like(t, y)), rtol=1e-13)


def worst_pair_delta(make_row, width, lam, s, eps, far):
    """The largest exact delta over pairs (row a at y1, row b at ``far``), both directions:
    y1 places row a's curved region (half-width ``width``) at noise values k s, k on a grid
    of [0, 8] in steps of 1/2, then refined by a bounded scalar search around the best."""

    def delta_at(y1):
        a, b = make_row(y1), make_row(far)
        knots = (y1 - width, y1 + width)
        return max(
            exact_pair_delta(a, b, lam, s, eps, knots), exact_pair_delta(b, a, lam, s, eps, knots)
        )

    grid = [(delta_at(-k * s / lam), -k * s / lam) for k in np.arange(0.0, 8.01, 0.5)]
    best, y_best = max(grid)
    step = 0.5 * s / lam
    found = optimize.minimize_scalar(
        lambda y: -delta_at(y), bounds=(y_best - step, y_best + step), method="bounded",
        options={"xatol": 1e-3 * step},
    )  # fmt: skip
    return max(best, -found.fun)


def test_the_pair_computation_matches_the_label_pair_helper():
    """For a robust pair at generic constants the generic helper equals an independent
    closed-form check: both saturated rows (labels far apart) give the Gaussian mechanism
    at sensitivity 2 (the 1-d first-order condition shifts the noise by the gradient
    difference and the curvatures vanish)."""
    lam, s, eps = 3.0, 2.5, 0.7
    a, b = robust_row(1e5), robust_row(-1e5)
    got = max(exact_pair_delta(a, b, lam, s, eps), exact_pair_delta(b, a, lam, s, eps))
    # Gaussian mechanism, sensitivity 2, std s: Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D)
    D = 2.0
    ref = stats.norm.cdf(D / (2 * s) - eps * s / D) - math.exp(eps) * stats.norm.cdf(
        -D / (2 * s) - eps * s / D
    )
    assert got == pytest.approx(ref, rel=1e-6)


# the pair of the audit: LOP-Clip, squared loss, n = 1001, d = 1, clip 1
N, EPS, DELTA, CLIP = 1001, 1.0, 1e-6, 1.0


def kifer_sigma_with(sensitivity, n, eps, delta):
    """Kifer et al. (2012), Theorem 2, mean form, with ``sensitivity`` in the place of the
    bound on the gradient difference: sensitivity sqrt(8 log(2/delta) + 4 eps) / (n eps)."""
    return sensitivity * math.sqrt(8 * math.log(2 / delta) + 4 * eps) / (n * eps)


def clip_pair_delta(mu, sigma):
    return worst_pair_delta(
        lambda y: clipped_squared_row(y, CLIP), CLIP, N * mu, N * sigma, EPS, far=1e6
    )


def test_the_per_row_bound_in_kifers_place_is_a_false_certificate():
    """Kifer's closed form with the per-row bound c (not the replace-one sensitivity 2 c)
    in its place, at its ridge floor: an explicit replace-one pair has an exact delta above
    1.5e-6 where 1e-6 would be certified. The planners' sigma is twice that one."""
    mu = 2 * 1.0 / (N * EPS)  # Kifer's floor 2 L2 zeta^2 / (n eps), squared loss L2 = 1
    old = kifer_sigma_with(CLIP, N, EPS, DELTA)
    assert clip_pair_delta(mu, old) > 1.5e-6 > DELTA
    plan = plan_lop_clip(
        "squared", n=N, d=1, zeta=1.0, epsilon=EPS, delta=DELTA, clip=CLIP, accountant="kifer"
    )
    assert plan.mu == pytest.approx(mu, rel=1e-15)
    assert plan.sigma == pytest.approx(kifer_sigma_with(2 * CLIP, N, EPS, DELTA), rel=1e-12)


@pytest.mark.parametrize("accountant", ["kifer", "tightest"])
def test_lop_clip_plans_hold_on_the_explicit_pair(accountant):
    """The planners' LOP-Clip plans (squared loss, n = 1001, d = 1, clip 1) certify at
    least the exact delta of the pair above."""
    plan = plan_lop_clip(
        "squared", n=N, d=1, zeta=1.0, epsilon=EPS, delta=DELTA, clip=CLIP, accountant=accountant
    )
    cert = plan.certificate
    assert cert.certified and cert.delta <= DELTA
    assert clip_pair_delta(plan.mu, plan.sigma) <= cert.delta


@pytest.mark.parametrize("accountant", ["kifer", "tightest"])
@pytest.mark.parametrize("scale", [1.0, 10.0])
def test_lop_and_amp_plans_hold_on_explicit_robust_pairs(accountant, scale):
    """LOP and AMP's objective noise (robust loss, bounded derivative, d = 1, n = 1001):
    the exact delta of the worst placed pair (one row on its curved part, one saturated)
    is at most the certified one (AMP: at epsilon_objective, against delta_objective)."""
    params = {"scale": scale}
    kw = dict(n=N, d=1, zeta=1.0, epsilon=EPS, delta=DELTA, loss_params=params)
    for plan in (
        plan_lop("robust", accountant=accountant, **kw),
        plan_amp("robust", accountant=accountant, **kw),
    ):
        cert = plan.certificate
        assert cert.certified
        if plan.mechanism == "amp":
            eps, certified = plan.epsilon_objective, cert.details["delta_objective"]
        else:
            eps, certified = plan.epsilon, cert.delta
        exact = worst_pair_delta(
            lambda y: robust_row(y, scale), 3 * scale, N * plan.mu, N * plan.sigma, eps,
            far=1e6 * scale,
        )  # fmt: skip
        assert exact <= certified


# ------------------------------------------------------------ the replace-one floor


@functools.cache
def replace_one_floor(n, grad_bound, smoothness, mu, eps, delta):
    """The smallest sigma whose replace-one exact-minimiser profile (Redberg, Koskela & Wang
    2023, Section 3) certifies (eps, delta), computed here from its definition: with
    t = 2 grad_bound / (n sigma) (two rows' gradients apart) and
    c0 = log(1 + smoothness / (n mu)), delta(eps) = E[(1 - exp(eps - c0 - t^2/2 - t|Z|))_+]
    by quadrature over the half-normal, sigma by a root finder on log delta."""
    c0 = math.log1p(smoothness / (n * mu))

    def profile(sigma):
        t = 2.0 * grad_bound / (n * sigma)
        z0 = max(0.0, (eps - c0 - t * t / 2) / t)

        def f(z):
            return -math.expm1(eps - c0 - t * t / 2 - t * z) * 2 * stats.norm.pdf(z)

        pts = [z0, z0 + 1, z0 + 5, z0 + 40]
        return sum(
            integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)[0]
            for lo, hi in itertools.pairwise(pts)
        )

    lo, hi = 1e-3 * grad_bound / n, 1e3 * grad_bound / n
    log_sigma = optimize.brentq(
        lambda x: math.log(max(profile(math.exp(x)), 1e-300)) - math.log(delta),
        math.log(lo), math.log(hi),
        xtol=1e-13, rtol=1e-13,
    )  # fmt: skip
    return math.exp(log_sigma)


CASES = [  # (planner, loss, loss_params, per-row gradient bound, smoothness, options)
    (plan_lop, "logistic", None, 1.0, 0.25, {}),
    (plan_lop, "robust", None, 1.0, 1.0, {}),
    (plan_lop_clip, "squared", None, 1.0, 1.0, {"clip": 1.0}),
    (plan_lop_clip, "logistic", None, 0.5, 0.25, {"clip": 0.5}),
    (plan_amp, "logistic", None, 1.0, 0.25, {}),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_no_plan_is_below_the_replace_one_floor(case):
    """A sweep of plans (n, d, epsilon, delta, mu at Kifer's floor and above, both
    accountants): sigma is never below the replace-one floor computed here, at the plan's
    mu (AMP: its objective share of epsilon and delta). The per-row bound in Kifer's
    place falls below it at the floor (checked alongside)."""
    planner, loss, params, g, smooth, opts = CASES[case]
    below_with_the_per_row_bound = 0
    for n, d, eps, delta, factor, accountant in itertools.product(
        (100, 1797, 30_000), (1, 65), (0.1, 1.0, 3.0), (1e-5, 1e-9), (None, 1.5, 10.0),
        ("kifer", "tightest"),
    ):  # fmt: skip
        if d == 65 and (n, eps) != (1797, 1.0):
            continue
        floor_mu = 2 * smooth / (n * eps)
        mu = None if factor is None else factor * floor_mu
        plan = planner(
            loss, n=n, d=d, zeta=1.0, epsilon=eps, delta=delta, mu=mu, loss_params=params,
            accountant=accountant, **opts,
        )  # fmt: skip
        e, dl = eps, delta
        if plan.mechanism == "amp":
            e, dl = plan.epsilon_objective, plan.delta_objective
            floor_mu = 2 * smooth / (n * e)
        assert plan.certificate.certified
        floor = replace_one_floor(n, g, smooth, plan.mu, e, dl)
        assert plan.sigma >= floor * (1 - 1e-9), (n, d, eps, delta, factor, accountant)
        if plan.mu == floor_mu:
            old = kifer_sigma_with(g, n, e, dl)  # the per-row bound in Kifer's place
            below_with_the_per_row_bound += old < floor
    assert below_with_the_per_row_bound > 0


def test_one_relation_and_its_sensitivity():
    assert REPLACE_ONE == "replace-one"
    assert replace_one_sensitivity(0.75) == 1.5 and two_radii(0.25) == 0.5
    with pytest.raises(ValueError, match="per_row_bound"):
        replace_one_sensitivity(-1.0)
