"""Losses l(t, y) of generalised linear models and their public constants.

objpert trains F(w) = (1/n) sum_i l(<x_i, w>, y_i) + mu/2 ||w||^2.  The certificates of
Watkins & Arora (2026) use constants of the loss, with derivatives taken in the first
argument t:

* Assumption 2: |l'(t, y)| <= L1 and 0 <= l''(t, y) <= L2 for all t, y;
* Assumption 3: |l''(s, y) - l''(t, y)| <= L3 |s - t|, i.e. sup |l'''| = L3.

Each :class:`Loss` carries these constants (``L1 is None`` when |l'| has no finite bound)
and evaluates l, l', l'', l''' elementwise on numpy arrays, broadcasting ``t`` and ``y``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from objpert.errors import ParameterError, check_positive

__all__ = [
    "LOSSES",
    "LogisticLoss",
    "Loss",
    "PseudoHuberLoss",
    "SquaredLoss",
    "get_loss",
    "require_bounded_gradient",
]

#: Canonical loss names accepted by :func:`get_loss`.
LOSSES: tuple[str, ...] = ("logistic", "robust", "squared")

_ALIASES: dict[str, str] = {
    "logistic": "logistic",
    "robust": "robust",
    "pseudo_huber": "robust",
    "pseudo-huber": "robust",
    "squared": "squared",
}


def broadcast_pair(t: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Margins t and labels y as float arrays of one broadcast shape (for Loss methods)."""
    return np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(y, dtype=float))


@dataclass(frozen=True)
class Loss(ABC):
    """A loss l(t, y) with the constants of Assumptions 2 and 3 of Watkins & Arora (2026).

    ``L1`` bounds |l'| (``None``: no finite bound), ``L2`` bounds l'' >= 0 and ``L3`` is
    the Lipschitz constant of l'' (sup |l'''|).  ``label_kind`` is ``"binary"`` for labels
    in {-1, +1} and ``"real"`` for real-valued labels.
    """

    name: ClassVar[str]
    label_kind: ClassVar[str]

    @property
    @abstractmethod
    def L1(self) -> float | None:
        """sup |l'(t, y)| (Assumption 2), or ``None`` when it is infinite."""

    @property
    @abstractmethod
    def L2(self) -> float:
        """sup l''(t, y) (Assumption 2)."""

    @property
    @abstractmethod
    def L3(self) -> float:
        """Lipschitz constant of l'' in t, sup |l'''(t, y)| (Assumption 3)."""

    @property
    def has_bounded_gradient(self) -> bool:
        """Whether Assumption 2's bound L1 on |l'| is finite."""
        return self.L1 is not None

    @abstractmethod
    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        """l(t, y), elementwise."""

    @abstractmethod
    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        """l'(t, y) = dl/dt, elementwise."""

    def d1_into(self, t: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """l'(t, y) written into ``out`` (which may be ``t``) and returned; the same values
        as :meth:`d1`. Subclasses may compute it in place, without temporaries."""
        out[...] = self.d1(t, y)
        return out

    @abstractmethod
    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        """l''(t, y), elementwise."""

    @abstractmethod
    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        """l'''(t, y), elementwise."""

    def params(self) -> dict[str, float]:
        """Constructor parameters, e.g. ``{"scale": 1.0}``."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable description: name, params and the constants L1, L2, L3."""
        L1 = self.L1
        return {
            "name": self.name,
            "params": dict(self.params()),
            "L1": None if L1 is None else float(L1),
            "L2": float(self.L2),
            "L3": float(self.L3),
        }


@dataclass(frozen=True)
class LogisticLoss(Loss):
    """Logistic loss l(t, y) = log(1 + exp(-y t)), labels y in {-1, +1}.

    With s = sigma(-y t): l' = -y s, l'' = y^2 s (1 - s), l''' = -y^3 s (1 - s)(1 - 2 s).
    For y in {-1, +1}, l'' and l''' do not depend on y.  Constants: L1 = 1, L2 = 1/4
    (at t = 0) and L3 = 1/(6 sqrt 3) (at sigma(t) = 1/2 +- 1/(2 sqrt 3)); Assumptions 2
    and 3 of Watkins & Arora (2026).  Evaluation is overflow-free for any finite t.
    """

    name: ClassVar[str] = "logistic"
    label_kind: ClassVar[str] = "binary"

    @property
    def L1(self) -> float:
        return 1.0

    @property
    def L2(self) -> float:
        return 0.25

    @property
    def L3(self) -> float:
        return 1.0 / (6.0 * math.sqrt(3.0))

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        return np.logaddexp(0.0, -y * t)

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        return -y * expit(-y * t)

    def d1_into(self, t: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        neg_y = np.negative(y)
        np.multiply(neg_y, t, out=out)
        expit(out, out=out)
        return np.multiply(neg_y, out, out=out)

    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        u = y * t
        return y * y * (expit(u) * expit(-u))

    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        u = y * t
        s = expit(-u)
        # 1 - 2 sigma(-u) = tanh(u / 2), accurate near u = 0.
        return -(y**3) * (s * expit(u)) * np.tanh(u / 2.0)


@dataclass(frozen=True)
class PseudoHuberLoss(Loss):
    """Pseudo-Huber ("robust") loss l(t, y) = c^2 (sqrt(1 + ((t - y)/c)^2) - 1), c > 0.

    With r = t - y and z = r / c:

    * l'   = r (1 + z^2)^(-1/2), so |l'| < c, approached as |r| -> inf: L1 = c
      (a supremum, not attained);
    * l''  = (1 + z^2)^(-3/2), in (0, 1], maximal at r = 0: L2 = 1;
    * l''' = -3 (r / c^2) (1 + z^2)^(-5/2).  d/dz [z (1 + z^2)^(-5/2)]
      = (1 + z^2)^(-7/2) (1 - 4 z^2) vanishes at z^2 = 1/4, where
      |l'''| = (3/c) (1/2) (4/5)^(5/2) = 48 / (25 sqrt(5) c): L3 = 48 / (25 sqrt(5) c),
      attained at |t - y| = c/2.

    These are the constants of Assumptions 2 and 3 of Watkins & Arora (2026).
    """

    scale: float = 1.0

    name: ClassVar[str] = "robust"
    label_kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive("scale", self.scale))

    @property
    def L1(self) -> float:
        return self.scale

    @property
    def L2(self) -> float:
        return 1.0

    @property
    def L3(self) -> float:
        return 48.0 / (25.0 * math.sqrt(5.0) * self.scale)

    def params(self) -> dict[str, float]:
        return {"scale": self.scale}

    def _rz(self, t: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t, y = broadcast_pair(t, y)
        r = t - y
        z = r / self.scale
        return r, z, np.hypot(1.0, z)  # hypot: sqrt(1 + z^2) without overflow

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        r, z, h = self._rz(t, y)
        # c^2 (h - 1) = c^2 z^2 / (h + 1), free of cancellation for small z.
        return self.scale * np.abs(r) * (np.abs(z) / (h + 1.0))

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        _, z, h = self._rz(t, y)
        return self.scale * (z / h)

    def d1_into(self, t: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        np.subtract(t, y, out=out)
        out /= self.scale
        out /= np.hypot(1.0, out)
        out *= self.scale
        return out

    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        _, _, h = self._rz(t, y)
        return 1.0 / (h * h * h)

    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        _, z, h = self._rz(t, y)
        return (-3.0 / self.scale) * (z / h) / (h * h) / (h * h)


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """Squared loss l(t, y) = (t - y)^2 / 2.

    l' = t - y is unbounded, so ``L1 is None``: Assumption 2 of Watkins & Arora (2026)
    fails and their plans refuse it (QOP accepts it).  l'' = 1: L2 = 1; l''' = 0: L3 = 0.
    """

    name: ClassVar[str] = "squared"
    label_kind: ClassVar[str] = "real"

    @property
    def L1(self) -> None:
        return None

    @property
    def L2(self) -> float:
        return 1.0

    @property
    def L3(self) -> float:
        return 0.0

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        return 0.5 * (t - y) ** 2

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, y = broadcast_pair(t, y)
        return t - y

    def d1_into(self, t: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        return np.subtract(t, y, out=out)

    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, _ = broadcast_pair(t, y)
        return np.ones_like(t)

    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t, _ = broadcast_pair(t, y)
        return np.zeros_like(t)


_CLASSES: dict[str, type[Loss]] = {
    "logistic": LogisticLoss,
    "robust": PseudoHuberLoss,
    "squared": SquaredLoss,
}
_PARAMS: dict[str, tuple[str, ...]] = {
    "logistic": (),
    "robust": ("scale",),
    "squared": (),
}


def get_loss(name: str | Loss, **params: Any) -> Loss:
    """The loss called ``name`` ("logistic", "robust", "squared"), built with ``params``.

    Aliases of "robust": "pseudo_huber", "pseudo-huber" (parameter ``scale`` > 0, default
    1).  A :class:`Loss` instance is returned unchanged (``params`` must then be empty).
    """
    choices = ", ".join(repr(n) for n in LOSSES)
    if isinstance(name, Loss):
        if params:
            raise ParameterError(
                f"loss parameters must be omitted when loss is a Loss instance; "
                f"got {sorted(params)!r}"
            )
        return name
    if not isinstance(name, str):
        raise ParameterError(f"loss must be one of {choices} or a Loss instance; got {name!r}")
    canonical = _ALIASES.get(name.strip().lower())
    if canonical is None:
        raise ParameterError(f"loss must be one of {choices}; got {name!r}")
    allowed = _PARAMS[canonical]
    for key in params:
        if key not in allowed:
            if allowed:
                what = "one of " + ", ".join(repr(a) for a in allowed)
            else:
                what = "none (it takes no parameters)"
            raise ParameterError(f"parameters of loss {canonical!r} must be {what}; got {key!r}")
    return _CLASSES[canonical](**params)


def require_bounded_gradient(loss: str | Loss, why: str) -> Loss:
    """Return ``loss`` (resolved by :func:`get_loss`) if it has a finite L1.

    Raises :class:`ParameterError` when |l'| is unbounded (Assumption 2 of Watkins &
    Arora (2026) fails), saying that ``why`` (e.g. "the Watkins & Arora certificate")
    needs it.
    """
    resolved = get_loss(loss)
    if resolved.L1 is None:
        raise ParameterError(
            f"loss must have a finite bound L1 on |l'| (Assumption 2), which {why} needs; "
            f"the {resolved.name} loss has none. Use loss='robust' (pseudo-Huber, "
            f"L1 = scale) or loss='logistic', or QOP"
        )
    return resolved
