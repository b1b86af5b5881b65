"""The exact Gaussian benchmark of Watkins & Arora (2026), Section C.5.

For the linear loss with ridge regularisation, w_N = -((1 - rho^N)/mu)(b_S + Z) is an
invertible public rescaling of the Gaussian mechanism b_S + Z, whose privacy profile
is exact (Dong et al. 2022, Theorem 2.7 / Corollary 2.13):
delta_G(epsilon) = Phi(G/(2 sigma) - epsilon sigma/G)
                   - e^epsilon Phi(-G/(2 sigma) - epsilon sigma/G).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from objpert.validation import check_array, check_positive

__all__ = [
    "gaussian_integrated_tail_bound",
    "gaussian_profile",
]


def gaussian_profile(epsilon: ArrayLike, sensitivity: float, sigma: float) -> np.ndarray:
    """Exact privacy profile delta_G(epsilon) of the Gaussian mechanism (Section C.5).

    Computed as Phi(a) (1 - exp(epsilon + log Phi(b) - log Phi(a))) with log_ndtr and
    expm1, so it stays relative-accurate where the two terms nearly cancel. In [0, 1]: 0.0
    where Phi(a) underflows (the profile is below Phi(a)), rounding never leaves [0, 1].
    """
    g = check_positive("sensitivity", sensitivity)
    s = check_positive("sigma", sigma)
    eps = check_array("epsilon", epsilon, minimum=0.0, allow_inf=True)
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
    from objpert.special import q1

    g = check_positive("sensitivity", sensitivity)
    s = check_positive("sigma", sigma)
    eps = check_array("epsilon", epsilon, minimum=0.0, allow_inf=True)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        try:
            floor = g**2 / (2 * s**2)
        except (OverflowError, ZeroDivisionError):  # s**2 or g**2 outside the float64 range
            floor = 0.5 * (g / s) * (g / s)
        slack = eps - floor
        val = 2 * g / s * q1(s / g * np.maximum(slack, 0.0))
    val = np.where(np.isnan(val), 1.0, val)
    return np.clip(np.where(slack >= 0, val, 1.0), 0.0, 1.0)
