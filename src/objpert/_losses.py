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

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from objpert._validation import check_positive
from objpert.exceptions import ParameterError

__all__ = [
    "LOSSES",
    "LogisticLoss",
    "Loss",
    "PseudoHuberLoss",
    "SquaredLoss",
    "constant_violations",
    "get_loss",
    "register_loss",
    "registered_losses",
    "require_bounded_gradient",
]

#: The built-in losses' names: one name per loss, accepted by :func:`get_loss` as written.
LOSSES: tuple[str, ...] = ("logistic", "robust", "squared")


_Z_MAX = 1e300  # |z| of the pseudo-Huber loss is clamped here (see PseudoHuberLoss._rz)


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
        """(r, z, h) = (t - y, r / c, sqrt(1 + z^2)), with z clamped to +-1e300: t - y can
        overflow to +-inf for finite t and y near 1.8e308, and the clamp keeps z / h (= +-1
        there in double) and every derivative finite. Nothing changes for |z| <= 1e300."""
        t, y = broadcast_pair(t, y)
        with np.errstate(over="ignore"):
            z = np.clip((t - y) / self.scale, -_Z_MAX, _Z_MAX)
        return self.scale * z, z, np.hypot(1.0, z)  # hypot: sqrt(1 + z^2) without overflow

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        r, z, h = self._rz(t, y)
        # c^2 (h - 1) = c^2 z^2 / (h + 1), free of cancellation for small z.
        return self.scale * np.abs(r) * (np.abs(z) / (h + 1.0))

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        _, z, h = self._rz(t, y)
        return self.scale * (z / h)

    def d1_into(self, t: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            np.subtract(t, y, out=out)
        out /= self.scale
        np.clip(out, -_Z_MAX, _Z_MAX, out=out)  # as in _rz: finite where t - y overflows
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


_BUILTIN: dict[str, type[Loss]] = {
    "logistic": LogisticLoss,
    "robust": PseudoHuberLoss,
    "squared": SquaredLoss,
}
#: The loss registry: name -> class. Built-in losses plus those added by
#: :func:`register_loss`; constants are always read from the registered class.
_REGISTRY: dict[str, type[Loss]] = dict(_BUILTIN)

# Where register_loss checks the derivative bounds: a dense grid near 0 plus the tails.
_GRID_T = np.concatenate(
    [-np.logspace(-6, 8, 400)[::-1], np.linspace(-50.0, 50.0, 20001), np.logspace(-6, 8, 400)]
)
_GRID_Y_REAL = np.concatenate([-np.logspace(-3, 6, 40)[::-1], [0.0], np.logspace(-3, 6, 40)])
_CONSTANT_RTOL = 1e-9  # a derivative may exceed its stated bound by rounding only
_FD_STEP = 1e-4


def _param_names(cls: type[Loss]) -> tuple[str, ...]:
    """The constructor parameters of a loss class (its dataclass fields)."""
    return tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()


def _bound_violations(loss: Loss, y: float, t: np.ndarray) -> list[str]:
    """Assumptions 2-3 of Watkins & Arora (2026) on the grid t at label y:
    |l'| <= L1, 0 <= l'' <= L2, |l'''| <= L3 (up to rounding)."""
    L1, L2, L3 = loss.L1, float(loss.L2), float(loss.L3)
    with np.errstate(all="ignore"):
        d1, d2, d3 = loss.d1(t, y), loss.d2(t, y), loss.d3(t, y)
    out = [
        f"derivative {k} is not finite at y = {y:g}"
        for k, arr in enumerate((d1, d2, d3), start=1)
        if not np.all(np.isfinite(arr))
    ]
    if out:
        return out
    tol = 1.0 + _CONSTANT_RTOL
    if L1 is not None and np.max(np.abs(d1)) > L1 * tol:
        out.append(f"|l'| reaches {np.max(np.abs(d1)):.6g} > L1 = {L1:.6g} (y = {y:g})")
    if np.max(d2) > L2 * tol or np.min(d2) < -L2 * _CONSTANT_RTOL:
        out.append(f"l'' leaves [0, L2 = {L2:.6g}]: [{np.min(d2):.6g}, {np.max(d2):.6g}]")
    if np.max(np.abs(d3)) > L3 * tol:
        out.append(f"|l'''| reaches {np.max(np.abs(d3)):.6g} > L3 = {L3:.6g} (y = {y:g})")
    return out


def _derivative_violations(loss: Loss, y: float, t: np.ndarray) -> list[str]:
    """l', l'', l''' must be the derivatives of l, l', l'' (central differences), so that
    the bounds checked are those of the loss actually minimised."""
    out = []
    pairs = ((loss.value, loss.d1), (loss.d1, loss.d2), (loss.d2, loss.d3))
    for k, (f, df) in enumerate(pairs, start=1):
        with np.errstate(all="ignore"):
            fd = (f(t + _FD_STEP, y) - f(t - _FD_STEP, y)) / (2.0 * _FD_STEP)
            exact = df(t, y)
        scale = max(1.0, float(np.max(np.abs(exact))))
        if not np.all(np.abs(fd - exact) <= 1e-5 * scale):
            out.append(f"derivative {k} is not the derivative of the loss (y = {y:g})")
    return out


def constant_violations(loss: Loss) -> list[str]:
    """Where ``loss`` breaks its stated constants on a dense grid including the tails
    (|t - y| up to 1e8), for labels -1/+1 (binary) or a grid of real y; empty if nowhere."""
    ys = (-1.0, 1.0) if loss.label_kind == "binary" else tuple(_GRID_Y_REAL)
    out: list[str] = []
    near = np.linspace(-20.0, 20.0, 2001)
    for y in ys:
        shift = 0.0 if loss.label_kind == "binary" else y
        out += _bound_violations(loss, y, _GRID_T + shift)
        out += _derivative_violations(loss, y, near + shift)
    return out


def register_loss(cls: type[Loss], *, examples: tuple[dict[str, float], ...] = ({},)) -> type[Loss]:
    """Add a custom loss class to the registry, after checking its stated constants.

    ``cls`` must subclass :class:`Loss` (a frozen dataclass whose fields are its
    parameters), with a lower-case ``name`` no other registered loss uses (the built-in
    names "logistic", "robust", "squared" are taken) and a
    ``label_kind``. For each parameter set in ``examples``, :func:`constant_violations`
    checks the derivatives on a dense grid including the tails against L1, L2, L3
    (Assumptions 2-3 of Watkins & Arora 2026) and against central differences of the
    loss; a violated constant is refused with :class:`objpert.exceptions.LossError`. Usable as
    a decorator. Plans store only the loss's name and parameters: its constants are
    re-derived from the registered class before every release and at every load.
    """
    from objpert.exceptions import LossError

    if not (isinstance(cls, type) and issubclass(cls, Loss)):
        raise LossError(f"register_loss needs a Loss subclass; got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name or name != name.strip().lower():
        raise LossError(f"{cls.__name__}.name must be a lower-case name; got {name!r}")
    taken = _REGISTRY.get(name)
    if taken is not None and taken is not cls:
        raise LossError(
            f"the loss name {name!r} is taken by {taken.__module__}.{taken.__qualname__}: "
            "choose another name"
        )
    if getattr(cls, "label_kind", None) not in ("binary", "real"):
        raise LossError(f"{cls.__name__}.label_kind must be 'binary' or 'real'")
    for params in examples:
        try:
            loss = cls(**params)
        except Exception as exc:  # the caller's constructor: report, whatever it raised
            raise LossError(f"{cls.__name__}(**{params!r}) failed: {exc}") from None
        bad = constant_violations(loss)
        if bad:
            raise LossError(
                f"loss {name!r} with parameters {params!r} violates its stated constants: "
                + "; ".join(bad[:3])
            )
    _REGISTRY[name] = cls
    return cls


def registered_losses() -> tuple[str, ...]:
    """Names of every registered loss (built-in first)."""
    return tuple(_REGISTRY)


def get_loss(name: str | Loss, **params: Any) -> Loss:
    """The registered loss called ``name`` ("logistic", "robust", "squared" or one added by
    :func:`register_loss`), built with ``params``.

    Each loss has one name, matched exactly: the pseudo-Huber loss is "robust" (parameter
    ``scale`` > 0, default 1). A :class:`Loss` instance is returned unchanged (``params``
    must then be empty) if its class is the registered class of its name; any other
    instance (an unregistered loss, or one named like a registered loss, e.g. a subclass of
    a built-in claiming other constants) is refused with
    :class:`objpert.exceptions.LossError`.
    """
    from objpert.exceptions import LossError

    choices = ", ".join(repr(n) for n in _REGISTRY)
    if isinstance(name, Loss):
        if params:
            raise ParameterError(
                f"loss parameters must be omitted when loss is a Loss instance; "
                f"got {sorted(params)!r}"
            )
        registered = _REGISTRY.get(getattr(name, "name", None))
        if type(name) is not registered:
            what = f"{type(name).__module__}.{type(name).__qualname__}"
            if registered is None:
                raise LossError(
                    f"{what} is not a registered loss: register it with "
                    "objpert.register_loss, which checks its constants"
                )
            raise LossError(
                f"{what} is named {name.name!r}, the name of {registered.__qualname__}: a "
                "loss cannot take the name of another (its constants would be read from "
                "the registered one)"
            )
        return name
    if not isinstance(name, str):
        raise ParameterError(f"loss must be one of {choices} or a Loss instance; got {name!r}")
    cls = _REGISTRY.get(name)
    if cls is None:
        raise ParameterError(f"loss must be one of {choices}; got {name!r}")
    allowed = _param_names(cls)
    for k in params:
        if k not in allowed:
            if allowed:
                what = "one of " + ", ".join(repr(a) for a in allowed)
            else:
                what = "none (it takes no parameters)"
            raise ParameterError(f"parameters of loss {name!r} must be {what}; got {k!r}")
    return cls(**params)


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
