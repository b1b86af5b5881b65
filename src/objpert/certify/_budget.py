"""Is the iteration budget a ceiling? What doubling it would buy, from public constants alone.

The tight calibration (:func:`objpert.certify.tight`) calibrates at the knee
of its bound B*(N) (the smallest budget whose bound is within ``knee_tolerance``, 0.05% by
default, of the bound with all ``max_iter`` steps). Under Theorem C.13 of Watkins & Arora
(2026) the smallest certifying sigma falls as N grows and, with mu chosen by the
calibration, a smaller mu becomes certifiable, so a budget below the knee costs accuracy.
:func:`ceiling` says whether the budget binds (:attr:`Knee.binds`: doubling it would
lower the bound by more than the tolerance, relative to the doubled budget's bound; one
cached computation shared with the calibration) and, when it does, what twice the budget
would plan; the estimators warn when it binds and the doubling would lower the bound by
more than :data:`NOTABLE_GAIN` (0.1 loss units: more compute is asked for only when it
buys a material share of the loss, log 2 = 0.69 for the logistic loss's zero model).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from objpert._validation import numeric_guard
from objpert.certify._calibration import WatkinsAroraPlan, _tight
from objpert.certify._knee import KNEE_TOLERANCE, _knee
from objpert.exceptions import ParameterError

__all__ = ["NOTABLE_GAIN", "CeilingReport", "ceiling"]

#: The bound gain (loss units) of a doubled budget above which a binding budget is worth
#: telling the user about.
NOTABLE_GAIN = 0.1


@dataclass(frozen=True)
class CeilingReport:
    """What doubling the iteration budget would change (public constants only).

    ``at_ceiling``: the knee of the calibration's bound lies beyond ``max_iter``:
    twice the budget lowers the bound B* by ``bound_now - bound_with_double_budget`` >
    ``tolerance`` times ``bound_with_double_budget`` (the knee's relative tolerance).
    ``sigma_with_double_budget`` and
    ``iterations_with_double_budget``: the tight plan with ``2 max_iter`` when
    :attr:`notable` (else the plan's own); ``relative_gain`` = 1 - sigma_double /
    sigma_now (0 when not notable).
    """

    at_ceiling: bool
    max_iter: int
    iterations: int
    sigma_now: float
    sigma_with_double_budget: float
    iterations_with_double_budget: int
    relative_gain: float
    bound_now: float = 0.0
    bound_with_double_budget: float = 0.0
    tolerance: float = KNEE_TOLERANCE

    @property
    def notable(self) -> bool:
        """At the ceiling, and the doubled budget lowers the bound by more than
        :data:`NOTABLE_GAIN`."""
        return self.at_ceiling and self.bound_now - self.bound_with_double_budget > NOTABLE_GAIN

    def advice(self) -> str:
        """One line saying what to set (empty when not :attr:`notable`)."""
        if not self.notable:
            return ""
        return (
            f"the plan uses {self.iterations} of its budget of {self.max_iter} gradient "
            f"steps and the budget binds: max_iter={2 * self.max_iter} (twice this "
            f"budget) would lower the calibration's excess-loss bound from {self.bound_now:.3g} "
            f"to {self.bound_with_double_budget:.3g} (by more than {NOTABLE_GAIN:g}; plan: "
            f"{self.iterations_with_double_budget} steps, sigma "
            f"{self.sigma_now:.3g} -> {self.sigma_with_double_budget:.3g}, same certificate): "
            "set max_iter higher if the compute time allows"
        )


def ceiling(
    plan: WatkinsAroraPlan, max_iter: int | None = None, *, mu_fixed: bool = False
) -> CeilingReport:
    """Does the budget ``max_iter`` (default: the plan's own N) bind ``plan``?

    By the knee rule of :func:`objpert.certify.tight` at the plan's loss, n, d,
    zeta, target, comparator norm, delta_sample and objective: the budget binds when
    doubling it lowers the bound B* by more than the knee tolerance (relative to the
    doubled budget's bound), with mu re-chosen at
    each budget (the estimators' ``mu="auto"``) or kept at the plan's (``mu_fixed``: a
    given alpha). Only tight plans depend on a budget; a Corollary 4.13 plan chooses N
    itself and is never at a ceiling. Pure and cached: the same public constants give the
    same report, and the calibration's own computation is reused.
    """
    if not isinstance(plan, WatkinsAroraPlan):
        raise ParameterError(f"plan must be an objpert WatkinsAroraPlan; got {type(plan).__name__}")
    budget = plan.iterations if max_iter is None else int(max_iter)  # checked by the caller
    if plan.calibration != "tight":
        return CeilingReport(
            False, budget, plan.iterations, plan.sigma, plan.sigma, plan.iterations, 0.0
        )
    if budget < plan.iterations:  # no tight plan at this budget runs N > budget steps
        raise ParameterError(
            f"max_iter={budget} is below the plan's {plan.iterations} gradient steps: "
            "give the budget the plan was calibrated with"
        )
    params = tuple(tuple(p) for p in plan.certificate.constants.get("loss_params", ()))
    public = tuple((k, getattr(plan, k)) for k in _PUBLIC)
    mu = plan.mu if mu_fixed else None
    return _report(
        plan.loss, params, public, plan.comparator_norm, mu, budget, plan.iterations,
        plan.sigma,
    )  # fmt: skip


#: The plan's fields that the tight calibration takes under the same names.
_PUBLIC = ("n", "d", "zeta", "epsilon", "delta", "delta_sample", "objective")


@functools.lru_cache(maxsize=256)
@numeric_guard
def _report(
    loss: str,
    params: tuple[tuple[str, float], ...],
    public: tuple[tuple[str, Any], ...],
    comparator_norm: float,
    mu: float | None,
    budget: int,
    iterations: int,
    sigma: float,
) -> CeilingReport:
    kw: dict[str, Any] = dict(public, comparator_norm=comparator_norm, mu=mu, **dict(params))
    found = _knee(loss, max_iter=budget, **kw)  # the plan's values: checked
    gain = found.gain_at_max
    if not (found.binds and gain > NOTABLE_GAIN):
        return CeilingReport(
            found.binds, budget, iterations, sigma, sigma, iterations, 0.0,
            found.bound_at_max, found.bound_at_double, found.tolerance,
        )  # fmt: skip
    doubled = _tight(loss, max_iter=2 * budget, **kw)
    cut = max(1.0 - doubled.sigma / sigma, 0.0)
    return CeilingReport(
        True, budget, iterations, sigma, doubled.sigma, doubled.iterations, cut,
        found.bound_at_max, found.bound_at_max - gain, found.tolerance,
    )  # fmt: skip
