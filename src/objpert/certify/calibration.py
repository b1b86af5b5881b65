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
import functools
import math
from dataclasses import dataclass, replace
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
from objpert.validation import check_int, check_nonnegative, check_positive, numeric_guard

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


def _passes(pc, epsilon, delta, N, sigma, share, rfac, steps=None):
    """Vectorised: does C.13 with exact truncation mass share*delta certify at sigma?

    ``rfac = chi_radius(share * delta, d_star)``, so r = sigma * rfac has that mass. The
    divergence term (2G/sigma) Q1((sigma/G)(epsilon - s_N)) is evaluated where
    epsilon >= s_N only (elementwise, so each value is the one the full array would give).
    """
    r = sigma * rfac
    r_outer = r + 2.0 * pc.L * pc.G / pc.mu
    if steps is None:
        steps = theorem_c13.step_terms(pc, N)
    with np.errstate(invalid="ignore", over="ignore"):  # sigma, r, r' > 0 by construction
        s_n = theorem_c13.checked_c13_terms(pc, sigma, r, r_outer, steps).s_n
        slack = epsilon - s_n
        ok = slack >= 0
        sig = np.broadcast_to(sigma, ok.shape)[ok]
        sl = slack[ok]
        div = 2.0 * pc.G / sig * q1(np.where(sl > 0, sig / pc.G * sl, 0.0))
        budget = np.broadcast_to((1.0 - share) * delta * _SAFETY, ok.shape)[ok]
    ok[ok] = div <= budget
    return ok


def _best_sigma(pc: ProblemConstants, epsilon: float, delta: float, N: int):
    """Smallest certifying sigma at N over the truncation shares: (sigma, share) or (inf, nan).

    Each share's first passing grid point is bisected down (``_bisect``'s steps), keeping
    only the shares that can still give the smallest sigma (:func:`_smallest_passing`)."""
    shares = _SPLITS[:, None]
    rfac = chi_radius(shares * delta, pc.d_star)
    grid = pc.G * _SIGMA_GRID[None, :]
    steps = theorem_c13.step_terms(pc, N)
    ok = _passes(pc, epsilon, delta, N, grid, shares, rfac, steps)
    has = ok.any(axis=1)
    if not has.any():
        return math.inf, math.nan
    first = np.argmax(ok, axis=1)
    rows = np.nonzero(has)[0]
    hi = grid[0, first[rows]]
    lo = np.where(first[rows] > 0, grid[0, np.maximum(first[rows] - 1, 0)], hi * 1e-3)
    sh, rf = _SPLITS[rows], rfac[rows, 0]

    def passes(s, active):
        return _passes(pc, epsilon, delta, N, s, sh[active, None], rf[active, None], steps)

    sigma, k = _smallest_passing(passes, lo, hi)
    return sigma, float(sh[k])


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
    done = 0
    while done < _BISECTIONS:
        levels = min(_LEVELS, _BISECTIONS - done)
        lo, hi = _tree(passes, lo, hi, levels)
        done += levels
    return lo, hi


def _tree(passes, lo: np.ndarray, hi: np.ndarray, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """``levels`` bisection steps of every row decided by one call of ``passes`` (see
    :func:`_bisect`)."""
    rows = np.arange(lo.size)
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
    return lo, hi


_TREE_WIDTH = 1024  # midpoints per evaluation in :func:`_smallest_passing`


def _smallest_passing(passes, lo: np.ndarray, hi: np.ndarray) -> tuple[float, int]:
    """(min over rows of hi after ``_BISECTIONS`` steps of :func:`_bisect`, its row), with
    ``passes(mids, rows)`` testing the given rows only.

    Before each evaluation the rows whose lo has reached the smallest hi are dropped: their
    final hi exceeds their lo (mid = sqrt(lo hi) > lo), so it exceeds that smallest hi and
    the final smallest hi, and they can neither win nor tie. Fewer rows let one evaluation
    decide more levels (up to ``_TREE_WIDTH`` midpoints). Each kept row's steps are those
    of the plain bisection, so the result equals ``min`` of :func:`_bisect`'s hi (first
    row among equals) bit for bit.
    """
    active = np.arange(lo.size)
    done = 0
    while done < _BISECTIONS:
        keep = lo < hi.min()
        keep[np.argmin(hi)] = True
        active, lo, hi = active[keep], lo[keep], hi[keep]
        width = max(_TREE_WIDTH // active.size, 2)
        levels = min(max(int(math.log2(width)), _LEVELS), _BISECTIONS - done)
        lo, hi = _tree(lambda m: passes(m, active), lo, hi, levels)  # noqa: B023
        done += levels
    k = int(np.argmin(hi))
    return float(hi[k]), int(active[k])


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


#: The knee tolerance, in the loss's units (nats for the logistic loss): a doubling of the
#: step budget is worth its compute only when it lowers the optimised bound by more.
KNEE_TOLERANCE = 0.05
#: The smallest budget the knee goes down to: below it the steps saved are not worth a
#: worse bound (a plan may still run fewer steps: the rtol rule of :func:`tight`).
KNEE_FLOOR = 1000
_KNEE_GRID = 4  # candidate budgets per octave: max_iterations 2^(-j/4), j = 0, 1, ...
_PROBE_STEPS = 12  # golden-section steps of log mu at a budget below or above max_iterations
_GOLDEN_STEPS = 24  # golden-section steps of log mu between grid neighbours (a decade apart)


@dataclass(frozen=True)
class Knee:
    """Where more gradient steps stop buying a material improvement of the bound the tight
    calibration minimises (a pure function of public constants; see :func:`tight`).

    ``budget``: the step budget N_k the plan is calibrated at (the smallest candidate
    max_iterations 2^(-j/4) >= :data:`KNEE_FLOOR` whose doubling, and that of every larger
    candidate, lowers the bound by at most ``tolerance``; max_iterations when the budget
    binds).
    ``bound``: the bound at N_k, with ``mu`` chosen there (the given mu when fixed).
    ``bound_at_max`` and ``bound_at_double``: the bound with max_iterations and with
    twice as many steps (mu re-chosen at each unless fixed).
    """

    budget: int
    max_iterations: int
    tolerance: float
    mu: float
    bound: float
    bound_at_max: float
    bound_at_double: float

    @property
    def gain_at_max(self) -> float:
        """How much doubling max_iterations would lower the bound (loss units)."""
        return self.bound_at_max - self.bound_at_double

    @property
    def binds(self) -> bool:
        """The knee lies beyond max_iterations: doubling it lowers the bound by more than
        ``tolerance``."""
        return not self.gain_at_max <= self.tolerance


class _Curve:
    """B*(N): the calibration's bound with at most N steps at its best (sigma, split) and,
    unless mu is fixed, its best mu; memoised over N."""

    def __init__(self, loss_obj, n, d, zeta, epsilon, delta, W, delta_sample, objective, mu):
        self.args = (loss_obj, n, d, zeta, epsilon, delta, W, delta_sample)
        self.objective, self.mu = objective, mu
        self.memo: dict[int, tuple[float, float]] = {}
        self.sigmas: dict[tuple[float, int], tuple[ProblemConstants, float]] = {}

    def pc(self, mu: float) -> ProblemConstants:
        loss_obj, n, d, zeta = self.args[:4]
        return problem(loss_obj, n=n, d=d, zeta=zeta, mu=mu)

    def sigma(self, mu: float, N: int) -> tuple[ProblemConstants, float]:
        """(constants, smallest certifying sigma) at (mu, N), memoised."""
        key = (mu, N)
        if key not in self.sigmas:
            pc = self.pc(mu)
            self.sigmas[key] = (pc, _best_sigma(pc, *self.args[4:6], N)[0])
        return self.sigmas[key]

    def bound_at(self, mu: float, N: int) -> float:
        pc, sigma = self.sigma(mu, N)
        W, delta_sample = self.args[6:]
        return _bound(pc, sigma, N, W, delta_sample, self.objective)

    def perturbation(self, mu: float, N: int) -> float:
        pc, sigma = self.sigma(mu, N)
        return float(utility.theorem_410(pc, sigma, N)) if math.isfinite(sigma) else math.inf

    def best(self, N: int, near: tuple[float, int] | None = None) -> tuple[float, float]:
        """(B*(N), its mu). ``near`` = (mu*, N') of another budget: golden-section search
        of log mu between mu* and mu* N'/N (mu* falls like 1/N where the certificate's
        step count binds mu), widened by a factor 1.5 each side; the full search of
        :func:`_search_mu` without it, or when the minimum lies at an end of that bracket."""
        if N in self.memo:
            return self.memo[N]
        if self.mu is not None:
            out = (self.bound_at(self.mu, N), self.mu)
        elif near is not None:
            mu0, n0 = near
            a, b = sorted((math.log(mu0), math.log(mu0 * n0 / N)))
            a, b = a - math.log(1.5), b + math.log(1.5)
            x, f = _golden(lambda x: self.bound_at(math.exp(x), N), a, b, _PROBE_STEPS)
            edge = (b - a) * 0.618**_PROBE_STEPS * 2
            out = (f, math.exp(x)) if math.isfinite(f) and a + edge < x < b - edge else None
            if out is None:
                out = self._full(N)
        else:
            out = self._full(N)
        self.memo[N] = out
        return out

    def _full(self, N: int) -> tuple[float, float]:
        loss_obj, n, d, zeta, epsilon, delta, W, delta_sample = self.args
        mu = _search_mu(
            self.bound_at, loss_obj, n, d, zeta, epsilon, delta, W, delta_sample, N, strict=False
        )
        return (self.bound_at(mu, N), mu) if mu is not None else (math.inf, math.nan)


def _golden(f, a: float, b: float, steps: int) -> tuple[float, float]:
    """Golden-section search for the minimum of f on [a, b]: (x, f(x)), the best point
    evaluated. Where both inner points are +inf (no certificate: mu too small) it moves
    right."""
    phi = (math.sqrt(5) - 1) / 2
    x1, x2 = b - phi * (b - a), a + phi * (b - a)
    f1, f2 = f(x1), f(x2)
    best = min((f1, x1), (f2, x2))
    for _ in range(steps):
        if f1 <= f2 and math.isfinite(f1):
            b, x2, f2 = x2, x1, f1
            x1 = b - phi * (b - a)
            f1 = f(x1)
            best = min(best, (f1, x1))
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + phi * (b - a)
            f2 = f(x2)
            best = min(best, (f2, x2))
    return best[1], best[0]


def _grid(max_iterations: int) -> list[int]:
    """The candidate budgets round(max_iterations 2^(-j/4)) for j = -4, -3, ... until 1
    (entry 0 is 2 max_iterations, entry 4 max_iterations; entry k - 4 is an octave above
    entry k)."""
    out: list[int] = []
    j = -_KNEE_GRID
    while not out or out[-1] > 1:
        out.append(max(1, round(max_iterations * 2.0 ** (-j / _KNEE_GRID))))
        j += 1
    return out


def _find_knee(curve: _Curve, max_iterations: int, tolerance: float) -> Knee:
    """The knee of :func:`tight` on ``curve``; raises UnreachableTargetError when no plan
    with at most max_iterations steps certifies."""
    b_max = curve.best(max_iterations)[0]
    if not math.isfinite(b_max):
        epsilon, delta = curve.args[4:6]
        if curve.mu is not None:
            raise UnreachableTargetError(
                f"mu = {curve.mu:g} cannot certify (epsilon={epsilon:g}, delta={delta:g}) "
                f"within {max_iterations} iterations; allow more iterations, a larger mu or "
                "epsilon"
            )
        raise UnreachableTargetError(
            f"no plan with at most {max_iterations} iterations certifies (epsilon={epsilon:g}, "
            f"delta={delta:g}); allow more iterations or a larger epsilon"
        )
    grid = _grid(max_iterations)
    top = _KNEE_GRID  # grid[top] == max_iterations

    def at(k: int) -> float:  # B* at grid[k], searched near the budget one step closer to top
        near = k + 1 if k < top else k - 1
        return curve.best(grid[k], near=(curve.best(grid[near])[1], grid[near]))[0]

    mu_max = curve.best(max_iterations)[1]
    b_dbl = curve.best(grid[0], near=(mu_max, max_iterations))[0]
    chosen = max_iterations
    low = [k for k in range(top + 1, len(grid)) if grid[k] >= KNEE_FLOOR]
    if b_max - b_dbl <= tolerance and low:
        # B* does not increase with N, so every doubling between the floor and 2
        # max_iterations lowers B* by at most B*(floor) - B*(2 max_iterations)
        b_floor = curve.best(grid[low[-1]], near=(mu_max, max_iterations))[0]
        if b_floor - b_dbl <= tolerance:
            chosen = grid[low[-1]]
        else:
            for k in range(top - 1, 0, -1):  # the budgets above max_iterations, downwards
                at(k)
            for k in low:  # downwards while a doubling is immaterial
                if grid[k] == grid[k - 1]:
                    continue
                if not at(k) - at(k - _KNEE_GRID) <= tolerance:
                    break
                chosen = grid[k]
    b, mu = curve.best(chosen)
    if chosen != max_iterations and curve.mu is None:  # the plan's mu: refine the probe's
        x0 = math.log(mu)  # +-0.02: wider than a probe's last golden-section step
        x, f = _golden(lambda x: curve.bound_at(math.exp(x), chosen), x0 - 0.02, x0 + 0.02, 14)
        if f < b:
            b, mu = f, math.exp(x)
    return Knee(chosen, max_iterations, tolerance, mu, b, b_max, b_dbl)


@functools.lru_cache(maxsize=256)
def _knee_cached(
    loss_obj, n, d, zeta, epsilon, delta, W, delta_sample, max_iterations, objective, mu, tol
) -> tuple[Knee, _Curve]:
    curve = _Curve(loss_obj, n, d, zeta, epsilon, delta, W, delta_sample, objective, mu)
    return _find_knee(curve, max_iterations, tol), curve


def _inputs(
    loss, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iterations,
    objective, mu, knee_tolerance, loss_params,
) -> tuple:  # fmt: skip
    """The validated inputs of :func:`tight` and :func:`knee`, in :func:`_knee_cached`'s order."""
    epsilon, delta, comparator_norm, delta_sample = _check_targets(
        epsilon, delta, comparator_norm, delta_sample
    )
    max_iterations = check_int("max_iterations", max_iterations, 1)
    knee_tolerance = check_nonnegative("knee_tolerance", knee_tolerance)
    if objective not in OBJECTIVES:
        raise ParameterError(f"objective must be one of {OBJECTIVES}; got {objective!r}")
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "the tight calibration")
    n = check_int("n", n, 2)
    d = check_int("d", d, 1)
    zeta = check_positive("zeta", zeta)
    check_scale(loss_obj, n, zeta)
    mu = None if mu is None else check_positive("mu", mu)
    return (
        loss_obj, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iterations,
        objective, mu, knee_tolerance,
    )  # fmt: skip


@numeric_guard
def knee(
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
    objective: str = "population",
    mu: float | None = None,
    knee_tolerance: float = KNEE_TOLERANCE,
    **loss_params: float,
) -> Knee:
    """The step budget :func:`tight` calibrates at (same arguments): a pure, cached function
    of public constants."""
    args = _inputs(
        loss, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iterations,
        objective, mu, knee_tolerance, loss_params,
    )  # fmt: skip
    return _knee_cached(*args)[0]


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
    knee_tolerance: float = KNEE_TOLERANCE,
    **loss_params: float,
) -> Plan:
    """Minimise the Theorem 4.7 bound subject to the Theorem C.13 certificate at the target.

    ``objective="empirical"`` minimises the empirical counterpart instead (see ``_bound``):
    for accuracy rather than for the worst-case population bound. A given ``mu`` (a public
    hyperparameter) is kept, and only sigma, the split and N are optimised.

    Over mu (a log grid refined by golden-section search), the truncation share of
    delta (exact chi tail) and sigma (bisection), at eta = 1/L and the paper's outer
    radius r' = r + 2LG/mu. Let B*(N) be the minimised bound with at most N steps (mu
    re-chosen at each N unless given). Under Theorem C.13 B*(N) keeps falling with N: the
    smallest certifying sigma shrinks and, with mu free, a smaller mu becomes certifiable
    (about N L / mu steps are needed), so the regularisation term mu W^2/2 halves with
    each doubling. The step budget is the knee of B*: the smallest candidate
    N_k = round(max_iterations 2^(-j/4)) >= ``KNEE_FLOOR`` (1,000; j = 0, 1, ...) such
    that for it and every larger candidate a doubling of the steps lowers B* by at most
    ``knee_tolerance`` (in the loss's units; 0.05 nats by default for the logistic loss,
    whose zero model has loss log 2 = 0.69); N_k = max_iterations when even that
    doubling lowers B* by more (the budget binds: :func:`objpert.certify.budget.ceiling`).
    The plan is calibrated at N_k: mu = the minimiser of B(mu, N_k), and N the smallest
    count whose Theorem 4.10 bound (d sigma^2/(2 mu) + E_opt, at the optimised sigma) is
    within ``rtol`` of its value at N_k. All of it is a public compute budget, never a
    data-dependent stop
    (:func:`knee` gives N_k and the bounds).
    """
    args = _inputs(
        loss, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iterations,
        objective, mu, knee_tolerance, loss_params,
    )  # fmt: skip
    rtol = check_positive("rtol", rtol)
    found, curve = _knee_cached(*args)
    epsilon, delta, comparator_norm, delta_sample = args[4:8]
    return _tight_iterations(
        curve.pc,
        curve.perturbation,
        found.mu,
        epsilon,
        delta,
        comparator_norm,
        delta_sample,
        found.budget,
        rtol,
        objective,
    )


def _search_mu(
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
    strict=True,
) -> float | None:
    """The mu minimising ``bound_at(mu, max_iterations)``: a log grid, then golden-section
    search between the best grid point's neighbours (None where nothing certifies and not
    ``strict``)."""
    # 1. mu on a log grid at the full budget, plus Corollary 4.13's mu when it applies
    scale = loss_obj.L2 * zeta**2
    mus = list(np.geomspace(scale * 1e-8, scale * 1e2, 11))
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
        if not strict:
            return None
        raise UnreachableTargetError(
            f"no plan with at most {max_iterations} iterations certifies (epsilon={epsilon:g}, "
            f"delta={delta:g}); allow more iterations or a larger epsilon"
        )
    # 2. golden-section refinement of log mu between the grid neighbours
    a = math.log(mus[max(k - 1, 0)])
    b = math.log(mus[min(k + 1, len(mus) - 1)])
    x, f = _golden(lambda x: bound_at(math.exp(x), max_iterations), a, b, _GOLDEN_STEPS)
    return math.exp(x) if f < values[k] else mus[k]


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
        kwargs.pop("knee_tolerance", None)
        return corollary_413(loss, **kwargs)
    raise ParameterError(f"method must be one of {METHODS}; got {method!r}")


__all__ = [
    "KNEE_FLOOR",
    "KNEE_TOLERANCE",
    "METHODS",
    "OBJECTIVES",
    "Knee",
    "Plan",
    "calibrate",
    "certify_plan",
    "corollary_413",
    "corollary_413_bound",
    "knee",
    "rederive_plan",
    "tight",
]
