"""The certificate of a release for one privacy unit (a person) of up to k rows.

:class:`UnitCertificate` wraps the certificate of a release and says for which unit its
guarantee holds: datasets that differ in one unit's rows, up to k of them (the same
number of rows, up to k replaced). It holds by one of two routes:

- ``"direct"``: the wrapped certificate is itself computed for k-row neighbours
  (Watkins & Arora's Theorem C.13 re-derived for k rows,
  :mod:`objpert.certify._unit_rows`); its privacy losses are the unit's.
- ``"group"``: the wrapped certificate is for one row, and the unit's guarantee is group
  privacy of its profile (:func:`objpert.accounting.group_privacy`), evaluated at the
  unit-level epsilon (:func:`group_certificate`).

``routes`` records the delta each route gives at epsilon where both were evaluated (public
numbers, from the plan alone); the certificate keeps the smaller.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert._jsonable import to_json_value
from objpert._validation import check_int, check_positive, count, optional, validated
from objpert.accounting import _pld as pld
from objpert.accounting._certificate import DELTA_FLOOR, Certificate, certificate_from_dict
from objpert.accounting._events import PrivacyLoss
from objpert.accounting._group import group_privacy
from objpert.exceptions import ParameterError, PrivacyError

__all__ = [
    "ROUTES",
    "UnitCertificate",
    "group_certificate",
    "group_profile",
    "unit_from_dict",
    "unit_words",
]

#: How a unit's guarantee is obtained, and how certificates name it.
ROUTES = {
    "direct": "the release's theorem for k-row neighbours",
    "group": "group privacy of the release's one-row privacy profile",
}


def unit_words(rows: int, unit: str = "") -> str:
    """``one person, up to k rows`` (and the unit's column when it is named)."""
    named = f" (privacy unit {unit!r})" if unit else ""
    return f"one person, up to {rows} row{'s' if rows != 1 else ''}{named}"


@dataclass(frozen=True)
class UnitCertificate(Certificate):
    """(epsilon, delta) for replacing one privacy unit's rows, up to ``rows`` of them.

    ``release``: the certificate of the release (for k rows on the ``direct`` route, for
    one row on the ``group`` route); ``unit``: the name of the column of unit ids, when
    declared; ``routes``: (route, delta at epsilon) for each route evaluated.
    """

    epsilon: float
    delta: float
    certified: bool
    rows: int
    route: str
    release: Any
    unit: str = ""
    routes: tuple[tuple[str, float], ...] = ()
    not_public: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.route not in ROUTES:
            raise ParameterError(f"route must be one of {tuple(ROUTES)}; got {self.route!r}")
        check_int("rows", self.rows, 1)

    @property
    def rows_per_unit(self) -> int:
        return self.rows

    @property
    def covers(self) -> str:
        return f"{unit_words(self.rows, self.unit)}, by {ROUTES[self.route]}: " + (
            self.release.covers
        )

    def summary(self) -> str:
        """The unit's guarantee on the first line, then the release's own certificate."""
        lines = [Certificate.summary(self)]
        lines += ["  " + line for line in self.release.summary().splitlines()]
        if self.routes:
            lines.append(
                "  routes: "
                + ", ".join(f"{name} delta = {value:.3g}" for name, value in self.routes)
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def privacy_losses(self) -> list[PrivacyLoss]:
        """The unit-level losses: the release's own on the direct route, each grouped
        over ``rows`` rows on the group route; PrivacyError when not certified."""
        if not self.certified:
            raise PrivacyError("an uncertified release has no privacy guarantee to account for")
        losses = self.release.privacy_losses()
        if self.route == "group":
            return [group_privacy(x, self.rows) for x in losses]
        return losses

    def privacy_loss(self) -> PrivacyLoss:
        losses = self.privacy_losses()
        if len(losses) != 1:
            raise ParameterError("this certificate composes several releases: privacy_losses()")
        return losses[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "privacy_unit",
            "epsilon": to_json_value(self.epsilon),
            "delta": to_json_value(self.delta),
            "certified": self.certified,
            "privacy_unit": unit_words(self.rows, self.unit),
            "unit": self.unit,
            "rows_per_unit": self.rows,
            "route": self.route,
            "routes": {name: to_json_value(value) for name, value in self.routes},
            "not_public": list(self.not_public),
            "release": self.release.to_dict(),
        }


@validated(rows=count(1), epsilon=optional(check_positive))
def group_certificate(
    release: Certificate,
    rows: int,
    epsilon: float | None = None,
    *,
    unit: str = "",
    discretization: float = pld.DEFAULT_DISCRETIZATION,
) -> UnitCertificate:
    """The ``group`` route: the guarantee for ``rows`` rows of a release certified for one
    row, at ``epsilon`` (default ``rows`` times the release's epsilon): the composition of
    its grouped privacy losses, or the classical bound (rows epsilon_1, delta_1 sum_{i <
    rows} e^{i epsilon_1}) of its (epsilon_1, delta_1) point where that is smaller and
    applies (Dwork & Roth 2014, Theorem 2.2, as in :mod:`objpert.accounting._group`)."""
    if not isinstance(release, Certificate):
        raise ParameterError(f"expected a certificate; got {type(release).__name__}")
    if getattr(release, "rows_per_unit", 1) != 1:
        raise ParameterError("group privacy starts from a release certified for one row")
    epsilon = rows * float(release.epsilon) if epsilon is None else epsilon
    if not release.certified:
        return UnitCertificate(
            epsilon, 1.0, False, rows, "group", release, unit, (), tuple(release.not_public)
        )
    delta = float(group_profile(release, rows, [epsilon], discretization)[0])
    return UnitCertificate(
        epsilon, delta, delta < 1.0, rows, "group", release, unit, (("group", delta),),
        tuple(release.not_public),
    )  # fmt: skip


def group_profile(
    release: Certificate,
    rows: int,
    epsilons: Any,
    discretization: float = pld.DEFAULT_DISCRETIZATION,
) -> np.ndarray:
    """delta(epsilon) for ``rows`` rows of a release certified for one row, at each of
    ``epsilons``: the composition of its grouped privacy losses, or the classical bound
    (rows epsilon_1, delta_1 sum_{i < rows} e^{i epsilon_1}) where that is smaller and
    applies (epsilon >= rows epsilon_1), within [DELTA_FLOOR, 1]. 1 everywhere for a
    release that is not certified."""
    epsilons = np.asarray(epsilons, dtype=float)
    if not release.certified:
        return np.ones_like(epsilons)
    eps1, delta1 = float(release.epsilon), float(release.delta)
    grouped = [group_privacy(x, rows) for x in release.privacy_losses()]
    composed = pld.compose(grouped, discretization)
    classical = delta1 * sum(math.exp(i * eps1) for i in range(rows))
    deltas = [
        min(pld._delta_for_epsilon(composed, float(e)), classical if e >= rows * eps1 else 1.0)
        for e in epsilons
    ]
    return np.clip(deltas, DELTA_FLOOR, 1.0)


def unit_from_dict(data: dict[str, Any], read: Any = certificate_from_dict) -> Any:
    """Inverse of ``to_dict`` for a release's certificate, per row (``read``: one
    release's, :func:`~objpert.accounting._certificate.certificate_from_dict`) or per unit
    (``"kind": "privacy_unit"``, :meth:`UnitCertificate.to_dict`, its release by ``read``)."""
    if not isinstance(data, dict) or data.get("kind") != "privacy_unit":
        return read(data)
    try:
        routes = tuple((str(k), float(v)) for k, v in data["routes"].items())
        return UnitCertificate(
            float(data["epsilon"]), float(data["delta"]), bool(data["certified"]),
            int(data["rows_per_unit"]), str(data["route"]), read(data["release"]),
            str(data["unit"]), routes, tuple(str(r) for r in data["not_public"]),
        )  # fmt: skip
    except (KeyError, TypeError, AttributeError) as exc:
        raise ParameterError(f"a privacy unit certificate is missing or has a bad {exc}") from None
