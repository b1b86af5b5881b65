"""Corollary 4.13 of Watkins & Arora (2026) exactly as stated (0 < epsilon <= 1): the
noise sigma, ridge mu and step count N it prescribes, certified by Theorem 4.1, and the
utility bound of its plan.
"""

from __future__ import annotations

import math

import numpy as np

from objpert._losses import get_loss, require_bounded_gradient
from objpert._special import log_over, square
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _utility as utility
from objpert.certify._constants import ProblemConstants, check_scale, problem
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.certify._plan import WatkinsAroraPlan, _finish
from objpert.certify._sequences import rho_power
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = ["corollary_413_bound", "corollary_413_c_n"]


def corollary_413_c_n(pc: ProblemConstants, sigma: float, N) -> np.ndarray:
    """c_N of Corollary 4.13: (G/s) rho^(N/2) + G^2/(2 s^2)(2 rho^(N/2) + rho^N)
    + min{1, MG/L} (e eta mu / 2) N rho^(N/2)."""
    N = np.asarray(N, dtype=float)
    half = rho_power(pc, N / 2.0)
    g_s = pc.G / sigma
    return (
        g_s * half
        + 0.5 * g_s**2 * (2.0 * half + half * half)
        + pc.min_mg_l * (math.e * pc.eta * pc.mu / 2.0) * N * half
    )


def _corollary_413(
    loss: str,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    **loss_params: float,
) -> WatkinsAroraPlan:
    """Corollary 4.13 exactly as stated: u = sqrt(2 log(2/delta)), sigma = 4 G u / epsilon,
    mu = max{sqrt(2A)/W, L2 zeta^2 / (n (e^(epsilon/4) - 1))}, eta = 1/L, and the smallest N
    satisfying eq. (7) and c_N <= epsilon / 4. Requires 0 < epsilon <= 1."""
    if epsilon > 1:
        raise ParameterError(
            f"epsilon must be in (0, 1] for Corollary 4.13; got {epsilon!r} "
            "(use method='tight' for larger epsilon)"
        )
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "Corollary 4.13")
    if n < 2:
        raise ParameterError(f"n must be an integer >= 2 for Corollary 4.13; got {n!r}")
    check_scale(loss_obj, n, zeta)
    l_ell = loss_obj.L1 * zeta
    G = replace_one_sensitivity(l_ell) / n
    u = math.sqrt(2.0 * log_over(2.0, delta))
    sigma = 4.0 * G * u / epsilon
    mu_priv = loss_obj.L2 * zeta**2 / (n * math.expm1(epsilon / 4.0))
    A = d * sigma**2 + 16.0 * l_ell**2 * (32.0 + log_over(1.0, delta_sample)) / n
    mu_util = math.sqrt(2.0 * A) / comparator_norm
    pc = problem(loss_obj, n=n, d=d, zeta=zeta, mu=max(mu_util, mu_priv))
    start = theorem41._threshold_iterations(pc, sigma, u)
    if not math.isfinite(start):
        raise UnreachableTargetError(
            f"Corollary 4.13 has no iteration count at (epsilon={epsilon:g}, delta={delta:g}): "
            "the threshold of eq. (7) is beyond the float64 range"
        )
    N = start
    while True:  # c_N decreases past the threshold (Section 4.1); scan in blocks
        block = np.arange(N, N + 4096, dtype=float)
        ok = np.nonzero(corollary_413_c_n(pc, sigma, block) <= epsilon / 4.0)[0]
        if ok.size:
            N = int(block[ok[0]])
            break
        N += 4096
    cert = theorem41._certify(pc, sigma, u, N, epsilon)
    return _finish(
        "corollary413", pc, sigma, N, epsilon, delta, cert, comparator_norm, delta_sample
    )


def corollary_413_bound(plan: WatkinsAroraPlan) -> float:
    """The utility bound stated in Corollary 4.13: W sqrt(2A) + mu_priv W^2/2 + 2 E_opt(N)."""
    pc = plan.constants
    W = plan.comparator_norm
    A = (
        pc.d * square(plan.sigma)
        + 16.0 * pc.L_ell**2 * (32 + log_over(1.0, plan.delta_sample)) / pc.n
    )
    mu_priv = pc.L2 * pc.zeta**2 / (pc.n * math.expm1(plan.epsilon / 4.0))
    extra = 0.0 if math.sqrt(2 * A) / W >= mu_priv else mu_priv * square(W) / 2
    return W * math.sqrt(2 * A) + extra + 2 * float(utility._e_opt(pc, plan.sigma, plan.iterations))
