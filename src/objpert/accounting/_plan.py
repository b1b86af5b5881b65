"""The shape every plan has: a mechanism, its public constants, a target, a certificate.

A plan is everything one private release needs, chosen from public constants before the
data are touched. :class:`Plan` is the base of every mechanism's plan (one ``isinstance``
for all of them); each mechanism keeps its own fields in its subclass. :class:`Target` and
:class:`PublicConstants` are the validated values the library's doors build once
(``objpert.plan``, the estimators' ``fit``, the command line, the file loader).
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from objpert._validation import check_int, check_positive
from objpert.accounting._certificate import check_target_delta
from objpert.exceptions import ParameterError, PrivacyError

__all__ = ["Plan", "PublicConstants", "Target"]


@dataclass(frozen=True)
class Target:
    """The (epsilon, delta) a release or a fit must certify: epsilon > 0 and finite, delta in
    (0, 1) (and at least the smallest delta a certificate reports)."""

    epsilon: float
    delta: float

    @classmethod
    def checked(cls, epsilon: Any, delta: Any) -> Target:
        """The target, validated (:class:`ParameterError` names what is wrong)."""
        eps = check_positive("epsilon", epsilon)
        if not math.isfinite(eps):
            raise ParameterError(f"epsilon must be finite; got {epsilon!r}")
        return cls(eps, check_target_delta(delta))


@dataclass(frozen=True)
class PublicConstants:
    """The public constants of a problem: the loss (and its parameters), the number of rows
    n (public, replace-one), the dimension d and the row-norm bound zeta."""

    loss: str
    n: int
    d: int
    zeta: float
    loss_params: tuple[tuple[str, float], ...] = ()

    @classmethod
    def checked(
        cls, loss: Any, n: Any, d: Any, zeta: Any, loss_params: Any = ()
    ) -> PublicConstants:
        """The constants, validated (the loss name is checked by its registry)."""
        if not isinstance(loss, str):
            raise ParameterError(f"loss must be a loss name; got {loss!r}")
        params = tuple(sorted((str(k), float(v)) for k, v in dict(loss_params).items()))
        return cls(loss, check_int("n", n, 1), check_int("d", d, 1), check_positive("zeta", zeta),
                   params)  # fmt: skip


class Plan(ABC):
    """The base of every mechanism's plan.

    Every plan names its registered ``mechanism``, holds the ``certificate`` computed from
    public constants alone (a :class:`~objpert.accounting.Certificate`), its
    :attr:`target` and, where the mechanism has them, its :attr:`public_constants`.
    :meth:`privacy_loss` is the event its release composes as. Plans are frozen
    dataclasses: the base declares none of their fields.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def mechanism(self) -> str:
        """The registered name of the mechanism that runs this plan."""

    @property
    def target(self) -> Target:
        """The (epsilon, delta) the plan was calibrated to."""
        return Target(float(self.epsilon), float(self.delta))

    @property
    def public_constants(self) -> PublicConstants:
        """The loss, n, d and zeta the plan was computed from."""
        return PublicConstants(
            self.loss, int(self.n), int(self.d), float(self.zeta),
            tuple(getattr(self, "loss_params", ()) or ()),
        )  # fmt: skip

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def recertify(self) -> Any:
        """The plan's certificate recomputed from its public inputs (re-derived, never the
        stored one, where the mechanism can; else the stored certificate)."""
        return self.certificate

    def privacy_loss(self) -> Any:
        """The privacy-loss event of the plan's release, from its recomputed certificate."""
        cert = self.recertify()
        if cert is None or not cert.certified:
            raise PrivacyError("an uncertified release has no privacy guarantee to account for")
        return cert.privacy_loss()
