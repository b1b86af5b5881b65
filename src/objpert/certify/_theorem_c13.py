"""Theorem C.13 of Watkins & Arora (2026): the exact finite-N certificate, and its limit.

With radii r (truncation) and r' (the larger ball), Section C.4 evaluates
alpha-bar and the radius condition (47), Delta_xi and tau (48), s_N (the
t-free part of epsilon_total, eq. 49) and delta_N(epsilon) (eq. 50). The paper's
radii are r = r_u = sigma (sqrt(d_star) + u) and r' = r_u + 2 L G / mu. Remark C.16:
as N -> infinity (with u growing slowly) the certificate tends to the
exact-minimizer one, s_inf = G^2/(2 sigma^2) + log(1 + Delta_H/(2 n mu)) with no
truncation mass. All functions vectorise over N and epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from objpert._special import square
from objpert._validation import (
    check_array,
    check_broadcast,
    check_choice,
    check_nonnegative,
    check_positive,
    check_positive_array,
    check_unit,
    count,
    named,
    optional,
    public,
    rule,
    validated,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.certify._constants import ProblemConstants
from objpert.certify._sequences import (
    as_iterations,
    g_bar_n,
    gamma_n,
    log_rho_power,
    nu_tilde_from_powers,
)
from objpert.certify._theorem41 import (
    _divergence,
    _epsilon_reaching,
    _radii,
    _threshold_iterations,
)
from objpert.certify._truncation import TRUNCATIONS, truncation_mass, u_from_radius
from objpert.exceptions import ParameterError

__all__ = [
    "C13Terms",
    "StepTerms",
    "c13_terms",
    "certify",
    "certify_limit",
    "checked_c13_terms",
    "delta_n",
    "epsilon_for_delta",
    "limit_delta",
    "limit_epsilon_for_delta",
    "limit_s",
    "paper_radii",
    "resolve_radii",
    "step_terms",
]


@dataclass(frozen=True)
class C13Terms:
    """The N-dependent quantities of Theorem C.13 (arrays over N)."""

    N: np.ndarray
    gamma: np.ndarray  # gamma_N, Lemma A.9
    nu_tilde: np.ndarray  # eq. (22)
    alpha_bar: np.ndarray  # eq. (47)
    lift: np.ndarray  # G (1 - rho^N) / (mu alpha_bar), the path-lifting distance of (47)
    radius_ok: np.ndarray  # alpha_bar > 0 and r' >= r + lift
    delta_xi: np.ndarray  # eq. (48)
    g_bar: np.ndarray  # Lemma C.5
    tau0: np.ndarray  # eq. (41)
    tau: np.ndarray  # eq. (48)
    s_n: np.ndarray  # eq. (49) without the (G/sigma) t term


@dataclass(frozen=True)
class StepTerms:
    """The quantities of Theorem C.13 that depend on N alone (arrays over N)."""

    N: np.ndarray
    rho_n: np.ndarray  # rho^N
    one_minus_rho_n: np.ndarray  # 1 - rho^N
    gamma: np.ndarray  # gamma_N, Lemma A.9
    nu_tilde: np.ndarray  # eq. (22)
    g_bar: np.ndarray  # Lemma C.5
    tau0: np.ndarray  # eq. (41)


def step_terms(pc: ProblemConstants, N: ArrayLike) -> StepTerms:
    """The N-only part of :func:`c13_terms`, to evaluate once for many (sigma, r, r')."""
    N = as_iterations(N, "iterations")
    log_rho_n = log_rho_power(pc, N)
    rho_n, one_minus_rho_n = np.exp(log_rho_n), -np.expm1(log_rho_n)
    gamma = gamma_n(pc, N)
    nu_t = nu_tilde_from_powers(pc, N, rho_n, one_minus_rho_n)
    g_bar = g_bar_n(pc, N)
    return StepTerms(N, rho_n, one_minus_rho_n, gamma, nu_t, g_bar, g_bar * pc.log_det_term)


@validated(sigma=check_positive_array, r=check_positive_array, r_outer=check_positive_array)
def c13_terms(
    pc: ProblemConstants,
    sigma: float,
    r: float,
    r_outer: float,
    N: ArrayLike,
    steps: StepTerms | None = None,
) -> C13Terms:
    """Evaluate Theorem C.13's quantities at radii (r, r') for every N given (sigma, r and r'
    may be arrays; s_N is +inf wherever a condition of Theorem C.13 fails or a term
    overflows). ``steps``: :func:`step_terms` of the same N, computed once."""
    if steps is None:
        steps = step_terms(pc, N)
    check_broadcast(iterations=steps.N, sigma=sigma, r=r, r_outer=r_outer)
    return checked_c13_terms(pc, sigma, r, r_outer, steps)


def checked_c13_terms(
    pc: ProblemConstants, sigma: ArrayLike, r: ArrayLike, r_outer: ArrayLike, steps: StepTerms
) -> C13Terms:
    """:func:`c13_terms` for arguments already checked (positive, broadcastable): the
    calibration's inner loop, which checks its grids once."""
    N = steps.N
    r_bar = (r_outer + pc.L_ell) / pc.mu  # uniform trajectory scale of (47)
    rho_n, one_minus_rho_n = steps.rho_n, steps.one_minus_rho_n
    gamma, nu_t = steps.gamma, steps.nu_tilde
    # eta M R-bar B nu~_N rho^(N-1)
    jac_err = pc.eta * pc.M * r_bar * pc.B * nu_t * (rho_n / pc.rho)
    alpha_bar = gamma - jac_err
    positive = alpha_bar > 0
    safe_alpha = np.where(positive, alpha_bar, np.nan)
    lift = pc.G * one_minus_rho_n / (pc.mu * safe_alpha)
    with np.errstate(invalid="ignore"):
        radius_ok = positive & (r_outer >= r + lift)
    delta_xi = 2.0 * pc.mu * rho_n * r_bar
    g_bar, tau0 = steps.g_bar, steps.tau0
    tau = tau0 + 2.0 * jac_err / safe_alpha
    s2 = square(sigma)  # +inf past the float64 range (then those terms vanish)
    s_n = r * delta_xi / s2 + (pc.G + delta_xi) ** 2 / (2.0 * s2) + tau
    s_n = np.where(radius_ok, s_n, np.inf)
    return C13Terms(N, gamma, nu_t, alpha_bar, lift, radius_ok, delta_xi, g_bar, tau0, tau, s_n)


def paper_radii(pc: ProblemConstants, sigma: float, u: float) -> tuple[float, float]:
    """Section C.4's radii r = r_u and r' = r_u + 2 L G / mu."""
    r, r_outer, _ = _radii(pc, sigma, u)
    return r, r_outer


@validated(
    sigma=check_positive,
    r=check_positive,
    r_outer=check_positive,
    epsilon=rule(check_array, minimum=0.0, allow_inf=True),
)
def delta_n(
    pc: ProblemConstants,
    sigma: float,
    r: float,
    r_outer: float,
    N: ArrayLike,
    epsilon: ArrayLike,
    truncation: str = "paper",
) -> np.ndarray:
    """delta_N(epsilon) = Pr-bound(||Pi_C Z|| > r) + (2G/sigma) Q1((sigma/G)(epsilon - s_N)).

    Section C.4 / eq. (50); 1.0 where alpha-bar <= 0, the radius condition (47)
    fails, or epsilon < s_N.
    """
    eps = epsilon
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        terms = c13_terms(pc, sigma, r, r_outer, N)
    s_n, eps = check_broadcast(iterations=terms.s_n, epsilon=eps)
    trunc = truncation_mass(sigma, pc.d_star, r, truncation)
    with np.errstate(invalid="ignore"):
        val = trunc + _divergence(pc, sigma, eps - s_n)
    return np.where(np.isfinite(val), np.minimum(val, 1.0), 1.0)


def _certify(
    pc: ProblemConstants,
    sigma: float,
    N: int,
    epsilon: float,
    *,
    u: float | None = None,
    r: float | None = None,
    r_outer: float | None = None,
    truncation: str = "paper",
) -> ReleaseCertificate:
    """Theorem C.13 at one (N, epsilon) with every condition checked.

    Radii default to Section C.4's: give ``u`` (r = r_u, r' = r_u + 2LG/mu), or
    ``r`` and optionally ``r_outer`` (default r + 2LG/mu). The library calls it with
    checked arguments; :func:`certify` is the public door."""
    r, r_outer, u = resolve_radii(pc, sigma, u, r, r_outer)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        terms = c13_terms(pc, sigma, r, r_outer, N)
    t = {k: float(np.asarray(v)) for k, v in terms.__dict__.items()}
    trunc = truncation_mass(sigma, pc.d_star, r, truncation)
    reasons = []
    if not t["alpha_bar"] > 0:
        reasons.append(f"alpha_bar = {t['alpha_bar']:.6g} <= 0 (eq. 47): N too small")
    elif not bool(terms.radius_ok):
        reasons.append(f"radius condition (47) fails: r' - r = {r_outer - r:.6g} < {t['lift']:.6g}")
    div = float(_divergence(pc, sigma, epsilon - t["s_n"])) if not reasons else math.inf
    if not reasons and epsilon < t["s_n"]:
        reasons.append(f"epsilon {epsilon:g} < s_N = {t['s_n']:.6g}")
    return ReleaseCertificate.conclude(
        "c13",
        epsilon,
        trunc,
        div,
        reasons,
        iterations=int(N),
        threshold_iterations=_threshold_iterations(pc, sigma, max(u, 0.0)),
        sigma=sigma,
        truncation=truncation,
        constants=pc.to_dict(),
        details={
            "u": u,
            "radius": r,
            "radius_outer": r_outer,
            "alpha_bar": t["alpha_bar"],
            "radius_ok": bool(terms.radius_ok),
            "radius_lift": t["lift"],
            "s_n": t["s_n"],
            "tau": t["tau"],
            "tau0": t["tau0"],
            "g_bar": t["g_bar"],
            "delta_xi": t["delta_xi"],
        },
    )


certify = public(
    _certify,
    sigma=check_positive,
    N=named("iterations", count(1)),
    epsilon=check_positive,
    u=optional(check_nonnegative),
    r=optional(check_positive),
    r_outer=optional(check_positive),
    truncation=rule(check_choice, TRUNCATIONS),
)


def resolve_radii(
    pc: ProblemConstants,
    sigma: float,
    u: float | None,
    r: float | None,
    r_outer: float | None,
) -> tuple[float, float, float]:
    """(r, r', u) from either u or r (and optional r'), for checked arguments."""
    if r is None:
        if u is None:
            raise ParameterError("give the truncation parameter u (>= 0) or the radius r (> 0)")
        r, default_outer = paper_radii(pc, sigma, u)
    else:
        default_outer = r + 2.0 * pc.L * pc.G / pc.mu
        u = u_from_radius(sigma, pc.d_star, r)
    r_outer = default_outer if r_outer is None else r_outer
    if r_outer < r:
        raise ParameterError(f"r_outer must be >= r = {r:.6g}; got {r_outer!r}")
    return r, r_outer, u


@validated(sigma=check_positive)
def limit_s(pc: ProblemConstants, sigma: float) -> float:
    """The N -> infinity floor (Remark C.16): s_inf = G^2/(2 sigma^2) + log1p(Delta_H/(2 n mu))
    (+inf when G/sigma overflows)."""
    try:
        return pc.G**2 / (2.0 * sigma**2) + pc.log_det_term
    except (OverflowError, ZeroDivisionError):  # sigma**2 outside the float64 range
        return 0.5 * square(pc.G / sigma) + pc.log_det_term


@validated(sigma=check_positive, epsilon=rule(check_array, minimum=0.0, allow_inf=True))
def limit_delta(pc: ProblemConstants, sigma: float, epsilon: ArrayLike) -> np.ndarray:
    """The exact-minimizer limit of the certificate (Remark C.16): truncation mass 0 and
    delta_inf(epsilon) = (2G/sigma) Q1((sigma/G)(epsilon - s_inf)); 1.0 below s_inf."""
    eps = epsilon
    with np.errstate(invalid="ignore"):
        val = _divergence(pc, sigma, eps - limit_s(pc, sigma))
    return np.where(np.isfinite(val), np.minimum(val, 1.0), 1.0)


@validated(sigma=check_positive, epsilon=check_positive)
def certify_limit(pc: ProblemConstants, sigma: float, epsilon: float) -> ReleaseCertificate:
    """The N -> infinity certificate of Remark C.16 (the exact-minimizer mechanism)."""
    s_inf = limit_s(pc, sigma)
    div = float(_divergence(pc, sigma, epsilon - s_inf))
    reasons = [] if epsilon >= s_inf else [f"epsilon {epsilon:g} < s_inf = {s_inf:.6g}"]
    return ReleaseCertificate.conclude(
        "limit",
        epsilon,
        0.0,
        div,
        reasons,
        iterations=None,
        threshold_iterations=None,
        sigma=sigma,
        truncation="none",
        constants=pc.to_dict(),
        details={"s_n": s_inf, "tau": pc.log_det_term},
    )


@validated(sigma=check_positive, r=check_positive, r_outer=check_positive, target_delta=check_unit)
def epsilon_for_delta(
    pc: ProblemConstants,
    sigma: float,
    r: float,
    r_outer: float,
    N: ArrayLike,
    target_delta: float,
    truncation: str = "paper",
) -> np.ndarray:
    """Inverse of delta_N: the smallest epsilon with delta_N(epsilon) <= target_delta.

    s_N + (G/sigma) Q1^{-1}((target - truncation mass) sigma / (2G)); +inf where the
    conditions of Theorem C.13 fail or the truncation mass alone exceeds the target.
    """
    trunc = truncation_mass(sigma, pc.d_star, r, truncation)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        s_n = c13_terms(pc, sigma, r, r_outer, N).s_n
    return _epsilon_reaching(pc, sigma, s_n, trunc, target_delta)


@validated(sigma=check_positive, target_delta=check_unit)
def limit_epsilon_for_delta(pc: ProblemConstants, sigma: float, target_delta: float) -> float:
    """Inverse of the limit form's delta (Remark C.16): the smallest epsilon with
    limit_delta(epsilon) <= target_delta."""
    return float(_epsilon_reaching(pc, sigma, limit_s(pc, sigma), 0.0, target_delta))
