"""Iteration-count sequences of Watkins & Arora (2026), vectorised over N.

rho^N, gamma_N (Lemma A.9), nu_N (eq. 21), nu-tilde_N (eq. 22) and g-bar_N
(Lemma C.5), computed with expm1/log1p so that nothing cancels when eta mu is
small.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from objpert.certify.constants import ProblemConstants


def as_iterations(N: ArrayLike) -> np.ndarray:
    """N as a float array (exact for integers below 2^53)."""
    return np.asarray(N, dtype=float)


# Exponents are floored at log of the smallest normal double: rho^p is then reported as
# ~2e-308 instead of a subnormal or 0. That only enlarges the (nonnegative) error terms,
# and keeps exp() off the slow subnormal path.
_MIN_LOG = -708.0


def log_rho_power(pc: ProblemConstants, p: ArrayLike) -> np.ndarray:
    return np.maximum(as_iterations(p) * pc.log_rho, _MIN_LOG)


def rho_power(pc: ProblemConstants, p: ArrayLike) -> np.ndarray:
    """rho^p for real p >= 0, via exp(p log1p(-eta mu)) (never below ~2e-308)."""
    return np.exp(log_rho_power(pc, p))


def one_minus_rho_power(pc: ProblemConstants, p: ArrayLike) -> np.ndarray:
    """1 - rho^p without cancellation (-expm1(p log rho))."""
    return -np.expm1(log_rho_power(pc, p))


def gamma_n(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """Frozen-Hessian spectral floor gamma_N = (1 - (1 - eta L)^N) / L (Lemma A.9, item 3)."""
    a = 1.0 - pc.eta * pc.L
    N = as_iterations(N)
    if a <= 0.0:  # eta = 1/L: (1 - eta L)^N = 0 for N >= 1
        return np.where(N >= 1, 1.0 / pc.L, 0.0)
    return -np.expm1(N * np.log(a)) / pc.L


def nu_n(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """nu_N = sum_{k<N} (1 - rho^k) = N - (1 - rho^N)/(eta mu) (eq. 21)."""
    N = as_iterations(N)
    return N - one_minus_rho_power(pc, N) / (pc.eta * pc.mu)


def nu_tilde_from_powers(
    pc: ProblemConstants, N: np.ndarray, rho_n: np.ndarray, one_minus_rho_n: np.ndarray
) -> np.ndarray:
    """nu-tilde_N of eq. (22) from precomputed rho^N and 1 - rho^N (see :func:`nu_tilde_n`)."""
    val = N - (1.0 + pc.rho) * one_minus_rho_n / (pc.eta * pc.mu) + N * rho_n
    return np.maximum(val, 0.0)


def nu_tilde_n(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """nu-tilde_N = sum_{k<N} (1 - rho^(N-k))(1 - rho^k) (eq. 22), clipped at its lower bound 0.

    Closed form nu_N + N rho^N - rho (1 - rho^N)/(eta mu).
    """
    N = as_iterations(N)
    return nu_tilde_from_powers(pc, N, rho_power(pc, N), one_minus_rho_power(pc, N))


def g_bar_n(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """g-bar_N = sup_{h in [mu, L]} g_N(h) of Lemma C.5, computed exactly.

    With a = 1 - eta h, eq. (36) gives g_N = 1 - N a^(N-1) / D(a), D(a) = sum_{j<N} a^j.
    N a^(N-1) / D(a) = N / sum_{j<N} a^(-j) increases with a, so g_N decreases in a
    and the supremum is at h = L, a = 1 - eta L: g-bar_N = g_N(L) (equal to 1 for
    N >= 2 when eta = 1/L, Section C.4). g_1 = 0.
    """
    N = as_iterations(N)
    a = 1.0 - pc.eta * pc.L
    if a <= 0.0:
        return np.where(N >= 2, 1.0, 0.0)
    log_a = np.log(a)
    # N a^(N-1) (1 - a) / (1 - a^N)
    ratio = N * np.exp((N - 1.0) * log_a) * (1.0 - a) / (-np.expm1(N * log_a))
    return np.clip(1.0 - ratio, 0.0, 1.0)
