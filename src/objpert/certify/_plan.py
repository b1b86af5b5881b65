"""The plan of a release and its re-derivation.

A :class:`WatkinsAroraPlan` holds everything a release needs, chosen from public constants before
the data are touched; :func:`rederive_plan` rebuilds its constants from the loss and
recomputes its certificate (Theorem 4.1 or Theorem C.13 of Watkins & Arora, 2026)
before every release and at every load of a model file.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from objpert._validation import (
    check_choice,
    check_nonnegative,
    check_open_unit,
    check_positive,
    check_unit,
    count,
    rule,
)
from objpert.accounting._certificate import ReleaseCertificate
from objpert.accounting._plan import Plan as BasePlan
from objpert.accounting._plan import Target
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify import _utility as utility
from objpert.certify._constants import ProblemConstants, problem
from objpert.certify._truncation import TRUNCATIONS
from objpert.exceptions import ParameterError, PrivacyError, UnreachableTargetError

#: How a Watkins & Arora plan is calibrated (``calibration=``).
CALIBRATIONS = ("tight", "corollary413")
#: W, the norm of the comparators the automatic ridge mu is tuned against (public).
DEFAULT_COMPARATOR_NORM = 3.0
OBJECTIVES = ("population", "empirical")  # what the tight calibration may minimise


@dataclass(frozen=True)
class WatkinsAroraPlan(BasePlan):
    """Everything a Watkins & Arora release needs, chosen from public constants before
    touching data."""

    mechanism = "watkins_arora"

    calibration: str
    loss: str
    n: int
    d: int
    zeta: float
    epsilon: float
    delta: float
    sigma: float
    mu: float
    eta: float
    iterations: int
    u: float
    radius: float
    radius_outer: float
    truncation: str
    delta_truncation: float
    delta_divergence: float
    comparator_norm: float
    delta_sample: float
    utility_bound: float  # Theorem 4.7 at the plan's values, comparators of norm <= W
    theorem410_bound: float  # d sigma^2/(2 mu) + E_opt(N)
    certificate: ReleaseCertificate
    objective: str = "population"  # what the tight calibration minimised
    rows: int = 1  # the neighbours differ in up to this many rows (one privacy unit's)

    @property
    def constants(self) -> ProblemConstants:
        """The constants stored in the plan's certificate (see :meth:`rebuilt_constants`)."""
        return ProblemConstants.from_dict(self.certificate.constants)

    def rebuilt_constants(self) -> ProblemConstants:
        """The problem constants re-derived from the loss registry and the plan's public
        inputs (loss name and parameters, n, d, zeta, mu, eta, rows) by :func:`problem`."""
        params = dict(tuple(p) for p in self.certificate.constants.get("loss_params", ()))
        return problem(
            self.loss, n=self.n, d=self.d, zeta=self.zeta, mu=self.mu, eta=self.eta,
            rows=self.rows, **params,
        )  # fmt: skip

    def recertify(self) -> ReleaseCertificate:
        """Recompute the certificate from the plan's public inputs, with the constants
        re-derived from the loss (:meth:`rebuilt_constants`), never the stored ones."""
        return certify_plan(
            self.rebuilt_constants(),
            self.sigma,
            self.iterations,
            self.epsilon,
            self.certificate.form,
            self.u,
            self.radius,
            self.radius_outer,
            self.truncation,
        )

    def privacy_loss(self) -> Any:
        """The release's whole Theorem C.13 profile, from the re-derived plan
        (:func:`rederive_plan`) and its own truncation radius."""
        return rederive_plan(self).privacy_loss(radius=(self.radius, self.radius_outer))

    def to_dict(self) -> dict[str, Any]:
        """Every field (``rows`` only when it is not 1), the certificate flattened."""
        skip = ("certificate", "rows") if self.rows == 1 else ("certificate",)
        out = {k: v for k, v in asdict(self).items() if k not in skip}
        out["certificate"] = self.certificate.to_dict()
        return out


# ---------------------------------------------------------------- re-derivation

_REDERIVE_RTOL = 1e-12  # stored and re-derived constants may differ by rounding only


def _mismatch(what: str, stored: Any, derived: Any) -> PrivacyError:
    return PrivacyError(
        f"the plan's {what} = {stored!r} is not the value re-derived from the loss and the "
        f"plan's public inputs ({derived!r}); nothing was released"
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int):
        if isinstance(a, bool) or isinstance(b, bool):
            return a is b
        return math.isclose(a, b, rel_tol=_REDERIVE_RTOL, abs_tol=0.0)
    return a == b


def checked_plan(plan: Any) -> WatkinsAroraPlan:
    """``plan`` if it is a Watkins & Arora plan; PrivacyError otherwise."""
    if not isinstance(plan, WatkinsAroraPlan):
        raise PrivacyError(f"expected a WatkinsAroraPlan (objpert.plan); got {type(plan)!r}")
    return plan


def rederive_plan(plan: WatkinsAroraPlan) -> ReleaseCertificate:
    """Re-derive a plan's constants and certificate; refuse (:class:`PrivacyError`) any
    mismatch. Called before every release and at every load of a model file.

    The problem constants are rebuilt by :func:`~objpert.certify.problem` (the
    constructor that calibrated the plan, which enforces 0 < eta <= 1/L and eta mu < 1 of
    Section 3.2) from the loss registry and the plan's public inputs (loss name and
    parameters, n, d, zeta, mu, eta); L1, L2, L3 come from the registered loss, never from
    the plan. Every constant the plan carries must equal the re-derived one, sigma, N and
    the truncation must be those of its certificate, and the certificate recomputed from
    the re-derived constants (Theorem 4.1 or C.13) must certify the plan's target and
    agree with the stored one. Returns the recomputed certificate.
    """
    checked_plan(plan)
    try:
        _check_fields(plan)
    except (ValueError, TypeError) as exc:
        raise PrivacyError(f"the plan is malformed: {exc}") from None
    try:
        derived = plan.rebuilt_constants()
        stored = plan.constants
    except (ValueError, TypeError, KeyError) as exc:
        raise PrivacyError(f"the plan's constants cannot be re-derived: {exc}") from None
    names = ("loss", "L1", "L2", "L3", "n", "d", "zeta", "mu", "eta", "loss_params", "rows")
    for name in names:
        if not _same(getattr(stored, name), getattr(derived, name)):
            raise _mismatch(f"constant {name}", getattr(stored, name), getattr(derived, name))
    cert0 = plan.certificate
    for name, value, want in (
        (
            "calibration",
            plan.calibration,
            plan.calibration if plan.calibration in CALIBRATIONS else CALIBRATIONS,
        ),
        ("sigma", plan.sigma, cert0.sigma),
        ("iterations", plan.iterations, cert0.iterations),
        ("truncation", plan.truncation, cert0.truncation),
        ("epsilon", plan.epsilon, cert0.epsilon),
    ):
        if not _same(value, want):
            raise _mismatch(name, value, want)
    try:
        cert = plan.recertify()
    except (ValueError, TypeError, ArithmeticError) as exc:
        raise PrivacyError(f"the plan cannot be certified: {exc}") from None
    if not cert.certified:
        raise PrivacyError(f"the plan does not certify: {'; '.join(cert.reasons)}")
    if cert.delta > plan.delta:
        raise PrivacyError(
            f"the plan certifies delta = {cert.delta:.3g} > its target {plan.delta:.3g}"
        )
    for key in ("epsilon", "delta", "truncation_mass", "divergence_term", "iterations"):
        if not _same(getattr(cert0, key), getattr(cert, key)):
            raise _mismatch(f"certificate's {key}", getattr(cert0, key), getattr(cert, key))
    _check_derived(plan, cert)
    return cert


#: The plan's numeric fields and the range each must lie in (checked before anything is
#: computed from them: a string, a bool, NaN or 5.0 where a probability belongs is refused).
_FIELD_CHECKS: tuple[tuple[str, Callable[[str, Any], Any]], ...] = (
    ("n", count(2)),
    ("rows", count(1)),
    ("d", count(1)),
    ("iterations", count(1)),
    ("zeta", check_positive),
    ("sigma", check_positive),
    ("mu", check_positive),
    ("eta", check_positive),
    ("u", check_nonnegative),
    ("radius", check_positive),
    ("radius_outer", check_positive),
    ("delta_truncation", check_unit),
    ("delta_divergence", check_unit),
    ("comparator_norm", check_positive),
    ("delta_sample", check_open_unit),
    ("utility_bound", rule(check_nonnegative, allow_inf=True)),
    ("theorem410_bound", rule(check_nonnegative, allow_inf=True)),
    ("truncation", rule(check_choice, TRUNCATIONS)),
    ("objective", rule(check_choice, OBJECTIVES)),
)


def _check_fields(plan: WatkinsAroraPlan) -> None:
    """Every numeric field of the plan a number in its range, its names known strings; its
    (epsilon, delta) a :class:`~objpert.accounting.Target` (the re-derivation's one check
    of the target)."""
    Target.checked(plan.epsilon, plan.delta)
    for name, check in _FIELD_CHECKS:
        check(f"the plan's {name}", getattr(plan, name))
    if not isinstance(plan.certificate, ReleaseCertificate):
        raise ParameterError("the plan's certificate is not a ReleaseCertificate")


def _check_derived(plan: WatkinsAroraPlan, cert: ReleaseCertificate) -> None:
    """The plan's derived fields equal those recomputed from its public inputs: the split
    of delta (the certificate's truncation mass and divergence term) and the utility bounds
    (Theorems 4.7 and 4.10)."""
    pc = plan.rebuilt_constants()
    derived = {
        "delta_truncation": cert.truncation_mass,
        "delta_divergence": cert.divergence_term,
        "utility_bound": float(
            utility._theorem_47(
                pc, plan.sigma, plan.iterations, plan.comparator_norm, plan.delta_sample
            )
        ),
        "theorem410_bound": float(utility._theorem_410(pc, plan.sigma, plan.iterations)),
    }
    for name, want in derived.items():
        got = getattr(plan, name)
        if not (got == want or math.isclose(got, want, rel_tol=_DERIVED_RTOL, abs_tol=0.0)):
            raise _mismatch(name, got, want)


_DERIVED_RTOL = 1e-9  # derived fields may differ from the recomputed ones by rounding only


def certify_plan(
    pc: ProblemConstants,
    sigma: float,
    N: int,
    epsilon: float,
    form: str,
    u: float,
    r: float,
    r_outer: float,
    truncation: str,
) -> ReleaseCertificate:
    """The certificate of Theorem 4.1 (``form="theorem41"``) or C.13, for checked values."""
    if form == "theorem41":
        return theorem41._certify(pc, sigma, u, N, epsilon, truncation=truncation)
    return theorem_c13._certify(pc, sigma, N, epsilon, r=r, r_outer=r_outer, truncation=truncation)


def _finish(
    calibration, pc, sigma, N, epsilon, delta, cert, comparator_norm, delta_sample
) -> WatkinsAroraPlan:
    if not (cert.certified and cert.delta <= delta):
        raise UnreachableTargetError(  # a bug guard: never hand out an uncertified plan
            f"internal error: the {calibration} plan does not certify (epsilon={epsilon}, "
            f"delta={delta}): {cert.reasons or cert.delta}"
        )
    d = cert.details
    return WatkinsAroraPlan(
        calibration=calibration,
        loss=pc.loss,
        n=pc.n,
        d=pc.d,
        zeta=pc.zeta,
        epsilon=epsilon,
        delta=delta,
        sigma=sigma,
        mu=pc.mu,
        eta=pc.eta,
        iterations=int(N),
        u=float(d["u"]),
        radius=float(d.get("radius", sigma * (math.sqrt(pc.d_star) + d["u"]))),
        radius_outer=float(d.get("radius_outer", theorem41._radii(pc, sigma, d["u"])[1])),
        truncation=cert.truncation,
        delta_truncation=cert.truncation_mass,
        delta_divergence=cert.divergence_term,
        comparator_norm=comparator_norm,
        delta_sample=delta_sample,
        utility_bound=float(utility._theorem_47(pc, sigma, N, comparator_norm, delta_sample)),
        theorem410_bound=float(utility._theorem_410(pc, sigma, N)),
        certificate=cert,
        rows=pc.rows,
    )


__all__ = [
    "CALIBRATIONS",
    "DEFAULT_COMPARATOR_NORM",
    "OBJECTIVES",
    "WatkinsAroraPlan",
    "certify_plan",
    "rederive_plan",
]
