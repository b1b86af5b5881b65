"""K releases calibrated jointly at the tight composition of their privacy profiles.

A K-class one-vs-rest model is K releases of one plan on the same data. Splitting the
budget by basic or advanced composition (:func:`objpert.accounting.composition.split_budget`)
charges each release its (epsilon_i, delta_i) point; composing the releases' whole
Watkins & Arora profiles as PLDs (:mod:`objpert.accounting.pld`) charges what they
jointly lose, which allows far less noise per release. The per-release plan is found by
a bracketing search over the epsilon_i handed to the calibration (at delta_i = delta / K): the
largest epsilon_i (within ``rtol``) whose plan's K-fold PLD has delta <= the target at the
target epsilon. Everything here is a pure function of public constants.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scipy.special import ndtri

from objpert.accounting import pld as pldlib
from objpert.accounting.composition import compose as compose_split
from objpert.accounting.composition import split_budget
from objpert.certify.plan import Plan
from objpert.exceptions import ParameterError, UnreachableTargetError
from objpert.validation import check_int, check_open_unit, check_positive

#: The search stops at a passing plan whose composed delta is this share of the target
#: (within about 1% of the boundary in epsilon_i, for Gaussian-like profiles).
_CLOSE = 0.6

__all__ = [
    "COMPOSITIONS",
    "Calibration",
    "JointPlan",
    "calibrate_releases",
    "check_settings",
    "composed_delta",
    "joint_plan",
    "release_delta",
    "resolve_composition",
]


@dataclass(frozen=True)
class JointPlan:
    """The plan of each of K releases whose PLD composition meets (epsilon, delta):
    ``composed_delta`` is the K-fold composed delta at ``epsilon`` (<= ``delta``)."""

    plan: Plan
    k: int
    epsilon: float
    delta: float
    epsilon_i: float
    delta_i: float
    composed_delta: float
    discretization: float

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "plan"}
        out["plan"] = self.plan.to_dict()
        return out


def release_delta(delta: float, k: int) -> float:
    """The delta each of K jointly calibrated releases is planned at: delta / K."""
    return check_open_unit("delta", delta) / check_int("k", k, 1)


def composed_delta(plan: Any, k: int, epsilon: float, discretization: float) -> float:
    """delta at ``epsilon`` of K releases of ``plan`` composed by their PLDs (the plan is
    re-derived first)."""
    loss = pldlib.from_plan(plan).times(check_int("k", k, 1))
    return pldlib.delta_for_epsilon(loss.pld(discretization), epsilon)


def joint_plan(
    plan_at: Callable[[float, float], Plan],
    epsilon: float,
    delta: float,
    k: int,
    *,
    discretization: float = pldlib.DEFAULT_DISCRETIZATION,
    rtol: float = 0.03,
) -> JointPlan:
    """The per-release plan of K releases jointly (epsilon, delta)-DP by PLD composition.

    ``plan_at(epsilon_i, delta_i)`` calibrates one release (a pure function of public
    constants). Bisection in log epsilon_i between epsilon / K (basic composition's share,
    stepped down while discretisation keeps it above the target) and 2 epsilon / sqrt(K)
    (twice the share of K Gaussian releases; epsilon if that passes), narrowed by Illinois
    regula falsi on Phi^-1(delta) against log epsilon_i until the bracket is ``rtol`` wide
    or the passing end's composed delta is at least 0.6 of the target; the passing end is
    returned.
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_open_unit("delta", delta)
    k = check_int("k", k, 2)
    discretization = pldlib.check_discretization(discretization)
    rtol = check_positive("rtol", rtol)
    delta_i = release_delta(delta, k)
    if delta_i < sys.float_info.min or epsilon / k * 0.9**7 < sys.float_info.min:
        raise ParameterError(  # the shares tried below would underflow to 0
            f"(epsilon={epsilon:g}, delta={delta:.3g}) over {k} releases leaves per-release "
            "shares below the smallest normal float: no plan certifies them"
        )

    def passes(eps_i: float) -> tuple[bool, Plan, float]:
        plan = plan_at(eps_i, delta_i)
        got = composed_delta(plan, k, epsilon, discretization)
        return got <= delta, plan, got

    lo = epsilon / k
    for _ in range(8):
        ok, plan_lo, d_lo = passes(lo)
        if ok:
            break
        lo *= 0.9
    else:
        raise UnreachableTargetError(
            f"no per-release plan composes to (epsilon={epsilon:g}, delta={delta:.3g}) over "
            f"{k} releases by PLD; use composition='split'"
        )
    hi = min(epsilon, 2.0 * epsilon / math.sqrt(k))  # K Gaussian releases: epsilon/sqrt(K)
    ok, plan_hi, d_hi = passes(hi)
    if ok and hi < epsilon:
        lo, plan_lo, d_lo = hi, plan_hi, d_hi
        hi = epsilon
        ok, plan_hi, d_hi = passes(hi)
    if ok:  # every release at the whole target: nothing to search
        return JointPlan(plan_hi, k, epsilon, delta, hi, delta_i, d_hi, discretization)

    def score(d: float) -> float:  # the Gaussian-tail scale: nearly linear in log epsilon_i
        return float(ndtri(min(max(d, 1e-300), 0.5))) - goal

    goal = float(ndtri(delta))
    f_lo, f_hi, kept = score(d_lo), score(d_hi), 0
    # Illinois regula falsi in (log epsilon_i, Phi^-1(delta)), kept bracketed; stop when the
    # bracket is rtol wide or the passing end uses most of the target delta
    while hi / lo > 1.0 + rtol and d_lo < _CLOSE * delta:
        a, b = math.log(lo), math.log(hi)
        x = b - f_hi * (b - a) / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (a + b)
        x = min(max(x, a + 0.02 * (b - a)), b - 0.02 * (b - a))
        ok, plan_mid, d_mid = passes(math.exp(x))
        if ok:
            lo, plan_lo, d_lo, f_lo = math.exp(x), plan_mid, d_mid, score(d_mid)
            f_hi, kept = (f_hi / 2.0, kept) if kept < 0 else (f_hi, -1)
        else:
            hi, f_hi = math.exp(x), score(d_mid)
            f_lo, kept = (f_lo / 2.0, kept) if kept > 0 else (f_lo, 1)
    return JointPlan(plan_lo, k, epsilon, delta, lo, delta_i, d_lo, discretization)


#: How the K releases of one fit compose: ``"pld"`` (their PLDs; needs dp-accounting),
#: ``"split"`` (basic or advanced composition of per-release points) or ``"auto"`` (pld when
#: dp-accounting is installed, else split).
COMPOSITIONS = ("auto", "pld", "split")


def resolve_composition(composition: str, k: int) -> str:
    """``"single"`` for one release, else ``"pld"`` or ``"split"`` (``"auto"``: pld when
    dp-accounting can be imported). ``"pld"`` without dp-accounting is a ParameterError."""
    if composition not in COMPOSITIONS:
        raise ParameterError(f"composition must be one of {COMPOSITIONS}; got {composition!r}")
    if check_int("k", k, 1) == 1:
        return "single"
    if composition == "auto":
        return "pld" if pldlib.available() else "split"
    if composition == "pld":
        pldlib._dp()  # ParameterError naming the extra when dp-accounting is absent
    return composition


@dataclass(frozen=True)
class Calibration:
    """The plan of each of K releases of one fit and how their certificates compose:
    ``method`` is ``"single"``, ``"basic"``, ``"advanced"`` or ``"pld"``."""

    plan: Plan
    method: str
    k: int
    epsilon: float
    delta: float
    delta_slack: float = 0.0
    discretization: float = pldlib.DEFAULT_DISCRETIZATION

    def losses(self) -> list[pldlib.PrivacyLoss]:
        """The K releases as privacy losses (what an accountant is charged)."""
        return [pldlib.from_plan(self.plan).times(self.k)]

    def compose(self, certificates: Sequence[Any], not_public: Sequence[str] = ()) -> Any:
        """The fit's composed certificate from the K releases' certificates."""
        if self.method == "pld":
            from objpert.accounting.accountant import compose_certificates

            return compose_certificates(
                certificates, self.epsilon, discretization=self.discretization,
                not_public=not_public,
            )  # fmt: skip
        return compose_split(
            certificates, self.method, delta_slack=self.delta_slack or None,
            not_public=tuple(not_public),
        )  # fmt: skip


def calibrate_releases(
    plan_at: Callable[[float, float], Plan],
    epsilon: float,
    delta: float,
    k: int,
    composition: str = "auto",
) -> Calibration:
    """The per-release plan of a K-release fit: jointly at the PLD composition
    (:func:`joint_plan`) or by :func:`~objpert.accounting.composition.split_budget`."""
    method = resolve_composition(composition, k)
    if method == "pld":
        jp = joint_plan(plan_at, epsilon, delta, k)
        return Calibration(jp.plan, "pld", k, epsilon, delta, 0.0, jp.discretization)
    split = split_budget(epsilon, delta, k)
    plan = plan_at(split.epsilon_i, split.delta_i)
    return Calibration(plan, split.method, k, epsilon, delta, split.delta_slack)


def check_settings(composition: Any, accountant: Any = None) -> str:
    """An estimator's ``composition`` (one of :data:`COMPOSITIONS`) and ``accountant``
    (None or a :class:`~objpert.accounting.accountant.PrivacyAccountant`) parameters;
    returns the composition."""
    from objpert.accounting.accountant import PrivacyAccountant

    if accountant is not None and not isinstance(accountant, PrivacyAccountant):
        raise ParameterError(
            "accountant must be None or an objpert.accounting.PrivacyAccountant; got "
            f"{type(accountant).__name__}"
        )
    if not isinstance(composition, str) or composition not in COMPOSITIONS:
        raise ParameterError(f"composition must be one of {COMPOSITIONS}; got {composition!r}")
    return composition
