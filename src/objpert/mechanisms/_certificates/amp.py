"""AMP: Approximate Minima Perturbation (Iyengar, Near, Song, Thakkar, Thakurta & Wang
2019, Algorithm 1).

LOP (:mod:`.lop`, either accountant) at (epsilon1, delta1), solved only to gradient norm
gamma, plus
discrete Gaussian output noise on a grid (:mod:`.discrete`) at (epsilon2, delta2) for the
optimisation error; adaptive composition gives (epsilon1 + epsilon2, delta1 + delta2).
"""

from __future__ import annotations

import math
from dataclasses import replace

from objpert._losses import Loss
from objpert._validation import (
    check_open_unit,
    check_positive,
    count,
    numeric_guard,
    optional,
    validated,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._composition import basic, basic_profile
from objpert.accounting._conversions import cdp_delta
from objpert.certify._neighbours import two_radii
from objpert.exceptions import ParameterError
from objpert.mechanisms._certificates.discrete import (
    GRID_BITS,
    grid_gaussian_sigma,
)
from objpert.mechanisms._certificates.lop import SOURCES, objective_delta, objective_noise
from objpert.mechanisms._certificates.names import GAUSSIAN_CALIBRATIONS
from objpert.mechanisms._certificates.plan import (
    DEFAULT_MAX_ITER,
    MAX_NUDGES,
    AMPPlan,
    PeerInputs,
    PeerMethod,
    PeerPlan,
    certify_peer,
    conclude,
    finish,
    grid_details,
    nudged,
    register_method,
    solver_tolerance,
)
from objpert.mechanisms._certificates.rules import choice
from objpert.mechanisms._certificates.rules import grid_bits as grid_bits_rule

__all__ = ["DEFAULT_OUTPUT_SHARE", "plan_amp"]

#: Default share of (epsilon, delta) AMP spends on its output noise (Iyengar et al.'s code).
DEFAULT_OUTPUT_SHARE = 0.01


def _split(total: float, share: float) -> tuple[float, float]:
    """(first, second) with second = share * total and first + second <= total exactly
    (``share`` in (0, 1), checked by the planner)."""
    second = share * total
    first = total - second
    while first + second > total:
        first = math.nextafter(first, 0.0)
    return first, second


@numeric_guard
@validated(
    mu=optional(check_positive),
    gamma=optional(check_positive),
    output_share=check_open_unit,
    output_delta_share=optional(check_open_unit),
    gaussian_calibration=choice(GAUSSIAN_CALIBRATIONS),
    max_iter=count(1),
    grid_bits=grid_bits_rule,
)
def plan_amp(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float | None = None,
    gamma: float | None = None,
    output_share: float = DEFAULT_OUTPUT_SHARE,
    output_delta_share: float | None = None,
    gaussian_calibration: str = "analytic",
    max_iter: int = DEFAULT_MAX_ITER,
    loss_params: dict | None = None,
    grid_bits: int = GRID_BITS,
    accountant: str = "tightest",
) -> PeerPlan:
    """Approximate Minima Perturbation (Iyengar et al. 2019, Algorithm 1), mean form.

    Split epsilon = epsilon1 + epsilon2 and delta = delta1 + delta2 (epsilon2 =
    ``output_share`` epsilon, delta2 = ``output_delta_share`` delta, default the same
    share). Objective part: Gaussian LOP at (epsilon1, delta1) under ``accountant``
    (:func:`~.lop.objective_noise`: ``profile``, the exact privacy profile of Redberg et al.
    2023, Section 3, at mu (default 2 L2 zeta^2 / (n epsilon1)); ``kifer``, Kifer et al.
    2012, Theorem 2, mu = max(mu, mu_min(epsilon1)); ``tightest``, the default, the one
    with the smaller sigma, recorded in the plan's ``accountant``). The solver stops at
    ||grad F_priv(w)|| <= gamma (default 1e-9 L1 zeta; Iyengar et al. use 1/n^2), so
    ||w - w*|| <= gamma / mu by mu-strong convexity.

    Output part: the exact minimiser w* is (epsilon1, delta1)-DP; given w* (and the data),
    the noise b = -grad F(w*; S) and hence the deterministic solver's output are fixed, and
    for neighbours sharing w* the two approximate minimisers lie within gamma/mu of w*:
    sensitivity 2 gamma / mu (:func:`~objpert.certify._neighbours.two_radii`, a triangle
    inequality whatever the neighbouring relation). The output noise b2 is the grid
    discrete Gaussian (:func:`~.discrete.grid_noise`, k = ``grid_bits``): sensitivity 2 gamma / mu +
    gamma_grid sqrt(d) (:func:`~.discrete.grid_sensitivity`), delta2 from Canonne, Kamath
    & Steinke (2020), Theorem 14 and Corollary 13; output_sigma is the smallest on-grid
    scale with delta2 <= its share (``gaussian_calibration="analytic"``) or the classical formula
    at the grid sensitivity (``"classical"``, epsilon2 < 1;
    :func:`~.discrete.classical_grid_sigma`). Adaptive composition and
    post-processing give (epsilon1 + epsilon2, delta1 + delta2)-DP.
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params)
    calibration = gaussian_calibration
    eps1, eps2 = _split(inputs.epsilon, output_share)
    d_share = output_share if output_delta_share is None else output_delta_share
    delta1, delta2 = _split(inputs.delta, d_share)
    g = inputs.gradient_bound
    mu_val, sigma1, accountant = objective_noise(
        accountant, inputs.n, g, inputs.smoothness, eps1, delta1, mu
    )
    gamma_val = solver_tolerance(gamma, g)
    bits = grid_bits
    sens = two_radii(gamma_val / mu_val)
    if not math.isfinite(sens):
        raise ParameterError(
            f"the output sensitivity 2 gamma / mu overflows: gamma = {gamma_val!r} is too "
            f"large for mu = {mu_val!r}"
        )
    sigma2 = grid_gaussian_sigma(calibration, sens, inputs.d, eps2, delta2, bits)
    plan = inputs.draft(
        AMPPlan,
        mu=mu_val,
        sigma=sigma1,
        gaussian_calibration=calibration,
        tolerance=gamma_val,
        max_iter=max_iter,
        epsilon_objective=eps1,
        delta_objective=delta1,
        epsilon_output=eps2,
        delta_output=delta2,
        output_sigma=sigma2,
        grid_bits=bits,
        accountant=accountant,
    )
    # nudge both noises together: each part's delta must fall below its own share
    for _ in range(MAX_NUDGES):
        cert = certify_peer(plan)
        d1, d2 = cert.details["delta_objective"], cert.details["delta_output"]
        if cert.certified and d1 <= delta1 and d2 <= delta2 and cert.delta <= inputs.delta:
            break
        plan = replace(
            plan,
            sigma=nudged(plan, "sigma") if d1 > delta1 else plan.sigma,
            output_sigma=nudged(plan, "output_sigma") if d2 > delta2 else plan.output_sigma,
        )
    return finish(plan)


def _certify(plan: PeerPlan, loss: Loss) -> ReleaseCertificate:
    g = float(loss.L1) * plan.zeta
    smooth = float(loss.L2) * plan.zeta**2
    eps1, eps2 = plan.epsilon_objective, plan.epsilon_output
    gamma, out_sigma = plan.tolerance, plan.output_sigma
    delta1, reasons, objective = objective_delta(
        plan.accountant, plan, g, smooth, eps1, plan.delta_objective, "epsilon1"
    )
    sens_out = two_radii(gamma / plan.mu)
    grid = grid_details(sens_out, out_sigma, plan.d, plan.grid_bits)
    delta2 = cdp_delta(grid["rho"], eps2)
    details = {
        **objective,
        "accountant": plan.accountant,
        "epsilon_objective": eps1,
        "delta_objective": delta1,
        "epsilon_output": eps2,
        "delta_output": delta2,
        "gamma": gamma,
        "output_sensitivity": sens_out,
        "output_sigma": out_sigma,
        **{f"output_{k}": v for k, v in grid.items()},
        "source": (
            "Iyengar et al. 2019, Algorithm 1 (AMP); "
            + SOURCES.get(plan.accountant, "?")
            + " (objective noise b1, continuous); output noise b2 on the grid: Canonne, "
            "Kamath & Steinke 2020, Theorem 14 and Corollary 13, sensitivity + gamma sqrt(d)"
        ),
    }
    return conclude(
        plan, loss, basic([eps1, eps2], [0.0, 0.0])[0], basic_profile([delta1, delta2]), reasons,
        details,
        gradient_bound=g, smoothness=smooth,
    )  # fmt: skip


register_method(PeerMethod("amp", _certify))
