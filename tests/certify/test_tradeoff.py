"""The trade-off function implied by a privacy profile (objpert.certify._tradeoff), against
independent computations: the Gaussian mechanism's closed-form trade-off (its profile from
Balle & Wang 2018, Theorem 8, in mpmath) and the Neyman-Pearson tests of the extremal
(epsilon, delta) pair of Kairouz, Oh & Viswanath (2015)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from objpert.certify import _tradeoff as tradeoff
from objpert.exceptions import ParameterError


def balle_wang_profile(eps: float, sens: float, sigma: float) -> float:
    """delta(epsilon) of the Gaussian mechanism (Balle & Wang 2018, Theorem 8)."""
    with mpmath.workdps(40):
        e, g, s = mpmath.mpf(eps), mpmath.mpf(sens), mpmath.mpf(sigma)
        val = mpmath.ncdf(g / (2 * s) - e * s / g) - mpmath.exp(e) * mpmath.ncdf(
            -g / (2 * s) - e * s / g
        )
        return float(max(val, 0))


def gaussian_tradeoff(alpha: np.ndarray, mu: float) -> np.ndarray:
    """G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu) (Dong, Roth & Su 2022, Section 2.3)."""
    return stats.norm.cdf(stats.norm.ppf(1.0 - alpha) - mu)


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_profile_gives_the_gaussian_tradeoff_to_grid_precision(mu):
    """sup over a fine epsilon grid of f_{eps, delta(eps)} is G_mu to about 1e-5, and never
    above it (a grid of valid guarantees can only under-claim the trade-off)."""
    eps = np.linspace(0.0, 12.0, 1201)
    deltas = np.array([balle_wang_profile(e, mu, 1.0) for e in eps])
    alpha = np.concatenate([np.geomspace(1e-5, 0.5, 60), np.linspace(0.5, 1.0, 21)])
    got = tradeoff.tradeoff(alpha, eps, deltas)
    want = gaussian_tradeoff(alpha, mu)
    assert np.all(got <= want + 1e-12)
    assert np.max(want - got) < 2e-5
    tpr = tradeoff.max_true_positive_rate(alpha, eps, deltas)
    np.testing.assert_allclose(tpr, 1.0 - got, rtol=0, atol=0)


def neyman_pearson(alpha: float, p: list[float], q: list[float]) -> float:
    """The least type II error at type I error <= alpha between two finite distributions
    (the most powerful randomised test: reject in decreasing order of q/p)."""
    order = sorted(range(len(p)), key=lambda i: -(q[i] / p[i] if p[i] > 0 else math.inf))
    budget, power = alpha, 0.0
    for i in order:
        if p[i] == 0.0:
            power += q[i]
            continue
        take = min(1.0, budget / p[i])
        power += take * q[i]
        budget -= take * p[i]
        if budget <= 0.0:
            break
    return 1.0 - power


@pytest.mark.parametrize("eps, delta", [(0.0, 0.1), (0.5, 1e-6), (1.0, 1e-3), (3.0, 0.02)])
def test_single_point_matches_the_extremal_pair(eps, delta):
    """f_{eps,delta} is the trade-off of the four-point pair of Kairouz, Oh & Viswanath
    (2015), computed by the Neyman-Pearson lemma."""
    a = math.exp(eps) / (1.0 + math.exp(eps))
    p = [delta, (1 - delta) * a, (1 - delta) * (1 - a), 0.0]
    q = [0.0, (1 - delta) * (1 - a), (1 - delta) * a, delta]
    alphas = np.linspace(0.0, 1.0, 101)
    want = np.array([neyman_pearson(x, p, q) for x in alphas])
    got = tradeoff.point_tradeoff(alphas, eps, delta)
    np.testing.assert_allclose(got, np.clip(want, 0.0, 1.0), atol=1e-12)


def test_tradeoff_is_the_supremum_of_its_points():
    alphas = np.linspace(0.0, 1.0, 51)
    pts = [(0.2, 0.05), (1.0, 1e-4), (2.5, 1e-9)]
    each = np.array([tradeoff.point_tradeoff(alphas, e, d) for e, d in pts])
    got = tradeoff.tradeoff(alphas, [e for e, _ in pts], [d for _, d in pts])
    np.testing.assert_array_equal(got, each.max(axis=0))


def test_edge_points():
    """delta = 1 says nothing (f = 0, TPR bound 1); epsilon = inf points are ignored;
    epsilon = 0, delta = 0 is perfect privacy (TPR = FPR)."""
    alphas = np.array([0.0, 0.001, 0.5, 1.0])
    np.testing.assert_array_equal(tradeoff.max_true_positive_rate(alphas, [1.0], [1.0]), 1.0)
    np.testing.assert_array_equal(tradeoff.tradeoff(alphas, [math.inf], [0.0]), 0.0)
    np.testing.assert_allclose(tradeoff.max_true_positive_rate(alphas, [0.0], [0.0]), alphas)
    huge = tradeoff.max_true_positive_rate([0.0, 0.1], [800.0], [1e-9])  # e^800 overflows
    np.testing.assert_allclose(huge, [1e-9, 1.0])


@pytest.mark.parametrize(
    "call",
    [
        lambda: tradeoff.tradeoff(0.1, [1.0, 2.0], [1e-6]),
        lambda: tradeoff.tradeoff(0.1, [], []),
    ],
)
def test_points_of_different_lengths_are_refused(call):
    with pytest.raises(ParameterError):
        call()


def test_epsilon_grid():
    grid = tradeoff.epsilon_grid(1.234)
    assert grid[0] == 0.0 and grid[-1] == 10.0 and 1.234 in grid
    assert np.all(np.diff(grid) > 0)
    assert tradeoff.epsilon_grid(7.0)[-1] == 28.0
    assert np.isfinite(tradeoff.epsilon_grid(1e308)).all()
