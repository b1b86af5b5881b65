"""The peers' plan: :class:`PeerPlan`, its certificate, and the one builder of every plan.

A planner (:mod:`.lop`, :mod:`.lop_clip`, :mod:`.amp`, :mod:`.output`, :mod:`.noisy_gd`)
checks the public constants once (:meth:`PeerInputs.check`), chooses its noise and ridge,
and hands its fields to :meth:`PeerInputs.plan`, which attaches the certificate
recomputed from the plan's public fields by :func:`certify_peer` and raises a noise std
by steps of 2^-40 (relative) while rounding leaves the certificate a hair above the
target; a plan that does not certify its target is never returned. Each method
registers its certificate with :func:`register_method`; :func:`certify_peer` runs the
checks every plan shares and then the method's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar

from objpert._losses import Loss, get_loss, require_bounded_gradient
from objpert._validation import check_nonnegative, check_open_unit, check_positive, count, optional
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._plan import Plan
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.mechanisms._certificates.discrete import (
    GRID_BITS,
    discrete_gaussian_rho,
    grid_noise,
    grid_sensitivity,
    grid_sigma,
)
from objpert.mechanisms._certificates.names import ACCOUNTANTS, METHODS
from objpert.mechanisms._certificates.rules import Rule, check_fields, choice
from objpert.mechanisms._certificates.rules import grid_bits as grid_bits_rule

__all__ = [
    "DEFAULT_MAX_ITER",
    "DEFAULT_RELATIVE_TOLERANCE",
    "DISCRETE_NOISE",
    "MAX_NUDGES",
    "PLAN_TYPES",
    "SOLVER_RULES",
    "AMPPlan",
    "LOPClipPlan",
    "LOPPlan",
    "NoisyGDPlan",
    "OutputPerturbationPlan",
    "PeerInputs",
    "PeerMethod",
    "PeerPlan",
    "Stepped",
    "at_least_two_rows",
    "certify_peer",
    "conclude",
    "finish",
    "grid_details",
    "nudged",
    "register_method",
    "ridge",
    "solver_tolerance",
]

#: Default solver tolerance (gradient norm), relative to the per-sample gradient bound.
DEFAULT_RELATIVE_TOLERANCE = 1e-9
#: Default cap on solver iterations (a public compute budget; the tolerance is checked).
DEFAULT_MAX_ITER = 2000
#: The methods whose published value carries discrete noise on a grid, and its fields.
DISCRETE_NOISE = {"amp": "output_sigma", "output_perturbation": "sigma", "noisy_gd": "sigma"}

_NUDGE = 1.0 + 2.0**-40  # sigma is raised by this factor until rounding cannot break a target
#: How many nudges a plan may take before its planner gives up (a bug guard).
MAX_NUDGES = 200


@dataclass(frozen=True, kw_only=True)
class PeerPlan(Plan):
    """What every peer release's plan holds, chosen from public constants before touching
    data: the public constants, the target, the ridge ``mu``, the noise std ``sigma`` and
    the certificate. Each mechanism's own fields are in its subclass (:class:`LOPPlan`,
    :class:`LOPClipPlan`, :class:`AMPPlan`, :class:`OutputPerturbationPlan`,
    :class:`NoisyGDPlan`, and DP-SGD's and DP Newton's plans).
    """

    loss: str
    n: int
    d: int
    zeta: float
    epsilon: float  # target
    delta: float  # target
    mu: float
    sigma: float
    certificate: ReleaseCertificate | None = None
    loss_params: tuple[tuple[str, float], ...] = ()

    #: The rule of each public field the certificate reads (:func:`~.rules.check_fields`).
    field_rules: ClassVar[dict[str, Rule]] = {
        "n": count(2),
        "d": count(1),
        "zeta": check_positive,
        "epsilon": check_positive,
        "delta": check_open_unit,
        "sigma": check_positive,
        "mu": check_positive,
    }

    def loss_object(self) -> Loss:
        """The plan's loss, rebuilt from the registry with its public parameters."""
        return get_loss(self.loss, **dict(self.loss_params))

    def recertify(self) -> ReleaseCertificate:
        """Recompute the certificate from the plan's public fields alone, after checking
        them (a plan may have been built by hand or read from a file)."""
        check_fields(self, self.field_rules)
        return self.certify_checked()

    def certify_checked(self) -> ReleaseCertificate:
        """The certificate of fields already checked (a planner's own draft)."""
        return certify_peer(self)

    def to_dict(self) -> dict[str, Any]:
        """The plan's fields and its certificate as JSON-ready values."""
        out = {k: v for k, v in asdict(self).items() if k != "certificate"}
        out["mechanism"] = self.mechanism
        out["loss_params"] = [list(p) for p in self.loss_params]
        out["certificate"] = None if self.certificate is None else self.certificate.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PeerPlan:
        """Inverse of :meth:`to_dict` (the class named by its ``mechanism``)."""
        from objpert.accounting._certificate import certificate_from_dict

        fields = dict(data)
        plan_type = PLAN_TYPES.get(fields.pop("mechanism", None), cls)
        fields["loss_params"] = tuple(tuple(p) for p in fields.get("loss_params", ()))
        cert = fields.get("certificate")
        fields["certificate"] = None if cert is None else certificate_from_dict(cert)
        return plan_type(**fields)


@dataclass(frozen=True, kw_only=True)
class _Solved(PeerPlan):
    """A release that minimises the perturbed objective: the solver's gradient-norm
    ``tolerance`` ||grad F_priv(w)|| <= tolerance (AMP's gamma) and its public iteration
    cap ``max_iter``."""

    tolerance: float
    max_iter: int

    field_rules: ClassVar[dict[str, Rule]] = {
        **PeerPlan.field_rules,
        "tolerance": check_nonnegative,
        "max_iter": count(1),
    }


@dataclass(frozen=True, kw_only=True)
class LOPPlan(_Solved):
    """Gaussian objective perturbation: ``sigma`` is the std of the objective's noise z;
    ``accountant`` how its privacy is computed (``profile`` or ``kifer``:
    :data:`~.names.LOP_ACCOUNTANTS`)."""

    mechanism = "lop"
    accountant: str
    clip: float | None = None


@dataclass(frozen=True, kw_only=True)
class LOPClipPlan(LOPPlan):
    """LOP-Clip: :class:`LOPPlan` with per-sample gradients clipped to norm ``clip``."""

    mechanism = "lop_clip"
    field_rules: ClassVar[dict[str, Rule]] = {**LOPPlan.field_rules, "clip": check_positive}


@dataclass(frozen=True, kw_only=True)
class AMPPlan(_Solved):
    """Approximate minima perturbation: ``sigma`` the objective noise's std,
    ``output_sigma`` the output noise's (discrete, on the grid of ``grid_bits``:
    :func:`~.discrete.grid_noise`), the budget split into the objective part
    (``epsilon_objective``, ``delta_objective``, by ``accountant``:
    :data:`~.names.LOP_ACCOUNTANTS`) and the output part (``epsilon_output``,
    ``delta_output``, by ``gaussian_calibration``: :data:`~.names.GAUSSIAN_CALIBRATIONS`)."""

    mechanism = "amp"
    gaussian_calibration: str
    epsilon_objective: float
    delta_objective: float
    epsilon_output: float
    delta_output: float
    output_sigma: float
    grid_bits: int = GRID_BITS
    accountant: str

    field_rules: ClassVar[dict[str, Rule]] = {
        **_Solved.field_rules,
        "tolerance": check_positive,
        "epsilon_objective": check_positive,
        "epsilon_output": check_positive,
        "output_sigma": check_positive,
        "grid_bits": grid_bits_rule,
    }


@dataclass(frozen=True, kw_only=True)
class OutputPerturbationPlan(_Solved):
    """Gaussian output perturbation: ``sigma`` the std of the discrete noise on the exact
    minimiser (on the grid of ``grid_bits``), calibrated by ``gaussian_calibration``."""

    mechanism = "output_perturbation"
    gaussian_calibration: str
    grid_bits: int = GRID_BITS

    field_rules: ClassVar[dict[str, Rule]] = {**_Solved.field_rules, "grid_bits": grid_bits_rule}


@dataclass(frozen=True, kw_only=True)
class Stepped(PeerPlan):
    """A release of ``iterations`` noisy steps of size ``eta``, its privacy computed by
    ``accountant``."""

    accountant: str
    iterations: int
    eta: float

    field_rules: ClassVar[dict[str, Rule]] = {
        **PeerPlan.field_rules,
        "iterations": count(1),
        "eta": check_positive,
    }


@dataclass(frozen=True, kw_only=True)
class NoisyGDPlan(Stepped):
    """Noisy full-batch gradient descent: ``sigma`` the std of each step's discrete
    gradient noise (on the grid of ``grid_bits``); ``accountant``: ``zcdp`` or ``rdp``
    (:data:`~.names.ACCOUNTANTS`)."""

    mechanism = "noisy_gd"
    grid_bits: int = GRID_BITS

    field_rules: ClassVar[dict[str, Rule]] = {
        **Stepped.field_rules,
        "mu": check_nonnegative,
        "grid_bits": grid_bits_rule,
        "accountant": choice(ACCOUNTANTS),
    }


# ---------------------------------------------------------------- certificates

#: (plan, its loss) -> the method's certificate, after the checks every plan shares.
Certifier = Callable[[PeerPlan, Loss], ReleaseCertificate]


@dataclass(frozen=True)
class PeerMethod:
    """A peer method's certificate and what :func:`certify_peer` checks before it.

    ``bounded_gradient``: the certificate needs the loss's L1 (a bounded l'); every method
    but LOP-Clip.
    """

    name: str
    certify: Certifier
    bounded_gradient: bool = True


_REGISTERED: dict[str, PeerMethod] = {}


def register_method(method: PeerMethod) -> PeerMethod:
    """Make ``method`` the certificate :func:`certify_peer` uses for plans of its name (one
    of :data:`~.names.METHODS`)."""
    if method.name not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}; got {method.name!r}")
    _REGISTERED[method.name] = method
    return method


def certify_peer(plan: PeerPlan) -> ReleaseCertificate:
    """The certificate of ``plan`` from its public fields (its stored one is ignored); the
    fields are checked by the plan's planner or, at the privacy boundary, by
    :meth:`PeerPlan.recertify`."""
    method = _REGISTERED.get(plan.mechanism)
    if method is None:
        raise ParameterError(f"method must be one of {METHODS}; got {plan.mechanism!r}")
    loss = plan.loss_object()
    if method.bounded_gradient:
        require_bounded_gradient(loss, f"the {plan.mechanism} certificate")
    return method.certify(plan, loss)


def conclude(
    plan: PeerPlan,
    loss: Loss,
    epsilon: float,
    delta: float,
    reasons: list[str],
    details: dict[str, Any],
    *,
    iterations: int | None = None,
    **constants: float,
) -> ReleaseCertificate:
    """The certificate of a peer plan certifying (epsilon, delta) unless ``reasons`` name
    a failed condition: the plan's public constants (loss, L1, L2, n, d, zeta, mu, then
    ``constants``) and the method's ``details``."""
    public = {
        "loss": plan.loss,
        "loss_params": [list(p) for p in plan.loss_params],
        "L1": None if loss.L1 is None else float(loss.L1),
        "L2": float(loss.L2),
        "n": plan.n,
        "d": plan.d,
        "zeta": plan.zeta,
        "mu": plan.mu,
        **constants,
    }
    return ReleaseCertificate.conclude(
        plan.mechanism,
        float(epsilon),
        0.0,
        float(delta),
        reasons,
        iterations=iterations,
        threshold_iterations=None,
        sigma=float(plan.sigma),
        truncation="none",
        constants=public,
        details=details,
    )


def grid_details(sensitivity: float, sigma: float, d: int, bits: int) -> dict[str, float]:
    """The grid quantities of one discrete-noise release (certificate details): spacing,
    noise scale, grid sensitivity (:func:`~.discrete.grid_sensitivity`) and its rho
    (Canonne, Kamath & Steinke 2020, Theorem 14)."""
    gamma, units = grid_noise(sigma, bits)
    return {
        "grid_bits": bits,
        "grid_spacing": gamma,
        "noise_sigma": gamma * units,
        "grid_sensitivity": grid_sensitivity(sensitivity, sigma, d, bits),
        "rho": discrete_gaussian_rho(sensitivity, sigma, d, 1, bits),
    }


# ---------------------------------------------------------------- the builder


@dataclass(frozen=True)
class PeerInputs:
    """The public constants every peer plan starts from (checked by ``objpert.plan``)."""

    loss: Loss
    n: int
    d: int
    zeta: float
    epsilon: float
    delta: float

    @classmethod
    def check(
        cls,
        loss: str | Loss,
        n: int,
        d: int,
        zeta: float,
        epsilon: float,
        delta: float,
        loss_params: dict | None = None,
        *,
        bounded: bool = True,
    ) -> PeerInputs:
        """Build the loss and check what the peers need beyond the checked public
        constants: n >= 2 (a replace-one neighbour shares a row) and (``bounded``) a loss
        with a bounded l' (its L1)."""
        loss_obj = get_loss(loss, **(loss_params or {}))
        if bounded:
            require_bounded_gradient(loss_obj, "this mechanism's sensitivity")
        return cls(loss_obj, at_least_two_rows(n), d, zeta, epsilon, delta)

    @property
    def gradient_bound(self) -> float:
        """L1 zeta: the bound on a per-sample gradient l'(<x, w>, y) x."""
        return float(self.loss.L1) * self.zeta

    @property
    def smoothness(self) -> float:
        """L2 zeta^2: the bound on a per-sample Hessian l'' x x^T."""
        return float(self.loss.L2) * self.zeta**2

    def draft(self, plan_type: type[PeerPlan], **fields: Any) -> PeerPlan:
        """The plan of type ``plan_type`` with these public constants and ``fields``,
        without its certificate."""
        return plan_type(
            loss=self.loss.name,
            loss_params=tuple(sorted(self.loss.params().items())),
            n=self.n,
            d=self.d,
            zeta=self.zeta,
            epsilon=self.epsilon,
            delta=self.delta,
            **fields,
        )

    def plan(self, plan_type: type[PeerPlan], **fields: Any) -> PeerPlan:
        """:meth:`draft`, certified: :func:`finish`."""
        return finish(self.draft(plan_type, **fields))


def nudged(plan: PeerPlan, name: str) -> float:
    """The noise std ``name`` raised by one nudge; for discrete noise, to the next point of
    its grid (:func:`~.discrete.grid_sigma`), so a plan's sigma stays the noise scale
    exactly."""
    value = getattr(plan, name) * _NUDGE
    if DISCRETE_NOISE.get(plan.mechanism) == name:
        return grid_sigma(value, plan.grid_bits)
    return value


def finish(plan: PeerPlan) -> PeerPlan:
    """Attach the recomputed certificate, raising sigma by one :func:`nudged` step at a
    time if rounding left the certificate a hair above the target; refuse if it still
    fails."""
    for _ in range(MAX_NUDGES):
        cert = certify_peer(plan)
        if cert.certified and cert.delta <= plan.delta and cert.epsilon <= plan.epsilon:
            return replace(plan, certificate=cert)
        if cert.reasons and not all(r.startswith("delta >= 1") for r in cert.reasons):
            break
        plan = replace(plan, sigma=nudged(plan, "sigma"))
    raise UnreachableTargetError(  # a bug guard: never hand out an uncertified plan
        f"internal error: the {plan.mechanism} plan does not certify (epsilon={plan.epsilon}, "
        f"delta={plan.delta}): {cert.reasons or (cert.epsilon, cert.delta)}"
    )


def solver_tolerance(tolerance: float | None, grad_bound: float) -> float:
    """The solver's gradient-norm tolerance: ``tolerance``, or by default
    :data:`DEFAULT_RELATIVE_TOLERANCE` times the per-sample gradient bound."""
    if tolerance is None:
        return DEFAULT_RELATIVE_TOLERANCE * grad_bound
    return tolerance


def ridge(mu: float | None, mu_min: float) -> float:
    """The plan's ridge: max(mu, mu_min), or mu_min when ``mu`` is None."""
    return mu_min if mu is None else max(mu, mu_min)


def at_least_two_rows(n: int) -> int:
    """``n`` (a checked count), refused below 2: a replace-one neighbour shares a row."""
    if n < 2:
        raise ParameterError(f"n must be an integer >= 2 for this mechanism; got {n!r}")
    return n


#: The rules of a solved release's options (its planner's ``@validated``).
SOLVER_RULES: dict[str, Rule] = {"tolerance": optional(check_positive), "max_iter": count(1)}


#: mechanism -> the type of its plans (DP-SGD and DP Newton register theirs).
PLAN_TYPES: dict[str, type[PeerPlan]] = {
    cls.mechanism: cls
    for cls in (LOPPlan, LOPClipPlan, AMPPlan, OutputPerturbationPlan, NoisyGDPlan)
}
