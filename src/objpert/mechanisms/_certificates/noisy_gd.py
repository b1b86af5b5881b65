"""Noisy full-batch gradient descent with discrete Gaussian gradient noise on a grid.

T steps of w <- w - eta g_t, g_t the mean gradient rounded to the grid plus discrete
Gaussian noise: T adaptively composed discrete Gaussian mechanisms (Canonne, Kamath &
Steinke 2020, Theorem 14) of sensitivity 2 L1 zeta / n plus the grid's gamma sqrt(d),
T rho-zCDP in all (Bun & Steinke 2016, Lemma 2.3), converted to (epsilon, delta) by
:mod:`.zcdp` under the accountants of :data:`~.names.ACCOUNTANTS`.
"""

from __future__ import annotations

from objpert._losses import Loss
from objpert._validation import (
    check_nonnegative,
    check_positive,
    count,
    numeric_guard,
    optional,
    validated,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._conversions import cdp_delta, cdp_epsilon, zcdp_composition
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.mechanisms._certificates.discrete import GRID_BITS, calibrate_discrete_gaussian
from objpert.mechanisms._certificates.names import ACCOUNTANTS
from objpert.mechanisms._certificates.plan import (
    NoisyGDPlan,
    PeerInputs,
    PeerMethod,
    PeerPlan,
    conclude,
    grid_details,
    register_method,
)
from objpert.mechanisms._certificates.rules import choice
from objpert.mechanisms._certificates.rules import grid_bits as grid_bits_rule

__all__ = ["DEFAULT_NOISY_GD_ITERATIONS", "NOISY_GD_MAX_ITERATIONS", "plan_noisy_gd"]

#: Default number of noisy gradient-descent steps.
DEFAULT_NOISY_GD_ITERATIONS = 100
#: Noisy GD sums its T grid-valued steps in int64 (objpert.mechanisms._peers.noisy_gd_clip).
NOISY_GD_MAX_ITERATIONS = 2**21


@numeric_guard
@validated(
    iterations=count(1, NOISY_GD_MAX_ITERATIONS),
    mu=check_nonnegative,
    eta=optional(check_positive),
    accountant=choice(ACCOUNTANTS),
    grid_bits=grid_bits_rule,
)
def plan_noisy_gd(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    iterations: int = DEFAULT_NOISY_GD_ITERATIONS,
    mu: float = 0.0,
    eta: float | None = None,
    accountant: str = "zcdp",
    loss_params: dict | None = None,
    grid_bits: int = GRID_BITS,
) -> PeerPlan:
    """Noisy full-batch gradient descent: T steps of w <- w - eta g_t from w_0 = 0, g_t the
    gradient rounded to the grid gamma Z plus gamma N_Z(0, s^2 I) (a fresh draw per step,
    (gamma, s) = :func:`~.discrete.grid_noise` (sigma)); release w_T = -eta (g_1 + ... + g_T).

    Each step is a grid discrete Gaussian on the mean gradient, whose replace-one
    sensitivity is 2 L1 zeta / n (:func:`~objpert.certify.replace_one_sensitivity`
    of the per-row bound L1 zeta, over n; the ridge term is data-independent given w), plus
    gamma sqrt(d) for the rounding (:func:`~.discrete.grid_sensitivity`): rho-zCDP by
    Canonne, Kamath & Steinke (2020), Theorem 14; the T adaptively composed steps are
    T rho-zCDP (Bun & Steinke 2016, Lemma 2.3) and the release is post-processing. sigma is
    the smallest on-grid scale certifying the target under ``accountant``: ``zcdp``
    (Corollary 13 of Canonne et al.; the certificate reports delta(epsilon)) or ``rdp``
    (their Proposition 12 at alpha T rho; the certificate reports epsilon(delta)).
    The Gaussian-DP and PLD compositions hold for continuous Gaussian noise only
    (:mod:`objpert.accounting._gaussian_steps`) and are not used for the discrete noise.
    ``eta`` defaults to 1/(mu + L2 zeta^2).
    No last-iterate amplification is claimed.
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params)
    T, mu_val, name, bits = iterations, float(mu), accountant, grid_bits
    eta_val = 1.0 / (mu_val + inputs.smoothness) if eta is None else eta
    sens = replace_one_sensitivity(inputs.gradient_bound) / inputs.n
    report = "delta" if name == "zcdp" else "epsilon"
    sigma = calibrate_discrete_gaussian(
        sens, inputs.d, inputs.epsilon, inputs.delta, T, bits, report=report
    )
    return inputs.plan(
        NoisyGDPlan, mu=mu_val, sigma=sigma, accountant=name, iterations=T, eta=eta_val,
        grid_bits=bits,
    )  # fmt: skip


def _certify(plan: PeerPlan, loss: Loss) -> ReleaseCertificate:
    g = float(loss.L1) * plan.zeta
    T = plan.iterations
    reasons = []
    if T > NOISY_GD_MAX_ITERATIONS:
        reasons.append(f"T = {T} > 2^21 steps (the int64 sum of the grid steps)")
    sens = replace_one_sensitivity(g) / plan.n
    grid = grid_details(sens, plan.sigma, plan.d, plan.grid_bits)
    rho = zcdp_composition(grid["rho"], T)
    if plan.accountant == "zcdp":
        epsilon = plan.epsilon
        delta = cdp_delta(rho, epsilon)
    else:
        delta = plan.delta
        epsilon = cdp_epsilon(rho, delta)
    details = {
        "accountant": plan.accountant,
        "sensitivity": sens,
        "noise_multiplier": grid["noise_sigma"] / sens,
        **grid,
        "rho_total": rho,
        "eta": plan.eta,
        "source": (
            "T adaptively composed grid discrete Gaussians: Canonne, Kamath & Steinke 2020, "
            "Theorem 14 (rho-zCDP per step, sensitivity + gamma sqrt(d)); Bun & Steinke "
            "2016, Lemma 2.3 (T rho); Canonne et al. 2020, Corollary 13 (accountant 'zcdp', "
            "delta at epsilon) or Proposition 12 ('rdp': epsilon at delta; "
            "dp-accounting's PLD models continuous noise and is not used)"
        ),
    }
    return conclude(plan, loss, epsilon, delta, reasons, details, iterations=T, gradient_bound=g)


register_method(PeerMethod("noisy_gd", _certify))
