"""Optional compiled (numba) row kernel of the fused dense GLM gradient.

For the shipped losses and a single point w, :func:`fused_kernel` returns a function that
adds sum_{s <= i < e} l'(<x_i, w>, y_i) x_i to ``out``, four rows at a time: each row is
read from memory once and is still in L1 for the second product, the loss derivative is
computed inline (no per-block numpy dispatch) and the kernel releases the GIL, so the
workers of :mod:`objpert.engines.blocked` run it in parallel. Only the row dot product is
compiled with reassociation (so it vectorises); no FMA contraction or approximate math
anywhere. The summation order is fixed by the compiled code, so repeated calls give
bitwise identical results, equal to the two-pass numpy gradient to rounding.

numba is optional: it is imported on first use, and when it is missing (or disabled with
``OBJPERT_NUMBA=0``) :func:`fused_kernel` returns ``None`` and the numpy sweep is used.
Losses other than the shipped :class:`~objpert.losses.LogisticLoss`,
:class:`~objpert.losses.PseudoHuberLoss` and :class:`~objpert.losses.SquaredLoss`
(exact types, so subclasses keep their own ``d1``) also get ``None``.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable

import numpy as np

from objpert.losses import LogisticLoss, Loss, PseudoHuberLoss, SquaredLoss

__all__ = ["ENABLED", "available", "fused_kernel"]

#: Set to False (or the environment variable ``OBJPERT_NUMBA=0``) to use the numpy sweep.
ENABLED = os.environ.get("OBJPERT_NUMBA", "1").strip().lower() not in ("0", "false", "no")

# loss codes of the kernel
_LOGISTIC, _ROBUST, _SQUARED = 0, 1, 2

#: Signature (X, w, y, start, stop, kind, scale, out) -> None.
Kernel = Callable[[np.ndarray, np.ndarray, np.ndarray, int, int, int, float, np.ndarray], None]


def _row_dot(x, w):  # pragma: no cover - compiled
    """<x, w>; compiled with reassociation only (no FMA contraction, no approximations),
    so LLVM vectorises the sum, in an order fixed at compile time."""
    t = 0.0
    for j in range(x.shape[0]):
        t += x[j] * w[j]
    return t


def _row_deriv(t, yi, kind, scale):  # pragma: no cover - compiled
    """l'(t, y) of the loss with code ``kind``."""
    if kind == _LOGISTIC:  # -y expit(-y t) with scipy's overflow-free expit, branch-free
        u = -yi * t
        e = math.exp(-abs(u))
        q = 1.0 + e
        return -yi * (1.0 / q if u >= 0.0 else e / q)
    if kind == _ROBUST:  # c z / sqrt(1 + z^2), z = (t - y) / c
        z = (t - yi) / scale
        return scale * (z / math.hypot(1.0, z))
    return t - yi


# the compiled _row_dot and _row_deriv, set by _compiled() before _fused_rows is compiled
_dot: Callable[..., float] | None = None
_deriv: Callable[..., float] | None = None


def _fused_rows(X, w, y, start, stop, kind, scale, out):  # pragma: no cover - compiled
    """out += sum_{start <= i < stop} l'(<x_i, w>, y_i) x_i, four rows at a time (one
    pass over ``out`` per four rows)."""
    d = X.shape[1]
    i = start
    while i + 4 <= stop:
        x0, x1, x2, x3 = X[i], X[i + 1], X[i + 2], X[i + 3]
        r0 = _deriv(_dot(x0, w), y[i], kind, scale)
        r1 = _deriv(_dot(x1, w), y[i + 1], kind, scale)
        r2 = _deriv(_dot(x2, w), y[i + 2], kind, scale)
        r3 = _deriv(_dot(x3, w), y[i + 3], kind, scale)
        for j in range(d):
            out[j] += (r0 * x0[j] + r1 * x1[j]) + (r2 * x2[j] + r3 * x3[j])
        i += 4
    while i < stop:
        xi = X[i]
        r = _deriv(_dot(xi, w), y[i], kind, scale)
        for j in range(d):
            out[j] += r * xi[j]
        i += 1


@functools.cache
def _compiled() -> Kernel | None:
    """The jitted kernel (compiled on first call, cached on disk), or None without numba."""
    try:
        import numba
    except ImportError:
        return None

    def build(cache: bool) -> Kernel:
        global _dot, _deriv
        _dot = numba.njit(fastmath={"reassoc"}, cache=cache)(_row_dot)
        _deriv = numba.njit(inline="always", cache=cache)(_row_deriv)
        return numba.njit(nogil=True, cache=cache)(_fused_rows)

    try:
        return build(cache=True)
    except Exception:  # pragma: no cover - e.g. no writable cache directory
        return build(cache=False)


def available() -> bool:
    """Whether the compiled kernel can be used (numba importable and ``ENABLED``)."""
    return ENABLED and _compiled() is not None


def _loss_code(loss: Loss) -> tuple[int, float] | None:
    kind = type(loss)
    if kind is LogisticLoss:
        return _LOGISTIC, 1.0
    if kind is PseudoHuberLoss:
        return _ROBUST, float(loss.scale)
    if kind is SquaredLoss:
        return _SQUARED, 1.0
    return None


def fused_kernel(loss: Loss) -> Callable[..., None] | None:
    """``f(X, w, y, start, stop, out)``: out += sum over rows start..stop-1 of
    l'(<x_i, w>, y_i) x_i for a C-ordered float64 X, float64 w (d,), y (n,) and out (d,);
    ``None`` when numba is missing or disabled, or ``loss`` is not a shipped loss."""
    if not ENABLED:
        return None
    code = _loss_code(loss)
    if code is None:
        return None
    kernel = _compiled()
    if kernel is None:
        return None
    kind, scale = code

    def run(X: np.ndarray, w: np.ndarray, y: np.ndarray, start: int, stop: int, out) -> None:
        kernel(X, w, np.ascontiguousarray(y, dtype=np.float64), start, stop, kind, scale, out)

    return run
