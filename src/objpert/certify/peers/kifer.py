"""Linear objective perturbation (LOP) with Gaussian noise: the constants of the proof.

Chaudhuri, Monteleoni & Sarwate (2011) with the Gaussian analysis of Kifer, Smith &
Thakurta (2012, Theorem 2), the form both seed papers compare against (Cortild & Cartis
2026; Watkins & Arora 2026, Section 2). For the *sum* objective

    sum_i l(theta; s_i) + r(theta) + (Delta / 2) ||theta||^2 + <b, theta>,   b ~ N(0, s^2 I)

over a closed convex set, with per-sample gradients of norm <= zeta_g and per-sample
Hessians of rank one and norm <= L (a GLM), releasing the exact minimiser is
(epsilon, delta)-DP when

    Delta >= 2 L / epsilon   and   s = zeta_g sqrt(8 log(2/delta) + 4 epsilon) / epsilon.

In objpert's *mean* form F(w) = (1/n) sum_i l + (mu/2)||w||^2 + <z, w> this reads
mu >= 2 L / (n epsilon) and z ~ N(0, (s/n)^2 I).
"""

from __future__ import annotations

import math

from objpert.errors import check_computed, check_int, check_open_unit, check_positive
from objpert.special import log_over

__all__ = ["lop_delta", "lop_mean_form", "lop_noise", "lop_regulariser"]


def lop_regulariser(smoothness: float, epsilon: float) -> float:
    """Delta = 2 L / epsilon: the smallest ridge (sum form) the Gaussian LOP proof allows
    (Kifer et al. 2012, Theorem 2)."""
    smooth, epsilon = check_positive("smoothness", smoothness), check_positive("epsilon", epsilon)
    return check_computed(
        "the ridge 2 L / epsilon", 2.0 * smooth / epsilon,
        f"smoothness {smooth!r} and epsilon {epsilon!r} are too extreme",
    )  # fmt: skip


def lop_noise(grad_bound: float, epsilon: float, delta: float) -> float:
    """s = zeta_g sqrt(8 log(2/delta) + 4 epsilon) / epsilon (sum form; Kifer et al. 2012,
    Theorem 2)."""
    zeta = check_positive("grad_bound", grad_bound)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    return check_computed(
        "the noise scale s", zeta * math.sqrt(8.0 * log_over(2.0, delta) + 4.0 * epsilon) / epsilon,
        f"grad_bound {zeta!r} and epsilon {epsilon!r} are too extreme",
    )  # fmt: skip


def lop_mean_form(
    n: int, grad_bound: float, smoothness: float, epsilon: float, delta: float
) -> tuple[float, float]:
    """(mu_min, sigma) for the mean form: mu >= 2L/(n eps), z ~ N(0, sigma^2 I), sigma = s/n."""
    n = check_int("n", n, 1)
    return (
        lop_regulariser(smoothness, epsilon) / n,
        lop_noise(grad_bound, epsilon, delta) / n,
    )


def lop_delta(n: int, grad_bound: float, sigma: float, epsilon: float) -> float:
    """The delta the Gaussian LOP noise sigma certifies at epsilon (mean form).

    Inverts s = zeta_g sqrt(8 log(2/delta) + 4 epsilon) / epsilon (Kifer et al. 2012,
    Theorem 2; :func:`lop_noise`) with s = n sigma:
    delta = 2 exp(-((s epsilon / zeta_g)^2 - 4 epsilon) / 8). Values >= 1 certify nothing.
    """
    s = check_int("n", n, 1) * check_positive("sigma", sigma)
    g = check_positive("grad_bound", grad_bound)
    epsilon = check_positive("epsilon", epsilon)
    ratio = s * epsilon / g
    exponent = ((ratio**2 if ratio < 1e154 else math.inf) - 4.0 * epsilon) / 8.0
    if exponent < -700.0:  # 2 e^{-exponent} > 1 (and exp would overflow)
        return 1.0
    return min(1.0, 2.0 * math.exp(-exponent))
