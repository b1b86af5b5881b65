"""The exact Gaussian benchmark of Watkins & Arora (2026), Section C.5.

For the linear loss with ridge regularisation, w_N = -((1 - rho^N)/mu)(b_S + Z) is an
invertible public rescaling of the Gaussian mechanism b_S + Z, whose privacy profile
is exact (Dong et al. 2022, Theorem 2.7 / Corollary 2.13):
delta_G(epsilon) = Phi(G/(2 sigma) - epsilon sigma/G)
                   - e^epsilon Phi(-G/(2 sigma) - epsilon sigma/G).

The same profile certifies any Gaussian mechanism f(S) + N(0, sigma^2 I) of l2
sensitivity G (Balle & Wang 2018, Theorem 8): :func:`gaussian_delta`,
:func:`gaussian_epsilon`, the analytic calibration :func:`calibrate_gaussian` (Balle &
Wang 2018, Algorithm 1: the smallest sigma with delta_G(epsilon) <= delta) and the
classical closed form :func:`classical_gaussian_sigma` (Dwork & Roth 2014, Theorem A.1).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from objpert._special import log_over
from objpert._validation import (
    check_computed,
    numeric_guard,
)
from objpert.accounting._bisection import smallest_passing
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = [
    "calibrate_gaussian",
    "classical_gaussian_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_integrated_tail_bound",
    "gaussian_profile",
]


def gaussian_profile(epsilon: ArrayLike, sensitivity: float, sigma: float) -> np.ndarray:
    """Exact privacy profile delta_G(epsilon) of the Gaussian mechanism (Section C.5).

    Computed as Phi(a) (1 - exp(epsilon + log Phi(b) - log Phi(a))) with log_ndtr and
    expm1, so it stays relative-accurate where the two terms nearly cancel. In [0, 1]: 0.0
    where Phi(a) underflows (the profile is below Phi(a)), rounding never leaves [0, 1].
    """
    g = sensitivity
    s = sigma
    eps = np.asarray(epsilon, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        a = g / (2 * s) - eps * s / g
        b = -g / (2 * s) - eps * s / g
        log_a = special.log_ndtr(a)
        phi_a = np.exp(log_a)
        val = phi_a * -np.expm1(eps + special.log_ndtr(b) - log_a)
    return np.clip(np.where(phi_a == 0.0, 0.0, val), 0.0, 1.0)


def gaussian_integrated_tail_bound(epsilon: ArrayLike, sensitivity: float, sigma: float):
    """The integrated-tail certificate with zero log-determinant term (Section C.5):
    (2G/sigma) Q1((sigma/G)(epsilon - G^2/(2 sigma^2)))."""
    from objpert._special import q1

    g, s, eps = sensitivity, sigma, np.asarray(epsilon, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        try:
            floor = g**2 / (2 * s**2)
        except (OverflowError, ZeroDivisionError):  # s**2 or g**2 outside the float64 range
            floor = 0.5 * (g / s) * (g / s)
        slack = eps - floor
        val = 2 * g / s * q1(s / g * np.maximum(slack, 0.0))
    val = np.where(np.isnan(val), 1.0, val)
    return np.clip(np.where(slack >= 0, val, 1.0), 0.0, 1.0)


def gaussian_delta(epsilon: float, sensitivity: float, sigma: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism with L2 sensitivity G and std sigma.

    delta_G(epsilon) = Phi(G/(2 sigma) - epsilon sigma/G) - e^epsilon Phi(-G/(2 sigma)
    - epsilon sigma/G) (Dong et al. 2022, Corollary 2.13), via
    :func:`objpert.accounting._gaussian_mechanism.gaussian_profile`.
    """
    return float(gaussian_profile(epsilon, sensitivity, sigma))


@numeric_guard
def gaussian_epsilon(delta: float, sensitivity: float, sigma: float) -> float:
    """Smallest epsilon >= 0 with delta_G(epsilon) <= delta (bisection; the profile is
    decreasing in epsilon). The returned epsilon satisfies the bound exactly as computed."""
    if gaussian_delta(0.0, sensitivity, sigma) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(hi, sensitivity, sigma) > delta:
        hi *= 2.0
        if hi > 1e12:
            raise UnreachableTargetError("no finite epsilon reaches this delta")
    lo = hi / 2.0 if hi > 1.0 else 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if gaussian_delta(mid, sensitivity, sigma) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """sigma = G sqrt(2 log(1.25/delta)) / epsilon (Dwork & Roth 2014, Theorem A.1).

    That theorem needs epsilon < 1; larger epsilon is refused (use the analytic calibration).
    """
    g = sensitivity
    if epsilon >= 1.0:
        raise ParameterError(
            f"the classical Gaussian calibration (Dwork & Roth 2014, Theorem A.1) needs "
            f"epsilon < 1; got {epsilon!r}: use calibration='analytic'"
        )
    return check_computed(
        "sigma", g * math.sqrt(2.0 * log_over(1.25, delta)) / epsilon,
        f"sensitivity {g!r} and epsilon {epsilon!r} are too extreme",
    )  # fmt: skip


@numeric_guard
def calibrate_gaussian(sensitivity: float, epsilon: float, delta: float) -> float:
    """The analytic Gaussian mechanism's sigma (Balle & Wang 2018, Algorithm 1): the smallest
    sigma (to ~1e-15 relative) with delta_G(epsilon) <= delta.

    delta_G is decreasing in sigma, so bisection on sigma is exact up to rounding; the
    returned value always satisfies ``gaussian_delta(epsilon, sensitivity, sigma) <= delta``.
    """
    g = sensitivity

    def ok(s: float) -> bool:
        return gaussian_delta(epsilon, g, s) <= delta

    return smallest_passing(
        ok, g, unreachable=f"no sigma certifies (epsilon={epsilon:g}, delta={delta:g})"
    )
