"""Minibatch DP-SGD with Poisson subsampling, accounted by privacy loss distributions.

T steps, each on a batch that contains every row independently with probability
q = b / n (b the public expected batch size), of the sum of the per-example gradients
clipped to norm C plus N(0, z^2 C^2 I) (Abadi et al. 2016, Algorithm 1; z the noise
multiplier). Under replace-one neighbours with n public (the relation of every objpert
certificate: :mod:`objpert.certify._neighbours`, docs/threat-model.md) one step is the
Poisson-subsampled Gaussian mechanism whose dominating pair is (1 - q) N(0, z^2) + q
N(-1, z^2) against (1 - q) N(0, z^2) + q N(1, z^2) (Zhu, Dong & Wang 2022, the
substitution relation under Poisson subsampling; dp-accounting's
``NeighboringRelation.REPLACE_ONE``, whose "sensitivity" 1 is the norm bound C of one
row's contribution, a shift of 2 C at q = 1).
The T adaptively composed steps are accounted by the self-composition of that privacy
loss distribution (Koskela, Jalko & Honkela 2020; Doroshenko et al. 2022, the
connect-the-dots pessimistic discretisation of dp-accounting), the accountant of Opacus
and TF Privacy. The release, the last iterate, is post-processing of the T noisy sums.

The noise is continuous Gaussian: the privacy loss distribution of a Poisson-subsampled
multivariate discrete Gaussian is not available, so the grid of noisy GD's discrete noise
(:mod:`.discrete`) cannot be accounted here (see the module docstring of
:mod:`objpert.mechanisms._dp_sgd` for what that leaves outside the certificate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

from objpert._losses import Loss
from objpert._validation import (
    check_int,
    check_nonnegative,
    check_positive,
    count,
    numeric_guard,
    optional,
    validated,
)
from objpert.accounting._bisection import smallest_passing
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._gaussian_mechanism import calibrate_gaussian
from objpert.accounting._gaussian_steps import (
    SUBSAMPLED_DISCRETIZATION,
    SUBSAMPLED_MAX_STEPS,
    SUBSAMPLED_MIN_NOISE,
    subsampled_gaussian_epsilon,
)
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.mechanisms._certificates.plan import (
    PLAN_TYPES,
    PeerInputs,
    PeerPlan,
    Stepped,
    conclude,
)
from objpert.mechanisms._certificates.rules import Rule, choice
from objpert.mechanisms._certificates.rules import (
    discretization as discretization_rule,
)

__all__ = [
    "DEFAULT_DP_SGD_EPOCHS",
    "DPSGDPlan",
    "certify_dp_sgd",
    "checked_inputs",
    "finish_plan",
    "plan_dp_sgd",
]

#: Default number of passes over the data (T = ceil(epochs n / b) steps).
DEFAULT_DP_SGD_EPOCHS = 10


def checked_inputs(plan: PeerPlan, method: str, *, bounded: bool) -> PeerInputs:
    """The plan's public constants and loss (:meth:`~.plan.PeerInputs.check`)."""
    if plan.mechanism != method:
        raise ParameterError(f"this certificate is for {method!r} plans; got {plan.mechanism!r}")
    return PeerInputs.check(
        plan.loss, plan.n, plan.d, plan.zeta, plan.epsilon, plan.delta,
        dict(plan.loss_params), bounded=bounded,
    )  # fmt: skip


def finish_plan(plan: PeerPlan) -> PeerPlan:
    """``plan`` with its certificate recomputed (the planner's fields need no check);
    refuse one that misses its target."""
    cert = plan.certify_checked()
    if not (cert.certified and cert.epsilon <= plan.epsilon and cert.delta <= plan.delta):
        raise UnreachableTargetError(  # a bug guard: never hand out an uncertified plan
            f"internal error: the {plan.mechanism} plan does not certify: "
            f"{cert.reasons or (cert.epsilon, cert.delta)}"
        )
    return replace(plan, certificate=cert)


@dataclass(frozen=True, kw_only=True)
class DPSGDPlan(Stepped):
    """A DP-SGD plan: ``sigma`` is the noise multiplier z (std of the noise on the sum of
    the clipped gradients, over C), ``clip`` the norm C, ``batch_size`` the expected batch
    b (rate q = b / n), ``iterations`` T, ``eta`` the step, ``accountant`` the accountant
    (``pld``), ``discretization`` the privacy loss discretisation interval."""

    mechanism = "dp_sgd"
    clip: float
    batch_size: int
    discretization: float = SUBSAMPLED_DISCRETIZATION

    field_rules: ClassVar[dict[str, Rule]] = {
        **Stepped.field_rules,
        "iterations": count(1, SUBSAMPLED_MAX_STEPS),
        "batch_size": count(1),
        "clip": check_positive,
        "mu": check_nonnegative,
        "discretization": discretization_rule,
        "accountant": choice(("pld",)),
    }

    @property
    def sampling_rate(self) -> float:
        return self.batch_size / self.n

    def certify_checked(self) -> ReleaseCertificate:
        return certify_dp_sgd(self)


PLAN_TYPES[DPSGDPlan.mechanism] = DPSGDPlan


def certify_dp_sgd(plan: DPSGDPlan) -> ReleaseCertificate:
    """The certificate of a DP-SGD plan from its public fields alone."""
    inputs = checked_inputs(plan, "dp_sgd", bounded=False)
    loss = inputs.loss
    T, b, C, z = plan.iterations, plan.batch_size, plan.clip, plan.sigma
    disc = plan.discretization
    q = b / plan.n
    reasons = []
    epsilon = math.inf
    if b > plan.n:
        reasons.append(f"batch_size = {b} > n = {plan.n}")
    elif z < SUBSAMPLED_MIN_NOISE:
        reasons.append(f"noise multiplier {z:.3g} < {SUBSAMPLED_MIN_NOISE} is not accounted")
    else:
        epsilon = subsampled_gaussian_epsilon(plan.delta, T, q, z, disc)
    details = {
        "accountant": "pld",
        "neighboring_relation": "replace_one",
        "noise_multiplier": z,
        "noise_std": z * C / b,  # on the averaged gradient
        "sampling_rate": q,
        "discretization": disc,
        "eta": plan.eta,
        "source": (
            "T composed Poisson-subsampled Gaussian mechanisms (Abadi et al. 2016, "
            "Algorithm 1), replace-one dominating pair (Zhu, Dong & Wang 2022), composed "
            "by dp-accounting's privacy loss distributions (pessimistic discretisation)"
        ),
    }
    return conclude(
        plan, loss, epsilon, plan.delta, reasons, details, iterations=T,
        clip=C, batch_size=b,
    )  # fmt: skip


@numeric_guard
@validated(
    epochs=optional(check_positive),
    iterations=optional(count(1, SUBSAMPLED_MAX_STEPS)),
    clip=optional(check_positive),
    mu=check_nonnegative,
    eta=optional(check_positive),
    accountant=choice(("pld",)),
    discretization=discretization_rule,
)
def plan_dp_sgd(
    loss: str | Loss,
    *,
    n: int,
    d: int,
    zeta: float,
    epsilon: float,
    delta: float,
    batch_size: int | None = None,
    epochs: float | None = None,
    iterations: int | None = None,
    clip: float | None = None,
    mu: float = 0.0,
    eta: float | None = None,
    accountant: str = "pld",
    discretization: float = SUBSAMPLED_DISCRETIZATION,
    loss_params: dict | None = None,
) -> DPSGDPlan:
    """The DP-SGD plan of smallest noise multiplier certifying (epsilon, delta).

    Hyperparameters follow a public rule, never the data: ``batch_size`` b defaults to
    floor(sqrt(n)); T = ``iterations``, or ceil(epochs n / b) with ``epochs`` (default
    :data:`DEFAULT_DP_SGD_EPOCHS`; give one of the two); ``clip`` C defaults to L1 zeta,
    the bound on every per-example gradient l'(<x, w>, y) x of a bounded-gradient loss (so
    clipping is never active; give C for a loss without L1); ``eta`` defaults to
    1/(mu + L2 zeta^2), the inverse of the smoothness of F. z is found by bisection on
    :func:`~objpert.accounting._gaussian_steps.subsampled_gaussian_epsilon`
    (:func:`~objpert.accounting._bisection.smallest_passing`, relative 1e-6).
    """
    inputs = PeerInputs.check(loss, n, d, zeta, epsilon, delta, loss_params, bounded=clip is None)
    b = (
        max(1, math.isqrt(inputs.n))
        if batch_size is None
        else check_int("batch_size", batch_size, 1, inputs.n)
    )
    if iterations is not None and epochs is not None:
        raise ParameterError("give iterations or epochs, not both")
    if iterations is None:
        e = DEFAULT_DP_SGD_EPOCHS if epochs is None else epochs
        T = check_int("iterations", math.ceil(e * inputs.n / b), 1, SUBSAMPLED_MAX_STEPS)
    else:
        T = iterations
    C = inputs.gradient_bound if clip is None else clip
    mu_val = float(mu)
    eta_val = 1.0 / (mu_val + inputs.smoothness) if eta is None else eta
    disc = float(discretization)
    q = b / inputs.n

    def ok(z: float) -> bool:
        if z < SUBSAMPLED_MIN_NOISE:
            return False
        try:
            return subsampled_gaussian_epsilon(delta, T, q, z, disc) <= epsilon
        except ParameterError:  # the arguments are valid: only a PLD too large to build
            return False  # is refused, at a z too small (more noise is never less private)

    # a start near the answer: q times the full-batch calibration at the replace-one
    # sensitivity 2C (per unit C)
    full = q * calibrate_gaussian(math.sqrt(T), epsilon, delta)
    start = max(SUBSAMPLED_MIN_NOISE, replace_one_sensitivity(full))
    z = smallest_passing(ok, start, limit=1e12, rtol=1e-6)
    draft = inputs.draft(
        DPSGDPlan, mu=mu_val, sigma=z, accountant="pld", iterations=T, eta=eta_val,
        clip=C, batch_size=b, discretization=disc,
    )  # fmt: skip
    return finish_plan(draft)
