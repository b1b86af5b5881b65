"""Calibration: choose (sigma, mu, eta, N, u) from a target (epsilon, delta) and public constants.

Two methods:

- ``corollary413``: Corollary 4.13 of Watkins & Arora (2026) exactly as stated
  (0 < epsilon <= 1), certified by Theorem 4.1.
- ``tight``: numerical optimisation of the Theorem 4.7 bound over (mu, sigma, N and
  the split of delta between truncation and divergence) subject to the Theorem C.13
  certificate, with the exact chi-tail truncation mass, holding at the target.

Both return a :class:`Plan` whose certificate is recomputed from the plan's public
constants by the certificate functions; a plan that does not certify the target is
never returned.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import replace
from typing import Any

import numpy as np

from objpert.certify import theorem41, theorem_c13, utility
from objpert.certify.constants import ProblemConstants, check_scale, problem
from objpert.certify.neighbours import replace_one_sensitivity
from objpert.certify.plan import (
    METHODS,
    OBJECTIVES,
    Plan,
    _check_targets,
    _finish,
    certify_plan,
    rederive_plan,
)
from objpert.certify.sequences import rho_power
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.losses import get_loss, require_bounded_gradient
from objpert.special import chi_radius, log_over, q1, square
from objpert.validation import check_int, check_positive, numeric_guard

DEFAULT_MAX_ITERATIONS = 100_000
_SAFETY = 1.0 - 1e-9  # tight plans aim at delta (1 - 1e-9): room for floating-point rounding


# ---------------------------------------------------------------- Corollary 4.13


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


@numeric_guard
def corollary_413(
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
) -> Plan:
    """Corollary 4.13 exactly as stated: u = sqrt(2 log(2/delta)), sigma = 4 G u / epsilon,
    mu = max{sqrt(2A)/W, L2 zeta^2 / (n (e^(epsilon/4) - 1))}, eta = 1/L, and the smallest N
    satisfying eq. (7) and c_N <= epsilon / 4. Requires 0 < epsilon <= 1."""
    epsilon, delta, comparator_norm, delta_sample = _check_targets(
        epsilon, delta, comparator_norm, delta_sample
    )
    if epsilon > 1:
        raise ParameterError(
            f"epsilon must be in (0, 1] for Corollary 4.13; got {epsilon!r} "
            "(use method='tight' for larger epsilon)"
        )
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "Corollary 4.13")
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    zeta = check_positive("zeta", zeta)
    check_scale(loss_obj, n, zeta)
    l_ell = loss_obj.L1 * zeta
    G = replace_one_sensitivity(l_ell) / n
    u = math.sqrt(2.0 * log_over(2.0, delta))
    sigma = 4.0 * G * u / epsilon
    mu_priv = loss_obj.L2 * zeta**2 / (n * math.expm1(epsilon / 4.0))
    A = d * sigma**2 + 16.0 * l_ell**2 * (32.0 + log_over(1.0, delta_sample)) / n
    mu_util = math.sqrt(2.0 * A) / comparator_norm
    pc = problem(loss_obj, n=n, d=d, zeta=zeta, mu=max(mu_util, mu_priv))
    start = theorem41.threshold_iterations(pc, sigma, u)
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
    cert = theorem41.certify(pc, sigma, u, N, epsilon)
    return _finish(
        "corollary413", pc, sigma, N, epsilon, delta, cert, comparator_norm, delta_sample
    )


def corollary_413_bound(plan: Plan) -> float:
    """The utility bound stated in Corollary 4.13: W sqrt(2A) + mu_priv W^2/2 + 2 E_opt(N)."""
    pc = plan.constants
    W = plan.comparator_radius
    A = (
        pc.d * square(plan.sigma)
        + 16.0 * pc.L_ell**2 * (32 + log_over(1.0, plan.delta_sample)) / pc.n
    )
    mu_priv = pc.L2 * pc.zeta**2 / (pc.n * math.expm1(plan.epsilon / 4.0))
    extra = 0.0 if math.sqrt(2 * A) / W >= mu_priv else mu_priv * square(W) / 2
    return W * math.sqrt(2 * A) + extra + 2 * float(utility.e_opt(pc, plan.sigma, plan.iterations))


# ---------------------------------------------------------------- tight


_SPLITS = np.geomspace(1e-4, 0.9, 28)  # candidate truncation shares of delta
_SIGMA_GRID = np.geomspace(1e-2, 1e7, 226)  # sigma / G candidates (10 per decade)


def _passes(pc, epsilon, delta, N, sigma, share, rfac):
    """Vectorised: does C.13 with exact truncation mass share*delta certify at sigma?

    ``rfac = chi_radius(share * delta, d_star)``, so r = sigma * rfac has that mass.
    """
    r = sigma * rfac
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    with np.errstate(invalid="ignore", over="ignore"):
        s_n = theorem_c13.c13_terms(pc, sigma, r, r_outer, N).s_n
        slack = epsilon - s_n
        div = 2.0 * pc.G / sigma * q1(np.where(slack > 0, sigma / pc.G * slack, 0.0))
    return (slack >= 0) & (div <= (1.0 - share) * delta * _SAFETY)


def _best_sigma(pc: ProblemConstants, epsilon: float, delta: float, N: int):
    """Smallest certifying sigma at N over the truncation shares: (sigma, share) or (inf, nan)."""
    shares = _SPLITS[:, None]
    rfac = chi_radius(shares * delta, pc.d_star)
    grid = pc.G * _SIGMA_GRID[None, :]
    ok = _passes(pc, epsilon, delta, N, grid, shares, rfac)
    has = ok.any(axis=1)
    if not has.any():
        return math.inf, math.nan
    first = np.argmax(ok, axis=1)
    rows = np.nonzero(has)[0]
    hi = grid[0, first[rows]]
    lo = np.where(first[rows] > 0, grid[0, np.maximum(first[rows] - 1, 0)], hi * 1e-3)
    sh, rf = _SPLITS[rows], rfac[rows, 0]
    lo, hi = _bisect(lambda s: _passes(pc, epsilon, delta, N, s, sh[:, None], rf[:, None]), lo, hi)
    k = int(np.argmin(hi))
    return float(hi[k]), float(sh[k])


_BISECTIONS = 45  # halvings of the log-sigma bracket (from one grid step to ~1e-14)
_LEVELS = 5  # bisection levels decided by one vectorised evaluation


def _bisect(passes, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bisection in log sigma (mid = sqrt(lo hi); hi = mid where it passes, else lo = mid),
    ``_BISECTIONS`` steps for every row at once.

    The midpoints of the next ``_LEVELS`` steps form a binary tree (a passing midpoint
    leads to the bracket (lo, mid), a failing one to (mid, hi)); all of them are computed
    as the plain bisection would compute them and tested in one call of ``passes``, and
    the tree is then walked, so the result equals the step-by-step bisection bit for bit.
    """
    rows = np.arange(lo.size)
    done = 0
    while done < _BISECTIONS:
        levels = min(_LEVELS, _BISECTIONS - done)
        size = 2**levels - 1
        lows, highs = np.empty((lo.size, size)), np.empty((lo.size, size))
        lows[:, 0], highs[:, 0] = lo, hi
        mids = np.empty((lo.size, size))
        for first in (2**j - 1 for j in range(levels)):  # the nodes of one level
            nodes = slice(first, 2 * first + 1)
            mids[:, nodes] = np.sqrt(lows[:, nodes] * highs[:, nodes])
            if 2 * first + 1 < size:  # children: (lo, mid) after a pass, (mid, hi) after a fail
                kids = slice(2 * first + 1, 4 * first + 3)
                lows[:, kids.start : kids.stop : 2] = lows[:, nodes]
                highs[:, kids.start : kids.stop : 2] = mids[:, nodes]
                lows[:, kids.start + 1 : kids.stop : 2] = mids[:, nodes]
                highs[:, kids.start + 1 : kids.stop : 2] = highs[:, nodes]
        good = passes(mids)
        node = np.zeros(lo.size, dtype=np.intp)
        for _ in range(levels):
            g = good[rows, node]
            mid = mids[rows, node]
            hi = np.where(g, mid, hi)
            lo = np.where(g, lo, mid)
            node = 2 * node + np.where(g, 1, 2)
        done += levels
    return lo, hi


def _bound(pc, sigma, N, comparator_norm, delta_sample, objective="population") -> float:
    """The bound the tight calibration minimises.

    ``population``: Theorem 4.7 (unregularised population excess risk against comparators of
    norm <= W). ``empirical``: the unregularised *empirical* excess risk against the same
    comparators, F_0(w_N) - F_0(w) <= [F(w_N) - F(w*_S)] + (mu/2) W^2 <= Theorem 4.10 + mu W^2/2,
    free of the worst-case uniform-convergence term that drives mu up for small n.
    """
    if not math.isfinite(sigma):
        return math.inf
    if objective == "empirical":
        return float(utility.theorem_410(pc, sigma, N)) + 0.5 * pc.mu * comparator_norm**2
    return float(utility.theorem_47(pc, sigma, N, comparator_norm, delta_sample))


@numeric_guard
def tight(
    loss: str,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    rtol: float = 0.01,
    objective: str = "population",
    mu: float | None = None,
    **loss_params: float,
) -> Plan:
    """Minimise the Theorem 4.7 bound subject to the Theorem C.13 certificate at the target.

    ``objective="empirical"`` minimises the empirical counterpart instead (see ``_bound``):
    for accuracy rather than for the worst-case population bound. A given ``mu`` (a public
    hyperparameter) is kept, and only sigma, the split and N are optimised.

    Over mu (a log grid refined by golden-section search), the truncation share of
    delta (exact chi tail) and sigma (bisection), at eta = 1/L and the paper's outer
    radius r' = r + 2LG/mu. The bounds only improve with N, so N is the smallest count
    whose Theorem 4.10 bound (d sigma^2/(2 mu) + E_opt, at the optimised sigma) is within
    ``rtol`` of its value at ``max_iterations``: a public compute budget, never a
    data-dependent stop. The Theorem 4.7 bound is then within ``rtol`` of its optimum too.
    """
    epsilon, delta, comparator_norm, delta_sample = _check_targets(
        epsilon, delta, comparator_norm, delta_sample
    )
    max_iterations = check_int("max_iterations", max_iterations, 1)
    rtol = check_positive("rtol", rtol)
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {OBJECTIVES}; got {objective!r}")
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "the tight calibration")
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    zeta = check_positive("zeta", zeta)
    check_scale(loss_obj, n, zeta)

    def pc_for(mu: float) -> ProblemConstants:
        return problem(loss_obj, n=n, d=d, zeta=zeta, mu=mu)

    def bound_at(mu: float, N: int) -> float:
        pc = pc_for(mu)
        sigma, _ = _best_sigma(pc, epsilon, delta, N)
        return _bound(pc, sigma, N, comparator_norm, delta_sample, objective)

    def perturbation(mu: float, N: int) -> float:
        pc = pc_for(mu)
        sigma, _ = _best_sigma(pc, epsilon, delta, N)
        return float(utility.theorem_410(pc, sigma, N)) if math.isfinite(sigma) else math.inf

    if mu is not None:
        best_mu = check_positive("mu", mu)
        if not math.isfinite(bound_at(best_mu, max_iterations)):
            raise UnreachableTargetError(
                f"mu = {best_mu:g} cannot certify (epsilon={epsilon:g}, delta={delta:g}) within "
                f"{max_iterations} iterations; allow more iterations, a larger mu or epsilon"
            )
    else:
        best_mu = _search_mu(
            bound_at,
            loss_obj,
            n,
            d,
            zeta,
            epsilon,
            delta,
            comparator_norm,
            delta_sample,
            max_iterations,
        )
    return _tight_iterations(
        pc_for,
        perturbation,
        best_mu,
        epsilon,
        delta,
        comparator_norm,
        delta_sample,
        max_iterations,
        rtol,
        objective,
    )


def _search_mu(
    bound_at, loss_obj, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iterations
) -> float:
    """Steps 1-2 of :func:`tight`: the mu minimising ``bound_at(mu, max_iterations)``."""
    # 1. mu on a log grid at the full budget, plus Corollary 4.13's mu when it applies
    scale = loss_obj.L2 * zeta**2
    mus = list(np.geomspace(scale * 1e-8, scale * 1e2, 41))
    if epsilon <= 1:
        with contextlib.suppress(ParameterError):
            mus.append(
                corollary_413(
                    loss_obj,
                    n=n,
                    d=d,
                    zeta=zeta,
                    epsilon=epsilon,
                    delta=delta,
                    comparator_norm=comparator_norm,
                    delta_sample=delta_sample,
                ).mu
            )
    mus.sort()
    values = [bound_at(m, max_iterations) for m in mus]
    k = int(np.argmin(values))
    if not math.isfinite(values[k]):
        raise UnreachableTargetError(
            f"no plan with at most {max_iterations} iterations certifies (epsilon={epsilon:g}, "
            f"delta={delta:g}); allow more iterations or a larger epsilon"
        )
    # 2. golden-section refinement of log mu between the grid neighbours
    a = math.log(mus[max(k - 1, 0)])
    b = math.log(mus[min(k + 1, len(mus) - 1)])
    best_mu, best_val = mus[k], values[k]
    phi = (math.sqrt(5) - 1) / 2
    x1, x2 = b - phi * (b - a), a + phi * (b - a)
    f1, f2 = bound_at(math.exp(x1), max_iterations), bound_at(math.exp(x2), max_iterations)
    for _ in range(30):
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - phi * (b - a)
            f1 = bound_at(math.exp(x1), max_iterations)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + phi * (b - a)
            f2 = bound_at(math.exp(x2), max_iterations)
    for x, f in ((x1, f1), (x2, f2)):
        if f < best_val:
            best_mu, best_val = math.exp(x), f
    return best_mu


def _tight_iterations(
    pc_for,
    perturbation,
    mu,
    epsilon,
    delta,
    comparator_norm,
    delta_sample,
    max_iterations,
    rtol,
    objective,
) -> Plan:
    """Step 3 of :func:`tight`: the smallest N whose Theorem 4.10 bound (at its optimised
    sigma) is within rtol of the full-budget one, and the plan at that N."""
    goal = perturbation(mu, max_iterations) * (1.0 + rtol)
    lo, hi = 0, max_iterations  # perturbation(hi) <= goal; find the smallest such N
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if perturbation(mu, mid) <= goal:
            hi = mid
        else:
            lo = mid
    pc = pc_for(mu)
    sigma, share = _best_sigma(pc, epsilon, delta, hi)
    r = sigma * float(chi_radius(share * delta, pc.d_star))
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    cert = theorem_c13.certify(pc, sigma, hi, epsilon, r=r, r_outer=r_outer, truncation="exact")
    plan = _finish("tight", pc, sigma, hi, epsilon, delta, cert, comparator_norm, delta_sample)
    return replace(plan, objective=objective)


def calibrate(loss: str, *, method: str = "tight", **kwargs: Any) -> Plan:
    """Dispatch to :func:`tight` or :func:`corollary_413` (an unknown keyword is a
    ParameterError)."""
    try:
        return _calibrate(loss, method, **kwargs)
    except TypeError as exc:
        raise ParameterError(f"calibrate: {exc}") from None


def _calibrate(loss: str, method: str, **kwargs: Any) -> Plan:
    if method == "tight":
        return tight(loss, **kwargs)
    if method == "corollary413":
        kwargs.pop("max_iterations", None)
        kwargs.pop("rtol", None)
        return corollary_413(loss, **kwargs)
    raise ParameterError(f"method must be one of {METHODS}; got {method!r}")


__all__ = [
    "METHODS",
    "OBJECTIVES",
    "Plan",
    "calibrate",
    "certify_plan",
    "corollary_413",
    "corollary_413_bound",
    "rederive_plan",
    "tight",
]
