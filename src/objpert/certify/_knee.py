"""The knee of the tight calibration's bound: the smallest step budget whose bound
(Theorem 4.7 of Watkins & Arora 2026, at the best sigma, split and mu) is within a relative
tolerance of the bound with the whole budget. A pure, cached function of public constants.

The tolerance is relative because the bound's scale is not the loss's: with unit-norm rows
and an intercept the bound of a few thousand rows is a few hundredths of a nat, so an
absolute tolerance of 0.05 nats stopped every such fit at the floor, at a ridge several
times the whole budget's, and cost held-out accuracy (benchmarks/accuracy_suite.py). A
budget whose bound is within 0.05% of the whole budget's keeps the whole budget's ridge
within 0.6% on every table of that suite, and its accuracy (docs/frontier.md); 2% did
not (a ridge 6% larger cost HMDA 0.13 points at epsilon 3). It saves steps only where
the bound is flat in N (small n or small epsilon, where the noise, not the step count,
sets mu), and little: the fewest steps within 1% of the Theorem 4.10 bound at the chosen
mu (:func:`objpert.certify.tight`'s ``rtol``) is what shortens those fits.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from objpert._losses import get_loss, require_bounded_gradient
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
from objpert.accounting._certificate import check_target_delta
from objpert.certify import _utility as utility
from objpert.certify._constants import ProblemConstants, check_scale, problem
from objpert.certify._plan import OBJECTIVES
from objpert.certify._sigma_search import (
    DEFAULT_MAX_ITER,
    _best_sigma,
    _bound,
    _golden,
    _search_mu,
)
from objpert.exceptions import ParameterError, UnreachableTargetError

__all__ = ["KNEE_FLOOR", "KNEE_TOLERANCE", "OPTION_RULES", "TARGET_RULES", "Knee", "knee"]

#: The knee tolerance, relative: a budget below max_iter is taken only when its optimised
#: bound is within this share of the bound with all max_iter steps.
KNEE_TOLERANCE = 0.0005
#: The smallest budget the knee goes down to: below it the steps saved are not worth a
#: worse bound (a plan may still run fewer steps: the rtol rule of :func:`tight`).
KNEE_FLOOR = 1000
_KNEE_GRID = 4  # candidate budgets per octave: max_iter 2^(-j/4), j = 0, 1, ...
_PROBE_STEPS = 9  # golden-section steps of log mu at a budget below or above max_iter


@dataclass(frozen=True)
class Knee:
    """Where more gradient steps stop buying a material improvement of the bound the tight
    calibration minimises (a pure function of public constants; see :func:`tight`).

    ``budget``: the step budget N_k the plan is calibrated at (the smallest candidate
    max_iter 2^(-j/4) >= :data:`KNEE_FLOOR` whose bound is at most (1 + ``tolerance``)
    times the bound at max_iter, found by bisection as the bound does not increase with
    the budget; max_iter when no smaller candidate is).
    ``bound``: the bound at N_k, with ``mu`` chosen there (the given mu when fixed).
    ``bound_at_max`` and ``bound_at_double``: the bound with max_iter and with
    twice as many steps (mu re-chosen at each unless fixed).
    """

    budget: int
    max_iter: int
    tolerance: float
    mu: float
    bound: float
    bound_at_max: float
    bound_at_double: float

    @property
    def gain_at_max(self) -> float:
        """How much doubling max_iter would lower the bound (loss units)."""
        return self.bound_at_max - self.bound_at_double

    @property
    def binds(self) -> bool:
        """The knee lies beyond max_iter: doubling it lowers the bound by more than
        ``tolerance`` times the doubled budget's bound."""
        return not self.gain_at_max <= self.tolerance * self.bound_at_double


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
        return float(utility._theorem_410(pc, sigma, N)) if math.isfinite(sigma) else math.inf

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


def _grid(max_iter: int) -> list[int]:
    """The candidate budgets round(max_iter 2^(-j/4)) for j = -4, -3, ... until 1
    (entry 0 is 2 max_iter, entry 4 max_iter; entry k - 4 is an octave above
    entry k)."""
    out: list[int] = []
    j = -_KNEE_GRID
    while not out or out[-1] > 1:
        out.append(max(1, round(max_iter * 2.0 ** (-j / _KNEE_GRID))))
        j += 1
    return out


def _find_knee(curve: _Curve, max_iter: int, tolerance: float) -> Knee:
    """The knee of :func:`tight` on ``curve``; raises UnreachableTargetError when no plan
    with at most max_iter steps certifies."""
    b_max = curve.best(max_iter)[0]
    if not math.isfinite(b_max):
        epsilon, delta = curve.args[4:6]
        if curve.mu is not None:
            raise UnreachableTargetError(
                f"mu = {curve.mu:g} cannot certify (epsilon={epsilon:g}, delta={delta:g}) "
                f"within {max_iter} iterations; allow more iterations, a larger mu or "
                "epsilon"
            )
        raise UnreachableTargetError(
            f"no plan with at most {max_iter} iterations certifies (epsilon={epsilon:g}, "
            f"delta={delta:g}); allow more iterations or a larger epsilon"
        )
    grid = _grid(max_iter)
    top = _KNEE_GRID  # grid[top] == max_iter
    mu_max = curve.best(max_iter)[1]
    # a budget of 2 max_iter steps may run max_iter: B* never increases with
    # the budget, though a search of mu at 2 max_iter can miss by rounding
    b_dbl = min(curve.best(grid[0], near=(mu_max, max_iter))[0], b_max)
    goal = b_max * (1.0 + tolerance)

    def kept(k: int) -> bool:  # B* at grid[k] is within the tolerance of B*(max_iter)
        return curve.best(grid[k], near=(mu_max, max_iter))[0] <= goal

    # the candidates below max_iter, at least the floor, downwards (no repeats)
    low = [k for k in range(top + 1, len(grid)) if grid[k] >= KNEE_FLOOR and grid[k] < grid[k - 1]]
    chosen = max_iter
    if low and kept(low[-1]):
        chosen = grid[low[-1]]
    elif low:  # B* does not increase with N: bisect for the smallest kept candidate
        ok, bad = -1, len(low) - 1  # low[ok] kept (-1: max_iter itself), low[bad] not
        while bad - ok > 1:
            mid = (ok + bad) // 2
            ok, bad = (mid, bad) if kept(low[mid]) else (ok, mid)
        chosen = max_iter if ok < 0 else grid[low[ok]]
    b, mu = curve.best(chosen)
    if chosen != max_iter and curve.mu is None:  # the plan's mu: refine the probe's
        x0 = math.log(mu)  # +-0.05: wider than a probe's last golden-section step
        x, f = _golden(lambda x: curve.bound_at(math.exp(x), chosen), x0 - 0.05, x0 + 0.05, 10)
        if f < b:
            b, mu = f, math.exp(x)
    return Knee(chosen, max_iter, tolerance, mu, b, b_max, b_dbl)


@functools.lru_cache(maxsize=256)
def _knee_cached(
    loss_obj, n, d, zeta, epsilon, delta, W, delta_sample, max_iter, objective, mu, tol
) -> tuple[Knee, _Curve]:
    curve = _Curve(loss_obj, n, d, zeta, epsilon, delta, W, delta_sample, objective, mu)
    return _find_knee(curve, max_iter, tol), curve


def _target_delta(name: str, value: object) -> float:
    return check_target_delta(value, name)


#: The rules of the calibrations' target and public constants: checked at their public
#: doors (:func:`knee`, :func:`~objpert.certify.tight`, :func:`~objpert.certify.corollary_413`)
#: or, for a plan, by ``objpert.plan``'s :class:`~objpert.accounting.Target` and
#: :class:`~objpert.accounting.PublicConstants`.
TARGET_RULES = {
    "n": count(1),
    "d": count(1),
    "zeta": check_positive,
    "epsilon": check_positive,
    "delta": _target_delta,
}
#: The rules of the calibrations' options (checked at every door that takes them).
OPTION_RULES = {
    "comparator_norm": check_positive,
    "delta_sample": check_open_unit,
    "max_iter": count(1),
    "rtol": check_positive,
    "objective": rule(check_choice, OBJECTIVES),
    "mu": optional(check_positive),
    "knee_tolerance": check_nonnegative,
}


def door(impl: Callable[..., Any], name: str, rules: dict) -> Callable[..., Any]:
    """``impl`` behind :func:`~objpert._validation.validated` with those of ``rules`` it
    takes, named ``name``."""
    params = inspect.signature(impl).parameters
    fn = validated(**{k: v for k, v in rules.items() if k in params})(impl)
    fn.__name__ = fn.__qualname__ = name
    return fn


def _inputs(
    loss, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iter,
    objective, mu, knee_tolerance, loss_params,
) -> tuple:  # fmt: skip
    """The inputs of :func:`tight` and :func:`knee` (checked at their doors), in
    :func:`_knee_cached`'s order."""
    if n < 2:
        raise ParameterError(f"n must be an integer >= 2 for the tight calibration; got {n!r}")
    loss_obj = require_bounded_gradient(get_loss(loss, **loss_params), "the tight calibration")
    check_scale(loss_obj, n, zeta)
    return (
        loss_obj, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iter,
        objective, mu, knee_tolerance,
    )  # fmt: skip


def _knee(
    loss: str,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    comparator_norm: float = 1.0,
    delta_sample: float = 0.01,
    max_iter: int = DEFAULT_MAX_ITER,
    objective: str = "population",
    mu: float | None = None,
    knee_tolerance: float = KNEE_TOLERANCE,
    **loss_params: float,
) -> Knee:
    """The step budget :func:`tight` calibrates at (same arguments): a pure, cached function
    of public constants."""
    args = _inputs(
        loss, n, d, zeta, epsilon, delta, comparator_norm, delta_sample, max_iter,
        objective, mu, knee_tolerance, loss_params,
    )  # fmt: skip
    return _knee_cached(*args)[0]


knee = numeric_guard(door(_knee, "knee", TARGET_RULES | OPTION_RULES))
