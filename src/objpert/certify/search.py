"""The first iteration count N that certifies a target (epsilon, delta).

Vectorised over N in growing blocks, so a search up to 10^6 costs a few
milliseconds; the answer is re-checked with the scalar certificate.
"""

from __future__ import annotations

import math

import numpy as np

from objpert.certify.certificate import Certificate
from objpert.certify.constants import ProblemConstants
from objpert.certify.exact import c13_terms, certify, limit_s, resolve_radii
from objpert.certify.theorem41 import (
    certify as certify41,
)
from objpert.certify.theorem41 import (
    epsilon0,
    slack_for_divergence,
    threshold_iterations,
)
from objpert.certify.truncation import truncation_mass
from objpert.errors import UnreachableTargetError, check_int, check_open_unit, check_positive
from objpert.special import q1

MAX_ITERATIONS = 10**6


def _blocks(n_max: int, start: int = 1):
    lo, size = start, 1024
    while lo <= n_max:
        hi = min(n_max, lo + size - 1)
        yield np.arange(lo, hi + 1, dtype=float)
        lo, size = hi + 1, size * 4


def minimal_sigma_limit(pc: ProblemConstants, epsilon: float, delta_div: float) -> float:
    """Smallest sigma whose N -> infinity certificate (Remark C.16) reaches (epsilon, delta_div)."""

    def ok(sigma: float) -> bool:
        s = limit_s(pc, sigma)
        if epsilon < s:
            return False
        return 2 * pc.G / sigma * float(q1(sigma / pc.G * (epsilon - s))) <= delta_div

    if epsilon <= pc.log_det_term:
        return math.inf
    lo, hi = pc.G * 1e-6, pc.G
    while not ok(hi):
        lo, hi = hi, hi * 2
        if hi > 1e300:
            return math.inf
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
        if hi / lo < 1 + 1e-12:
            break
    return hi


def _c13_first_candidate(
    pc: ProblemConstants, sigma: float, r: float, r_outer: float, budget: float
) -> int | None:
    """A lower bound on every N with s_N <= budget (None if there is none).

    s_N >= r Delta_xi / sigma^2 + (G + Delta_xi)^2 / (2 sigma^2) with Delta_xi = 2 mu rho^N R-bar
    decreasing in N; solving the quadratic for Delta_xi gives the first N that can pass.
    """
    if not budget > 0:
        return None
    disc = (r + pc.G) ** 2 - pc.G**2 + 2.0 * sigma**2 * budget
    delta_xi_max = math.sqrt(disc) - (r + pc.G)
    if delta_xi_max <= 0:
        return None
    r_bar = (r_outer + pc.L_ell) / pc.mu
    ratio = delta_xi_max / (2.0 * pc.mu * r_bar)
    if ratio >= 1.0:
        return 1
    n_lo = math.log(ratio) / pc.log_rho
    if n_lo > 1e15:
        return None
    return max(1, math.floor(n_lo) - 2)  # two steps of slack for rounding


def _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max) -> UnreachableTargetError:
    if trunc >= delta:
        need_u = math.sqrt(2 * math.log(1 / delta))
        return UnreachableTargetError(
            f"no N certifies (epsilon={epsilon:g}, delta={delta:g}): the truncation mass "
            f"{trunc:.3g} alone exceeds delta; increase u above {need_u:.4g}"
        )
    s_inf = limit_s(pc, sigma)
    if (
        epsilon <= s_inf
        or 2 * pc.G / sigma * float(q1(sigma / pc.G * (epsilon - s_inf))) > delta - trunc
    ):
        need_sigma = minimal_sigma_limit(pc, epsilon, delta - trunc)
        hint = (
            f"increase sigma to more than {need_sigma:.4g} (now {sigma:.4g})"
            if math.isfinite(need_sigma)
            else f"increase mu (log(1 + Delta_H/(2 n mu)) = {pc.log_det_term:.4g} >= epsilon) or n"
        )
        return UnreachableTargetError(
            f"no N certifies (epsilon={epsilon:g}, delta={delta:g}): even as N -> infinity the "
            f"certificate needs epsilon > s_inf = {s_inf:.6g} and a smaller divergence; {hint}"
        )
    return UnreachableTargetError(
        f"no N <= {n_max} certifies (epsilon={epsilon:g}, delta={delta:g}) with the {form} form; "
        f"allow more iterations, or increase sigma or mu"
    )


def min_iterations(
    pc: ProblemConstants,
    sigma: float,
    epsilon: float,
    delta: float,
    *,
    u: float | None = None,
    r: float | None = None,
    r_outer: float | None = None,
    form: str = "c13",
    truncation: str = "paper",
    n_max: int = MAX_ITERATIONS,
) -> Certificate:
    """The certificate at the first N <= n_max that certifies (epsilon, delta).

    ``form="c13"`` uses Theorem C.13 (radii as in :func:`exact.certify`);
    ``form="theorem41"`` uses eqs. (7)-(10) (radii from ``u``). Raises
    :class:`UnreachableTargetError`, saying what would make the target reachable.
    """
    sigma = check_positive("sigma", sigma)
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    n_max = check_int("n_max", n_max, 1)
    r, r_outer, u = resolve_radii(pc, sigma, u, r, r_outer)
    trunc = truncation_mass(sigma, pc.d_star, r, truncation)
    if trunc >= delta:
        raise _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max)
    slack = slack_for_divergence(pc, sigma, delta - trunc)
    if form == "c13":
        start = _c13_first_candidate(pc, sigma, r, r_outer, epsilon - slack)
        if start is None or start > n_max:
            raise _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max)

        def passing(N: np.ndarray) -> np.ndarray:
            return c13_terms(pc, sigma, r, r_outer, N).s_n + slack <= epsilon

        def cert(N: int) -> Certificate:
            return certify(pc, sigma, N, epsilon, r=r, r_outer=r_outer, truncation=truncation)

    elif form == "theorem41":
        start = threshold_iterations(pc, sigma, u)

        def passing(N: np.ndarray) -> np.ndarray:
            return epsilon0(pc, sigma, N) + slack <= epsilon

        def cert(N: int) -> Certificate:
            return certify41(pc, sigma, u, N, epsilon, truncation=truncation)

    else:
        from objpert.errors import ParameterError

        raise ParameterError(f"form must be 'c13' or 'theorem41'; got {form!r}")
    for block in _blocks(n_max, start):
        for N in block[passing(block)]:
            c = cert(int(N))
            if c.certified and c.delta <= delta:
                return c
    raise _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max)
