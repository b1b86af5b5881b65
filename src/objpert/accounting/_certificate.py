"""Certificates: what every guarantee objpert issues is, and a single release's.

:class:`Certificate` is the base of every certificate: of one release
(:class:`ReleaseCertificate`), of composed releases, of an accountant's ledger and of a
private model selection. Each says its (epsilon, delta), whether it is certified, what it
covers, what of the model was read from the data instead of declared (``not_public``),
and emits the privacy loss it composes as (:meth:`Certificate.privacy_loss`), which only
:mod:`objpert.accounting` turns into numbers.
"""

from __future__ import annotations

import json
import math
import sys
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from objpert._jsonable import to_json_value
from objpert._validation import check_open_unit
from objpert.accounting._events import PrivacyLoss, certified_point, release_loss
from objpert.exceptions import ParameterError, PrivacyError

__all__ = [
    "DELTA_FLOOR",
    "FORMS",
    "FORM_NAMES",
    "Certificate",
    "ReleaseCertificate",
    "budget_text",
    "certificate_from_dict",
    "check_target_delta",
]

FORMS = ("theorem41", "c13", "limit")

#: How the printed certificates name each form (Watkins & Arora 2026).
FORM_NAMES = {
    "theorem41": "Theorem 4.1",
    "c13": "Theorem C.13",
    "limit": "Theorem C.13, limit N -> infinity",
    "multinomial": "softmax objective perturbation, docs/multiclass.md",
}


def budget_text(epsilon: float, delta: float) -> str:
    """``(epsilon, delta) = (1, 1e-06)`` with 4 significant digits."""
    return f"(epsilon, delta) = ({epsilon:.4g}, {delta:.4g})"


#: The smallest delta a certificate reports: 2.2e-308, the smallest normal double. The terms
#: of a delta (Gaussian tails, e^{-u^2/2}, 2 e^{-x}) are positive, but underflow to 0.0 or
#: to a subnormal (with few correct bits, possibly rounded down) far in the tail; the
#: certificate then reports this floor, which is above their true value: never 0.0.
DELTA_FLOOR = sys.float_info.min


def check_target_delta(value: Any, name: str = "delta") -> float:
    """A target delta: in (0, 1) and at least :data:`DELTA_FLOOR` (no certificate reports
    less, so a smaller target is never certified); ParameterError otherwise."""
    delta = check_open_unit(name, value)
    if delta < DELTA_FLOOR:
        raise ParameterError(
            f"{name} must be at least {DELTA_FLOOR:.4g} (the smallest delta a certificate "
            f"reports); got {delta!r}"
        )
    return delta


class Certificate(ABC):
    """The base of every certificate objpert issues (one ``isinstance`` for all of them).

    Every certificate has ``epsilon`` and ``delta`` (the guarantee), ``certified`` (False:
    no guarantee, delta is the trivial 1), ``not_public`` (the structural choices of the
    model read from the private data, which the guarantee does not cover) and
    :attr:`covers` (what the guarantee is about, in words); :meth:`summary` prints it,
    :meth:`to_dict` writes it, :meth:`privacy_loss` is the event it composes as.
    Certificates are frozen dataclasses whose fields hold these values: the base declares
    none of them, so that each subclass's fields keep their own order and defaults.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def covers(self) -> str:
        """What the guarantee is about (the releases, the selection), in words."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-serialisable."""

    def summary(self) -> str:
        """A few lines: the guarantee and what it does not cover."""
        status = "certified" if self.certified else "NOT certified"
        lines = [f"{budget_text(self.epsilon, self.delta)}, {status}: {self.covers}"]
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)

    @property
    def rows_per_unit(self) -> int:
        """The rows of one privacy unit the guarantee is for: 1 (replace one row) unless
        the certificate says otherwise (:class:`objpert.accounting.UnitCertificate`)."""
        return 1

    @property
    def covers_structure(self) -> bool:
        """Whether every structural choice of the model was public (``not_public`` empty)."""
        return not self.not_public

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def privacy_losses(self) -> list[PrivacyLoss]:
        """The privacy losses this certificate composes as (a composed certificate: one
        per release); refused (:class:`PrivacyError`) when it is not certified."""
        if not self.certified:
            raise PrivacyError("an uncertified release has no privacy guarantee to account for")
        return [self.privacy_loss()]

    def privacy_loss(self) -> PrivacyLoss:
        """The privacy-loss event this certificate composes as: its (epsilon, delta)
        point (a certificate that knows its whole profile says so by overriding this)."""
        return certified_point(self)


@dataclass(frozen=True)
class ReleaseCertificate(Certificate):
    """An (epsilon, delta) guarantee computed from public constants alone.

    ``delta = max(truncation_mass + divergence_term, DELTA_FLOOR)`` when ``certified``
    (never 0.0 from an underflow: :data:`DELTA_FLOOR`); otherwise
    ``delta`` is 1.0 (the trivial bound) and ``reasons`` says which condition
    of the theorem failed. ``details`` holds form-specific quantities (e.g.
    ``epsilon0`` for Theorem 4.1; ``alpha_bar``, ``s_n``, ``tau``, ``radius_ok``
    for Theorem C.13). ``not_public`` names the structural choices of the released model
    that were read from the private data instead of declared (e.g. ``"label set"``): the
    guarantee does not cover them (:class:`objpert.exceptions.PrivacyLeakWarning`).
    """

    form: str
    epsilon: float
    delta: float
    certified: bool
    iterations: int | None
    threshold_iterations: int | None
    truncation_mass: float
    divergence_term: float
    sigma: float
    truncation: str
    constants: dict
    details: dict = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    not_public: tuple[str, ...] = ()

    @property
    def covers(self) -> str:
        return f"one release ({FORM_NAMES.get(self.form, self.form)})"

    @property
    def rows_per_unit(self) -> int:
        """The neighbours' differing rows the constants were derived for (1: replace-one)."""
        rows = self.constants.get("rows", 1) if isinstance(self.constants, dict) else 1
        return int(rows)

    def __repr__(self) -> str:
        """One line: the form, the guarantee and the run (``to_dict`` has everything)."""
        return (
            f"ReleaseCertificate(form={self.form!r}, epsilon={self.epsilon!r}, "
            f"delta={self.delta!r}, certified={self.certified}, iterations={self.iterations}, "
            f"sigma={self.sigma:.6g}, truncation={self.truncation!r})"
        )

    def summary(self) -> str:
        """What :func:`str` prints: the guarantee in a few lines."""
        return str(self)

    def __str__(self) -> str:
        """A few lines: the guarantee, how it splits, and what it does not cover."""
        status = "certified" if self.certified else "NOT certified"
        name = FORM_NAMES.get(self.form, self.form)
        lines = [
            f"{budget_text(self.epsilon, self.delta)}, {status} "
            f"({name}, {self.truncation} truncation)",
            (f"  N = {self.iterations} steps, " if self.iterations is not None else "  ")
            + f"sigma = {self.sigma:.4g}; delta = truncation "
            f"{self.truncation_mass:.3g} + divergence {self.divergence_term:.3g}",
        ]
        lines += [f"  not certified: {' '.join(r.split())}" for r in self.reasons]
        if self.not_public:
            lines.append(f"  not covered (read from the data): {', '.join(self.not_public)}")
        return "\n".join(lines)

    @classmethod
    def conclude(
        cls,
        form: str,
        epsilon: float,
        truncation_mass: float,
        divergence_term: float,
        reasons: list[str],
        **fields: Any,
    ) -> ReleaseCertificate:
        """The certificate once every condition of the theorem has been checked.

        ``reasons`` lists the failed conditions; a total delta >= 1 is one more.
        Certified iff none failed; otherwise delta is the trivial 1.0. A certified delta
        is never below :data:`DELTA_FLOOR`: terms that underflowed to 0.0 (or a subnormal)
        report the smallest normal double, an upper bound on their true (positive) value.
        """
        total = truncation_mass + divergence_term
        reasons = list(reasons)
        if not reasons and not total < 1.0:  # NaN included: never certified
            reasons.append("delta >= 1: nothing to certify")
        if not reasons and not (epsilon >= 0.0 and math.isfinite(epsilon)):
            reasons.append(f"epsilon = {epsilon!r} is not a finite number >= 0")
        certified = not reasons
        return cls(
            form=form,
            epsilon=epsilon,
            delta=max(total, DELTA_FLOOR) if certified else 1.0,
            certified=certified,
            truncation_mass=truncation_mass,
            divergence_term=divergence_term,
            reasons=tuple(reasons),
            **fields,
        )

    def to_dict(self) -> dict:
        """Flat snake_case dictionary (details merged in), JSON-serialisable."""
        skip = ("details", "reasons", "not_public")
        out = {k: to_json_value(v) for k, v in asdict(self).items() if k not in skip}
        out.update({k: to_json_value(v) for k, v in self.details.items()})
        out["reasons"] = list(self.reasons)
        out["not_public"] = list(self.not_public)
        return out

    def privacy_loss(self, *, radius: tuple[float, float] | None = None) -> PrivacyLoss:
        """The privacy-loss event of this release: its whole privacy profile where its
        form's profile is registered (Watkins & Arora's, :mod:`objpert.certify._profile`;
        ``radius``: one more truncation radius pair r, r'), else its (epsilon, delta)."""
        return release_loss(self, radius)


def certificate_from_dict(data: dict[str, Any]) -> ReleaseCertificate:
    """Inverse of :meth:`ReleaseCertificate.to_dict` (which merges ``details`` into the top level).

    Non-finite floats were written as ``None`` by ``to_dict`` and stay ``None``; the
    round trip ``certificate_from_dict(c.to_dict()).to_dict() == c.to_dict()`` holds.
    """
    if not isinstance(data, dict):
        raise ParameterError(f"a certificate must be a dict; got {type(data).__name__}")
    own = {f.name for f in fields(ReleaseCertificate)} - {"details", "reasons", "not_public"}
    missing = sorted(own - set(data))
    if missing:
        raise ParameterError(f"certificate is missing keys {missing}")
    kwargs = {k: data[k] for k in own}
    kwargs["constants"] = dict(kwargs["constants"])
    extra = ("reasons", "not_public")
    details = {k: v for k, v in data.items() if k not in own and k not in extra}
    reasons = tuple(str(r) for r in data.get("reasons", ()))
    not_public = tuple(str(r) for r in data.get("not_public", ()))
    return ReleaseCertificate(**kwargs, details=details, reasons=reasons, not_public=not_public)
