"""Iteration-count sequences of Watkins & Arora (2026), vectorised over N.

rho^N, gamma_N (Lemma A.9), nu_N (eq. 21), nu-tilde_N (eq. 22) and g-bar_N
(Lemma C.5), computed with expm1/log1p so that nothing cancels when eta mu is
small.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike

from objpert._validation import MAX_INT, check_array
from objpert.certify._constants import ProblemConstants
from objpert.exceptions import ParameterError

__all__ = [
    "as_iterations",
    "g_bar_n",
    "gamma_n",
    "log_rho_power",
    "nu_n",
    "nu_tilde_from_powers",
    "nu_tilde_n",
    "one_minus_rho_power",
    "rho_power",
]

_ETA_L_SLACK = 1e-12  # eta L above 1 by this much is rounding of eta = 1/L


def as_iterations(N: ArrayLike, name: str = "N") -> np.ndarray:
    """N (or a real exponent p >= 0) as a float array (exact for integers below 2^53);
    refuses (ParameterError) NaN, infinity, negative values, booleans, strings and
    integers beyond the float64 range (:func:`objpert._validation.check_array`)."""
    kind = type(N)
    if kind is float or (kind is int and N <= MAX_INT):  # hot paths: no NaN passes <=
        if 0 <= N <= _FLOAT_MAX:
            return np.asarray(N, dtype=float)
    elif kind is np.ndarray and N.dtype == np.float64:
        if N.ndim == 0:
            if 0.0 <= N[()] <= _FLOAT_MAX:
                return N
        elif N.size and N.min() >= 0.0 and N.max() <= _FLOAT_MAX:
            return N
    return check_array(name, N, minimum=0.0)


_FLOAT_MAX = float(np.finfo(float).max)


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


def _one_minus_eta_l(pc: ProblemConstants) -> float:
    """1 - eta L, which Section 3.2 keeps in [0, 1). A step above 1/L (beyond rounding of
    eta = 1/L) is refused: the formulas below hold only for eta L <= 1."""
    a = 1.0 - pc.eta * pc.L
    if a < -_ETA_L_SLACK:
        raise ParameterError(
            f"eta L = {pc.eta * pc.L!r} > 1: the step size must be at most 1/L (Section 3.2)"
        )
    return max(a, 0.0)


def gamma_n(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """Frozen-Hessian spectral floor gamma_N = (1 - (1 - eta L)^N) / L (Lemma A.9, item 3)."""
    a = _one_minus_eta_l(pc)
    N = as_iterations(N)
    if a <= 0.0:  # eta = 1/L: (1 - eta L)^N = 0 for N >= 1
        return np.where(N >= 1, 1.0 / pc.L, 0.0)
    return -np.expm1(N * np.log(a)) / pc.L


# The closed forms of eqs. (21)-(22) cancel when N eta mu is small (nu_N ~ N^2 eta mu / 2 and
# nu-tilde_N ~ N^3 (eta mu)^2 / 6 are differences of terms of size N). There they are evaluated
# from Taylor series of phi2(y) = (e^y - 1 - y)/y^2 and psi(z) = (z - tanh z)/z^3, which are
# exact rewritings of the same closed forms with the cancelling terms removed analytically.
_SERIES_BELOW = 0.5  # use the series where N |log rho| / 2 < this (|argument| < 1 resp. 0.5)
_PHI2 = tuple(1.0 / math.factorial(j + 2) for j in range(20))  # phi2(y) = sum y^j / (j+2)!


def _tanh_taylor(n: int) -> list[Fraction]:
    """Exact Taylor coefficients a_0..a_n of tanh (from tanh' = 1 - tanh^2)."""
    a = [Fraction(0)] * (n + 1)
    a[1] = Fraction(1)
    for m in range(1, n):
        a[m + 1] = -sum(a[i] * a[m - i] for i in range(m + 1)) / (m + 1)
    return a


_PSI = tuple(float(-c) for c in _tanh_taylor(45)[3::2])  # psi(z) = sum_k _PSI[k] z^(2k)


def _horner(coeffs: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    for c in reversed(coeffs):
        out = out * x + c
    return out


def nu_n(pc: ProblemConstants, N: ArrayLike) -> np.ndarray:
    """nu_N = sum_{k<N} (1 - rho^k) = N - (1 - rho^N)/(eta mu) (eq. 21).

    Where N |l| < 1, l = log rho, the equivalent form N l^2 (N phi2(N l) - phi2(l)) / (eta mu)
    avoids the cancellation of the closed form.
    """
    N = as_iterations(N)
    x, ell = pc.eta * pc.mu, pc.log_rho
    n1 = np.atleast_1d(N)
    val = np.array(n1 - one_minus_rho_power(pc, n1) / x)
    small = n1 * (-ell) < 2.0 * _SERIES_BELOW
    if small.any():
        ns = n1[small]
        val[small] = ns * ell * ell * (ns * _horner(_PHI2, ns * ell) - _horner(_PHI2, ell)) / x
    return val.reshape(N.shape)


def nu_tilde_from_powers(
    pc: ProblemConstants, N: np.ndarray, rho_n: np.ndarray, one_minus_rho_n: np.ndarray
) -> np.ndarray:
    """nu-tilde_N of eq. (22) from precomputed rho^N and 1 - rho^N (see :func:`nu_tilde_n`).

    Where N b < 1/2, b = -log(rho)/2, the equivalent form
    (1 + rho)(1 + rho^N) b^3 (N^3 psi(N b) - N psi(b)) / (eta mu) avoids the cancellation
    of the closed form (it is (1 + rho)(1 + rho^N)(N tanh(b) - tanh(N b)) / (eta mu)).
    """
    N = as_iterations(N)
    x = pc.eta * pc.mu
    val = N - (1.0 + pc.rho) * one_minus_rho_n / x + N * rho_n
    b = -0.5 * pc.log_rho
    small = np.broadcast_to(N * b < _SERIES_BELOW, np.shape(val))
    if small.any():
        shape = np.shape(val)
        val = np.array(val, dtype=float).reshape(-1)
        small = small.reshape(-1)
        ns = np.broadcast_to(N, shape).reshape(-1)[small]
        rs = np.broadcast_to(rho_n, shape).reshape(-1)[small]
        psi_b = _horner(_PSI, np.array(b * b))
        bracket = ns**3 * _horner(_PSI, (ns * b) ** 2) - ns * psi_b
        val[small] = (1.0 + pc.rho) * (1.0 + rs) * b**3 * bracket / x
        val = val.reshape(shape)
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
    a = _one_minus_eta_l(pc)
    if a <= 0.0:
        return np.where(N >= 2, 1.0, 0.0)
    log_a = np.log(a)
    # N a^(N-1) (1 - a) / (1 - a^N)
    ratio = N * np.exp((N - 1.0) * log_a) * (1.0 - a) / (-np.expm1(N * log_a))
    return np.clip(1.0 - ratio, 0.0, 1.0)
