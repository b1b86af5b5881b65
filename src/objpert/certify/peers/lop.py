"""LOP: Gaussian linear objective perturbation with the exact minimiser.

Chaudhuri, Monteleoni & Sarwate (2011) with Gaussian noise (Kifer, Smith & Thakurta 2012,
Theorem 2), in the mean form of :mod:`.kifer` with gradient bound L1 zeta and smoothness
L2 zeta^2: mu >= 2 L2 zeta^2 / (n epsilon), z ~ N(0, sigma^2 I) with
sigma = L1 zeta sqrt(8 log(2/delta) + 4 epsilon) / (n epsilon). The objective noise
enters the objective and is never published added to a value: it stays continuous.
"""

from __future__ import annotations

from objpert.certify.certificate import Certificate
from objpert.certify.peers.kifer import lop_delta, lop_mean_form
from objpert.certify.peers.plan import (
    DEFAULT_MAX_ITERATIONS,
    PeerInputs,
    PeerMethod,
    PeerPlan,
    conclude,
    iteration_budget,
    register_method,
    ridge,
    solver_tolerance,
)
from objpert.errors import numeric_guard
from objpert.losses import Loss

__all__ = ["certify_objective", "objective_plan", "plan_lop", "ridge_reasons"]


def ridge_reasons(mu: float, mu_min: float, epsilon_name: str = "epsilon") -> list[str]:
    """The failed condition mu >= 2 L2 zeta^2 / (n epsilon) of Kifer et al. (2012),
    Theorem 2 (in mean form), if it fails."""
    if mu >= mu_min:
        return []
    return [f"mu = {mu:.6g} < 2 L2 zeta^2 / (n {epsilon_name}) = {mu_min:.6g} (Kifer et al. 2012)"]


def objective_plan(
    method: str,
    inputs: PeerInputs,
    grad_bound: float,
    mu: float | None,
    tolerance: float | None,
    max_iterations: int,
    **fields: float,
) -> PeerPlan:
    """The plan of Gaussian LOP with per-sample gradient bound ``grad_bound``:
    (mu_min, sigma) = lop_mean_form(n, grad_bound, L2 zeta^2, epsilon, delta)
    (:func:`~.kifer.lop_mean_form`), mu = max(mu, mu_min), the solver tolerance by default
    1e-9 ``grad_bound``."""
    mu_min, sigma = lop_mean_form(
        inputs.n, grad_bound, inputs.smoothness, inputs.epsilon, inputs.delta
    )
    return inputs.plan(
        method,
        mu=ridge(mu, mu_min),
        sigma=sigma,
        calibration="kifer",
        tolerance=solver_tolerance(tolerance, grad_bound),
        max_iterations=iteration_budget(max_iterations),
        **fields,
    )


@numeric_guard
def plan_lop(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    tolerance: float | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    loss_params: dict | None = None,
) -> PeerPlan:
    """Gaussian LOP, exact minimiser (Chaudhuri et al. 2011; Kifer et al. 2012, Theorem 2).

    (mu_min, sigma) = lop_mean_form(n, L1 zeta, L2 zeta^2, epsilon, delta); the plan uses
    mu = max(mu, mu_min) (mu_min when ``mu`` is None). The guarantee is for the *exact*
    minimiser of F + <z, w>; ``tolerance`` (gradient norm, default 1e-9 L1 zeta) is the
    solver's stopping accuracy, reported but not covered: a finite tolerance is an
    approximation, the gap AMP (Iyengar et al. 2019) and Watkins & Arora (2026) close.
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params)
    return objective_plan("lop", inputs, inputs.gradient_bound, mu, tolerance, max_iterations)


def certify_objective(plan: PeerPlan, loss: Loss, grad_bound: float, source: str) -> Certificate:
    """The certificate of Gaussian LOP at per-sample gradient bound ``grad_bound``: delta
    from the plan's sigma at its epsilon (:func:`~.kifer.lop_delta`), provided
    mu >= 2 L2 zeta^2 / (n epsilon) (Kifer et al. 2012, Theorem 2)."""
    smooth = float(loss.L2) * plan.zeta**2
    mu_min, sigma_req = lop_mean_form(plan.n, grad_bound, smooth, plan.epsilon, plan.delta)
    reasons = ridge_reasons(plan.mu, mu_min)
    delta = lop_delta(plan.n, grad_bound, plan.sigma, plan.epsilon)
    details = {
        "mu_min": mu_min,
        "sigma_required": sigma_req,
        "tolerance": plan.tolerance,
        "clip": plan.clip,
        "guarantee": (
            "exact minimiser of F + <z, w>; the solver's gradient-norm tolerance is an "
            "approximation outside the guarantee"
        ),
        "source": source,
    }
    return conclude(
        plan, loss, plan.epsilon, delta, reasons, details,
        gradient_bound=grad_bound, smoothness=smooth,
    )  # fmt: skip


def _certify(plan: PeerPlan, loss: Loss) -> Certificate:
    return certify_objective(
        plan,
        loss,
        float(loss.L1) * plan.zeta,
        "Chaudhuri et al. 2011; Kifer et al. 2012, Theorem 2 (Gaussian LOP)",
    )


register_method(PeerMethod("lop", _certify))
