"""Is the iteration budget a ceiling? The noise a doubled budget would need, from public
constants alone.

The tight calibration (:func:`objpert.certify.calibration.tight`) plans at most
``max_iterations`` gradient steps. Under Theorem C.13 of Watkins & Arora (2026) the
smallest certifying sigma falls as N grows (the contraction term s_N of the privacy loss
shrinks with N), so a plan that uses its whole budget may need far more noise than the
same target at a larger budget: on TV16-like constants (n = 37,591, d = 26, epsilon = 1)
the plan at 5,000 steps has sigma 2.8e-3, while doubling the budget at the same mu plans
6,072 steps with sigma 1.4e-3. :func:`ceiling` recalibrates with twice the budget at the
plan's mu (a pure, cached function of the plan's public constants: no data).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

from objpert.certify.calibration import Plan, tight
from objpert.exceptions import ParameterError
from objpert.validation import check_int

__all__ = ["NOTABLE_GAIN", "CeilingReport", "ceiling"]

#: The relative cut in sigma above which a doubled budget is worth telling the user about.
NOTABLE_GAIN = 0.10


@dataclass(frozen=True)
class CeilingReport:
    """What doubling the iteration budget would change (public constants only).

    ``at_ceiling``: the plan uses (nearly) its whole budget (N > max_iterations / 2) and
    the recalibration with twice the budget plans more than max_iterations steps (the
    budget binds); ``sigma_now`` is the
    plan's sigma, ``sigma_with_double_budget`` the tight calibration's sigma at the same
    mu and target with ``2 max_iterations``; ``relative_gain`` = 1 - sigma_double /
    sigma_now (0 when not at the ceiling); ``iterations_with_double_budget`` the steps
    that plan would run.
    """

    at_ceiling: bool
    max_iterations: int
    iterations: int
    sigma_now: float
    sigma_with_double_budget: float
    iterations_with_double_budget: int
    relative_gain: float

    @property
    def notable(self) -> bool:
        """At the ceiling, and a doubled budget cuts sigma by more than :data:`NOTABLE_GAIN`."""
        return self.at_ceiling and self.relative_gain > NOTABLE_GAIN

    def advice(self) -> str:
        """One line saying what to set (empty when not :attr:`notable`)."""
        if not self.notable:
            return ""
        return (
            f"the plan uses {self.iterations} of its budget of {self.max_iterations} gradient "
            "steps; "
            f"max_iter={2 * self.max_iterations} (the estimators' budget) would plan "
            f"{self.iterations_with_double_budget} steps with {100 * self.relative_gain:.0f}% "
            f"less noise (sigma {self.sigma_now:.3g} -> {self.sigma_with_double_budget:.3g}, "
            "same certificate): set max_iter higher if the compute time allows"
        )


def ceiling(plan: Plan, max_iterations: int | None = None) -> CeilingReport:
    """Recalibrate ``plan`` with twice ``max_iterations`` (default: the plan's own N) at the
    same loss, n, d, zeta, mu, target, comparator norm, delta_sample and objective.

    Only tight plans depend on a budget; a Corollary 4.13 plan chooses N itself and is
    never at a ceiling. The tight calibration picks the smallest N whose Theorem 4.10
    bound is within 1% of its value at the budget, so a binding budget shows as N close
    to (not always equal to) max_iterations; a plan with N <= max_iterations / 2 has
    flattened out well inside its budget and is not recalibrated. Pure and cached: the
    same public constants give the same report.
    """
    if not isinstance(plan, Plan):
        raise ParameterError(f"plan must be an objpert Plan; got {type(plan).__name__}")
    budget = plan.iterations if max_iterations is None else max_iterations
    budget = check_int("max_iterations", budget, 1)
    if plan.method != "tight" or 2 * plan.iterations <= budget:
        return CeilingReport(
            False, budget, plan.iterations, plan.sigma, plan.sigma, plan.iterations, 0.0
        )
    if budget < plan.iterations:  # no tight plan at this budget runs N > budget steps
        raise ParameterError(
            f"max_iterations={budget} is below the plan's {plan.iterations} gradient steps: "
            "give the budget the plan was calibrated with"
        )
    params = tuple(tuple(p) for p in plan.certificate.constants.get("loss_params", ()))
    public = tuple((k, getattr(plan, k)) for k in _PUBLIC)
    sigma2, n2 = _doubled(plan.loss, params, public, plan.comparator_radius, 2 * budget)
    at = n2 > budget
    gain = 1.0 - sigma2 / plan.sigma if at and math.isfinite(sigma2) else 0.0
    return CeilingReport(at, budget, plan.iterations, plan.sigma, sigma2, n2, max(gain, 0.0))


#: The plan's fields that the tight calibration takes under the same names.
_PUBLIC = ("n", "d", "zeta", "epsilon", "delta", "delta_sample", "objective", "mu")


@functools.lru_cache(maxsize=256)
def _doubled(
    loss: str,
    params: tuple[tuple[str, float], ...],
    public: tuple[tuple[str, Any], ...],
    comparator_norm: float,
    budget: int,
) -> tuple[float, int]:
    """(sigma, N) of the tight plan at ``budget`` iterations, the plan's public constants
    and mu (``public``) and the loss parameters ``params``."""
    doubled = tight(
        loss,
        comparator_norm=comparator_norm,
        max_iterations=budget,
        **dict(public),
        **dict(params),
    )
    return doubled.sigma, doubled.iterations
