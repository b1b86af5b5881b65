"""Utility bounds of Watkins & Arora (2026), Section 4.3: what accuracy to expect.

E_opt(N) (eq. 12), Theorems 4.7, 4.9, 4.10 and Corollary 4.11. The data-dependent
a_R = ||grad F(0; S)|| / mu is replaced by its public bound L1 zeta / mu (Section 3.1)
unless given. Vectorised over N.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike

from objpert._special import log_over, square
from objpert._validation import (
    check_nonnegative,
    check_open_unit,
    check_positive,
    count,
    optional,
    public,
    validated,
)
from objpert.certify._constants import ProblemConstants
from objpert.certify._sequences import as_iterations, rho_power
from objpert.exceptions import ParameterError

__all__ = [
    "SingleReleaseBound",
    "corollary_411",
    "e_opt",
    "perturbation_term",
    "sample_term",
    "theorem_47",
    "theorem_49",
    "theorem_410",
]


def _whole_steps(N: ArrayLike) -> ArrayLike:
    """N, a number of gradient steps: refused (ParameterError) unless every value is a
    whole number (the step count is an integer; rho^N itself takes any real exponent)."""
    values = as_iterations(N)
    if not np.all(np.floor(values) == values):
        raise ParameterError(f"N must be a whole number of steps; got {N!r}")
    return N


def _e_opt(
    pc: ProblemConstants, sigma: float, N: ArrayLike, grad_norm_at_zero: float | None = None
) -> np.ndarray:
    """E_opt(N) = (L/2) rho^(2N) (b^2 d s^2 + 2 a b s sqrt(d) + a^2)
    + rho^N (b d s^2 + a s sqrt(d)).

    Eq. (12), with a_R = ||grad F(0;S)||/mu (default: the public bound L1 zeta / mu), b_R = 1/mu.
    +inf where a term leaves the float64 range (a trivially true bound).
    """
    g0 = pc.L_ell if grad_norm_at_zero is None else grad_norm_at_zero
    a, b, d, s = g0 / pc.mu, 1.0 / pc.mu, pc.d, sigma
    r_n = rho_power(pc, _whole_steps(N))
    quad = b * b * d * s * s + 2 * a * b * s * math.sqrt(d) + a * a
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        val = 0.5 * pc.L * r_n * r_n * quad + r_n * (b * d * s * s + a * s * math.sqrt(d))
    return np.where(np.isnan(val), np.inf, val)  # 0 * inf: an overflowed term


def _perturbation_term(pc: ProblemConstants, sigma: float) -> float:
    """d sigma^2 / (2 mu): the objective-perturbation cost (Theorem 4.10); +inf past the
    float64 range."""
    return pc.d * square(sigma) / (2.0 * pc.mu)


def _sample_term(pc: ProblemConstants, delta_sample: float) -> float:
    """16 L_ell^2 (32 + log(1/delta_S)) / (mu n): the uniform-convergence term (Theorem 4.9)."""
    return 16.0 * pc.L_ell**2 * (32.0 + log_over(1.0, delta_sample)) / (pc.mu * pc.n)


def _theorem_410(pc: ProblemConstants, sigma: float, N: ArrayLike) -> np.ndarray:
    """E_z[F(w_N) - F(w*_S)] <= d sigma^2/(2 mu) + E_opt(N) (Theorem 4.10)."""
    return _perturbation_term(pc, sigma) + _e_opt(pc, sigma, N)


def _theorem_49(
    pc: ProblemConstants, sigma: float, N: ArrayLike, delta_sample: float = 0.01
) -> np.ndarray:
    """Regularised population excess risk: 2 [d s^2/(2 mu) + E_opt] + sample term (Theorem 4.9)."""
    return 2.0 * _theorem_410(pc, sigma, N) + _sample_term(pc, delta_sample)


def _theorem_47(
    pc: ProblemConstants,
    sigma: float,
    N: ArrayLike,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
) -> np.ndarray:
    """Unregularised excess risk against any comparator of norm <= W = ``comparator_norm``
    (Theorem 4.7): Theorem 4.9's bound + (mu / 2) W^2."""
    W = comparator_norm
    return _theorem_49(pc, sigma, N, delta_sample) + 0.5 * pc.mu * square(W)


@dataclass(frozen=True)
class SingleReleaseBound:
    """Corollary 4.11 at confidence 1 - beta (and 1 - beta - delta_S for the population parts)."""

    r_beta: float
    R_beta: float
    empirical: float  # U_N(beta)
    population_regularized: float  # 2 U_N + sample term
    population_unregularized: float  # ... + (mu/2) W^2

    def to_dict(self) -> dict:
        return asdict(self)


@validated(
    sigma=check_positive,
    N=count(0),
    beta=check_open_unit,
    comparator_norm=check_positive,
    delta_sample=check_open_unit,
)
def corollary_411(
    pc: ProblemConstants,
    sigma: float,
    N: int,
    beta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
) -> SingleReleaseBound:
    """Corollary 4.11: r_beta = sigma (sqrt(d) + sqrt(2 log(1/beta))), R_beta = (L_ell + r_beta)/mu,
    U_N = r_beta^2/(2 mu) + (L/2) rho^(2N) R_beta^2 + rho^N r_beta R_beta."""
    W = comparator_norm
    r_beta = sigma * (math.sqrt(pc.d) + math.sqrt(2.0 * log_over(1.0, beta)))
    R_beta = (pc.L_ell + r_beta) / pc.mu
    r_n = float(rho_power(pc, N))
    u_n = (
        square(r_beta) / (2 * pc.mu)
        + _product(0.5 * pc.L * square(r_n), square(R_beta))
        + _product(r_n * r_beta, R_beta)
    )
    pop = 2.0 * u_n + _sample_term(pc, delta_sample)
    return SingleReleaseBound(r_beta, R_beta, u_n, pop, pop + 0.5 * pc.mu * square(W))


e_opt = public(_e_opt, sigma=check_positive, grad_norm_at_zero=optional(check_nonnegative))
perturbation_term = public(_perturbation_term, sigma=check_positive)
sample_term = public(_sample_term, delta_sample=check_open_unit)
theorem_410 = public(_theorem_410, sigma=check_positive)
theorem_49 = public(_theorem_49, sigma=check_positive, delta_sample=check_open_unit)
theorem_47 = public(
    _theorem_47, sigma=check_positive, comparator_norm=check_positive, delta_sample=check_open_unit
)


def _product(a: float, b: float) -> float:
    """a b for a, b >= 0, with 0 * inf (an underflowed factor times an overflowed one) read
    as +inf: the bound it enters stays an upper bound."""
    p = a * b
    return math.inf if math.isnan(p) else p
