"""Privacy-loss events: how a release composes, as public numbers (the role of
dp-accounting's ``DpEvent``).

A certificate emits its event (:meth:`objpert.accounting.Certificate.privacy_loss`);
only :mod:`objpert.accounting._pld` turns events into privacy-loss distributions and
numbers. A single release whose certificate form has a registered event (Watkins &
Arora's whole profile, registered by :mod:`objpert.certify._profile`) composes as it; any
other as its (epsilon, delta) point.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from objpert._validation import check_nonnegative, check_positive, check_unit, validated
from objpert._validation import count as count_rule
from objpert.exceptions import ParameterError

__all__ = [
    "PrivacyLoss",
    "certified_point",
    "gaussian",
    "laplace",
    "point",
    "register_event",
    "release_loss",
    "subsampled_gaussian",
    "zcdp",
]

#: Certificate form -> the event of a certified single release of that form, registered
#: by the layer that proves its profile.
_EVENTS: dict[str, Callable[[Any, Any], PrivacyLoss]] = {}


def register_event(forms: tuple[str, ...], event: Callable[[Any, Any], PrivacyLoss]) -> None:
    """Register ``event(certificate, radius)``, the privacy loss of a certified single
    release whose certificate has one of ``forms``."""
    for form in forms:
        _EVENTS[form] = event


@dataclass(frozen=True)
class PrivacyLoss:
    """How one private release composes: its kind, the public numbers its PLD is built
    from, and how many identical copies of it were released (``count``).

    ``epsilon``/``delta``: the release's own certified point (for reports; NaN for
    Gaussian, Laplace and zCDP releases, whose profile has no distinguished point).
    ``certificate``: the certificate it came from, if any (not part of its identity).
    ``rows``: the neighbouring relation its numbers are for: datasets that differ in up to
    that many rows (1: replace-one; k: one privacy unit of up to k rows,
    :mod:`objpert.accounting._group`). Losses of different ``rows`` do not compose.
    """

    kind: str
    parameters: tuple[tuple[str, Any], ...]
    epsilon: float = math.nan
    delta: float = math.nan
    count: int = 1
    certificate: Any = field(default=None, compare=False, repr=False)
    rows: int = 1

    @validated(count=count_rule(1))
    def times(self, count: int) -> PrivacyLoss:
        """``count`` identical copies of this release (composed)."""
        return PrivacyLoss(
            self.kind, self.parameters, self.epsilon, self.delta, self.count * count,
            self.certificate, self.rows,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "count": self.count}
        if self.rows != 1:
            out["rows"] = self.rows
        out["parameters"] = {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in self.parameters
        }
        out["epsilon"] = None if math.isnan(self.epsilon) else self.epsilon
        out["delta"] = None if math.isnan(self.delta) else self.delta
        return out


@validated(sigma=check_positive, sensitivity=check_positive, count=count_rule(1))
def gaussian(sigma: float, sensitivity: float = 1.0, count: int = 1) -> PrivacyLoss:
    """A Gaussian mechanism: noise N(0, sigma^2 I) on a query of L2 sensitivity G."""
    params = (("sigma", float(sigma)), ("sensitivity", float(sensitivity)))
    return PrivacyLoss("gaussian", params, count=count)


@validated(scale=check_positive, sensitivity=check_positive, count=count_rule(1))
def laplace(scale: float, sensitivity: float = 1.0, count: int = 1) -> PrivacyLoss:
    """A Laplace mechanism: noise Laplace(b) per coordinate on a query of L1 sensitivity."""
    params = (("scale", float(scale)), ("sensitivity", float(sensitivity)))
    return PrivacyLoss("laplace", params, count=count)


@validated(epsilon=check_nonnegative, delta=check_unit, count=count_rule(1))
def point(epsilon: float, delta: float, count: int = 1) -> PrivacyLoss:
    """An (epsilon, delta)-DP release known by that one point."""
    eps = epsilon
    dlt = delta
    if not math.isfinite(eps):
        raise ParameterError(f"epsilon must be finite; got {epsilon!r}")
    if dlt >= 1.0:
        raise ParameterError("delta must be < 1: a release with delta = 1 has no guarantee")
    params = (("epsilon", eps), ("delta", dlt))
    return PrivacyLoss("point", params, eps, dlt, count)


@validated(rho=check_positive, count=count_rule(1))
def zcdp(rho: float, count: int = 1) -> PrivacyLoss:
    """A rho-zCDP release (profile: Canonne, Kamath & Steinke 2020, Corollary 13)."""
    if not math.isfinite(rho):
        raise ParameterError(f"rho must be finite; got {rho!r}")
    return PrivacyLoss("zcdp", (("rho", rho),), count=count)


def subsampled_gaussian(
    noise_multiplier: float, sampling_rate: float, count: int = 1
) -> PrivacyLoss:
    """One step of a Poisson-subsampled Gaussian mechanism under replace-one neighbours
    (rate q, noise multiplier z over the norm bound of one row's contribution; Zhu, Dong &
    Wang 2022): ``count`` steps are DP-SGD's T adaptively composed steps. Its arguments
    come from a checked DP-SGD plan."""
    params = (
        ("noise_multiplier", float(noise_multiplier)),
        ("sampling_rate", float(sampling_rate)),
    )
    return PrivacyLoss("subsampled_gaussian", params, count=int(count))


def certified_point(cert: Any) -> PrivacyLoss:
    """The (epsilon, delta) point of a certified certificate, as a privacy loss for the
    certificate's privacy unit (``rows_per_unit``: a search per person's is k rows)."""
    return PrivacyLoss(
        "point", (("epsilon", float(cert.epsilon)), ("delta", float(cert.delta))),
        float(cert.epsilon), float(cert.delta), 1, cert, int(getattr(cert, "rows_per_unit", 1)),
    )  # fmt: skip


def release_loss(cert: Any, radius: tuple[float, float] | None = None) -> PrivacyLoss:
    """A single release's privacy loss: its registered profile, else its point."""
    event = _EVENTS.get(getattr(cert, "form", ""))
    return certified_point(cert) if event is None else event(cert, radius)
