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
from typing import Any

from objpert.accounting.certificate import ReleaseCertificate, check_target_delta
from objpert.accounting.plan import Plan
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.losses import Loss, get_loss, require_bounded_gradient
from objpert.mechanisms.certificates.discrete import (
    GRID_BITS,
    check_grid_bits,
    discrete_gaussian_rho,
    grid_noise,
    grid_sensitivity,
    grid_sigma,
)
from objpert.mechanisms.certificates.names import METHODS
from objpert.validation import check_int, check_nonnegative, check_open_unit, check_positive

__all__ = [
    "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_RELATIVE_TOLERANCE",
    "DISCRETE_NOISE",
    "MAX_NUDGES",
    "PeerInputs",
    "PeerMethod",
    "PeerPlan",
    "certify_peer",
    "conclude",
    "finish",
    "grid_details",
    "iteration_budget",
    "nudged",
    "register_method",
    "ridge",
    "solver_tolerance",
]

#: Default solver tolerance (gradient norm), relative to the per-sample gradient bound.
DEFAULT_RELATIVE_TOLERANCE = 1e-9
#: Default cap on solver iterations (a public compute budget; the tolerance is checked).
DEFAULT_MAX_ITERATIONS = 2000
#: The methods whose published value carries discrete noise on a grid, and its fields.
DISCRETE_NOISE = {"amp": "output_sigma", "output_perturbation": "sigma", "noisy_gd": "sigma"}

_NUDGE = 1.0 + 2.0**-40  # sigma is raised by this factor until rounding cannot break a target
#: How many nudges a plan may take before its planner gives up (a bug guard).
MAX_NUDGES = 200


@dataclass(frozen=True)
class PeerPlan(Plan):
    """Everything a peer release needs, chosen from public constants before touching data.

    ``sigma`` is the mechanism's Gaussian std: of the objective perturbation z (``lop``,
    ``lop_clip``, ``amp``), of the output noise (``output_perturbation``), of the per-step
    gradient noise (``noisy_gd``). ``output_sigma`` is AMP's output noise. ``tolerance``
    is the solver's gradient-norm tolerance ||grad F_priv(w)|| <= tolerance (AMP's gamma).
    ``calibration`` is the Gaussian calibration of the published noise (``analytic`` or
    ``classical``: :data:`~.names.GAUSSIAN_CALIBRATIONS`), the accountant of ``noisy_gd``
    (``zcdp`` or ``rdp``: :data:`~.names.ACCOUNTANTS`) or the accountant of LOP
    and LOP-Clip (``profile`` or ``kifer``: :data:`~.names.LOP_ACCOUNTANTS`).
    ``grid_bits`` is the public k of the grid of the
    published noise (:func:`~.discrete.grid_noise`): the output noise of
    ``output_perturbation`` and ``amp`` and the gradient noise of ``noisy_gd`` are
    gamma N_Z(0, s^2) on gamma Z with gamma s = :func:`~.discrete.grid_sigma` (sigma)
    (= sigma for a planned sigma, which is on its grid). ``objective_accountant`` is the
    accountant of AMP's objective noise (:data:`~.names.LOP_ACCOUNTANTS`; LOP and LOP-Clip
    name theirs in ``calibration``); ``kifer``, the default, is how plans written before the
    exact profile was available are read.
    """

    method: str
    loss: str
    n: int
    d: int
    zeta: float
    epsilon: float  # target
    delta: float  # target
    mu: float
    sigma: float
    certificate: ReleaseCertificate | None
    loss_params: tuple[tuple[str, float], ...] = ()
    calibration: str = "analytic"
    tolerance: float | None = None
    max_iterations: int | None = None
    clip: float | None = None
    epsilon_objective: float | None = None
    delta_objective: float | None = None
    epsilon_output: float | None = None
    delta_output: float | None = None
    output_sigma: float | None = None
    iterations: int | None = None
    eta: float | None = None
    grid_bits: int = GRID_BITS
    objective_accountant: str = "kifer"

    @property
    def mechanism(self) -> str:
        return self.method

    def loss_object(self) -> Loss:
        """The plan's loss, rebuilt from the registry with its public parameters."""
        return get_loss(self.loss, **dict(self.loss_params))

    def recertify(self) -> ReleaseCertificate:
        """Recompute the certificate from the plan's public fields alone."""
        return certify_peer(self)

    def to_dict(self) -> dict[str, Any]:
        """The plan's fields and its certificate as JSON-ready values."""
        out = {k: v for k, v in asdict(self).items() if k != "certificate"}
        out["loss_params"] = [list(p) for p in self.loss_params]
        out["certificate"] = None if self.certificate is None else self.certificate.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PeerPlan:
        """Inverse of :meth:`to_dict`."""
        from objpert.accounting.certificate import certificate_from_dict

        fields = dict(data)
        fields["loss_params"] = tuple(tuple(p) for p in fields.get("loss_params", ()))
        cert = fields.get("certificate")
        fields["certificate"] = None if cert is None else certificate_from_dict(cert)
        return cls(**fields)


# ---------------------------------------------------------------- certificates

#: (plan, its loss) -> the method's certificate, after the checks every plan shares.
Certifier = Callable[[PeerPlan, Loss], ReleaseCertificate]


@dataclass(frozen=True)
class PeerMethod:
    """A peer method's certificate and what :func:`certify_peer` checks before it.

    ``bounded_gradient``: the certificate needs the loss's L1 (a bounded l'); every method
    but LOP-Clip. ``zero_ridge``: mu = 0 is allowed (noisy GD) rather than mu > 0.
    """

    name: str
    certify: Certifier
    bounded_gradient: bool = True
    zero_ridge: bool = False


_REGISTERED: dict[str, PeerMethod] = {}


def register_method(method: PeerMethod) -> PeerMethod:
    """Make ``method`` the certificate :func:`certify_peer` uses for plans of its name (one
    of :data:`~.names.METHODS`)."""
    if method.name not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}; got {method.name!r}")
    _REGISTERED[method.name] = method
    return method


def certify_peer(plan: PeerPlan) -> ReleaseCertificate:
    """The certificate of ``plan`` from its public fields (its stored one is ignored)."""
    method = _REGISTERED.get(plan.method)
    if method is None:
        raise ParameterError(f"method must be one of {METHODS}; got {plan.method!r}")
    loss = plan.loss_object()
    check_int("n", plan.n, 2)
    check_int("d", plan.d, 1)
    check_positive("zeta", plan.zeta)
    check_positive("epsilon", plan.epsilon)
    check_open_unit("delta", plan.delta)
    check_positive("sigma", plan.sigma)
    check_grid_bits(plan.grid_bits)
    if method.zero_ridge:
        check_nonnegative("mu", plan.mu)
    else:
        check_positive("mu", plan.mu)
    if method.bounded_gradient:
        require_bounded_gradient(loss, f"the {plan.method} certificate")
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
        plan.method,
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
    """The public constants every peer plan starts from, checked once."""

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
        """Build the loss and check n >= 2, d >= 1, zeta > 0, epsilon > 0, delta in (0, 1)
        and (``bounded``) that the loss has a bounded l' (its L1)."""
        loss_obj = get_loss(loss, **(loss_params or {}))
        if bounded:
            require_bounded_gradient(loss_obj, "this mechanism's sensitivity")
        return cls(
            loss_obj,
            check_int("n", n, 2),
            check_int("d", d, 1),
            check_positive("zeta", zeta),
            check_positive("epsilon", epsilon),
            check_target_delta(delta),
        )

    @property
    def gradient_bound(self) -> float:
        """L1 zeta: the bound on a per-sample gradient l'(<x, w>, y) x."""
        return float(self.loss.L1) * self.zeta

    @property
    def smoothness(self) -> float:
        """L2 zeta^2: the bound on a per-sample Hessian l'' x x^T."""
        return float(self.loss.L2) * self.zeta**2

    def draft(self, method: str, **fields: Any) -> PeerPlan:
        """The plan of ``method`` with these public constants and ``fields``, without its
        certificate."""
        return PeerPlan(
            method=method,
            loss=self.loss.name,
            loss_params=tuple(sorted(self.loss.params().items())),
            n=self.n,
            d=self.d,
            zeta=self.zeta,
            epsilon=self.epsilon,
            delta=self.delta,
            certificate=None,
            **fields,
        )

    def plan(self, method: str, **fields: Any) -> PeerPlan:
        """:meth:`draft`, certified: :func:`finish`."""
        return finish(self.draft(method, **fields))


def nudged(plan: PeerPlan, name: str) -> float:
    """The noise std ``name`` raised by one nudge; for discrete noise, to the next point of
    its grid (:func:`~.discrete.grid_sigma`), so a plan's sigma stays the noise scale
    exactly."""
    value = getattr(plan, name) * _NUDGE
    if DISCRETE_NOISE.get(plan.method) == name:
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
        f"internal error: the {plan.method} plan does not certify (epsilon={plan.epsilon}, "
        f"delta={plan.delta}): {cert.reasons or (cert.epsilon, cert.delta)}"
    )


def solver_tolerance(tolerance: float | None, grad_bound: float) -> float:
    """The solver's gradient-norm tolerance: ``tolerance``, or by default
    :data:`DEFAULT_RELATIVE_TOLERANCE` times the per-sample gradient bound."""
    if tolerance is None:
        return DEFAULT_RELATIVE_TOLERANCE * grad_bound
    return check_positive("tolerance", tolerance)


def ridge(mu: float | None, mu_min: float) -> float:
    """The plan's ridge: max(mu, mu_min), or mu_min when ``mu`` is None."""
    return mu_min if mu is None else max(check_positive("mu", mu), mu_min)


def iteration_budget(max_iterations: int) -> int:
    """The solver's public iteration cap, an integer >= 1."""
    return check_int("max_iterations", max_iterations, 1)
