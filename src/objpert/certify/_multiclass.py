"""K releases calibrated jointly at the tight composition of their privacy profiles.

A K-class one-vs-rest model is K releases of one plan on the same data. Splitting the
budget by basic or advanced composition (:func:`objpert.accounting._composition.split_budget`)
charges each release its (epsilon_i, delta_i) point; composing the releases' whole
Watkins & Arora profiles as PLDs (:mod:`objpert.accounting._pld`) charges what they
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

from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtri

from objpert.accounting import _pld as pldlib
from objpert.accounting._composition import compose as compose_split
from objpert.accounting._composition import split_budget
from objpert.accounting._gaussian_mechanism import calibrate_gaussian, gaussian_epsilon
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import ParameterError, UnreachableTargetError

#: The search stops at a passing plan whose composed delta is this share of the target
#: (within about 1% of the boundary in epsilon_i, for Gaussian-like profiles).
_CLOSE = 0.55

__all__ = [
    "COMPOSITIONS",
    "Calibration",
    "JointPlan",
    "calibrate_releases",
    "check_settings",
    "composed_delta",
    "gaussian_share",
    "joint_plan",
    "release_delta",
    "resolve_composition",
]


@dataclass(frozen=True)
class JointPlan:
    """The plan of each of K releases whose PLD composition meets (epsilon, delta):
    ``composed_delta`` is the K-fold composed delta at ``epsilon`` (<= ``delta``)."""

    plan: WatkinsAroraPlan
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
    return delta / k


def composed_delta(plan: Any, k: int, epsilon: float, discretization: float) -> float:
    """delta at ``epsilon`` of K releases of ``plan`` composed by their PLDs (the plan is
    re-derived first)."""
    loss = pldlib.from_plan(plan).times(k)
    return pldlib._delta_for_epsilon(pldlib.distribution(loss, discretization), epsilon)


def _gdp_mu(epsilon: float, delta: float) -> float:
    """The mu of the mu-GDP mechanism whose delta at ``epsilon`` is ``delta`` (Dong, Roth &
    Su 2022, Corollary 2.13: the Gaussian mechanism of sensitivity 1 and std 1/mu)."""
    return 1.0 / calibrate_gaussian(1.0, epsilon, delta)


def gaussian_share(epsilon: float, delta: float, k: int) -> float:
    """The per-release epsilon_i at delta / K of K Gaussian releases that compose to exactly
    (epsilon, delta): K mu_i-GDP releases compose to sqrt(K) mu_i-GDP (Dong, Roth & Su 2022,
    Corollary 3.3), so mu_i = mu / sqrt(K) for the mu whose delta at epsilon is delta
    (Corollary 2.13), and epsilon_i is that mechanism's epsilon at delta / K."""
    mu_i = _gdp_mu(epsilon, delta) / math.sqrt(k)
    return gaussian_epsilon(release_delta(delta, k), 1.0, 1.0 / mu_i)


#: Model steps of :func:`joint_plan` before it falls back to bracketing alone.
_MODEL_STEPS = 6
#: The model aims at this share of the target delta (inside [_CLOSE, 1]).
_AIM = 0.85
#: Where the shifted-Gaussian model has no root after one plan, the slope of log mu_K
#: against log epsilon_i is taken as
#: 1 + _SLOPE (log mu_K - log mu_aim): 1 for Gaussian releases, which compose as the model
#: says; for Watkins & Arora plans (K = 2 to 20) the slope from the first plan to the
#: boundary measured 1.1 to 2.3, growing with that plan's excess log mu_K - log mu_aim.
_SLOPE = 2.2


def joint_plan(
    plan_at: Callable[[float, float], WatkinsAroraPlan],
    epsilon: float,
    delta: float,
    k: int,
    *,
    discretization: float = pldlib.DEFAULT_DISCRETIZATION,
    rtol: float = 0.03,
) -> JointPlan:
    """The per-release plan of K >= 2 releases jointly (epsilon, delta)-DP by PLD
    composition (a checked target: the caller's door checked it).

    ``plan_at(epsilon_i, delta_i)`` calibrates one release (a pure function of public
    constants); a plan passes when its K-fold PLD composition (:func:`composed_delta`) has
    delta <= the target at ``epsilon``. The search returns the passing plan found first
    whose composed delta is at least 0.55 of the target, or the larger end of a passing /
    failing bracket ``rtol`` wide. Its steps are chosen by models: the first epsilon_i is
    :func:`gaussian_share` (exact for K Gaussian releases); after one plan, a model of
    the release's loss as a Gaussian part plus a constant part, fitted to that plan's
    composed delta (:func:`_shift_step`); after two, each composed delta read as the mu_K
    of the mu-GDP mechanism with that delta at ``epsilon`` (Dong, Roth & Su 2022,
    Corollary 2.13), and the line through the last two plans in (log epsilon_i, log mu_K)
    (slope kept in [1, 5]) followed to the mu_K of 0.85 of the target. Each step stays
    inside the bracket known so far and within [0.9^7 epsilon / K, epsilon] (basic
    composition's share stepped down, to the whole target); after a few steps, or where
    the models have no value (a composed delta of 0 or 1), Illinois regula falsi on
    Phi^-1(delta) against log epsilon_i narrows the bracket. Which epsilon_i are tried
    depends on public constants only; the returned plan's composed delta is the one
    computed for it.
    """
    delta_i = release_delta(delta, k)
    floor = epsilon / k * 0.9**7  # the smallest share the bracketing search tries
    if delta_i < sys.float_info.min or floor < sys.float_info.min:
        raise ParameterError(  # the shares tried below would underflow to 0
            f"(epsilon={epsilon:g}, delta={delta:.3g}) over {k} releases leaves per-release "
            "shares below the smallest normal float: no plan certifies them"
        )
    tried: dict[float, tuple[bool, WatkinsAroraPlan, float]] = {}

    def passes(eps_i: float) -> tuple[bool, WatkinsAroraPlan, float]:
        if eps_i not in tried:
            plan = plan_at(eps_i, delta_i)
            got = composed_delta(plan, k, epsilon, discretization)
            tried[eps_i] = (got <= delta, plan, got)
        return tried[eps_i]

    lo: tuple[float, WatkinsAroraPlan, float] | None = (
        None  # the largest passing (eps_i, plan, delta)
    )
    hi: tuple[float, float] | None = None  # the smallest failing (eps_i, delta)

    def done() -> bool:
        if lo is None:
            return False
        return (
            lo[0] >= epsilon
            or lo[2] >= _CLOSE * delta
            or (hi is not None and hi[0] / lo[0] <= 1.0 + rtol)
        )

    def record(eps_i: float) -> None:
        nonlocal lo, hi
        ok, plan, got = passes(eps_i)
        if ok and (lo is None or eps_i > lo[0]):
            lo = (eps_i, plan, got)
        elif not ok and (hi is None or eps_i < hi[0]):
            hi = (eps_i, got)

    eps_i = _start(epsilon, delta, k, floor)
    points: list[tuple[float, float]] = []  # (log eps_i, log mu_K) of the plans tried
    aim = _log_mu(epsilon, _AIM * delta)
    for _ in range(_MODEL_STEPS):
        record(eps_i)
        if done():
            break
        got = tried[eps_i][2]
        y = _log_mu(epsilon, got)
        if y is None or aim is None:
            break
        points.append((math.log(eps_i), y))
        (x1, y1) = points[-1]
        slope = 1.0 + _SLOPE * max(0.0, y1 - aim)
        nxt = math.exp(x1 + (aim - y1) / slope)
        if len(points) >= 2:
            x0, y0 = points[-2]
            if x1 != x0:  # kept within [1, 5]: a step of the plans' budget is no slope
                slope = min(max((y1 - y0) / (x1 - x0), 1.0), 5.0)
                nxt = math.exp(x1 + (aim - y1) / slope)
        else:  # one plan: the shifted-Gaussian model where it has a root
            shifted = _shift_step(epsilon, delta, k, eps_i, got, floor)
            nxt = nxt if shifted is None else shifted
        low = floor if lo is None else lo[0]
        high = epsilon if hi is None else hi[0]
        if not low < nxt < high:  # outside the bracket: its geometric middle
            nxt = (
                math.sqrt(low * high)
                if hi is not None and lo is not None
                else min(max(nxt, floor), epsilon)
            )
        if nxt in tried or not floor <= nxt <= epsilon:
            break
        eps_i = nxt
    if not done():
        _bracket(record, lambda: (lo, hi), done, epsilon, delta, k, floor)
    assert lo is not None  # _bracket raises when no plan passes
    eps_lo, plan_lo, d_lo = lo
    return JointPlan(plan_lo, k, epsilon, delta, eps_lo, delta_i, d_lo, discretization)


#: The shifted-Gaussian step stays this far below the model's boundary in epsilon_i (and
#: at or below its epsilon_i of _AIM * delta): Watkins & Arora plans compose somewhat
#: worse than the model says near the boundary (K = 10: a composed delta 1.1-1.8 times
#: the model's, about 2-2.5% in epsilon_i).
_SHIFT_MARGIN = 0.025
#: ... but not below the model's epsilon_i of this share of delta (where the composed
#: delta grows steeply with epsilon_i, 2.5% would leave the stopping window).
_SHIFT_FLOOR = 0.6
#: ... or of this share where the constant parts of the K releases take a quarter of the
#: target epsilon or more (K = 10: the composed delta came out up to 1.8 times the model's).
_SHIFT_FLOOR_FAR = 0.57


def _gdp_delta(x: float, mu: float) -> float:
    """delta(x) of mu-GDP for any real x (Dong, Roth & Su 2022, Corollary 2.13):
    Phi(mu/2 - x/mu) - e^x Phi(-mu/2 - x/mu), as Phi(a) (1 - e^(x + log Phi(b) - log Phi(a)))."""
    a, b = mu / 2.0 - x / mu, -mu / 2.0 - x / mu
    log_a = float(log_ndtr(a))
    return math.exp(log_a) * -math.expm1(min(x + float(log_ndtr(b)) - log_a, 0.0))


def _gdp_mu_at(x: float, target: float) -> float:
    """The mu with delta(x) = target for mu-GDP (increasing in mu): a root in log mu."""
    return math.exp(brentq(lambda t: math.log(max(_gdp_delta(x, math.exp(t)), 1e-320))
                           - math.log(target), -12.0, 8.0, xtol=1e-10))  # fmt: skip


def _shifted(e: float, share: float, k: int, epsilon: float, delta_i: float) -> float:
    """The composed delta at epsilon of K releases whose loss is mu-GDP's plus share * e,
    each certified at (e, delta_i) (:func:`_shift_step`)."""
    mu = _gdp_mu_at(e * (1.0 - share), delta_i)
    return _gdp_delta(epsilon - k * share * e, math.sqrt(k) * mu)


def _shift_step(
    epsilon: float, delta: float, k: int, e1: float, d1: float, floor: float
) -> float | None:
    """The next epsilon_i after one plan (at e1, composed delta d1), by a two-part model
    of a release's privacy loss: a mu-GDP part plus a constant part share * epsilon_i.
    A release certified at (e, delta_i) then has delta_G(e (1 - share); mu) = delta_i,
    and K of them compose to mu-GDP with sqrt(K) mu shifted by K share e (Dong, Roth &
    Su 2022, Corollaries 2.13 and 3.3): the constant part composes linearly, the Gaussian
    one by sqrt(K), which is how Watkins & Arora releases depart from Gaussian ones as K
    grows. The share is fitted to d1, and the model's epsilon_i of _AIM * delta, or 2.5%
    below that of delta if lower, but not below that of 0.6 delta (0.57 delta where the
    K constant parts take a quarter of epsilon or more), is taken (in [floor, e1]); None
    where the model has no root."""
    delta_i = delta / k
    try:
        share = brentq(lambda a: math.log(_shifted(e1, a, k, epsilon, delta_i)) - math.log(d1),
                       -1.0, min(0.999, epsilon / (k * e1)), xtol=1e-6)  # fmt: skip

        def solve(share_of_delta: float) -> float:
            goal = math.log(share_of_delta * delta)
            return math.exp(brentq(
                lambda t: math.log(_shifted(math.exp(t), share, k, epsilon, delta_i)) - goal,
                math.log(floor), math.log(e1), xtol=1e-6,
            ))  # fmt: skip

        linear = k * share * e1 / epsilon  # the target's share taken by the constant parts
        floor_share = _SHIFT_FLOOR if linear < 0.25 else _SHIFT_FLOOR_FAR
        return max(min(solve(_AIM), solve(1.0) * (1.0 - _SHIFT_MARGIN)), solve(floor_share))
    except (ArithmeticError, ValueError):
        return None


def _log_mu(epsilon: float, got: float) -> float | None:
    """log of the GDP mu with delta ``got`` at ``epsilon``; None where it has none."""
    if not 0.0 < got < 1.0:
        return None
    try:
        return math.log(_gdp_mu(epsilon, got))
    except (ArithmeticError, ParameterError, UnreachableTargetError, ValueError):
        return None


def _start(epsilon: float, delta: float, k: int, floor: float) -> float:
    """The first epsilon_i tried: :func:`gaussian_share` within [floor, epsilon] (epsilon /
    sqrt(K) where it cannot be computed)."""
    try:
        guess = gaussian_share(epsilon, delta, k)
    except (ArithmeticError, ParameterError, UnreachableTargetError, ValueError):
        guess = epsilon / math.sqrt(k)
    if not math.isfinite(guess) or guess <= 0.0:
        guess = epsilon / math.sqrt(k)
    return min(max(guess, floor), epsilon)


def _bracket(record, state, done, epsilon: float, delta: float, k: int, floor: float) -> None:
    """Complete the search of :func:`joint_plan` from the plans tried so far: a passing
    share by steps of 0.9 down from the smallest failing one (from epsilon / K when none
    failed), a failing one at epsilon, then Illinois regula falsi on Phi^-1(delta) against
    log epsilon_i until ``done()``."""
    lo, hi = state()
    if lo is None:
        start = min(epsilon / k, hi[0] * 0.9) if hi is not None else epsilon / k
        eps_i = start
        while eps_i >= floor * (1.0 - 1e-12):
            record(eps_i)
            lo, hi = state()
            if lo is not None:
                break
            eps_i *= 0.9
        else:
            raise UnreachableTargetError(
                f"no per-release plan composes to (epsilon={epsilon:g}, delta={delta:.3g}) "
                f"over {k} releases by PLD; use composition='split'"
            )
    if done():
        return
    if hi is None:
        record(epsilon)
        lo, hi = state()
        if done() or hi is None:
            return
    goal = float(ndtri(delta))

    def score(d: float) -> float:  # the Gaussian-tail scale: nearly linear in log epsilon_i
        return float(ndtri(min(max(d, 1e-300), 0.5))) - goal

    f_lo, f_hi, kept = score(lo[2]), score(hi[1]), 0
    while not done():
        a, b = math.log(lo[0]), math.log(hi[0])
        x = b - f_hi * (b - a) / (f_hi - f_lo) if f_hi != f_lo else 0.5 * (a + b)
        x = min(max(x, a + 0.02 * (b - a)), b - 0.02 * (b - a))
        before = lo
        record(math.exp(x))
        lo, hi = state()
        if lo is not before:
            f_lo = score(lo[2])
            f_hi, kept = (f_hi / 2.0, kept) if kept < 0 else (f_hi, -1)
        else:
            f_hi = score(hi[1])
            f_lo, kept = (f_lo / 2.0, kept) if kept > 0 else (f_lo, 1)


#: How the K releases of one fit compose: ``"pld"`` (their PLDs; needs dp-accounting),
#: ``"split"`` (basic or advanced composition of per-release points) or ``"auto"`` (pld when
#: dp-accounting is installed, else split).
COMPOSITIONS = ("auto", "pld", "split")


def resolve_composition(composition: str, k: int) -> str:
    """``"single"`` for one release, else ``"pld"`` or ``"split"`` (``"auto"``: pld when
    dp-accounting can be imported). ``"pld"`` without dp-accounting is a ParameterError."""
    if composition not in COMPOSITIONS:
        raise ParameterError(f"composition must be one of {COMPOSITIONS}; got {composition!r}")
    if k == 1:
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

    plan: WatkinsAroraPlan
    method: str
    k: int
    epsilon: float
    delta: float
    delta_slack: float = 0.0
    discretization: float = pldlib.DEFAULT_DISCRETIZATION

    def losses(self) -> list[pldlib.PrivacyLoss]:
        """The K releases as privacy losses (what an accountant is charged)."""
        return [pldlib.from_plan(self.plan).times(self.k)]

    def composed_certificate(
        self, certificates: Sequence[Any], not_public: Sequence[str] = ()
    ) -> Any:
        """The fit's composed certificate from the K releases' certificates."""
        if self.method == "pld":
            from objpert.accounting._accountant import _compose_certificates

            return _compose_certificates(
                certificates, self.epsilon, discretization=self.discretization,
                not_public=not_public,
            )  # fmt: skip
        return compose_split(
            certificates, self.method, delta_slack=self.delta_slack or None,
            not_public=tuple(not_public),
        )  # fmt: skip


def calibrate_releases(
    plan_at: Callable[[float, float], WatkinsAroraPlan],
    epsilon: float,
    delta: float,
    k: int,
    composition: str = "auto",
) -> Calibration:
    """The per-release plan of a K-release fit: jointly at the PLD composition
    (:func:`joint_plan`) or by :func:`~objpert.accounting._composition.split_budget`."""
    method = resolve_composition(composition, k)
    if method == "pld":
        jp = joint_plan(plan_at, epsilon, delta, k)
        return Calibration(jp.plan, "pld", k, epsilon, delta, 0.0, jp.discretization)
    split = split_budget(epsilon, delta, k)
    plan = plan_at(split.epsilon_i, split.delta_i)
    return Calibration(plan, split.method, k, epsilon, delta, split.delta_slack)


def check_settings(composition: Any, accountant: Any = None) -> str:
    """An estimator's ``composition`` (one of :data:`COMPOSITIONS`) and ``accountant``
    (None or a :class:`~objpert.accounting.PrivacyAccountant`) parameters;
    returns the composition."""
    from objpert.accounting._accountant import PrivacyAccountant

    if accountant is not None and not isinstance(accountant, PrivacyAccountant):
        raise ParameterError(
            "accountant must be None or an objpert.accounting.PrivacyAccountant; got "
            f"{type(accountant).__name__}"
        )
    if not isinstance(composition, str) or composition not in COMPOSITIONS:
        raise ParameterError(f"composition must be one of {COMPOSITIONS}; got {composition!r}")
    return composition
