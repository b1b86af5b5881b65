"""Zero-concentrated DP and its conversion to (epsilon, delta)-DP.

A mechanism is rho-zCDP when its Renyi divergence of order alpha is at most alpha rho for
every alpha > 1 (Bun & Steinke 2016, Definition 1.1); rho adds under adaptive composition
(their Lemma 2.3). It is then (epsilon, delta)-DP by Canonne, Kamath & Steinke (2020):
Corollary 13 gives delta at epsilon, their Proposition 12 (applied to a Renyi divergence
c alpha linear in the order) epsilon at delta.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy import optimize

from objpert._special import square
from objpert.exceptions import ParameterError

__all__ = [
    "cdp_delta",
    "cdp_epsilon",
    "gaussian_dp_mu",
    "gaussian_zcdp",
    "linear_rdp_epsilon",
    "zcdp_composition",
]


def zcdp_composition(rho: float, count: int) -> float:
    """rho-zCDP of ``count`` adaptively composed rho-zCDP releases: count * rho (Bun &
    Steinke 2016, Lemma 2.3)."""
    return count * rho


def gaussian_zcdp(sensitivity: float, scale: float, count: int = 1) -> float:
    """rho-zCDP of ``count`` adaptively composed Gaussian releases (continuous, or discrete
    on an integer lattice: Canonne, Kamath & Steinke 2020, Theorem 14) of l2 sensitivity G
    and noise std s per coordinate: count G^2 / (2 s^2) (Bun & Steinke 2016, Proposition
    1.6 and Lemma 2.3); from the ratio G / s where a square leaves the float64 range
    (+inf beyond)."""
    denominator = 2.0 * square(scale)
    numerator = count * sensitivity * sensitivity
    if 0.0 < denominator < math.inf and numerator < math.inf:
        return numerator / denominator
    ratio = sensitivity / scale
    return math.inf if ratio > 1e154 else 0.5 * count * ratio * ratio


def cdp_delta(rho: float, epsilon: float) -> float:
    """delta such that rho-zCDP implies (epsilon, delta)-DP (Canonne, Kamath & Steinke
    2020, Corollary 13):

        delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - epsilon)) / (alpha - 1)
                                 * (1 - 1/alpha)^alpha.

    The log of the bracket is convex in alpha (second derivative 2 rho +
    1/(alpha (alpha - 1)) > 0); its derivative (2 alpha - 1) rho - epsilon +
    log(1 - 1/alpha) is found to vanish by bisection on u = log(alpha - 1), with
    log(1 - 1/alpha) = u - log(1 + e^u) exactly. Every alpha gives a valid delta, so the
    search affects only tightness. Capped at 1.
    """
    if rho == 0.0:
        return 0.0
    if rho == math.inf:  # an infinite zCDP parameter certifies nothing
        return 1.0

    def slope(u: float) -> float:
        t = math.exp(u)  # alpha - 1
        return (1.0 + 2.0 * t) * rho - epsilon + u - math.log1p(t)

    def log_delta(u: float) -> float:
        t = math.exp(u)
        return t * ((1.0 + t) * rho - epsilon) - u + (1.0 + t) * (u - math.log1p(t))

    # alpha - 1 = (epsilon + 1)/(2 rho) + 1 has slope >= 1 + log(1/2) > 0
    lo, hi = -40.0, math.log((epsilon + 1.0) / (2.0 * rho) + 1.0)
    while slope(lo) > 0.0 and lo > -700.0:
        lo -= 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if slope(mid) < 0.0:
            lo = mid
        else:
            hi = mid
    best = min(log_delta(u) for u in (lo, hi, 0.5 * (lo + hi)))
    return 1.0 if best >= 0.0 else math.exp(best)


def cdp_epsilon(rho: float, delta: float) -> float:
    """The smallest epsilon for which rho-zCDP gives (epsilon, delta)-DP by Corollary 13 of
    Canonne, Kamath & Steinke (2020), i.e. Proposition 12 with Renyi divergence alpha rho
    at every order: inf_alpha alpha rho + log(1 - 1/alpha) - (log delta + log alpha) /
    (alpha - 1) (:func:`linear_rdp_epsilon`)."""
    if rho == 0.0:
        return 0.0
    return linear_rdp_epsilon(rho, delta)[0]


def linear_rdp_epsilon(
    c: float, delta: float, orders: Iterable[float] | None = None
) -> tuple[float, float]:
    """(epsilon, order) minimising c alpha + log(1 - 1/alpha) - (log delta + log alpha) /
    (alpha - 1) over alpha > 1 (``orders`` None) or over ``orders``: Proposition 12 of
    Canonne, Kamath & Steinke (2020) for Renyi divergence c alpha at every order.

    ``orders=None`` minimises over continuous alpha > 1 (a grid refined by a bounded scalar
    search); otherwise over the given orders (> 1), as dp-accounting does. Any alpha gives
    a valid bound, so the search only affects tightness. ``delta`` is not checked here.
    """
    if c == math.inf:  # an infinite Renyi divergence: no finite epsilon
        return math.inf, math.inf
    log_delta = math.log(delta)

    def eps(alpha: np.ndarray | float) -> np.ndarray:
        alpha = np.asarray(alpha, dtype=float)
        return c * alpha + np.log1p(-1.0 / alpha) - (log_delta + np.log(alpha)) / (alpha - 1.0)

    if orders is not None:
        a = np.asarray(orders, dtype=float).ravel()
        if a.size == 0 or np.any(~np.isfinite(a)) or np.any(a <= 1.0):
            raise ParameterError("orders must be finite numbers > 1")
        values = eps(a)
        k = int(np.argmin(values))
        return max(0.0, float(values[k])), float(a[k])
    grid = 1.0 + np.geomspace(1e-6, 1e8, 3001)
    values = eps(grid)
    k = int(np.argmin(values))
    lo, hi = np.log(grid[max(k - 1, 0)] - 1.0), np.log(grid[min(k + 1, grid.size - 1)] - 1.0)
    res = optimize.minimize_scalar(
        lambda u: float(eps(1.0 + math.exp(u))),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    best_alpha, best = float(grid[k]), float(values[k])
    if res.success and float(res.fun) < best:
        best_alpha, best = 1.0 + math.exp(float(res.x)), float(res.fun)
    return max(0.0, best), best_alpha


def gaussian_dp_mu(noise_multipliers: Iterable[float]) -> float:
    """mu of the composition of Gaussian mechanisms with noise / sensitivity ratios
    ``noise_multipliers`` (sigma_i / G_i): each is (G_i / sigma_i)-GDP (Dong, Roth & Su
    2022, Theorem 2.7) and mu-GDP releases compose to sqrt(sum mu_i^2)-GDP (their
    Corollary 3.3). Exact: the composition's trade-off function is that of this mu."""
    total = 0.0
    for z in noise_multipliers:
        z = float(z)
        if not (z > 0.0 and math.isfinite(z)):
            raise ParameterError(f"noise multipliers must be positive and finite; got {z!r}")
        total += 1.0 / (z * z)
    if total == 0.0:
        raise ParameterError("gaussian_dp_mu needs at least one mechanism")
    return math.sqrt(total)
