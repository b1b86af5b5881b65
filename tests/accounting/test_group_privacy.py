"""Group privacy (objpert.accounting.group_privacy) against independent computations: the
Gaussian group pair in closed form (mpmath), an (epsilon, delta) mechanism on k replaced
rows by exact enumeration of its outputs, and the chain bound's minimum by a direct search
over the split."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from objpert.accounting import _pld as pld
from objpert.accounting import group_privacy
from objpert.accounting._group import chain_profile, crude_row_target, point_profile
from objpert.exceptions import ParameterError, PrivacyError

pytestmark = pytest.mark.skipif(not pld.available(), reason="needs dp-accounting")


def gaussian_delta(mu: float, eps: float) -> float:
    """The exact profile of N(0, 1) against N(mu, 1) (Balle & Wang 2018), in mpmath."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    tail = mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)
    return float(mpmath.ncdf(-eps / mu + mu / 2) - tail)


@pytest.mark.parametrize(("sigma", "k"), [(2.0, 3), (5.0, 7)])
def test_gaussian_group_is_the_gaussian_at_k_times_the_sensitivity(sigma, k):
    grouped = group_privacy(pld.gaussian(sigma, 1.0), k)
    dist = pld.distribution(grouped)
    for eps in (0.5, 1.0, 2.0):
        exact = gaussian_delta(k / sigma, eps)
        got = pld.delta_for_epsilon(dist, eps)
        assert exact - 1e-12 <= got <= exact * 1.02 + 1e-9


def test_zcdp_and_laplace_groups():
    assert dict(group_privacy(pld.zcdp(0.1), 3).parameters)["rho"] == pytest.approx(0.9)
    lap = group_privacy(pld.laplace(2.0, 0.5, count=4), 3)
    assert dict(lap.parameters)["sensitivity"] == pytest.approx(1.5) and lap.count == 4
    assert group_privacy(pld.point(1.0, 1e-6), 1) == pld.point(1.0, 1e-6)


def rr_with_leak(eps: float, delta: float, bit: int) -> dict[str, float]:
    """One row's (epsilon, delta)-DP release: its bit in the clear with probability delta,
    else randomized response at epsilon."""
    keep = (1.0 - delta) * math.exp(eps) / (1.0 + math.exp(eps))
    flip = (1.0 - delta) / (1.0 + math.exp(eps))
    return {f"leak{bit}": delta, str(bit): keep, str(1 - bit): flip}


def exact_group_delta(eps: float, delta: float, k: int, E: float) -> float:
    """sup_S P(S) - e^E Q(S) for k rows all flipped (the other rows' outputs cancel), by
    enumerating the 4^k joint outputs of the k rows."""
    p1, p0 = rr_with_leak(eps, delta, 1), rr_with_leak(eps, delta, 0)
    keys = sorted(set(p1) | set(p0))
    total = 0.0
    for combo in itertools.product(keys, repeat=k):
        P = math.prod(p1.get(c, 0.0) for c in combo)
        Q = math.prod(p0.get(c, 0.0) for c in combo)
        total += max(P - math.exp(E) * Q, 0.0)
    return total


@pytest.mark.parametrize(("eps", "delta", "k"), [(0.5, 1e-4, 3), (1.0, 1e-3, 4)])
def test_point_group_bounds_the_enumerated_mechanism_and_beats_the_crude_bound(eps, delta, k):
    dist = pld.distribution(group_privacy(pld.point(eps, delta), k))
    for E in np.linspace(0.0, k * eps + 1.0, 9):
        assert exact_group_delta(eps, delta, k, E) <= pld.delta_for_epsilon(dist, E) + 1e-12
    at = pld.delta_for_epsilon(dist, k * eps)
    assert at <= delta * sum(math.exp(i * eps) for i in range(k)) * (1 + 1e-9)
    assert at < k * math.exp((k - 1) * eps) * delta  # the crude bound


def test_chain_bound_is_the_minimum_over_splits_for_two_rows():
    """k = 2: delta_2(E) = min_a delta(a) + e^a delta(E - a), searched independently."""
    step = 0.01
    grid = np.arange(401) * step
    base = point_profile(0.7, 1e-5, grid) * 0.5 + 0.5 * np.exp(-3.0 * grid) * 1e-2
    two = chain_profile(base, step, 2)
    for j in (50, 140, 300):
        direct = min(base[i] + math.exp(grid[i]) * base[j - i] for i in range(j + 1))
        assert two[j] == pytest.approx(min(direct, 1.0), rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 2.0), st.floats(1e-9, 1e-2), st.integers(2, 6), st.integers(1, 30))
def test_chain_bound_never_exceeds_an_equal_split(eps, delta, k, m):
    step = eps / m
    grid = np.arange(k * m * 2 + 1) * step
    base = point_profile(eps, delta, grid)
    grouped = chain_profile(base, step, k)
    # the equal split on the grid's own points (grid[m] is epsilon up to rounding)
    equal = base[m] * sum(math.exp(grid[i * m]) for i in range(k))
    assert grouped[k * m] <= equal * (1 + 1e-12)
    assert np.all(np.diff(grouped) <= 0.0)


def test_watkins_arora_profile_group_beats_the_crude_bound(plan):
    k = 3
    dist = pld.distribution(group_privacy(plan.privacy_loss(), k))
    got = pld.delta_for_epsilon(dist, k * plan.epsilon)
    assert got < k * math.exp((k - 1) * plan.epsilon) * plan.certificate.delta


def test_crude_row_target_and_bad_input():
    e, d = crude_row_target(1.0, 1e-6, 4)
    assert e == 0.25 and d == pytest.approx(1e-6 / (4 * math.exp(0.75)))
    with pytest.raises(ParameterError):
        group_privacy(pld.point(1.0, 1e-6), 0)
    with pytest.raises(ParameterError):
        group_privacy("a release", 2)


def test_uncertified_release_is_refused(plan):
    from dataclasses import replace

    bad = replace(plan.certificate, certified=False, delta=1.0)
    with pytest.raises(PrivacyError):
        group_privacy(bad, 2)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 50.0), st.floats(0.1, 5.0), st.integers(1, 20), st.integers(1, 5))
def test_group_privacy_of_gaussians_scales_the_sensitivity(sigma, sensitivity, k, count):
    grouped = group_privacy(pld.gaussian(sigma, sensitivity, count), k)
    p = dict(grouped.parameters)
    assert grouped.kind == "gaussian" and grouped.count == count
    assert p["sigma"] == sigma and p["sensitivity"] == pytest.approx(k * sensitivity)
    assert grouped.rows == k


@pytest.mark.parametrize("rows", [True, 0, -2, 2.5, "3", None])
def test_group_privacy_refuses_bad_rows(rows):
    with pytest.raises(ParameterError):
        group_privacy(pld.gaussian(1.0), rows)
