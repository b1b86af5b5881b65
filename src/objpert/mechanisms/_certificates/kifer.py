"""Linear objective perturbation (LOP) with Gaussian noise: the constants of the proof.

Chaudhuri, Monteleoni & Sarwate (2011) with the Gaussian analysis of Kifer, Smith &
Thakurta (2012, Theorem 2), the form both seed papers compare against (Cortild & Cartis
2026; Watkins & Arora 2026, Section 2). For the *sum* objective

    sum_i l(theta; s_i) + r(theta) + (Delta / 2) ||theta||^2 + <b, theta>,   b ~ N(0, s^2 I)

over a closed convex set, with per-sample Hessians of rank one and norm <= L (a GLM),
releasing the exact minimiser is (epsilon, delta)-DP when

    Delta >= 2 L / epsilon   and   s = G sqrt(8 log(2/delta) + 4 epsilon) / epsilon,

G the l2 sensitivity of the first-order condition b = -grad(sum_i l + r + ...)(theta):
the log-determinant ratio is at most log(1 + L / Delta) <= epsilon / 2, and the Gaussian
ratio (||v||^2 + 2 |<b, v>|) / (2 s^2), ||v|| <= G, is at most epsilon / 2 except with
probability delta. Kifer et al. state the theorem with the per-sample gradient bound
zeta_g in the place of G. objpert's neighbours replace one row
(:mod:`objpert.certify._neighbours`): the two differing rows' gradients can point in
opposite directions, so G = 2 zeta_g (:func:`~objpert.certify.replace_one_sensitivity`)
and s = 2 zeta_g sqrt(8 log(2/delta) + 4 epsilon) / epsilon. With zeta_g in its place an
explicit replace-one pair breaks the certificate (LOP-Clip, squared loss, n = 1001, d = 1,
clip 1, epsilon = 1: the exact minimiser's delta is above 1.5e-6 where 1e-6 was
certified; ``tests/certify/test_replace_one.py``).
The ridge floor is unchanged: the determinant bound holds for any two rows. For a GLM the
gradient difference lies in the span of the two differing features, so |<b, v>| <=
||v|| ||P b|| with P b a two-dimensional Gaussian, whose norm exceeds s sqrt(2 log(2/delta))
with probability delta / 2: the bound holds in every dimension.

In objpert's *mean* form F(w) = (1/n) sum_i l + (mu/2)||w||^2 + <z, w> this reads
mu >= 2 L / (n epsilon) and z ~ N(0, (s/n)^2 I).
"""

from __future__ import annotations

import math

from objpert._special import log_over
from objpert._validation import check_computed
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.exceptions import ParameterError

__all__ = ["lop_delta", "lop_mean_form", "lop_noise", "lop_regulariser"]


def lop_regulariser(smoothness: float, epsilon: float) -> float:
    """Delta = 2 L / epsilon: the smallest ridge (sum form) the Gaussian LOP proof allows
    (Kifer et al. 2012, Theorem 2)."""
    smooth = smoothness
    return check_computed(
        "the ridge 2 L / epsilon", 2.0 * smooth / epsilon,
        f"smoothness {smooth!r} and epsilon {epsilon!r} are too extreme",
    )  # fmt: skip


def lop_noise(grad_bound: float, epsilon: float, delta: float) -> float:
    """s = G sqrt(8 log(2/delta) + 4 epsilon) / epsilon (sum form; Kifer et al. 2012,
    Theorem 2) at the replace-one sensitivity G = 2 zeta_g of the per-sample gradient
    bound zeta_g = ``grad_bound`` (:func:`~objpert.certify.replace_one_sensitivity`)."""
    zeta = grad_bound
    sens = replace_one_sensitivity(zeta)
    return check_computed(
        "the noise scale s", sens * math.sqrt(8.0 * log_over(2.0, delta) + 4.0 * epsilon) / epsilon,
        f"grad_bound {zeta!r} and epsilon {epsilon!r} are too extreme",
    )  # fmt: skip


def lop_mean_form(
    n: int, grad_bound: float, smoothness: float, epsilon: float, delta: float
) -> tuple[float, float]:
    """(mu_min, sigma) for the mean form: mu >= 2L/(n eps), z ~ N(0, sigma^2 I), sigma = s/n
    (s from :func:`lop_noise`, at the replace-one sensitivity 2 zeta_g)."""
    sigma = lop_noise(grad_bound, epsilon, delta) / n
    if not sigma > 0.0:
        raise ParameterError(
            f"the noise scale of the mean form underflows to {sigma!r} (gradient bound "
            f"{grad_bound!r} over n = {n}): rescale the features or the loss"
        )
    return lop_regulariser(smoothness, epsilon) / n, sigma


def lop_delta(n: int, grad_bound: float, sigma: float, epsilon: float) -> float:
    """The delta the Gaussian LOP noise sigma certifies at epsilon (mean form).

    Inverts s = G sqrt(8 log(2/delta) + 4 epsilon) / epsilon (Kifer et al. 2012,
    Theorem 2; :func:`lop_noise`) with s = n sigma and the replace-one sensitivity
    G = 2 zeta_g: delta = 2 exp(-((s epsilon / G)^2 - 4 epsilon) / 8). Values >= 1 certify
    nothing.
    """
    s = n * sigma
    g = replace_one_sensitivity(grad_bound)
    ratio = s * epsilon / g
    exponent = ((ratio**2 if ratio < 1e154 else math.inf) - 4.0 * epsilon) / 8.0
    if exponent < -700.0:  # 2 e^{-exponent} > 1 (and exp would overflow)
        return 1.0
    return min(1.0, 2.0 * math.exp(-exponent))
