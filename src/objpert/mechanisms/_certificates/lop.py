"""LOP: Gaussian linear objective perturbation with the exact minimiser.

Chaudhuri, Monteleoni & Sarwate (2011) with Gaussian noise z ~ N(0, sigma^2 I) on the mean
form F + <z, w>, per-sample gradient bound g = L1 zeta and smoothness L2 zeta^2; under
replace-one neighbours (:mod:`objpert.certify._neighbours`) the first-order condition has
sensitivity 2 g / n. Two accountants (:data:`~.names.LOP_ACCOUNTANTS`), the plan's
``calibration``:

* ``profile``: the exact minimiser's privacy profile (Redberg, Koskela & Wang 2023,
  Section 3; :mod:`.redberg`), sigma the smallest that certifies by bisection, any ridge
  mu > 0 (the default is Kifer's floor below);
* ``kifer``: the closed form of Kifer, Smith & Thakurta (2012, Theorem 2; :mod:`.kifer`),
  mu >= 2 L2 zeta^2 / (n epsilon), sigma = 2 g sqrt(8 log(2/delta) + 4 epsilon) /
  (n epsilon), at the replace-one sensitivity 2 g;
* ``tightest`` (the planners' default): mu raised to Kifer's floor, then whichever of the
  two gives the smaller sigma at that mu. At mu >= Kifer's floor that is the profile:
  c0 = log(1 + L2 zeta^2 / (n mu)) <= epsilon / 2, and Kifer's sigma makes
  t^2/2 + t |Z| <= epsilon / 2 except with probability 2 Q(sqrt(2 log(2/delta))) <=
  delta / 2, so the profile certifies at most half of Kifer's delta at Kifer's sigma.
  The closed form stays available as ``kifer``.

The objective noise enters the objective and is never published added to a value: it
stays continuous.
"""

from __future__ import annotations

from typing import Any

from objpert._losses import Loss
from objpert._validation import check_positive, numeric_guard, optional, validated
from objpert.accounting._certificate import ReleaseCertificate
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.kifer import lop_delta, lop_mean_form
from objpert.mechanisms._certificates.names import lop_accountant
from objpert.mechanisms._certificates.plan import (
    DEFAULT_MAX_ITER,
    SOLVER_RULES,
    LOPClipPlan,
    LOPPlan,
    PeerInputs,
    PeerMethod,
    PeerPlan,
    conclude,
    register_method,
    ridge,
    solver_tolerance,
)
from objpert.mechanisms._certificates.redberg import (
    calibrate_exact_lop,
    exact_lop_constants,
    exact_lop_delta,
)

__all__ = [
    "SOURCES",
    "certify_objective",
    "objective_delta",
    "objective_noise",
    "objective_plan",
    "plan_lop",
    "ridge_reasons",
]


def ridge_reasons(mu: float, mu_min: float, epsilon_name: str = "epsilon") -> list[str]:
    """The failed condition mu >= 2 L2 zeta^2 / (n epsilon) of Kifer et al. (2012),
    Theorem 2 (in mean form), if it fails."""
    if mu >= mu_min:
        return []
    return [f"mu = {mu:.6g} < 2 L2 zeta^2 / (n {epsilon_name}) = {mu_min:.6g} (Kifer et al. 2012)"]


def objective_noise(
    accountant: str,
    n: int,
    grad_bound: float,
    smoothness: float,
    epsilon: float,
    delta: float,
    mu: float | None,
) -> tuple[float, float, str]:
    """(mu, sigma, the accountant that certifies them) for the objective noise at
    (epsilon, delta). ``kifer``: :func:`~.kifer.lop_mean_form`, mu raised to its floor
    2 L2 zeta^2 / (n epsilon). ``profile``: mu as given (that floor when None), sigma by
    :func:`~.redberg.calibrate_exact_lop`. ``tightest``: mu raised to Kifer's floor, then
    the accountant with the smaller sigma at that mu (the profile: module docstring); both
    are functions of the public constants alone."""
    name = lop_accountant(accountant)
    mu_min, sigma_kifer = lop_mean_form(n, grad_bound, smoothness, epsilon, delta)
    if name == "profile":
        mu_val = mu_min if mu is None else mu
        return mu_val, calibrate_exact_lop(n, grad_bound, smoothness, mu_val, epsilon, delta), name
    mu_val = ridge(mu, mu_min)
    if name == "tightest":
        sigma = calibrate_exact_lop(n, grad_bound, smoothness, mu_val, epsilon, delta)
        if sigma < sigma_kifer:
            return mu_val, sigma, "profile"
    return mu_val, sigma_kifer, "kifer"


def objective_delta(
    accountant: str,
    plan: PeerPlan,
    grad_bound: float,
    smoothness: float,
    epsilon: float,
    delta: float,
    epsilon_name: str = "epsilon",
) -> tuple[float, list[str], dict[str, Any]]:
    """(delta certified at epsilon, failed conditions, details) of the objective noise of
    ``plan`` under ``accountant``; ``delta`` is the target (Kifer's required sigma)."""
    name = lop_accountant(accountant)
    if name == "tightest":
        raise ParameterError(
            "a plan names the accountant that certifies it ('profile' or 'kifer'), not 'tightest'"
        )
    if name == "kifer":
        mu_min, sigma_req = lop_mean_form(plan.n, grad_bound, smoothness, epsilon, delta)
        reasons = ridge_reasons(plan.mu, mu_min, epsilon_name)
        value = lop_delta(plan.n, grad_bound, plan.sigma, epsilon)
        return value, reasons, {"mu_min": mu_min, "sigma_required": sigma_req}
    ratio, log_det = exact_lop_constants(plan.n, grad_bound, smoothness, plan.mu, plan.sigma)
    value = exact_lop_delta(plan.n, grad_bound, smoothness, plan.mu, plan.sigma, epsilon)
    return value, [], {"sensitivity_ratio": ratio, "log_det": log_det}


def objective_plan(
    method: str,
    inputs: PeerInputs,
    grad_bound: float,
    mu: float | None,
    tolerance: float | None,
    max_iter: int,
    accountant: str = "tightest",
    **fields: float,
) -> PeerPlan:
    """The plan of Gaussian LOP with per-sample gradient bound ``grad_bound``: (mu, sigma)
    by :func:`objective_noise` under ``accountant`` (the one that certifies them is the
    plan's ``accountant``), the solver tolerance by default 1e-9 ``grad_bound``."""
    mu_val, sigma, accountant = objective_noise(
        accountant, inputs.n, grad_bound, inputs.smoothness, inputs.epsilon, inputs.delta, mu
    )
    return inputs.plan(
        LOPClipPlan if method == "lop_clip" else LOPPlan,
        mu=mu_val,
        sigma=sigma,
        accountant=accountant,
        tolerance=solver_tolerance(tolerance, grad_bound),
        max_iter=max_iter,
        **fields,
    )


@numeric_guard
@validated(mu=optional(check_positive), **SOLVER_RULES)
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
    max_iter: int = DEFAULT_MAX_ITER,
    loss_params: dict | None = None,
    accountant: str = "tightest",
) -> PeerPlan:
    """Gaussian LOP, exact minimiser (Chaudhuri et al. 2011).

    ``accountant="profile"``: sigma the smallest whose exact-minimiser privacy profile
    (Redberg et al. 2023, Section 3; :func:`~.redberg.exact_lop_delta`) certifies the
    target at the plan's mu (``mu``, by default 2 L2 zeta^2 / (n epsilon)).
    ``accountant="kifer"``: (mu_min, sigma) = lop_mean_form(n, L1 zeta, L2 zeta^2, epsilon,
    delta) (Kifer et al. 2012, Theorem 2, at the replace-one sensitivity 2 L1 zeta),
    mu = max(mu, mu_min). ``"tightest"`` (default):
    mu = max(mu, mu_min) and the smaller sigma of the two there (:func:`objective_noise`);
    the plan's ``calibration`` names the accountant that certifies it. The guarantee is for
    the *exact* minimiser of F + <z, w>; ``tolerance`` (gradient norm, default 1e-9 L1 zeta) is the
    solver's stopping accuracy, reported but not covered: a finite tolerance is an
    approximation, the gap AMP (Iyengar et al. 2019) and Watkins & Arora (2026) close.
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params)
    return objective_plan("lop", inputs, inputs.gradient_bound, mu, tolerance, max_iter, accountant)


def certify_objective(
    plan: PeerPlan, loss: Loss, grad_bound: float, source: str
) -> ReleaseCertificate:
    """The certificate of Gaussian LOP at per-sample gradient bound ``grad_bound``: delta
    at the plan's epsilon under its accountant (``calibration``; :func:`objective_delta`)."""
    smooth = float(loss.L2) * plan.zeta**2
    delta, reasons, details = objective_delta(
        plan.accountant, plan, grad_bound, smooth, plan.epsilon, plan.delta
    )
    details = {
        **details,
        "accountant": plan.accountant,
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


#: The accountant's paper and result, for a certificate's ``source``.
SOURCES = {
    "profile": "Redberg, Koskela & Wang 2023, Section 3 (exact-minimiser privacy profile)",
    "kifer": "Kifer et al. 2012, Theorem 2",
}


def _certify(plan: PeerPlan, loss: Loss) -> ReleaseCertificate:
    return certify_objective(
        plan,
        loss,
        float(loss.L1) * plan.zeta,
        SOURCES.get(plan.accountant, "?") + " (Gaussian LOP; Chaudhuri et al. 2011)",
    )


register_method(PeerMethod("lop", _certify))
