"""Composition: the privacy of K (epsilon_i, delta_i)-DP releases computed on the same data.

A one-vs-rest classifier with K classes is K releases of the Watkins & Arora (2026)
mechanism on one data set; its guarantee is the composition of theirs. Two theorems:

- **Basic composition** (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014,
  Theorem 3.16): releases that are (epsilon_i, delta_i)-DP are, together,
  (sum epsilon_i, sum delta_i)-DP.
- **Advanced composition** (Dwork, Rothblum & Vadhan 2010, Theorem III.3; Dwork & Roth
  2014, Theorem 3.20): for every slack delta' > 0, K adaptively chosen (epsilon, delta)-DP
  releases are, together, (epsilon', K delta + delta')-DP with
  epsilon' = sqrt(2 K ln(1/delta')) epsilon + K epsilon (e^epsilon - 1).

Everything here is a pure function of public numbers: no data, no randomness. The values
are frozen dataclasses whose ``to_dict`` is JSON-serialisable.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from objpert._special import log_over
from objpert._validation import (
    check_nonnegative,
    check_unit,
)
from objpert.accounting._certificate import (
    FORM_NAMES,
    Certificate,
    ReleaseCertificate,
    budget_text,
    certificate_from_dict,
)
from objpert.exceptions import ParameterError

METHODS = ("single", "basic", "advanced")

__all__ = [
    "METHODS",
    "ComposedCertificate",
    "Split",
    "advanced",
    "basic",
    "basic_profile",
    "compose",
    "parallel",
    "same_unit",
    "split_budget",
]


def _check_delta_like(name: str, value: Any) -> float:
    """A delta of one release: in [0, 1] (1 is the trivial bound of an uncertified release)."""
    return check_unit(name, value)


def _capped(delta: float) -> float:
    """A composed delta: a bound above 1 is the trivial bound 1.0 (every probability is
    <= 1), never reported as 1.2 or 5.0."""
    return min(delta, 1.0)


def _sum(values: Sequence[float]) -> float:
    """The correctly rounded sum (math.fsum); +inf when it exceeds the float64 range (an
    epsilon that large is the trivial bound)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


def _releases(name: str, values: Any, check: Any) -> list[float]:
    """The per-release values of a composition, each checked."""
    try:
        items = list(values) if not isinstance(values, str | bytes) else None
    except TypeError:  # not iterable (a number, a 0-d array)
        items = None
    if items is None:
        raise ParameterError(f"{name} must be a sequence of numbers; got {values!r:.80}")
    return [check(f"{name}[{i}]", v) for i, v in enumerate(items)]


def basic(eps_list: Sequence[float], delta_list: Sequence[float]) -> tuple[float, float]:
    """Basic composition (Dwork & Roth 2014, Theorem 3.16): (sum epsilon_i, sum delta_i).

    Releases that are (epsilon_i, delta_i)-DP on the same data are jointly
    (sum_i epsilon_i, sum_i delta_i)-DP, whatever their order or adaptivity. A delta sum
    above 1 is reported as the trivial bound 1.0; an epsilon sum beyond the float64 range
    as +inf.
    """
    eps = _releases("epsilon_i", eps_list, check_nonnegative)
    dels = _releases("delta_i", delta_list, _check_delta_like)
    if len(eps) != len(dels):
        raise ParameterError(
            f"eps_list and delta_list must have the same length; got {len(eps)} and {len(dels)}"
        )
    if not eps:
        raise ParameterError("composition needs at least one release; got none")
    return _sum(eps), _capped(math.fsum(dels))


def basic_profile(deltas: Sequence[Any]) -> Any:
    """The delta of releases composed by basic composition at epsilon = sum_i epsilon_i,
    from each release's delta_i at its own epsilon_i (numbers or arrays of profile
    values, pointwise): min(1, sum_i delta_i) (Dwork & Roth 2014, Theorem 3.16)."""
    return np.minimum(sum(deltas), 1.0)


def parallel(eps_list: Sequence[float], delta_list: Sequence[float]) -> tuple[float, float]:
    """Parallel composition (McSherry 2009, Theorem 4): releases each computed from its own
    disjoint part of the rows are jointly (max_i epsilon_i, max_i delta_i)-DP, since
    replacing one row changes one part only."""
    return max(eps_list), max(delta_list)


def _basic_total(value: float, k: int) -> float:
    """The basic-composition total of K releases of ``value`` each, in O(1): float(K) * value
    is the correctly rounded K value (K <= 2^53 is exact in float64), which is what
    math.fsum of K copies returns (+inf past the float64 range)."""
    return float(k) * value


def _advanced_epsilon(epsilon: float, k: int, delta_slack: float) -> float:
    """sqrt(2 K ln(1/delta')) epsilon + K epsilon (e^epsilon - 1); +inf past the float64
    range (expm1 overflows for epsilon > ~709)."""
    try:
        growth = math.expm1(epsilon)
    except OverflowError:
        growth = math.inf
    first = math.sqrt(2.0 * k * log_over(1.0, delta_slack)) * epsilon
    second = k * epsilon * growth if epsilon > 0.0 else 0.0
    return first + second


def advanced(epsilon: float, delta: float, k: int, delta_slack: float) -> tuple[float, float]:
    """Advanced composition (Dwork, Rothblum & Vadhan 2010, Theorem III.3).

    K (epsilon, delta)-DP releases are jointly (epsilon', K delta + delta')-DP for every
    slack delta' in (0, 1), with epsilon' = sqrt(2 K ln(1/delta')) epsilon
    + K epsilon (e^epsilon - 1). Returns (epsilon', min(K delta + delta', 1)): a delta
    above 1 is the trivial bound 1.0, an epsilon' beyond the float64 range +inf.
    """
    return _advanced_epsilon(epsilon, k, delta_slack), _capped(k * delta + delta_slack)


@dataclass(frozen=True)
class Split:
    """A per-release budget (epsilon_i, delta_i) for K releases meeting a total target.

    ``method`` names the theorem that composes the K releases into (``epsilon_total``,
    ``delta_total``) <= (``epsilon``, ``delta``): ``"single"`` (K = 1, no composition),
    ``"basic"`` or ``"advanced"`` (with slack ``delta_slack``; 0 otherwise).
    """

    method: str
    k: int
    epsilon: float
    delta: float
    epsilon_i: float
    delta_i: float
    delta_slack: float
    epsilon_total: float
    delta_total: float

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _largest_below(value: float, target: float, total) -> float:
    """Step ``value`` down (by ulps) until ``total(value) <= target``: rounding guard."""
    while total(value) > target:
        value = math.nextafter(value, 0.0)
    return value


def _basic_split(epsilon: float, delta: float, k: int) -> Split:
    """epsilon/K and delta/K, stepped down until their totals are <= the target: O(1) in K
    (:func:`_basic_total`, the value math.fsum of K copies gives)."""
    eps_i = _largest_below(epsilon / k, epsilon, lambda e: _basic_total(e, k))
    delta_i = _largest_below(delta / k, delta, lambda d: _basic_total(d, k))
    e_tot, d_tot = _basic_total(eps_i, k), _basic_total(delta_i, k)
    return Split("basic", k, epsilon, delta, eps_i, delta_i, 0.0, e_tot, d_tot)


def _advanced_split(epsilon: float, delta: float, k: int) -> Split:
    """Half of delta to the slack delta', the rest split evenly; epsilon_i by bisection."""
    slack = delta / 2.0
    delta_i = _largest_below((delta - slack) / k, delta, lambda d: k * d + slack)

    def eps_total(e: float) -> float:
        return _advanced_epsilon(e, k, slack)

    lo, hi = 0.0, epsilon  # eps_total(epsilon) > epsilon for k >= 1; eps_total(0) = 0
    for _ in range(200):  # eps_total is increasing: keep eps_total(lo) <= epsilon
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if eps_total(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    e_tot, d_tot = _advanced_epsilon(lo, k, slack), k * delta_i + slack
    return Split("advanced", k, epsilon, delta, lo, delta_i, slack, e_tot, d_tot)


def split_budget(epsilon: float, delta: float, k: int) -> Split:
    """Per-release (epsilon_i, delta_i) for K releases jointly meeting (epsilon, delta).

    K = 1: the target itself (``"single"``). Otherwise both candidates are computed and the
    one with the larger epsilon_i is returned (basic on a tie):

    - basic (Dwork & Roth 2014, Theorem 3.16): epsilon_i = epsilon/K, delta_i = delta/K;
    - advanced (Dwork, Rothblum & Vadhan 2010, Theorem III.3): delta' = delta/2,
      delta_i = delta/(2K), and epsilon_i the largest value with
      sqrt(2K ln(1/delta')) epsilon_i + K epsilon_i (e^epsilon_i - 1) <= epsilon
      (bisection; the left-hand side increases with epsilon_i).

    The composed totals are evaluated in floating point and are <= the target exactly.
    Advanced composition wins for large K and small epsilon (its epsilon_i shrinks like
    1/sqrt(K) instead of 1/K). O(1) in K (no list of K values is built; K <= 2^53).
    Private: its callers hand it a checked target (epsilon > 0, delta in (0, 1), k >= 1).
    """
    if k > 1 and not delta / (2.0 * k) >= sys.float_info.min:
        raise ParameterError(
            f"delta = {delta!r} is too small to split over k = {k} releases: each release's "
            "delta would underflow the float64 range"
        )
    if k > 1 and not epsilon / k >= sys.float_info.min:
        raise ParameterError(
            f"epsilon = {epsilon!r} is too small to split over k = {k} releases: each "
            "release's epsilon would underflow the float64 range"
        )
    if k == 1:
        return Split("single", 1, epsilon, delta, epsilon, delta, 0.0, epsilon, delta)
    b = _basic_split(epsilon, delta, k)
    a = _advanced_split(epsilon, delta, k)
    return a if a.epsilon_i > b.epsilon_i else b


@dataclass(frozen=True)
class ComposedCertificate(Certificate):
    """The joint guarantee of K releases on the same data, from their certificates.

    ``epsilon``/``delta`` are the composed totals; ``epsilon_i``/``delta_i`` the certified
    values of each release (read from ``certificates``). ``method``: ``"single"`` (K = 1,
    the one certificate), ``"basic"`` (Dwork & Roth 2014, Theorem 3.16) or ``"advanced"``
    (Dwork, Rothblum & Vadhan 2010, Theorem III.3, with slack ``delta_slack``; the
    releases are composed at their largest epsilon_i and delta_i). ``not_public``: as in
    :class:`~objpert.accounting.Certificate`, for the model as a whole.
    """

    method: str
    epsilon: float
    delta: float
    epsilon_i: tuple[float, ...]
    delta_i: tuple[float, ...]
    k: int
    delta_slack: float
    certificates: tuple[ReleaseCertificate, ...]
    not_public: tuple[str, ...] = ()

    @property
    def certified(self) -> bool:
        """Every release certified (an uncertified one has delta = 1: nothing composes) and
        a composed total that is not the trivial bound (delta < 1, epsilon finite)."""
        return (
            all(c.certified for c in self.certificates)
            and self.delta < 1.0
            and math.isfinite(self.epsilon)
        )

    @property
    def covers(self) -> str:
        what = f"{self.k} releases on the same data ({self.method} composition)"
        if self.rows_per_unit == 1:
            return what
        from objpert.accounting._unit import unit_words

        return f"{what}, each for {unit_words(self.rows_per_unit)}"

    @property
    def rows_per_unit(self) -> int:
        """The parts' rows per privacy unit (ParameterError where they differ)."""
        return same_unit(self.certificates)

    def privacy_losses(self) -> list[Any]:
        """The releases' own privacy losses (each composes as what its analysis proves; a
        person-level release as its losses grouped for its unit)."""
        return [x for c in self.certificates for x in c.privacy_losses()]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Subclasses (dataclasses too) keep the short :meth:`__repr__` unless they define
        their own."""
        super().__init_subclass__(**kwargs)
        if "__repr__" not in cls.__dict__:
            cls.__repr__ = ComposedCertificate.__repr__

    def __repr__(self) -> str:
        """One line: the composition and its totals (``to_dict`` has every release)."""
        return (
            f"{type(self).__name__}(method={self.method!r}, k={self.k}, epsilon={self.epsilon!r}, "
            f"delta={self.delta!r}, certified={self.certified})"
        )

    def summary(self) -> str:
        """What :func:`str` prints: the guarantee in a few lines."""
        return str(self)

    def __str__(self) -> str:
        """A few lines: the total, the releases (one line when they are alike, else one
        line each, at most ten), why any failed (at most five reasons), and what it does
        not cover."""
        status = "certified" if self.certified else "NOT certified"
        lines = [
            f"{budget_text(self.epsilon, self.delta)}, {status} ({self.method} composition "
            f"of {self.k} release{'s' if self.k != 1 else ''})"
        ]
        pairs = [budget_text(e, d) for e, d in zip(self.epsilon_i, self.delta_i, strict=True)]
        runs = {_release_text(c) for c in self.certificates}
        if len(set(pairs)) == 1 and len(runs) == 1:
            c = self.certificates[0]
            each = f"(epsilon_i, delta_i) = ({c.epsilon:.4g}, {c.delta:.4g})"
            head = "the release" if self.k == 1 else f"{self.k} releases, each"
            lines.append(
                f"  {head} {each}{'' if c.certified else ' NOT certified'} ({_release_text(c)})"
            )
        else:
            shown = list(zip(pairs, self.certificates, strict=True))[:10]
            for i, (pair, c) in enumerate(shown, 1):
                mark = "" if c.certified else ", NOT certified"
                lines.append(f"  release {i}: {pair} ({_release_text(c)}){mark}")
            if self.k > len(shown):
                lines.append(f"  ... {self.k - len(shown)} more releases")
        if self.method == "advanced":
            lines.append(f"  delta' slack of the advanced composition: {self.delta_slack:.3g}")
        failed = dict.fromkeys(
            " ".join(r.split()) for c in self.certificates for r in getattr(c, "reasons", ())
        )
        lines += [f"  not certified: {r}" for r in list(failed)[:5]]
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable; the per-release certificates flattened by their ``to_dict``."""
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "epsilon_i": list(self.epsilon_i),
            "delta_i": list(self.delta_i),
            "k": self.k,
            "delta_slack": self.delta_slack,
            "certified": self.certified,
            "certificates": [c.to_dict() for c in self.certificates],
            "not_public": list(self.not_public),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ComposedCertificate:
        """Rebuild from :meth:`to_dict`, recomposing the totals from the certificates.

        The stored totals are not trusted: they are recomputed from the per-release
        certificates with the stored method and slack (compare them to detect edits).
        """
        certs = [certificate_from_dict(c) for c in data["certificates"]]
        not_public = tuple(str(r) for r in data.get("not_public", ()))
        return compose(
            certs,
            data["method"],
            delta_slack=data.get("delta_slack") or None,
            not_public=not_public,
        )


def same_unit(certificates: Sequence[Any]) -> int:
    """The rows per privacy unit every certificate is for; ParameterError where they
    differ (releases certified for different units do not compose: a one-row release
    grouped first, :func:`objpert.accounting.group_certificate`, composes with k-row ones)."""
    units = sorted({c.rows_per_unit for c in certificates})
    if len(units) > 1:
        raise ParameterError(
            f"releases certified for different privacy units (rows per unit {units}) do not "
            "compose; certify every release for the same unit"
        )
    return units[0] if units else 1


def compose(
    certificates: Sequence[ReleaseCertificate],
    method: str,
    *,
    delta_slack: float | None = None,
    not_public: Sequence[str] = (),
) -> ComposedCertificate:
    """Compose per-release certificates with ``method`` ("single", "basic", "advanced").

    "advanced" needs ``delta_slack`` (delta' in (0, 1)) and composes at the largest
    (epsilon_i, delta_i): a release that is (e, d)-DP is also (e', d')-DP for e' >= e,
    d' >= d, so the K releases are K identical (max epsilon_i, max delta_i)-DP releases.
    """
    certs = tuple(certificates)
    if not certs:
        raise ParameterError("composition needs at least one certificate; got none")
    same_unit(certs)
    if method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}; got {method!r}")
    eps = tuple(float(c.epsilon) for c in certs)
    dels = tuple(float(c.delta) for c in certs)
    k = len(certs)
    slack = 0.0
    if method == "single":
        if k != 1:
            raise ParameterError(f"method 'single' composes exactly one certificate; got {k}")
        total_eps, total_delta = eps[0], dels[0]
    elif method == "basic":
        total_eps, total_delta = basic(eps, dels)
    else:
        if delta_slack is None:
            raise ParameterError("advanced composition needs delta_slack in (0, 1)")
        slack = float(delta_slack)
        total_eps, total_delta = advanced(max(eps), max(dels), k, slack)
    return ComposedCertificate(
        method, total_eps, total_delta, eps, dels, k, slack, certs, tuple(not_public)
    )


def _release_text(cert: Any) -> str:
    """What one composed release is, in a few words: a single release's form, steps and
    noise; a composed one's own composition."""
    if isinstance(cert, ReleaseCertificate):
        return (
            f"{FORM_NAMES.get(cert.form, cert.form)}, N = {cert.iterations}, "
            f"sigma = {cert.sigma:.4g}"
        )
    k = getattr(cert, "k", None)
    return f"{getattr(cert, 'method', type(cert).__name__)} composition of {k} releases"
