"""QOP's noise scales: sigma^2 of the Wishart curvature and the output noise sigma_tilde
(Cortild & Cartis 2026, arXiv:2605.05905; docs/qop.md, "Calibration of sigma^2" and
"Inexact solve (output noise)").

sigma^2 makes the exact minimiser (epsilon, delta1 + delta3)-DP; an inexact solve adds
output noise of scale sigma_tilde for a total (eps1 + eps2, delta1 + ... + delta4)-DP.
The output noise is released as a discrete Gaussian on a grid and certified by Canonne,
Kamath & Steinke (2020), Theorem 14 and Corollary 13 (flag (v) of
:mod:`objpert.mechanisms._certificates.qop`).
"""

from __future__ import annotations

import math

from objpert._special import log_over
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.mechanisms._certificates.discrete import discrete_gaussian_delta
from objpert.mechanisms._certificates.qop.wishart import log_alpha1, min_eigenvalue_bound

__all__ = [
    "f2",
    "log_sigma2",
    "output_noise",
    "output_noise_delta",
    "output_radius",
    "sigma2",
    "sigma2_parts",
]


def f2(d: int, m: float, alpha: float) -> float:
    """f2 = 2 ((m - d + 1) / (2 alpha) + 1/2) (docs/qop.md, "Calibration of sigma^2")."""
    return 2.0 * ((m - d + 1.0) / (2.0 * alpha) + 0.5)


def sigma2_parts(
    smoothness: float,
    epsilon: float,
    delta1: float,
    delta3: float,
    d: int,
    m: float,
    rank: int,
    reading: str,
) -> tuple[float, float, float, float, float]:
    """(alpha, log alpha1, f2, log of the privacy branch, log of the alpha1 branch) of
    sigma^2 = max((2L/eps) (f2 + 2 (2 rho + 2) / alpha), 2L / alpha1) (docs/qop.md,
    "Calibration of sigma^2")."""
    L = smoothness
    alpha = min_eigenvalue_bound(d, m, delta3)
    if not alpha > 0.0:
        raise UnreachableTargetError(
            f"alpha = {alpha!r}: the Wishart lower tail bound leaves double range "
            f"(d = {d}, m = {m:g}, delta3 = {delta3:g})"
        )
    la1 = log_alpha1(d, m, delta1, delta3, reading=reading)
    f = f2(d, m, alpha)
    log_privacy = math.log(2.0 * L / epsilon) + math.log(f + 2.0 * (2.0 * rank + 2.0) / alpha)
    log_curv = math.log(2.0 * L) - la1
    return alpha, la1, f, log_privacy, log_curv


def log_sigma2(
    smoothness: float,
    epsilon: float,
    delta1: float,
    delta3: float,
    d: int,
    m: float,
    *,
    rank: int = 1,
    reading: str = "authors",
) -> float:
    """log sigma^2 (docs/qop.md, "Calibration of sigma^2"), finite even where sigma^2 overflows:

    sigma^2 = max( (2L/eps) (f2 + 2 (2 rho + 2) / alpha),  2L / alpha1 ).
    """
    *_, lp, lc = sigma2_parts(smoothness, epsilon, delta1, delta3, d, m, rank, reading)
    return max(lp, lc)


def sigma2(
    smoothness: float,
    epsilon: float,
    delta1: float,
    delta3: float,
    d: int,
    m: float,
    *,
    rank: int = 1,
    reading: str = "authors",
) -> float:
    """sigma^2 of :func:`log_sigma2` (``inf`` when it exceeds double range)."""
    ls = log_sigma2(smoothness, epsilon, delta1, delta3, d, m, rank=rank, reading=reading)
    return math.exp(ls) if ls < 709.0 else math.inf


def output_noise(
    tau: float,
    eta: float,
    alpha: float,
    sigma2_value: float,
    beta: float,
    epsilon2: float,
    delta2: float,
) -> float:
    """sigma_tilde (docs/qop.md, "Inexact solve"): the standard deviation of the output noise,

        (sqrt(2 tau / (alpha sigma^2)) + beta eta / alpha) (2 / eps2) sqrt(2 log(1.25 / delta2)).

    tau: objective accuracy of the solve; eta: the authors' second accuracy parameter.
    Evaluated for any eps2 > 0 (flag iv: the Gaussian-mechanism theorem needs eps2 < 1).
    """
    s2 = float(sigma2_value)
    if not s2 > 0.0 or math.isnan(s2):
        raise ParameterError(f"sigma2 must be > 0; got {sigma2_value!r}")
    radius = output_radius(tau, eta, alpha, s2, beta)
    return radius * (2.0 / epsilon2) * math.sqrt(2.0 * log_over(1.25, delta2))


def output_radius(tau: float, eta: float, alpha: float, s2: float, beta: float) -> float:
    """sqrt(2 tau / (alpha sigma^2)) + beta eta / alpha: how far the inexact solve may be
    from the exact minimiser (docs/qop.md, "Inexact solve"); the output sensitivity is twice it."""
    return math.sqrt(2.0 * tau / (alpha * s2)) + beta * eta / alpha


def output_noise_delta(
    tau: float,
    eta: float,
    alpha: float,
    sigma2_value: float,
    beta: float,
    epsilon2: float,
    sigma_tilde: float,
    d: int,
) -> float:
    """The delta2 the released output noise certifies at eps2 (flag v): the discrete
    Gaussian on the grid of sigma_tilde
    (:func:`objpert.mechanisms._certificates.discrete.grid_noise`) with l2
    sensitivity 2 radius + gamma sqrt(d), by Canonne, Kamath & Steinke (2020), Theorem 14
    (rho-zCDP) and Corollary 13 (to (eps2, delta2)). 0 when there is no noise (radius 0)."""
    radius = output_radius(tau, eta, alpha, float(sigma2_value), beta)
    if sigma_tilde == 0.0 and radius == 0.0:
        return 0.0
    return discrete_gaussian_delta(epsilon2, 2.0 * radius, sigma_tilde, d)
