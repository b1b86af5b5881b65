"""A differentially private Newton method: noisy gradients and noisy Hessians.

K Newton steps w_{k+1} = w_k - eta H~_k^{-1} g~_k from w_0 = 0 on the mean-form GLM
objective F(w) = (1/n) sum_i l(<x_i, w>, y_i) + (mu/2) ||w||^2, where g~_k is the
gradient plus N(0, s_g^2 I_d) and H~_k the Hessian plus a symmetric Gaussian matrix
(its upper triangle, diagonal included, i.i.d. N(0, s_H^2)): the noisy Newton method of
Avella-Medina, Bradshaw & Loh (2023), on the GLM losses of objpert (bounded l': the
bounded-influence condition of their privacy analysis). Replace-one
(:mod:`objpert.certify._neighbours`) sensitivities, from
the public constants alone (n public, ||x|| <= zeta, |l'| <= L1, 0 <= l'' <= L2):

* gradient: (1/n)(l'_i x_i - l'_j x'_j) has norm <= 2 L1 zeta / n
  (:func:`~objpert.certify.replace_one_sensitivity`; the ridge term mu w is
  the same on both datasets);
* Hessian: (1/n)(A - B) with A = l''_i x_i x_i^T, B = l''_j x'_j x'_j^T positive
  semidefinite of Frobenius norm <= L2 zeta^2 each, so ||A - B||_F^2 =
  ||A||_F^2 + ||B||_F^2 - 2 <A, B> <= 2 (L2 zeta^2)^2 as <A, B> = tr(AB) >= 0: a Frobenius
  sensitivity sqrt(2) L2 zeta^2 / n, which bounds the l2 norm of the upper triangle too.

With s_g = z 2 L1 zeta / n and s_H = z sqrt(2) L2 zeta^2 / n each step is two Gaussian
mechanisms of noise multiplier z; the K steps are 2K adaptively composed Gaussian
mechanisms (Dong, Roth & Su 2022, Corollary 3.3, exactly sqrt(2K)/z-GDP), accounted by
:func:`~objpert.accounting._gaussian_steps.noisy_gd_epsilon` (dp-accounting's privacy loss
distributions by default). Symmetrising, flooring the eigenvalues of H~ at mu and the
steps are post-processing. The noise is continuous (see :mod:`objpert.mechanisms._dp_newton`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from objpert._losses import Loss
from objpert._validation import check_positive, count, numeric_guard, validated
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._gaussian_steps import (
    calibrate_noise_multiplier,
    continuous_accountant,
    noisy_gd_epsilon,
)
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.mechanisms._certificates.dp_sgd import checked_inputs, finish_plan
from objpert.mechanisms._certificates.plan import PLAN_TYPES, PeerInputs, Stepped, conclude
from objpert.mechanisms._certificates.rules import Rule

__all__ = [
    "DEFAULT_DP_NEWTON_ITERATIONS",
    "DEFAULT_DP_NEWTON_MU",
    "DP_NEWTON_MAX_D",
    "DP_NEWTON_MAX_ITERATIONS",
    "DPNewtonPlan",
    "certify_dp_newton",
    "newton_sensitivities",
    "plan_dp_newton",
]

#: Default number of noisy Newton steps.
DEFAULT_DP_NEWTON_ITERATIONS = 5
#: Default ridge mu (a public constant; also the floor of the noisy Hessian's eigenvalues).
DEFAULT_DP_NEWTON_MU = 1e-2
#: The most Newton steps a plan may take.
DP_NEWTON_MAX_ITERATIONS = 10**4
#: The largest d a plan is made for (each step forms, perturbs and factors a dense d x d
#: Hessian: d Hessian-vector products and d(d+1)/2 noise draws).
DP_NEWTON_MAX_D = 1000


@dataclass(frozen=True, kw_only=True)
class DPNewtonPlan(Stepped):
    """A DP Newton plan: ``sigma`` is the noise multiplier z (each noise std over its
    sensitivity), ``iterations`` K, ``eta`` the Newton step, ``mu`` > 0 the ridge (and the
    floor of the noisy Hessian's eigenvalues), ``accountant`` the accountant."""

    mechanism = "dp_newton"

    field_rules: ClassVar[dict[str, Rule]] = {
        **Stepped.field_rules,
        "iterations": count(1, DP_NEWTON_MAX_ITERATIONS),
    }

    def certify_checked(self) -> ReleaseCertificate:
        return certify_dp_newton(self)


PLAN_TYPES[DPNewtonPlan.mechanism] = DPNewtonPlan


def newton_sensitivities(inputs: PeerInputs) -> tuple[float, float]:
    """(gradient, Hessian) replace-one l2 / Frobenius sensitivities: 2 L1 zeta / n and
    sqrt(2) L2 zeta^2 / n (derived in the module docstring)."""
    gradient = replace_one_sensitivity(inputs.gradient_bound) / inputs.n
    return gradient, math.sqrt(2.0) * inputs.smoothness / inputs.n


def certify_dp_newton(plan: DPNewtonPlan) -> ReleaseCertificate:
    """The certificate of a DP Newton plan from its public fields alone."""
    inputs = checked_inputs(plan, "dp_newton", bounded=True)
    K, z = plan.iterations, plan.sigma
    name = continuous_accountant(plan.accountant)
    sens_g, sens_h = newton_sensitivities(inputs)
    epsilon = noisy_gd_epsilon(plan.delta, 2 * K, z, name)
    details = {
        "accountant": name,
        "noise_multiplier": z,
        "gradient_sensitivity": sens_g,
        "hessian_sensitivity": sens_h,
        "gradient_noise_std": z * sens_g,
        "hessian_noise_std": z * sens_h,
        "mechanisms": 2 * K,
        "eta": plan.eta,
        "source": (
            "noisy Newton (Avella-Medina, Bradshaw & Loh 2023): 2K composed Gaussian "
            "mechanisms of multiplier z (Dong, Roth & Su 2022, Corollary 3.3), sensitivities "
            "2 L1 zeta / n (gradient) and sqrt(2) L2 zeta^2 / n (Hessian, Frobenius)"
        ),
    }
    return conclude(plan, inputs.loss, epsilon, plan.delta, [], details, iterations=K)


def _calibrate(epsilon: float, delta: float, count: int, name: str) -> float:
    """The smallest noise multiplier (to a relative 1e-8) certifying (epsilon, delta) for
    ``count`` Gaussian mechanisms under ``name``. Every accountant bounds the exact profile
    from above, so none certifies below the exact Gaussian-DP multiplier z0 (Dong, Roth &
    Su 2022, Corollary 3.3): the search is for the excess u in z = z0 (1 + u), bracketed
    by powers of ten from 1e-8 and then bisected; the result always passed."""
    z0 = calibrate_noise_multiplier(epsilon, delta, count, "gdp")

    def ok(u: float) -> bool:
        return noisy_gd_epsilon(delta, count, z0 * (1.0 + u), name) <= epsilon

    if ok(0.0):
        return z0
    lo, hi = 0.0, 1e-8
    while not ok(hi):
        lo, hi = hi, 10.0 * hi
        if hi > 1e12:
            raise UnreachableTargetError("no noise multiplier certifies this target")
    while hi - lo > 1e-8 * (1.0 + hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return z0 * (1.0 + hi)


@numeric_guard
@validated(mu=check_positive, iterations=count(1, DP_NEWTON_MAX_ITERATIONS), eta=check_positive)
def plan_dp_newton(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    mu: float = DEFAULT_DP_NEWTON_MU,
    iterations: int = DEFAULT_DP_NEWTON_ITERATIONS,
    eta: float = 1.0,
    accountant: str = "pld",
    loss_params: dict | None = None,
) -> DPNewtonPlan:
    """The DP Newton plan of smallest noise multiplier z certifying (epsilon, delta): K =
    ``iterations`` steps of size ``eta`` (1: pure Newton) with ridge ``mu`` > 0, z from
    :func:`_calibrate` for 2K Gaussian mechanisms
    under ``accountant`` (``pld``, ``gdp`` or ``rdp``). d is at most :data:`DP_NEWTON_MAX_D`."""
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params)
    if d > DP_NEWTON_MAX_D:
        raise ParameterError(f"d must be at most {DP_NEWTON_MAX_D} for DP Newton; got {d!r}")
    K, mu_val, eta_val = iterations, float(mu), float(eta)
    name = continuous_accountant(accountant)
    z = _calibrate(inputs.epsilon, inputs.delta, 2 * K, name)
    draft = inputs.draft(
        DPNewtonPlan, mu=mu_val, sigma=z, accountant=name, iterations=K, eta=eta_val
    )
    return finish_plan(draft)
