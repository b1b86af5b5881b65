"""Theorem C.13 for neighbours that differ in up to k rows (one privacy unit's), checked on
exact unit pairs: the linear loss (an exact Gaussian mechanism, Section C.5) with k rows
flipped, the exact minimiser of the logistic loss in d = 1 by quadrature with k rows
replaced, and the Monte Carlo pairwise profile of a logistic release with k rows replaced."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, stats

from objpert.accounting._gaussian_mechanism import gaussian_profile
from objpert.audit._maps import linear_plan
from objpert.audit._pairwise import certified_delta, pairwise_profile
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._constants import problem
from objpert.certify._plan import rederive_plan
from objpert.certify._unit_rows import unit_plan, unit_routes
from objpert.exceptions import ParameterError, PrivacyError

EPS = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 2.0])


def test_constants_for_k_rows():
    one = problem("logistic", n=50, d=80, zeta=2.0, mu=0.1)
    three = problem("logistic", n=50, d=80, zeta=2.0, mu=0.1, rows=3)
    assert math.isclose(three.G, 3 * one.G, rel_tol=1e-12)
    assert three.d_star == 53 and one.d_star == 51
    assert three.log_det_term == pytest.approx(3 * one.log_det_term)
    assert (three.L, three.M, three.L_ell) == (one.L, one.M, one.L_ell)
    assert "rows" not in one.to_dict() and three.to_dict()["rows"] == 3
    with pytest.raises(ParameterError):
        problem("logistic", n=5, d=2, zeta=1.0, mu=0.1, rows=6)


def test_linear_loss_k_rows_flipped_is_the_gaussian_at_k_times_G():
    """Section C.5: w_N = -((1 - rho^N)/mu)(b_S + z) is a Gaussian mechanism of
    sensitivity ||b_S - b_S'||; k rows flipped move b by 2 k zeta / n: the certificate for
    k rows covers it, the one for one row does not."""
    n, d, k, zeta = 12, 2, 3, 1.0
    kwargs = dict(n=n, d=d, zeta=zeta, mu=0.5, eta=1.0, sigma=1.2, iterations=30, u=3.0)
    plan_k = linear_plan(epsilon=2.0, rows=k, **kwargs)
    plan_1 = linear_plan(epsilon=2.0, **kwargs)
    exact = gaussian_profile(EPS, 2 * k * zeta / n, plan_k.sigma)
    assert np.all(certified_delta(plan_k, EPS) >= exact)
    assert np.any(certified_delta(plan_1, EPS) < exact)  # the check can fail
    # the Monte Carlo check on the same pair agrees (exact Newton preimages)
    rng = np.random.default_rng(3)
    X = np.tile([zeta, 0.0], (n, 1))
    y = rng.choice([-1.0, 1.0], n)
    yp = y.copy()
    yp[:k] = -y[:k]
    prof = pairwise_profile(X, y, X, yp, plan_k, EPS[:4], samples=3000, rng=5)
    assert not prof.flagged and prof.below_certified
    with pytest.raises(ParameterError, match="at most 3 rows"):
        yp[: k + 1] = -y[: k + 1]
        pairwise_profile(X, y, X, yp, plan_k, EPS[:2], samples=100, rng=5)


def _density(theta, rows, lam, s):
    """The output density of argmin sum_i l(x_i theta, y_i) + lam theta^2 / 2 + b theta,
    b ~ N(0, s^2), in d = 1 (logistic loss): p_b(b(theta)) |b'(theta)|."""
    grad = sum(-x * y * stats.logistic.cdf(-y * x * theta) for x, y in rows)
    curv = sum(x * x * stats.logistic.pdf(x * theta) for x, _ in rows)
    return stats.norm.pdf(-(grad + lam * theta), scale=s) * (curv + lam)


def exact_limit_delta(rows_a, rows_b, lam, s, eps):
    """max over both orders of sup_S P(S) - e^eps Q(S) = int (p - e^eps q)_+, by quadrature
    over the output (the other rows of the mean form are zero: they add nothing)."""
    out = 0.0
    for a, b in ((rows_a, rows_b), (rows_b, rows_a)):

        def f(t, a=a, b=b):
            return max(_density(t, a, lam, s) - math.exp(eps) * _density(t, b, lam, s), 0.0)

        width = 12.0 * s / lam + 4.0 * len(a) / lam
        val = integrate.quad(f, -width, width, limit=400, points=[0.0])[0]
        out = max(out, val)
    return out


@pytest.mark.parametrize(("k", "beats_one_row"), [(2, False), (3, True)])
def test_exact_minimiser_with_k_rows_replaced_stays_below_the_k_row_limit(k, beats_one_row):
    """Logistic, d = 1, zeta = 1: S holds k rows (1, +1), S' k rows (1, -1) (the gradient
    moves by 2 k / n); the sum form's noise s = n sigma and ridge lam = n mu."""
    n, mu, sigma = 40, 0.05, 0.12
    pc_k = problem("logistic", n=n, d=1, zeta=1.0, mu=mu, rows=k)
    pc_1 = problem("logistic", n=n, d=1, zeta=1.0, mu=mu)
    rows_a, rows_b = [(1.0, 1.0)] * k, [(1.0, -1.0)] * k
    beaten = False
    for eps in (0.5, 1.0, 2.0, 3.0):
        exact = exact_limit_delta(rows_a, rows_b, n * mu, n * sigma, eps)
        assert exact <= float(theorem_c13.limit_delta(pc_k, sigma, eps)) + 1e-9
        beaten |= exact > float(theorem_c13.limit_delta(pc_1, sigma, eps))
    assert beaten == beats_one_row  # k = 3: the one-row certificate does not cover them


@pytest.fixture(scope="module")
def unit2():
    return unit_plan(
        "logistic", rows=2, n=10, d=2, zeta=1.0, epsilon=1.5, delta=1e-4, mu=0.5,
        max_iter=4000,
    )  # fmt: skip


def test_unit_plan_certifies_k_rows_and_rederives(unit2):
    assert unit2.rows == 2 and unit2.constants.rows == 2
    cert = rederive_plan(unit2)
    assert cert.certified and cert.delta <= unit2.delta
    data = unit2.to_dict()
    assert data["rows"] == 2 and data["certificate"]["constants"]["rows"] == 2
    with pytest.raises(PrivacyError):  # a k-row plan read as a one-row plan is refused
        rederive_plan(replace(unit2, rows=1))
    routes = unit_routes(unit2)
    assert routes["direct"] == pytest.approx(cert.delta) and 0 < routes["group"] <= 1


def test_logistic_release_with_two_rows_replaced_is_below_its_certificate(unit2):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(10, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.choice([-1.0, 1.0], 10)
    Xp, yp = X.copy(), y.copy()
    Xp[:2], yp[:2] = -X[:2], -y[:2]
    prof = pairwise_profile(X, y, Xp, yp, unit2, EPS[:4], samples=2000, rng=9)
    assert not prof.flagged and prof.below_certified


def test_group_route_calibration_meets_the_target_and_relaxes_the_classical_one():
    """A Gaussian mechanism calibrated per row stands in for a plan: the group route's
    one-row target is at least the classical one, and its group delta at most the target."""
    from types import SimpleNamespace

    from objpert.accounting import _pld as pld
    from objpert.accounting._gaussian_mechanism import calibrate_gaussian, gaussian_delta
    from objpert.accounting._group import crude_row_target
    from objpert.certify._unit_rows import group_route_plan

    def plan_at(eps, dlt):
        sigma = calibrate_gaussian(1.0, eps, dlt)
        return SimpleNamespace(
            epsilon=eps, delta=dlt, sigma=sigma, privacy_loss=lambda: pld.gaussian(sigma)
        )

    k, eps, delta = 4, 1.0, 1e-6
    plan, grouped = group_route_plan(plan_at, k, eps, delta)
    assert grouped <= delta and plan.delta >= crude_row_target(eps, delta, k)[1]
    assert grouped == pytest.approx(gaussian_delta(eps, k, plan.sigma), rel=0.05)
