"""The QOP plan: its public constants, everything computed from them, and its certificate
(Cortild & Cartis 2026, arXiv:2605.05905; docs/qop.md, "Calibration of sigma^2" and
"Inexact solve (output noise)")."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from objpert._jsonable import to_json_value
from objpert._validation import (
    check_bool,
    check_int,
    check_nonnegative,
    check_open_unit,
    check_positive,
    count,
    numeric_guard,
    optional,
    validated,
)
from objpert.accounting._certificate import Certificate
from objpert.accounting._composition import basic
from objpert.accounting._plan import Plan
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.mechanisms._certificates.qop.noise import (
    output_noise,
    output_noise_delta,
    sigma2_parts,
)
from objpert.mechanisms._certificates.qop.utility import utility_exact, utility_inexact
from objpert.mechanisms._certificates.qop.wishart import (
    READINGS,
    log_wishart_constant,
    max_eigenvalue_bound,
)
from objpert.mechanisms._certificates.rules import choice

__all__ = ["QOPCertificate", "QOPPlan", "plan_qop", "qop_plan"]


@dataclass(frozen=True)
class QOPCertificate(Certificate):
    """The (epsilon, delta) guarantee of a QOP release and the terms it is made of.

    ``mechanism`` is ``"qop-exact"`` ((eps1, delta1 + delta3) for the exact minimiser) or
    ``"qop-inexact"`` ((eps1 + eps2, delta1 + delta2 + delta3 + delta4) with output noise
    sigma_tilde, for a solve of accuracy (tau, eta)). ``assumptions`` lists what the
    guarantee takes for granted and objpert does not (cannot, without touching the data)
    check.
    """

    mechanism: str
    epsilon: float
    delta: float
    epsilon_parts: dict
    delta_parts: dict
    sigma2: float
    sigma_tilde: float
    reading: str
    assumptions: tuple[str, ...]

    @property
    def certified(self) -> bool:
        """False: the guarantee rests on ``assumptions`` that cannot be checked without the
        data (interpolation among them), and the audit found a neighbouring pair that meets
        every one of them where delta(epsilon) = 1 for every epsilon (docs/audit.md, "QOP on
        the canonical pair"). QOP is reproduced to be compared, not released."""
        return False

    @property
    def not_public(self) -> tuple[str, ...]:
        return ()

    @property
    def covers(self) -> str:
        return f"one QOP release ({self.mechanism}), resting on unchecked assumptions"

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the certificate is not certified (the same for every QOP plan)."""
        return (
            "rests on assumptions objpert cannot check without the data: "
            + "; ".join(self.assumptions),
            "a pair meeting every listed assumption has delta(epsilon) = 1 (docs/audit.md)",
        )

    def to_dict(self) -> dict:
        out = {k: to_json_value(v) for k, v in asdict(self).items()}
        out["certified"] = self.certified
        out["epsilon_parts"] = {k: to_json_value(v) for k, v in self.epsilon_parts.items()}
        out["delta_parts"] = {k: to_json_value(v) for k, v in self.delta_parts.items()}
        out["assumptions"] = list(self.assumptions)
        return out


@dataclass(frozen=True)
class QOPPlan(Plan):
    """Public constants of a QOP release and everything computed from them.

    Inputs: ``d``, ``m`` (integer, >= d), ``smoothness`` L (per-sample), ``rank`` rho
    (per-sample Hessian rank; 1 for a GLM), the split ``epsilon1`` (+ ``epsilon2``) and
    ``delta1``, ``delta3`` (+ ``delta2``, ``delta4``), ``reading`` (flag i) and, for the
    inexact variant, the accuracies ``tau`` and ``eta``. Derived (docs/qop.md, "Calibration of
    sigma^2" and "Inexact solve"): ``log_wishart`` (log D_m), ``alpha``, ``log_alpha1``,
    ``f2``, ``sigma2`` and which branch of its max is active, ``beta``, ``sigma_tilde``.
    Build with :func:`qop_plan`; :meth:`recompute` re-derives everything from the inputs.
    """

    d: int
    m: int
    smoothness: float
    rank: int
    epsilon1: float
    delta1: float
    delta3: float
    reading: str
    log_wishart: float
    alpha: float
    log_alpha1: float
    f2: float
    sigma2: float
    sigma2_branch: str
    inexact: bool = False
    epsilon2: float = 0.0
    delta2: float = 0.0
    delta4: float = 0.0
    tau: float = 0.0
    eta: float = 0.0
    beta: float | None = None
    sigma_tilde: float = 0.0

    mechanism = "qop"

    @property
    def public_constants(self) -> Any:
        """Refused: a QOP plan is computed from d, m and the per-sample smoothness alone
        and keeps no loss, n or zeta."""
        raise ParameterError(
            "a QOP plan is computed from d, m and the per-sample smoothness alone; it keeps "
            "no loss, n or zeta"
        )

    @property
    def epsilon(self) -> float:
        """The objective and output parts composed (basic composition)."""
        return self._composed[0]

    @property
    def delta(self) -> float:
        """The four failure probabilities composed (basic composition)."""
        return self._composed[1]

    @property
    def _composed(self) -> tuple[float, float]:
        return basic(
            [self.epsilon1, self.epsilon2, 0.0, 0.0],
            [self.delta1, self.delta2, self.delta3, self.delta4],
        )

    @property
    def alpha1(self) -> float:
        return math.exp(self.log_alpha1)

    @property
    def epsilons(self) -> tuple[float, ...]:
        return (self.epsilon1, self.epsilon2) if self.inexact else (self.epsilon1,)

    @property
    def deltas(self) -> tuple[float, ...]:
        if self.inexact:
            return (self.delta1, self.delta2, self.delta3, self.delta4)
        return (self.delta1, self.delta3)

    def recompute(self) -> QOPPlan:
        """The plan re-derived from its public inputs alone."""
        return qop_plan(
            self.d,
            self.epsilon,
            self.delta,
            smoothness=self.smoothness,
            rank=self.rank,
            m=self.m,
            deltas=self.deltas,
            epsilons=self.epsilons,
            inexact=self.inexact,
            tau=self.tau if self.inexact else None,
            eta=self.eta if self.inexact else None,
            reading=self.reading,
        )

    @property
    def certificate(self) -> QOPCertificate:
        """The plan's certificate, computed from its public fields (an attribute, as every
        plan type has)."""
        assumptions = [
            "per-sample losses convex with smoothness <= L and Hessian rank <= rho",
            "interpolation: the per-sample losses share a common minimiser",
            "theta_ref, the constraint set and the regulariser are public (data-independent)",
        ]
        if self.inexact:
            assumptions.append(
                f"the solve reaches accuracy tau = {self.tau:g}, eta = {self.eta:g} "
                "(not verified: checking would touch the data)"
            )
            grid_delta = output_noise_delta(
                self.tau, self.eta, self.alpha, self.sigma2, self.beta, self.epsilon2,
                self.sigma_tilde, self.d,
            )  # fmt: skip
            assumptions.append(
                "output noise: discrete Gaussian on a grid (Canonne, Kamath & Steinke 2020, "
                f"Theorem 14 and Corollary 13): delta2 = {grid_delta:.3g} <= {self.delta2:g}"
            )
            mech = "qop-inexact"
        else:
            assumptions.append("the released point is the exact minimiser")
            mech = "qop-exact"
        eps_parts = {"epsilon1": self.epsilon1}
        delta_parts = {"delta1": self.delta1, "delta3": self.delta3}
        if self.inexact:
            eps_parts["epsilon2"] = self.epsilon2
            delta_parts.update(delta2=self.delta2, delta4=self.delta4)
        return QOPCertificate(
            mechanism=mech,
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_parts=eps_parts,
            delta_parts=delta_parts,
            sigma2=self.sigma2,
            sigma_tilde=self.sigma_tilde,
            reading=self.reading,
            assumptions=tuple(assumptions),
        )

    @validated(n=count(1), distance=check_nonnegative, subgradient_bound=check_nonnegative)
    def utility_bound(self, n: int, distance: float, subgradient_bound: float = 0.0) -> float:
        """The expected excess-risk bound for this plan, exact or inexact (docs/qop.md,
        "Utility bound")."""
        if not self.inexact:
            return utility_exact(self.sigma2, self.m, distance)
        return utility_inexact(
            n,
            self.d,
            self.smoothness,
            self.sigma_tilde,
            subgradient_bound,
            self.tau,
            self.sigma2,
            self.m,
            distance,
            self.eta,
        )

    def to_dict(self) -> dict:
        out = {k: to_json_value(v) for k, v in asdict(self).items()}
        out.update(
            epsilon=self.epsilon,
            delta=self.delta,
            alpha1=self.alpha1,
            log_sigma2=math.log(self.sigma2),
        )
        return out


def _split(
    name: str, total: float, parts: Any, count: int, check: Callable[[str, Any], float]
) -> tuple[float, ...]:
    """``parts`` (``count`` numbers summing to ``total``), or ``total`` split evenly."""
    if parts is None:
        return tuple(total / count for _ in range(count))
    try:
        values = tuple(parts)
    except TypeError:
        raise ParameterError(f"{name} must be a tuple of {count} numbers; got {parts!r}") from None
    if len(values) != count:
        raise ParameterError(f"{name} must have {count} entries; got {len(values)}")
    values = tuple(check(f"{name}[{i}]", v) for i, v in enumerate(values))
    if not math.isclose(sum(values), total, rel_tol=1e-9, abs_tol=0.0):
        raise ParameterError(f"{name} must sum to {total!r}; they sum to {sum(values)!r}")
    return values


#: The rules of QOP's options (the target and d are ``objpert.plan``'s).
_OPTION_RULES = {
    "smoothness": check_positive,
    "rank": count(1),
    "m": optional(count(1)),
    "inexact": check_bool,
    "tau": optional(check_nonnegative),
    "eta": optional(check_nonnegative),
    "reading": choice(READINGS),
}


def _qop_plan(
    d: int,
    epsilon: float,
    delta: float,
    *,
    smoothness: float,
    rank: int = 1,
    m: int | None = None,
    deltas: tuple[float, ...] | None = None,
    epsilons: tuple[float, ...] | None = None,
    inexact: bool = False,
    tau: float | None = None,
    eta: float | None = None,
    reading: str = "authors",
) -> QOPPlan:
    """The QOP plan for an (epsilon, delta) target (Cortild & Cartis 2026; docs/qop.md).

    Exact solve: ``deltas = (delta1, delta3)`` (default delta/2 each, as the authors'
    experiments), sigma^2 at ``epsilon``. Inexact (``inexact=True``): ``deltas = (delta1,
    delta2, delta3, delta4)`` (default delta/4 each), ``epsilons = (eps1, eps2)`` (default
    epsilon/2 each; eps2 < 1 required, flag iv), sigma^2 at eps1 and output noise
    sigma_tilde for accuracies ``tau``, ``eta`` (both required, >= 0). ``m`` defaults to 2d.
    Raises :class:`ParameterError` for inputs outside their ranges and
    :class:`UnreachableTargetError` when sigma^2 leaves double range (the authors' reading
    for large d; see flag i).
    """
    m = check_int("m", 2 * d, 1) if m is None else m  # the default 2d is checked too
    if m < d:
        raise ParameterError(f"m must be >= d = {d} (Wishart degrees of freedom); got {m!r}")
    L = smoothness
    if inexact:
        d1, d2, d3, d4 = _split("deltas", delta, deltas, 4, check_open_unit)
        e1, e2 = _split("epsilons", epsilon, epsilons, 2, check_positive)
        if e2 >= 1.0:
            raise ParameterError(
                f"epsilon2 must be < 1 (the Gaussian output noise sqrt(2 log(1.25/delta2))/eps2 "
                f"is a theorem for eps2 < 1 only); got {e2!r}: pass epsilons=(eps1, eps2)"
            )
        if tau is None or eta is None:
            raise ParameterError("the inexact plan needs the solve accuracies tau and eta")
    else:
        d1, d3 = _split("deltas", delta, deltas, 2, check_open_unit)
        if epsilons is not None:
            (e1,) = _split("epsilons", epsilon, epsilons, 1, check_positive)
        e1, e2, d2, d4 = epsilon, 0.0, 0.0, 0.0
        if tau is not None or eta is not None:
            raise ParameterError("tau and eta are for the inexact plan; pass inexact=True")
    alpha, la1, f, lp, lc = sigma2_parts(L, e1, d1, d3, d, m, rank, reading)
    log_s2 = max(lp, lc)
    if log_s2 >= 709.0:
        raise UnreachableTargetError(
            f"sigma^2 = exp({log_s2:.6g}) exceeds double range (2L / alpha1 with "
            f"log alpha1 = {la1:.6g}, reading={reading!r}); see flag (i) of "
            "objpert.mechanisms._certificates.qop: reading='half' keeps sigma^2 moderate"
        )
    s2 = math.exp(log_s2)
    plan = dict(
        d=d,
        m=m,
        smoothness=L,
        rank=rank,
        epsilon1=e1,
        delta1=d1,
        delta3=d3,
        reading=reading,
        log_wishart=log_wishart_constant(d, m),
        alpha=alpha,
        log_alpha1=la1,
        f2=f,
        sigma2=s2,
        sigma2_branch="privacy" if lp >= lc else "alpha1",
    )
    if inexact:
        beta = max_eigenvalue_bound(d, m, d3, d4)
        st = output_noise(tau, eta, alpha, s2, beta, e2, d2)
        grid_delta = output_noise_delta(tau, eta, alpha, s2, beta, e2, st, d)
        if not grid_delta <= d2:
            raise UnreachableTargetError(
                f"the discrete output noise certifies delta2 = {grid_delta:.3g} > {d2:.3g} at "
                f"eps2 = {e2:g} (flag v of docs/qop.md): choose a smaller epsilon2"
            )
        plan.update(
            inexact=True,
            epsilon2=e2,
            delta2=d2,
            delta4=d4,
            tau=tau,
            eta=eta,
            beta=beta,
            sigma_tilde=st,
        )
    return QOPPlan(**plan)


#: The QOP plan from every public input, each checked (:meth:`QOPPlan.recompute`, a plan
#: built by hand or read from a file, the reproductions).
qop_plan = numeric_guard(
    validated(d=count(1), epsilon=check_positive, delta=check_open_unit, **_OPTION_RULES)(_qop_plan)
)
#: The plan of ``objpert.plan("qop", ...)``, whose target and d are checked already.
plan_qop = numeric_guard(validated(**_OPTION_RULES)(_qop_plan))
