"""QOP's expected excess-risk bounds (Cortild & Cartis 2026, arXiv:2605.05905;
docs/qop.md, "Utility bound"), exact and inexact."""

from __future__ import annotations

import math

from objpert._special import square
from objpert._validation import check_int, check_nonnegative, check_positive

__all__ = ["utility_exact", "utility_inexact"]


def utility_exact(sigma2_value: float, m: float, distance: float) -> float:
    """Expected empirical excess risk of the exact-minimiser release: sigma^2 m D^2 / 2
    (docs/qop.md, "Utility bound"); D = ||theta_ref - common minimiser||."""
    D = check_nonnegative("D", distance)
    s2 = check_nonnegative("sigma2", sigma2_value, allow_inf=True)
    return 0.5 * s2 * check_positive("m", m) * square(D)


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
    n = check_int("n", n, 1)
    d = check_int("d", d, 1)
    L = check_positive("smoothness", smoothness)
    st = check_nonnegative("sigma_tilde", sigma_tilde)
    G = check_nonnegative("subgradient_bound", subgradient_bound)
    s2 = check_nonnegative("sigma2", sigma2_value, allow_inf=True)
    return (
        n * d * L * square(st) / 2.0
        + G * math.sqrt(d) * st
        + check_nonnegative("tau", tau)
        + s2
        * check_positive("m", m)
        * (square(check_nonnegative("D", distance)) + square(check_nonnegative("eta", eta)))
    )
