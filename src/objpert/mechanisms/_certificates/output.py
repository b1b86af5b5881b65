"""Output perturbation of the regularised minimiser (Chaudhuri, Monteleoni & Sarwate
2011, Section 4), with discrete Gaussian noise on a grid (:mod:`.discrete`).

The L2 sensitivity of the minimiser under replace-one neighbours
(:mod:`objpert.certify._neighbours`) is 2 L1 zeta / (n mu) (plus the solver's stopping
error), and the rounding to the grid adds gamma sqrt(d).
"""

from __future__ import annotations

import math

from objpert._losses import Loss
from objpert._special import log_over
from objpert._validation import (
    check_computed,
    check_positive,
    count,
    numeric_guard,
    optional,
    validated,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._conversions import cdp_delta
from objpert.certify._neighbours import replace_one_sensitivity, two_radii
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.discrete import (
    GRID_BITS,
    grid_gaussian_sigma,
)
from objpert.mechanisms._certificates.names import GAUSSIAN_CALIBRATIONS
from objpert.mechanisms._certificates.plan import (
    DEFAULT_MAX_ITER,
    OutputPerturbationPlan,
    PeerInputs,
    PeerMethod,
    PeerPlan,
    conclude,
    grid_details,
    register_method,
    solver_tolerance,
)
from objpert.mechanisms._certificates.rules import choice
from objpert.mechanisms._certificates.rules import grid_bits as grid_bits_rule

__all__ = ["default_output_mu", "output_sensitivity", "plan_output_perturbation"]


def default_output_mu(
    n: int, d: int, grad_bound: float, epsilon: float, delta: float, radius: float = 1.0
) -> float:
    """A public default ridge for output perturbation: the mu balancing the regularisation
    bias (mu/2) W^2 against the noise term L1 zeta sigma sqrt(d), with sigma ~
    2 L1 zeta sqrt(2 log(1.25/delta)) / (n mu epsilon) (Dwork & Roth 2014, Theorem A.1):
    mu = 2 L1 zeta sqrt(c sqrt(d)/(n eps))/W, c = sqrt(2 log(1.25/delta)). A heuristic from
    public values only; pass ``mu`` to override."""
    c = math.sqrt(2.0 * log_over(1.25, delta))
    mu = 2.0 * grad_bound * math.sqrt(c * math.sqrt(d) / (n * epsilon)) / radius
    why = f"grad_bound {grad_bound:g} over radius {radius:g}: give mu"
    return check_computed("the default ridge mu", mu, why)


def output_sensitivity(n: int, grad_bound: float, mu: float, tolerance: float = 0.0) -> float:
    """L2 sensitivity of an approximate minimiser of the mean-form objective.

    Exact minimisers of replace-one neighbouring objectives differ by at most
    2 L1 zeta / (n mu) (Chaudhuri et al. 2011, Corollary 8, in mean form: the objectives
    differ by a (2 L1 zeta / n)-Lipschitz function,
    :func:`~objpert.certify.replace_one_sensitivity` of L1 zeta over n, and F
    is mu-strongly convex). A deterministic solver stopped at ||grad F(w)|| <= tolerance
    is within tolerance / mu of the exact minimiser, so its output has sensitivity
    (2 L1 zeta / n + 2 tolerance) / mu (:func:`~objpert.certify._neighbours.two_radii`).
    """
    value = (replace_one_sensitivity(grad_bound) / n + two_radii(tolerance)) / mu
    if not math.isfinite(value):
        raise ParameterError(
            f"the output sensitivity overflows: mu = {mu!r} is too small for grad_bound "
            f"{grad_bound!r} and tolerance {tolerance!r}"
        )
    return value


@numeric_guard
@validated(
    mu=optional(check_positive),
    radius=check_positive,
    tolerance=optional(check_positive),
    gaussian_calibration=choice(GAUSSIAN_CALIBRATIONS),
    max_iter=count(1),
    grid_bits=grid_bits_rule,
)
def plan_output_perturbation(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    radius: float = 1.0,
    tolerance: float | None = None,
    gaussian_calibration: str = "analytic",
    max_iter: int = DEFAULT_MAX_ITER,
    loss_params: dict | None = None,
    grid_bits: int = GRID_BITS,
) -> PeerPlan:
    """Gaussian output perturbation (Chaudhuri et al. 2011, Section 4), discrete noise.

    Release gamma (rint(w / gamma) + Y), Y ~ N_Z(0, s^2)^d, w the minimiser of F to the
    tolerance and (gamma, s) = :func:`~.discrete.grid_noise` (sigma): the released value
    lies on the grid gamma Z. Sensitivity (2 L1 zeta / n + 2 tolerance)/mu
    (:func:`output_sensitivity`: the tolerance term covers the solver's stopping error)
    plus gamma sqrt(d) for the rounding (:func:`~.discrete.grid_sensitivity`); delta from
    Canonne, Kamath & Steinke (2020), Theorem 14 and Corollary 13. sigma is the smallest
    on-grid scale with delta <= target (``gaussian_calibration="analytic"``) or the classical
    formula at the grid sensitivity (``"classical"``, epsilon < 1). ``mu`` defaults to
    :func:`default_output_mu` (comparator radius ``radius``).
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params)
    g = inputs.gradient_bound
    if mu is None:
        mu_val = default_output_mu(inputs.n, inputs.d, g, inputs.epsilon, inputs.delta, radius)
    else:
        mu_val = mu
    tol = solver_tolerance(tolerance, g)
    bits = grid_bits
    sens = output_sensitivity(inputs.n, g, mu_val, tol)
    calibration = gaussian_calibration
    sigma = grid_gaussian_sigma(calibration, sens, inputs.d, inputs.epsilon, inputs.delta, bits)
    return inputs.plan(
        OutputPerturbationPlan,
        mu=mu_val,
        sigma=sigma,
        gaussian_calibration=calibration,
        tolerance=tol,
        max_iter=max_iter,
        grid_bits=bits,
    )


def _certify(plan: PeerPlan, loss: Loss) -> ReleaseCertificate:
    g = float(loss.L1) * plan.zeta
    tol = plan.tolerance
    sens = output_sensitivity(plan.n, g, plan.mu, tol)
    grid = grid_details(sens, plan.sigma, plan.d, plan.grid_bits)
    delta = cdp_delta(grid["rho"], plan.epsilon)
    details = {
        "sensitivity": sens,
        "tolerance": tol,
        **grid,
        "source": (
            "Chaudhuri et al. 2011 (output perturbation); discrete Gaussian on the grid: "
            "Canonne, Kamath & Steinke 2020, Theorem 14 and Corollary 13, sensitivity + "
            "gamma sqrt(d)"
        ),
    }
    return conclude(plan, loss, plan.epsilon, delta, [], details, gradient_bound=g)


register_method(PeerMethod("output_perturbation", _certify))
