"""Truncation radius and mass of the privacy certificates (Theorem 4.1, Section C.4).

Theorem C.13 charges Pr(||Pi_C Z|| > r) for Z ~ N(0, sigma^2 I_d), where the
feature span C has dimension at most d_star = min(d, n + 1) (eq. 2). Two valid
upper bounds are offered:

- ``"paper"``: Gaussian concentration (Corollary E.4) at r = r_u = sigma (sqrt(d_star) + u)
  gives e^{-u^2/2}, the bound used in Theorem 4.1 and Section C.4;
- ``"exact"``: the chi tail Pr(chi_{d_star} > r / sigma), exact for dim C = d_star and
  an upper bound otherwise (the chi tail grows with the dimension); always smaller.
"""

from __future__ import annotations

import math

import numpy as np

from objpert._special import chi_radius, chi_tail, log_over
from objpert.exceptions import ParameterError

__all__ = [
    "TRUNCATIONS",
    "check_truncation",
    "radius_for_mass",
    "radius_from_u",
    "truncation_mass",
    "u_from_radius",
]

TRUNCATIONS = ("paper", "exact")


def check_truncation(kind: str) -> str:
    if kind not in TRUNCATIONS:
        raise ParameterError(f"truncation must be one of {TRUNCATIONS}; got {kind!r}")
    return kind


def radius_from_u(sigma: float, d_star: int, u: float) -> float:
    """r_u = sigma (sqrt(d_star) + u) (Theorem 4.1)."""
    return sigma * (math.sqrt(d_star) + u)


def u_from_radius(sigma: float, d_star: int, r: float) -> float:
    return r / sigma - math.sqrt(d_star)


def truncation_mass(sigma: float, d_star: int, r: float, kind: str = "paper") -> float:
    """Upper bound on Pr(||Pi_C Z|| > r) of the chosen kind (see the module docstring)."""
    check_truncation(kind)
    if kind == "paper":
        u = u_from_radius(sigma, d_star, r)
        if u < 0:
            return 1.0
        return math.exp(-0.5 * u * u)
    return float(chi_tail(r / sigma, d_star))


def radius_for_mass(sigma: float, d_star: int, mass: float, kind: str = "paper") -> float:
    """The smallest radius whose truncation bound of the given kind is ``mass``."""
    check_truncation(kind)
    if kind == "paper":
        return radius_from_u(sigma, d_star, math.sqrt(2.0 * log_over(1.0, mass)))
    return sigma * float(np.asarray(chi_radius(mass, d_star)))
