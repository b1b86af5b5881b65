"""A privacy budget that refuses a release before it is made, and the certificates of
composed releases.

:class:`PrivacyAccountant` holds a total (epsilon, delta) and a ledger of what was
spent. Every release on the same data is added as a :class:`~objpert.accounting._pld.
PrivacyLoss`; the ledger's privacy is the composition of their pessimistic PLDs
(:func:`objpert.accounting.compose`). :meth:`PrivacyAccountant.spend` composes the new
release with the ledger *first* and raises :class:`~objpert.exceptions.BudgetExceededError`
when the total at the budget's epsilon exceeds its delta; nothing is added then, and the
caller releases nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from objpert._validation import check_open_unit, check_positive, validated
from objpert.accounting import _pld as pldlib
from objpert.accounting._certificate import Certificate, budget_text
from objpert.accounting._composition import ComposedCertificate, certificate_from_dict
from objpert.accounting._plan import Plan
from objpert.accounting._unit import unit_from_dict, unit_words
from objpert.exceptions import BudgetExceededError, ParameterError, PrivacyError

__all__ = [
    "AccountedCertificate",
    "PLDComposedCertificate",
    "PrivacyAccountant",
    "Remaining",
    "Step",
    "as_losses",
    "compose_certificates",
]


def as_losses(item: Any) -> list[pldlib.PrivacyLoss]:
    """The privacy losses of what a release is known by: a PrivacyLoss, a plan (re-derived),
    a certificate (a composed one: its parts), a fitted estimator (its ``certificate_``) or
    a list of these."""
    if isinstance(item, pldlib.PrivacyLoss):
        return [item]
    if isinstance(item, Certificate):
        return item.privacy_losses()
    if isinstance(item, Plan):
        return [item.privacy_loss()]
    if hasattr(item, "certificate_"):
        return as_losses(item.certificate_)
    if isinstance(item, list | tuple):
        return [loss for x in item for loss in as_losses(x)]
    raise ParameterError(
        f"expected a privacy loss, a plan, a certificate or a fitted model; got "
        f"{type(item).__name__}"
    )


@dataclass(frozen=True)
class Step:
    """One private step of a ledger: its name, how it composes, and the structural choices
    it read from the data (``not_public``)."""

    name: str
    losses: tuple[pldlib.PrivacyLoss, ...]
    not_public: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "releases": [x.to_dict() for x in self.losses],
            "not_public": list(self.not_public),
        }


@dataclass(frozen=True)
class AccountedCertificate(Certificate):
    """The joint guarantee of every private step of a ledger (or a pipeline).

    ``method`` is ``"pld"``: the steps' pessimistic PLDs composed (grid
    ``discretization``). ``epsilon`` is the composed epsilon at ``delta``;
    ``delta_at_budget`` the composed delta at the budget's epsilon (NaN without a budget).
    ``not_public``: the union of the steps' ``not_public``.
    """

    method: str
    epsilon: float
    delta: float
    steps: tuple[Step, ...]
    discretization: float
    budget_epsilon: float = math.nan
    budget_delta: float = math.nan
    delta_at_budget: float = math.nan

    @property
    def not_public(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(x for s in self.steps for x in s.not_public))

    @property
    def certified(self) -> bool:
        return bool(self.steps) and math.isfinite(self.epsilon) and self.delta < 1.0

    @property
    def covers(self) -> str:
        k = len(self.steps)
        what = f"every release of {k} step{'s' if k != 1 else ''} on the same data"
        rows = self.rows_per_unit
        return what if rows == 1 else f"{what}, each for {unit_words(rows)}"

    @property
    def rows_per_unit(self) -> int:
        """The rows of one privacy unit every release is certified for (1: one row); a
        ledger's releases are all for the same unit (composing them checked it)."""
        losses = self.privacy_losses()
        return getattr(losses[0], "rows", 1) if losses else 1

    def privacy_losses(self) -> list[pldlib.PrivacyLoss]:
        return [x for s in self.steps for x in s.losses]

    def __repr__(self) -> str:
        """One line: the composition and its totals (``to_dict`` has every step)."""
        return (
            f"AccountedCertificate(method={self.method!r}, steps={len(self.steps)}, "
            f"epsilon={self.epsilon!r}, delta={self.delta!r}, certified={self.certified})"
        )

    def __str__(self) -> str:
        return self.summary()

    def summary(self, max_steps: int = 10) -> str:
        """A few lines: the guarantee, how it is composed, the budget (when there is one),
        each step (at most ``max_steps``) and what is not covered."""
        status = "certified" if self.certified else "NOT certified"
        k = len(self.steps)
        lines = [
            f"{budget_text(self.epsilon, self.delta)}, {status} (privacy-loss distributions "
            f"of {k} step{'s' if k != 1 else ''} composed, grid {self.discretization:g})"
        ]
        if math.isfinite(self.budget_epsilon):
            lines.append(
                f"  budget {budget_text(self.budget_epsilon, self.budget_delta)}: delta at "
                f"the budget's epsilon {self.delta_at_budget:.3g}"
            )
        for i, s in enumerate(self.steps[:max_steps], 1):
            releases = sum(x.count for x in s.losses)
            lines.append(f"  step {i}: {s.name} ({releases} release{'s' if releases != 1 else ''})")
        if k > max_steps:
            lines.append(f"  ... {k - max_steps} more steps")
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        def num(v: float) -> float | None:
            return v if math.isfinite(v) else None

        return {
            "method": self.method,
            "epsilon": num(self.epsilon),
            "delta": self.delta,
            "discretization": self.discretization,
            "budget_epsilon": num(self.budget_epsilon),
            "budget_delta": num(self.budget_delta),
            "delta_at_budget": num(self.delta_at_budget),
            "certified": self.certified,
            "steps": [s.to_dict() for s in self.steps],
            "not_public": list(self.not_public),
            **({"privacy_unit": unit_words(self.rows_per_unit)} if self.rows_per_unit > 1 else {}),
        }


@dataclass(frozen=True)
class Remaining:
    """What a ledger leaves of its budget: ``epsilon`` = budget epsilon - spent epsilon (at
    the budget's delta), ``delta`` = budget delta - composed delta at the budget's epsilon.

    Headroom, not a promise: compositions do not add, so whether a further release fits is
    answered by :meth:`PrivacyAccountant.can_spend` only."""

    epsilon: float
    delta: float

    def to_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class PrivacyAccountant:
    """A privacy budget (epsilon, delta) for releases on one data set.

    ``spend(x, name=...)`` adds a release (a plan, a certificate, a fitted estimator or a
    :class:`~objpert.accounting.PrivacyLoss`) if the composition of everything spent
    stays within the budget, and raises :class:`BudgetExceededError` otherwise (nothing is
    added; the caller must release nothing). Estimators take ``accountant=`` and spend
    before they touch the data. Copies (``copy.deepcopy``, ``sklearn.base.clone``) share
    this one ledger; it cannot be pickled (a ledger split over processes would not add up).
    """

    @validated(epsilon=check_positive, delta=check_open_unit)
    def __init__(
        self,
        epsilon: float,
        delta: float,
        *,
        discretization: float = pldlib.DEFAULT_DISCRETIZATION,
    ) -> None:
        self.epsilon, self.delta = epsilon, delta
        self.discretization = pldlib.check_discretization(discretization)
        pldlib._dp()  # the accountant needs dp-accounting: say so now, not at spend
        self._steps: list[Step] = []
        self._pld: Any = None

    # one ledger: copies share it, other processes cannot hold it
    def __copy__(self) -> PrivacyAccountant:
        return self

    def __deepcopy__(self, memo: dict) -> PrivacyAccountant:
        return self

    def __reduce__(self):
        raise PrivacyError(
            "a PrivacyAccountant cannot be pickled: a ledger copied to another process "
            "would not record that process's releases (fit with n_jobs=1)"
        )

    def __repr__(self) -> str:
        return (
            f"PrivacyAccountant(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"steps={len(self._steps)})"
        )

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    def _with(self, losses: Sequence[pldlib.PrivacyLoss]) -> Any:
        extra = pldlib.compose(losses, self.discretization)
        return extra if self._pld is None else self._pld.compose(extra)

    def _delta_of(self, total: Any) -> float:
        return pldlib._delta_for_epsilon(total, self.epsilon)

    def can_spend(self, item: Any) -> bool:
        """Whether spending ``item`` would keep the ledger within the budget."""
        return self._delta_of(self._with(as_losses(item))) <= self.delta

    def _admit(self, item: Any, name: str | None) -> tuple[list[pldlib.PrivacyLoss], Any]:
        """The losses of ``item`` and the ledger's PLD with them, or BudgetExceededError
        (ParameterError for a release certified for another privacy unit than the
        ledger's first)."""
        losses = as_losses(item)
        pldlib.check_same_unit([*losses, *(x for s in self._steps for x in s.losses)])
        total = self._with(losses)
        after = self._delta_of(total)
        if after > self.delta:
            left = self.remaining()
            asked = pldlib.epsilon_for_delta(total, self.delta)
            raise BudgetExceededError(
                f"{name or 'this release'} would take the privacy budget (epsilon="
                f"{self.epsilon:g}, delta={self.delta:.3g}) to delta={after:.3g} at epsilon="
                f"{self.epsilon:g} (epsilon={asked:.4g} at delta={self.delta:.3g}); remaining: "
                f"epsilon {left.epsilon:.4g}, delta {left.delta:.3g}; nothing was released"
            )
        return losses, total

    def check(self, item: Any, name: str | None = None) -> None:
        """Raise :class:`BudgetExceededError` if ``item`` does not fit (nothing is added)."""
        self._admit(item, name)

    def spend(self, item: Any, name: str | None = None, *, not_public: Iterable[str] = ()) -> Step:
        """Add ``item`` to the ledger, or raise :class:`BudgetExceededError` (nothing added)."""
        losses, total = self._admit(item, name)
        label = name or f"step {len(self._steps)}"
        np_items = tuple(dict.fromkeys([*getattr(item, "not_public", ()), *not_public]))
        step = Step(str(label), _merged(losses), np_items)
        self._steps.append(step)
        self._pld = total
        return step

    @property
    def spent(self) -> float:
        """The composed epsilon of the ledger at the budget's delta (0.0 when empty)."""
        if self._pld is None:
            return 0.0
        return pldlib.epsilon_for_delta(self._pld, self.delta)

    @property
    def spent_delta(self) -> float:
        """The composed delta of the ledger at the budget's epsilon (0.0 when empty)."""
        return 0.0 if self._pld is None else self._delta_of(self._pld)

    def remaining(self) -> Remaining:
        return Remaining(
            max(self.epsilon - self.spent, 0.0), max(self.delta - self.spent_delta, 0.0)
        )

    def certificate(self) -> AccountedCertificate:
        """One certificate for every step spent (composed by PLD)."""
        if not self._steps:
            raise ParameterError("nothing was spent: there is no certificate to report")
        return AccountedCertificate(
            "pld", self.spent, self.delta, self.steps, self.discretization,
            self.epsilon, self.delta, self.spent_delta,
        )  # fmt: skip


def _merged(losses: Sequence[pldlib.PrivacyLoss]) -> tuple[pldlib.PrivacyLoss, ...]:
    """Identical losses of one step (K one-vs-rest releases of one plan) as one loss
    counted K times; distinct ones kept in order."""
    counts: dict[pldlib.PrivacyLoss, int] = {}
    for x in losses:
        counts[x] = counts.get(x, 0) + 1
    return tuple(x.times(k) if k > 1 else x for x, k in counts.items())


@dataclass(frozen=True)
class PLDComposedCertificate(ComposedCertificate):
    """K releases composed by their pessimistic PLDs (``method="pld"``): ``delta`` is the
    composed delta at ``epsilon`` (the target's); ``epsilon_i``/``delta_i`` the releases'
    own certified points; ``discretization`` the PLD grid step."""

    discretization: float = pldlib.DEFAULT_DISCRETIZATION

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "discretization": self.discretization}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PLDComposedCertificate:
        """Rebuild from :meth:`to_dict`, recomposing delta from the certificates (their
        constants re-derived from the loss; the stored totals are not trusted)."""
        certs = [certificate_from_dict(c) for c in data["certificates"]]
        return _compose_certificates(
            certs,
            data["epsilon"],
            discretization=data.get("discretization", pldlib.DEFAULT_DISCRETIZATION),
            not_public=tuple(str(r) for r in data.get("not_public", ())),
        )


def release_from_dict(data: dict[str, Any]) -> Any:
    """Inverse of ``to_dict`` for one release's certificate or a composition of releases
    (one-vs-rest's: basic, advanced or PLD; the totals recomposed, not trusted), per row or
    per unit (:func:`~objpert.accounting._unit.unit_from_dict`)."""

    def read(one: Any) -> Any:
        if not isinstance(one, dict) or "certificates" not in one:
            return certificate_from_dict(one)
        kind = PLDComposedCertificate if one.get("method") == "pld" else ComposedCertificate
        try:
            return kind.from_dict(one)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ParameterError(f"a composed certificate is missing or has a bad {exc}") from None

    return unit_from_dict(data, read)


@validated(epsilon=check_positive)
def compose_certificates(
    certificates: Sequence[Any],
    epsilon: float,
    *,
    discretization: float = pldlib.DEFAULT_DISCRETIZATION,
    not_public: Sequence[str] = (),
) -> PLDComposedCertificate:
    """The PLD composition of per-release certificates, queried at ``epsilon`` (each
    release's privacy losses, a person-level one's grouped for its unit; releases for
    different units are refused)."""
    return _compose_certificates(
        certificates, epsilon, discretization=discretization, not_public=not_public
    )


def _compose_certificates(
    certificates: Sequence[Any],
    epsilon: float,
    *,
    discretization: float = pldlib.DEFAULT_DISCRETIZATION,
    not_public: Sequence[str] = (),
) -> PLDComposedCertificate:
    """:func:`compose_certificates` at a checked epsilon (the library's own callers)."""
    certs = tuple(certificates)
    if not certs:
        raise ParameterError("composition needs at least one certificate; got none")
    for c in certs:
        if not isinstance(c, Certificate):
            raise ParameterError(f"expected a certificate; got {type(c).__name__}")
    total = pldlib.compose([x for c in certs for x in c.privacy_losses()], discretization)
    delta = pldlib._delta_for_epsilon(total, epsilon)
    return PLDComposedCertificate(
        "pld", epsilon, delta,
        tuple(float(c.epsilon) for c in certs), tuple(float(c.delta) for c in certs),
        len(certs), 0.0, certs, tuple(not_public), discretization,
    )  # fmt: skip
