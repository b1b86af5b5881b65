"""The first iteration count N that certifies a target (epsilon, delta).

Vectorised over N in growing blocks, so a search up to 10^6 costs a few
milliseconds; the answer is re-checked with the scalar certificate.
"""

from __future__ import annotations

import math

import numpy as np

from objpert._special import log_over, q1
from objpert._validation import (
    check_choice,
    check_nonnegative,
    check_open_unit,
    check_positive,
    count,
    numeric_guard,
    optional,
    rule,
    validated,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.certify._constants import ProblemConstants
from objpert.certify._sequences import g_bar_n, gamma_n, nu_tilde_n, rho_power
from objpert.certify._theorem41 import _certify as certify41
from objpert.certify._theorem41 import _epsilon0, _slack_for_divergence, _threshold_iterations
from objpert.certify._theorem_c13 import _certify, c13_terms, limit_s, resolve_radii
from objpert.certify._truncation import TRUNCATIONS, truncation_mass
from objpert.exceptions import UnreachableTargetError

__all__ = ["MAX_ITERATIONS", "N_MAX_LIMIT", "min_iterations", "minimal_sigma_limit"]

MAX_ITERATIONS = 10**6
#: The largest n_max a search takes (the Theorem C.13 search holds one lower bound per
#: block of iterations below n_max; 2^53 would be 8.8e12 blocks).
N_MAX_LIMIT = 10**9


@numeric_guard
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


_BLOCK = 1024


def _c13_candidate_blocks(
    pc: ProblemConstants,
    sigma: float,
    r: float,
    r_outer: float,
    budget: float,
    start: int,
    n_max: int,
):
    """Blocks [a, b] of iteration counts, in order, that may contain an N with s_N <= budget.

    A block is skipped only when a lower bound on s_N over it exceeds the budget:
    Delta_xi and rho^(N-1) decrease in N, nu-tilde_N, g-bar_N and gamma_N increase
    (eq. 22, Lemma C.5, Lemma A.9), and alpha-bar <= gamma_N, so on [a, b]
    s_N >= r D_b / s^2 + (G + D_b)^2 / (2 s^2) + g_a log(1 + Delta_H/(2 n mu))
    + 2 eta M R-bar B nu~_a rho^(b-1) / gamma_b, with D_b = 2 mu rho^b R-bar.
    """
    a = np.arange(start, n_max + 1, _BLOCK, dtype=float)
    b = np.minimum(a + _BLOCK - 1, n_max)
    r_bar = (r_outer + pc.L_ell) / pc.mu
    d_b = 2.0 * pc.mu * rho_power(pc, b) * r_bar
    jac = pc.eta * pc.M * r_bar * pc.B * nu_tilde_n(pc, a) * rho_power(pc, b - 1.0)
    lower = (
        r * d_b / sigma**2
        + (pc.G + d_b) ** 2 / (2.0 * sigma**2)
        + g_bar_n(pc, a) * pc.log_det_term
        + 2.0 * jac / gamma_n(pc, b)
    )
    for lo, hi in zip(
        a[lower * (1.0 - 1e-9) <= budget], b[lower * (1.0 - 1e-9) <= budget], strict=True
    ):
        yield np.arange(lo, hi + 1.0)


def _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max) -> UnreachableTargetError:
    if trunc >= delta:
        need_u = math.sqrt(2 * log_over(1.0, delta))
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


@numeric_guard
@validated(
    sigma=check_positive,
    epsilon=check_positive,
    delta=check_open_unit,
    u=optional(check_nonnegative),
    r=optional(check_positive),
    r_outer=optional(check_positive),
    form=rule(check_choice, ("c13", "theorem41")),
    truncation=rule(check_choice, TRUNCATIONS),
    n_max=count(1, N_MAX_LIMIT),
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
) -> ReleaseCertificate:
    """The certificate at the first N <= n_max that certifies (epsilon, delta).

    ``form="c13"`` uses Theorem C.13 (radii as in :func:`theorem_c13.certify`);
    ``form="theorem41"`` uses eqs. (7)-(10) (radii from ``u``). Raises
    :class:`UnreachableTargetError`, saying what would make the target reachable.
    """
    r, r_outer, u = resolve_radii(pc, sigma, u, r, r_outer)
    trunc = truncation_mass(sigma, pc.d_star, r, truncation)
    if trunc >= delta:
        raise _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max)
    slack = _slack_for_divergence(pc, sigma, delta - trunc)
    if form == "c13":
        start = _c13_first_candidate(pc, sigma, r, r_outer, epsilon - slack)
        if start is None or start > n_max:
            raise _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max)
        for block in _c13_candidate_blocks(pc, sigma, r, r_outer, epsilon - slack, start, n_max):
            passing = c13_terms(pc, sigma, r, r_outer, block).s_n + slack <= epsilon
            for N in block[passing]:
                c = _certify(
                    pc, sigma, int(N), epsilon, r=r, r_outer=r_outer, truncation=truncation
                )
                if c.certified and c.delta <= delta:
                    return c
    else:  # form == "theorem41"
        # epsilon_0 decreases in N once eq. (7) holds (its third entry, Lemma C.15), so the
        # passing counts form an interval [N*, inf): bisect for N*.
        lo = _threshold_iterations(pc, sigma, u) - 1
        hi = n_max
        if lo < hi and float(_epsilon0(pc, sigma, hi)) + slack <= epsilon:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if float(_epsilon0(pc, sigma, mid)) + slack <= epsilon:
                    hi = mid
                else:
                    lo = mid
            for N in range(hi, min(hi + 3, n_max) + 1):  # guard against rounding at the edge
                c = certify41(pc, sigma, u, N, epsilon, truncation=truncation)
                if c.certified and c.delta <= delta:
                    return c
    raise _unreachable(pc, sigma, epsilon, delta, trunc, form, n_max)
