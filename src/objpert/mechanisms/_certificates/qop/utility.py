"""QOP's expected excess-risk bounds (Cortild & Cartis 2026, arXiv:2605.05905;
docs/qop.md, "Utility bound"), exact and inexact."""

from __future__ import annotations

import math

from objpert._special import square

__all__ = ["utility_exact", "utility_inexact"]


def utility_exact(sigma2_value: float, m: float, distance: float) -> float:
    """Expected empirical excess risk of the exact-minimiser release: sigma^2 m D^2 / 2
    (docs/qop.md, "Utility bound"); D = ||theta_ref - common minimiser||."""
    return 0.5 * sigma2_value * m * square(distance)


def utility_inexact(
    n: int,
    d: int,
    smoothness: float,
    sigma_tilde: float,
    subgradient_bound: float,
    tau: float,
    sigma2_value: float,
    m: float,
    distance: float,
    eta: float,
) -> float:
    """Expected empirical excess risk with output noise (docs/qop.md, "Utility bound"):

        n d L sigma_tilde^2 / 2 + G sqrt(d) sigma_tilde + tau + sigma^2 m (D^2 + eta^2),

    G bounding the subgradients of r (flag iii: no 1/2 on the last term, as the authors)."""
    st, s2 = sigma_tilde, sigma2_value
    return (
        n * d * smoothness * square(st) / 2.0
        + subgradient_bound * math.sqrt(d) * st
        + tau
        + s2 * m * (square(distance) + square(eta))
    )
