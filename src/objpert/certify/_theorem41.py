"""Theorem 4.1 of Watkins & Arora (2026): the explicit finite-iteration certificate.

Iteration threshold (eq. 7), tau* (eq. 8), epsilon_0 (eq. 9), the privacy profile
delta(epsilon) (eq. 10) and its inverse. All functions vectorise over N and
epsilon; none sees data.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from objpert._special import q1, q1_inverse, square
from objpert._validation import (
    check_array,
    check_broadcast,
    check_choice,
    check_finite,
    check_nonnegative,
    check_positive,
    check_unit,
    count,
    named,
    public,
    rule,
    validated,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.certify._constants import ProblemConstants
from objpert.certify._sequences import as_iterations, rho_power
from objpert.certify._truncation import TRUNCATIONS, radius_from_u, truncation_mass


def _radii(pc: ProblemConstants, sigma: float, u: float) -> tuple[float, float, float]:
    """(r_u, r', R-bar) of Theorem 4.1: r_u = sigma (sqrt(d_star) + u), r' = r_u + 2 L G / mu,
    R-bar = (r' + L1 zeta) / mu (+inf past the float64 range)."""
    r = radius_from_u(sigma, pc.d_star, u)
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    return r, r_outer, (r_outer + pc.L_ell) / pc.mu


def threshold_log_argument(pc: ProblemConstants, sigma: float, u: float) -> float:
    """max{2 mu R-bar r' / (G sigma), 8 L M B R-bar / (e rho mu min{1, MG/L}), 4} of eq. (7)
    (+inf past the float64 range)."""
    _, r_outer, r_bar = _radii(pc, sigma, u)
    g_sigma = pc.G * sigma
    first = 2.0 * pc.mu * r_bar * r_outer / g_sigma if g_sigma > 0.0 else math.inf
    if pc.M > 0:
        second = 8.0 * pc.L * pc.M * pc.B * r_bar / (math.e * pc.rho * pc.mu * pc.min_mg_l)
    else:  # M = 0: the Hessian is constant and the Jacobian error vanishes
        second = 0.0
    return max(first, second, 4.0)


def _threshold_iterations(pc: ProblemConstants, sigma: float, u: float) -> int | float:
    """Smallest integer N with N >= (2 / (eta mu)) log max{...} (eq. 7).

    ``math.inf`` when the bound is beyond the float64 range (sigma or u so extreme that no
    representable N satisfies eq. 7: every certificate at such constants fails)."""
    bound = 2.0 / (pc.eta * pc.mu) * math.log(threshold_log_argument(pc, sigma, u))
    if not math.isfinite(bound):
        return math.inf
    return max(1, math.ceil(bound))


def tau_star(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """tau* = log(1 + Delta_H/(2 n mu)) + min{1, MG/L} (e eta mu / 2) N rho^(N/2) (eq. 8)."""
    N = as_iterations(N, "iterations")
    return pc.log_det_term + pc.min_mg_l * (math.e * pc.eta * pc.mu / 2.0) * N * rho_power(
        pc, N / 2.0
    )


def _epsilon0(pc: ProblemConstants, sigma: float, N: ArrayLike) -> np.ndarray:
    """epsilon_0 = (G/sigma) rho^(N/2) + G^2/(2 sigma^2) (1 + rho^(N/2))^2 + tau* (eq. 9)."""
    half = rho_power(pc, as_iterations(N, "iterations") / 2.0)
    g_s = pc.G / sigma
    return g_s * half + 0.5 * square(g_s) * (1.0 + half) ** 2 + tau_star(pc, N)


def _divergence(pc: ProblemConstants, sigma: float, slack: ArrayLike) -> np.ndarray:
    """(2G/sigma) Q1((sigma/G) slack) for slack = epsilon - (epsilon-independent part) >= 0.

    The divergence term of eqs. (10) and (50) (Lemma C.12); +inf where slack < 0 (and
    where sigma is so small that 2G/sigma overflows), 0 at slack = +inf (its limit).
    """
    safe = np.where(slack >= 0, slack, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        val = 2.0 * pc.G / sigma * q1(sigma / pc.G * safe)
    val = np.where(np.isposinf(slack), 0.0, np.where(np.isnan(val), np.inf, val))
    return np.where(slack >= 0, val, np.inf)


def _slack_for_divergence(pc: ProblemConstants, sigma: float, budget: float) -> float:
    """Smallest slack whose divergence term is <= budget: (G/sigma) Q1^{-1}(budget sigma/(2G)).

    +inf where the budget is <= 0 (or its scaled value underflows to 0)."""
    if budget <= 0:
        return math.inf
    scaled = budget * sigma / (2.0 * pc.G)
    if not scaled > 0.0:  # underflow: Q1^{-1} of a mass below the smallest double
        return math.inf
    return pc.G / sigma * q1_inverse(scaled)


def _epsilon_reaching(
    pc: ProblemConstants, sigma: float, base: ArrayLike, trunc: float, target: float
) -> np.ndarray:
    """The smallest epsilon with trunc + divergence(epsilon - base) <= target: base plus
    the slack of :func:`_slack_for_divergence`, raised by the few ulps the rounding of
    Q1^{-1} and of the sum can leave short (never below the target's epsilon); +inf
    where no slack reaches the target."""
    with np.errstate(over="ignore", invalid="ignore"):
        eps = np.asarray(base + _slack_for_divergence(pc, sigma, target - trunc), dtype=float)
    step = np.spacing(np.abs(eps))
    for _ in range(64):
        with np.errstate(over="ignore", invalid="ignore"):
            over = np.isfinite(eps) & ~(trunc + _divergence(pc, sigma, eps - base) <= target)
        if not over.any():
            return eps
        eps, step = np.where(over, eps + step, eps), 2.0 * step
    return np.where(over, np.inf, eps)


@validated(
    sigma=check_positive,
    u=check_nonnegative,
    epsilon=rule(check_array, minimum=0.0, allow_inf=True),
)
def delta(
    pc: ProblemConstants,
    sigma: float,
    u: float,
    N: ArrayLike,
    epsilon: ArrayLike,
    truncation: str = "paper",
) -> np.ndarray:
    """delta(epsilon) of eq. (10), vectorised over N and epsilon.

    1.0 (no certificate) where N is below the threshold (7) or epsilon < epsilon_0.
    ``truncation="exact"`` replaces e^{-u^2/2} by the chi tail (see ``truncation``).
    """
    eps = epsilon
    N, eps = check_broadcast(iterations=as_iterations(N, "iterations"), epsilon=eps)
    trunc = truncation_mass(sigma, pc.d_star, radius_from_u(sigma, pc.d_star, u), truncation)
    val = trunc + _divergence(pc, sigma, eps - _epsilon0(pc, sigma, N))
    ok = _threshold_iterations(pc, sigma, u) <= N
    return np.where(ok & np.isfinite(val), np.minimum(val, 1.0), 1.0)


@validated(sigma=check_positive, u=check_nonnegative, target_delta=check_unit)
def epsilon_for_delta(
    pc: ProblemConstants,
    sigma: float,
    u: float,
    N: ArrayLike,
    target_delta: float,
    truncation: str = "paper",
) -> np.ndarray:
    """Inverse of eq. (10): the smallest epsilon with delta(epsilon) <= target_delta.

    +inf where N is below the threshold or the truncation mass alone exceeds the target.
    """
    N = as_iterations(N, "iterations")
    trunc = truncation_mass(sigma, pc.d_star, radius_from_u(sigma, pc.d_star, u), truncation)
    eps = _epsilon_reaching(pc, sigma, _epsilon0(pc, sigma, N), trunc, target_delta)
    return np.where(_threshold_iterations(pc, sigma, u) <= N, eps, np.inf)


def _certify(
    pc: ProblemConstants,
    sigma: float,
    u: float,
    N: int,
    epsilon: float,
    truncation: str = "paper",
) -> ReleaseCertificate:
    """Theorem 4.1 at one (N, epsilon): the certificate with every condition checked (the
    library calls it with checked arguments; :func:`certify` is the public door)."""
    threshold = _threshold_iterations(pc, sigma, u)
    eps0 = float(_epsilon0(pc, sigma, N))
    trunc = truncation_mass(sigma, pc.d_star, radius_from_u(sigma, pc.d_star, u), truncation)
    div = float(_divergence(pc, sigma, epsilon - eps0))
    reasons = []
    if threshold > N:
        reasons.append(f"iterations {N} < threshold {threshold} of eq. (7)")
    if epsilon < eps0:
        reasons.append(f"epsilon {epsilon:g} < epsilon_0 = {eps0:.6g} of eq. (9)")
    return ReleaseCertificate.conclude(
        "theorem41",
        epsilon,
        trunc,
        div,
        reasons,
        iterations=int(N),
        threshold_iterations=threshold,
        sigma=sigma,
        truncation=truncation,
        constants=pc.to_dict(),
        details={
            "u": u,
            "epsilon0": eps0,
            "tau_star": float(tau_star(pc, N)),
            "rho_half_n": float(rho_power(pc, N / 2.0)),
        },
    )


certify = public(
    _certify,
    sigma=check_positive,
    u=check_nonnegative,
    N=named("iterations", count(1)),
    epsilon=check_positive,
    truncation=rule(check_choice, TRUNCATIONS),
)
radii = public(_radii, sigma=check_positive, u=check_nonnegative)
threshold_iterations = public(_threshold_iterations, sigma=check_positive, u=check_nonnegative)
epsilon0 = public(_epsilon0, sigma=check_positive)
divergence = public(
    _divergence, sigma=check_positive, slack=rule(check_array, allow_inf=True, allow_neginf=True)
)
slack_for_divergence = public(_slack_for_divergence, sigma=check_positive, budget=check_finite)


__all__ = [
    "certify",
    "delta",
    "divergence",
    "epsilon0",
    "epsilon_for_delta",
    "radii",
    "slack_for_divergence",
    "tau_star",
    "threshold_iterations",
]
