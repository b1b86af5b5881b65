"""LOP-Clip's objective: the GLM loss with per-sample gradients clipped to a public norm
(Redberg, Koskela & Wang 2023)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from objpert._data import row_norms
from objpert._losses import Loss

__all__ = ["ClippedGLMLoss"]


def _inverse_d1(loss: Loss, y: np.ndarray, target: np.ndarray) -> np.ndarray:
    """t with l'(t, y) = target, elementwise (l' is nondecreasing as l'' >= 0); -inf where
    target < inf l' and +inf where target > sup l' (bracket doubling to 2^70, then
    bisection to adjacent floats)."""
    lo = np.full(target.shape, -1.0)
    hi = np.full(target.shape, 1.0)
    for _ in range(70):
        low_bad = loss.d1(lo, y) > target
        high_bad = loss.d1(hi, y) < target
        if not (low_bad.any() or high_bad.any()):
            break
        lo = np.where(low_bad, 2.0 * lo, lo)
        hi = np.where(high_bad, 2.0 * hi, hi)
    below = loss.d1(lo, y) > target  # target below the range of l'
    above = loss.d1(hi, y) < target  # target above the range of l'
    for _ in range(2100):
        mid = 0.5 * (lo + hi)
        if not np.any((mid > lo) & (mid < hi)):
            break
        up = loss.d1(mid, y) < target
        lo = np.where(up, mid, lo)
        hi = np.where(up, hi, mid)
    t = 0.5 * (lo + hi)
    t = np.where(below, -np.inf, t)
    return np.where(above, np.inf, t)


@dataclass(frozen=True, eq=False)
class ClippedGLMLoss(Loss):
    """The GLM loss whose per-sample gradient l'(t_i, y_i) x_i is clipped to norm <= c.

    For row i with ||x_i|| > 0 that is l' clipped to [-b_i, b_i], b_i = c / ||x_i||
    (b_i = inf for zero rows). Its integral, l on [t_lo_i, t_hi_i] (where l' = -b_i, +b_i)
    continued linearly with slopes -b_i and +b_i outside, is convex; its l'' is l'' inside
    and 0 outside. Redberg, Koskela & Wang (2023). The per-row thresholds are fixed by the
    data and the labels, so the arrays align with the rows of the objective.
    """

    base: Loss
    bound: np.ndarray
    labels: np.ndarray
    t_lo: np.ndarray
    t_hi: np.ndarray

    name: ClassVar[str] = "clipped"
    label_kind: ClassVar[str] = "any"

    @classmethod
    def for_rows(cls, base: Loss, X: Any, y: np.ndarray, clip: float) -> ClippedGLMLoss:
        norms = row_norms(X)
        with np.errstate(divide="ignore"):
            bound = np.where(norms > 0, clip / np.where(norms > 0, norms, 1.0), np.inf)
        y = np.asarray(y, dtype=float)
        finite = np.isfinite(bound)
        if base.L1 is not None:  # |l'| < L1 <= b_i: row i is never clipped
            finite &= bound < base.L1
        t_lo = np.full(y.shape, -np.inf)
        t_hi = np.full(y.shape, np.inf)
        if finite.any():
            t_lo[finite] = _inverse_d1(base, y[finite], -bound[finite])
            t_hi[finite] = _inverse_d1(base, y[finite], bound[finite])
        return cls(base, bound, y, t_lo, t_hi)

    @property
    def L1(self) -> float | None:
        return self.base.L1

    @property
    def L2(self) -> float:
        return self.base.L2

    @property
    def L3(self) -> float:
        return self.base.L3

    def _rows(self, t: np.ndarray, a: np.ndarray) -> np.ndarray:
        return a if t.ndim == 1 else a[:, None]

    def value(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lo, hi, b = (self._rows(t, a) for a in (self.t_lo, self.t_hi, self.bound))
        inside = self.base.value(np.clip(t, lo, hi), y)
        over = np.where(t > hi, t - hi, 0.0)
        under = np.where(t < lo, lo - t, 0.0)
        return inside + np.where(over > 0, b * over, 0.0) + np.where(under > 0, b * under, 0.0)

    def d1(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        b = self._rows(t, self.bound)
        return np.clip(self.base.d1(t, y), -b, b)

    def d2(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lo, hi = self._rows(t, self.t_lo), self._rows(t, self.t_hi)
        return np.where((t > lo) & (t < hi), self.base.d2(t, y), 0.0)

    def d3(self, t: ArrayLike, y: ArrayLike) -> np.ndarray:
        t = np.asarray(t, dtype=float)
        lo, hi = self._rows(t, self.t_lo), self._rows(t, self.t_hi)
        return np.where((t > lo) & (t < hi), self.base.d3(t, y), 0.0)

    def clipped_count(self, t: np.ndarray) -> int:
        """How many per-sample gradients are clipped at margins t (a data statistic)."""
        return int(np.count_nonzero(np.abs(self.base.d1(t, self.labels)) > self.bound))
