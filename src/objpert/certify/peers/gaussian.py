"""The continuous Gaussian mechanism: its exact privacy profile, inverse and calibrations.

A release f(S) + N(0, sigma^2 I) with l2 sensitivity G is (epsilon, delta_G(epsilon))-DP
for the exact profile

    delta_G(epsilon) = Phi(G/(2 sigma) - epsilon sigma/G)
                       - e^epsilon Phi(-G/(2 sigma) - epsilon sigma/G)

(Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2022, Corollary 2.13), evaluated by
:func:`objpert.certify.gaussian.gaussian_profile`. The analytic calibration (Balle & Wang
2018, Algorithm 1) is the smallest sigma with delta_G(epsilon) <= delta; the classical one
is the closed form of Dwork & Roth (2014), Theorem A.1.
"""

from __future__ import annotations

import math

from objpert.certify.gaussian import gaussian_profile
from objpert.certify.peers.bisection import smallest_passing
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.special import log_over
from objpert.validation import (
    check_computed,
    check_nonnegative,
    check_open_unit,
    check_positive,
    numeric_guard,
)

__all__ = ["calibrate_gaussian", "classical_gaussian_sigma", "gaussian_delta", "gaussian_epsilon"]


def gaussian_delta(epsilon: float, sensitivity: float, sigma: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism with L2 sensitivity G and std sigma.

    delta_G(epsilon) = Phi(G/(2 sigma) - epsilon sigma/G) - e^epsilon Phi(-G/(2 sigma)
    - epsilon sigma/G) (Dong et al. 2022, Corollary 2.13), via
    :func:`objpert.certify.gaussian.gaussian_profile`.
    """
    check_nonnegative("epsilon", epsilon)
    return float(gaussian_profile(epsilon, sensitivity, sigma))


@numeric_guard
def gaussian_epsilon(delta: float, sensitivity: float, sigma: float) -> float:
    """Smallest epsilon >= 0 with delta_G(epsilon) <= delta (bisection; the profile is
    decreasing in epsilon). The returned epsilon satisfies the bound exactly as computed."""
    delta = check_open_unit("delta", delta)
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
    g = check_positive("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
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
    g = check_positive("sensitivity", sensitivity)
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_open_unit("delta", delta)

    def ok(s: float) -> bool:
        return gaussian_delta(epsilon, g, s) <= delta

    return smallest_passing(
        ok, g, unreachable=f"no sigma certifies (epsilon={epsilon:g}, delta={delta:g})"
    )
