"""Optional compiled (numba) kernels of the fused dense GLM gradient.

For the shipped losses and a single point w, :func:`fused_kernel` returns a function that
adds sum_{s <= i < e} l'(<x_i, w>, y_i) x_i to ``out``, four rows at a time: each row is
read from memory once and is still in L1 for the second product, the loss derivative is
computed inline (no per-block numpy dispatch) and the kernel releases the GIL, so the
workers of :mod:`objpert.engines.blocked` run it in parallel. Only the row dot product is
compiled with reassociation (so it vectorises); no FMA contraction or approximate math
anywhere. The summation order is fixed by the compiled code, so repeated calls give
bitwise identical results, equal to the two-pass numpy gradient to rounding.

:func:`batched_kernel` is the same sweep for B points at once, W of shape (d, B): rows are
taken in tiles (and W's columns in chunks) small enough that the tile's margins, W and
``out`` stay in L1/L2 while every column is processed; the loops over the columns (over
the rows of a tile when B = 1) vectorise, including the loss derivative, whose exp is
:func:`_exp`, a branch-free exp written here (Cody-Waite reduction, a degree-13 Taylor
polynomial, 2^k built from the exponent bits), within 1 ulp of ``np.exp`` (tested) where
libm's scalar ``exp`` would stop the vectoriser. :func:`derivative_kernel` is that
vectorised derivative alone, used by the numpy sweep (the cheap path of one or several
points, BLAS products) in place of ``loss.d1_into``: for a single point it beats both
kernels there (10k x 20: ~9 ns a row against ~13 for the batched kernel at B = 1 and ~14
with scipy's expit), so single releases get it too.

numba is optional: it is imported on first use, and when it is missing (or disabled with
``OBJPERT_NUMBA=0``) the ``*_kernel`` functions return ``None`` and the numpy sweep
(with ``loss.d1_into``) is used.
Losses other than the shipped :class:`~objpert.losses.LogisticLoss`,
:class:`~objpert.losses.PseudoHuberLoss` and :class:`~objpert.losses.SquaredLoss`
(exact types, so subclasses keep their own ``d1``) also get ``None``.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from objpert.losses import LogisticLoss, Loss, PseudoHuberLoss, SquaredLoss

__all__ = ["ENABLED", "available", "batched_kernel", "derivative_kernel", "fused_kernel"]

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


# ---------------------------------------------------------------- the batched kernel

# constants of _exp: round-to-nearest shifter 1.5 * 2^52 and its bits, ln 2 split so that
# k * _LN2_HI is exact for |k| < 2^11 (fdlibm's split), 1/j! and the clamps (exp(-746)
# rounds to 0 and exp(710) overflows to inf, as in np.exp)
_LOG2E = 1.4426950408889634
_SHIFTER = 6755399441055744.0
_SHIFTER_BITS = int(np.float64(_SHIFTER).view(np.int64))
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13 = (
    1.0 / math.factorial(j) for j in range(2, 14)
)
_EXP_LO, _EXP_HI = -746.0, 710.0
_TWO_600, _TWO_M600 = 2.0**600, 2.0**-600

# the compiled bit casts float64 <-> int64, set by _compiled()
_f2i: Callable[[float], int] | None = None
_i2f: Callable[[int], float] | None = None


def _exp(x):  # pragma: no cover - compiled
    """exp(x), branch-free so that loops over it vectorise: x = k ln2 + r, |r| <= ln2/2
    (Cody-Waite, k rounded by the 1.5 * 2^52 shifter), exp(r) by its Taylor polynomial of
    degree 13 (truncation < 5e-18) in Estrin's scheme, times 2^k built from bits (in two
    factors near the ends of the range, so subnormal and overflowing results round like
    np.exp). NaN propagates; x is clamped to [-746, 710] (exp = 0 and inf there)."""
    x = _EXP_LO if x < _EXP_LO else x
    x = _EXP_HI if x > _EXP_HI else x
    kd = x * _LOG2E + _SHIFTER
    k = _f2i(kd) - _SHIFTER_BITS
    kf = kd - _SHIFTER
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    a = (_C2 + _C3 * r) + r2 * (_C4 + _C5 * r)
    b = (_C6 + _C7 * r) + r2 * (_C8 + _C9 * r)
    c = (_C10 + _C11 * r) + r2 * (_C12 + _C13 * r)
    p = 1.0 + (r + r2 * (a + r4 * (b + r4 * c)))
    shift = 600 if k < -1000 else (-600 if k > 1000 else 0)
    s2 = _TWO_M600 if k < -1000 else (_TWO_600 if k > 1000 else 1.0)
    return (p * _i2f((k + shift + 1023) << 52)) * s2


def _exp_array(x, out):  # pragma: no cover - compiled
    """out[i] = _exp(x[i]) (for tests)."""
    for i in range(x.shape[0]):
        out[i] = _vexp(x[i])


def _logistic(t, yi):  # pragma: no cover - compiled
    """-y expit(-y t), expit as scipy computes it, branch-free (selects)."""
    u = -yi * t
    e = _vexp(-abs(u))
    q = 1.0 + e
    return -yi * ((1.0 if u >= 0.0 else e) / q)


def _robust(t, yi, scale):  # pragma: no cover - compiled
    """c z / hypot(1, z), z = (t - y) / c; hypot(1, z) = sqrt(1 + z^2) (within an ulp)
    where z^2 cannot overflow, |z| beyond (where it equals |z| in double)."""
    z = (t - yi) / scale
    a = abs(z)
    h = math.sqrt(1.0 + z * z)  # computed either way, so the select vectorises
    return scale * (z / (a if a > 1e150 else h))


def _deriv_tile(M, y, s, rows, cols, kind, scale):  # pragma: no cover - compiled
    """M[i * cols + b] = l'(M[i * cols + b], y[s + i]) for the tile's rows x cols margins;
    one loop per loss and shape, so each vectorises (over the columns, or the rows when
    cols = 1)."""
    if cols == 1:
        yt = y[s : s + rows]
        if kind == _LOGISTIC:
            for i in range(rows):
                M[i] = _vlogistic(M[i], yt[i])
        elif kind == _ROBUST:
            for i in range(rows):
                M[i] = _vrobust(M[i], yt[i], scale)
        else:
            for i in range(rows):
                M[i] = M[i] - yt[i]
        return
    for i in range(rows):
        yi = y[s + i]
        m = M[i * cols : (i + 1) * cols]
        if kind == _LOGISTIC:
            for b in range(cols):
                m[b] = _vlogistic(m[b], yi)
        elif kind == _ROBUST:
            for b in range(cols):
                m[b] = _vrobust(m[b], yi, scale)
        else:
            for b in range(cols):
                m[b] = m[b] - yi


def _margins(X, W, M, s, rows, c0, c1):  # pragma: no cover - compiled
    """M[i * cols + b] = <x_{s+i}, W[:, c0 + b]> for the tile: two rows and four rows of W
    per pass over the columns (each W load serves two rows, each M store four products)."""
    d = X.shape[1]
    cols = c1 - c0
    spare = np.empty(cols)  # the margins of the odd row's twin (discarded)
    i = 0
    while i < rows:
        two = i + 1 < rows
        x = X[s + i]
        z = X[s + i + 1] if two else x  # the second row of the pair (its own row if none)
        m = M[i * cols : (i + 1) * cols]
        n = M[(i + 1) * cols : (i + 2) * cols] if two else spare
        j = 0
        if d >= 4:
            a0, a1, a2, a3 = x[0], x[1], x[2], x[3]
            e0, e1, e2, e3 = z[0], z[1], z[2], z[3]
            w0, w1, w2, w3 = W[0, c0:c1], W[1, c0:c1], W[2, c0:c1], W[3, c0:c1]
            for b in range(cols):
                v0, v1, v2, v3 = w0[b], w1[b], w2[b], w3[b]
                n[b] = (e0 * v0 + e1 * v1) + (e2 * v2 + e3 * v3)
                m[b] = (a0 * v0 + a1 * v1) + (a2 * v2 + a3 * v3)
            j = 4
        else:
            for b in range(cols):
                m[b] = 0.0
                n[b] = 0.0
        while j + 4 <= d:
            a0, a1, a2, a3 = x[j], x[j + 1], x[j + 2], x[j + 3]
            e0, e1, e2, e3 = z[j], z[j + 1], z[j + 2], z[j + 3]
            w0, w1 = W[j, c0:c1], W[j + 1, c0:c1]
            w2, w3 = W[j + 2, c0:c1], W[j + 3, c0:c1]
            for b in range(cols):
                v0, v1, v2, v3 = w0[b], w1[b], w2[b], w3[b]
                n[b] += (e0 * v0 + e1 * v1) + (e2 * v2 + e3 * v3)
                m[b] += (a0 * v0 + a1 * v1) + (a2 * v2 + a3 * v3)
            j += 4
        while j < d:
            a0, e0, w0 = x[j], z[j], W[j, c0:c1]
            for b in range(cols):
                v0 = w0[b]
                n[b] += e0 * v0
                m[b] += a0 * v0
            j += 1
        i += 2


def _accumulate(X, M, out, s, rows, c0, c1):  # pragma: no cover - compiled
    """out[j, c0 + b] += sum_i X[s + i, j] M[i * cols + b]: four rows and two columns of X
    per pass over out's columns (each M load serves two columns, each out store four)."""
    d = X.shape[1]
    cols = c1 - c0
    i = 0
    while i + 4 <= rows:
        x0, x1, x2, x3 = X[s + i], X[s + i + 1], X[s + i + 2], X[s + i + 3]
        m0 = M[i * cols : (i + 1) * cols]
        m1 = M[(i + 1) * cols : (i + 2) * cols]
        m2 = M[(i + 2) * cols : (i + 3) * cols]
        m3 = M[(i + 3) * cols : (i + 4) * cols]
        j = 0
        while j + 2 <= d:
            a0, a1, a2, a3 = x0[j], x1[j], x2[j], x3[j]
            e0, e1, e2, e3 = x0[j + 1], x1[j + 1], x2[j + 1], x3[j + 1]
            o, p = out[j, c0:c1], out[j + 1, c0:c1]
            for b in range(cols):
                r0, r1, r2, r3 = m0[b], m1[b], m2[b], m3[b]
                o[b] += (r0 * a0 + r1 * a1) + (r2 * a2 + r3 * a3)
                p[b] += (r0 * e0 + r1 * e1) + (r2 * e2 + r3 * e3)
            j += 2
        if j < d:
            a0, a1, a2, a3 = x0[j], x1[j], x2[j], x3[j]
            o = out[j, c0:c1]
            for b in range(cols):
                o[b] += (m0[b] * a0 + m1[b] * a1) + (m2[b] * a2 + m3[b] * a3)
        i += 4
    while i < rows:
        x0 = X[s + i]
        m0 = M[i * cols : (i + 1) * cols]
        for j in range(d):
            a0 = x0[j]
            o = out[j, c0:c1]
            for b in range(cols):
                o[b] += m0[b] * a0
        i += 1


def _batched_rows(X, W, y, start, stop, kind, scale, out, tile, chunk):  # pragma: no cover
    """out += sum_{start <= i < stop} x_i l'(x_i^T W, y_i)^T for W (d, B), out (d, B).

    Rows in tiles of ``tile``, W's columns in chunks of ``chunk``; per tile and chunk:
    the margins, the loss derivatives in place, then out += X_tile^T R (for B = 1: the
    row dot products and four rows per pass over out). Summation order fixed by the
    loops."""
    d, B = W.shape
    M = np.empty(tile * min(chunk, B))
    for s in range(start, stop, tile):
        rows = min(s + tile, stop) - s
        for c0 in range(0, B, chunk):
            c1 = min(c0 + chunk, B)
            cols = c1 - c0
            if cols > 1:
                _vmargins(X, W, M, s, rows, c0, c1)
                _vderiv_tile(M, y, s, rows, cols, kind, scale)
                _vaccumulate(X, M, out, s, rows, c0, c1)
                continue
            w = np.ascontiguousarray(W[:, c0])
            for i in range(rows):
                M[i] = _dot(X[s + i], w)
            _vderiv_tile(M, y, s, rows, 1, kind, scale)
            o = np.zeros(d)
            i = 0
            while i + 4 <= rows:
                x0, x1, x2, x3 = X[s + i], X[s + i + 1], X[s + i + 2], X[s + i + 3]
                r0, r1, r2, r3 = M[i], M[i + 1], M[i + 2], M[i + 3]
                for j in range(d):
                    o[j] += (r0 * x0[j] + r1 * x1[j]) + (r2 * x2[j] + r3 * x3[j])
                i += 4
            while i < rows:
                x0, r0 = X[s + i], M[i]
                for j in range(d):
                    o[j] += r0 * x0[j]
                i += 1
            out[:, c0] += o


# the compiled pieces of the batched kernel, set by _compiled()
_vexp: Callable[[float], float] | None = None
_vlogistic: Callable[..., float] | None = None
_vrobust: Callable[..., float] | None = None
_vderiv_tile: Callable[..., None] | None = None
_vmargins: Callable[..., None] | None = None
_vaccumulate: Callable[..., None] | None = None


class _Compiled(NamedTuple):
    fused: Kernel
    batched: Callable[..., None]
    exp_array: Callable[[np.ndarray, np.ndarray], None]


@functools.cache
def _compiled() -> _Compiled | None:
    """The jitted kernels (compiled on first call, cached on disk), or None without numba."""
    try:
        import numba
        from llvmlite import ir
        from numba.core import types
        from numba.extending import intrinsic
    except ImportError:
        return None

    @intrinsic
    def f2i(typingctx, x):  # pragma: no cover - compiled
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))

        return types.int64(types.float64), codegen

    @intrinsic
    def i2f(typingctx, x):  # pragma: no cover - compiled
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())

        return types.float64(types.int64), codegen

    def build(cache: bool) -> _Compiled:
        global _dot, _deriv, _f2i, _i2f, _vexp, _vlogistic, _vrobust
        global _vderiv_tile, _vmargins, _vaccumulate
        inline = numba.njit(inline="always", cache=cache)
        # numpy's error model: x / 0 gives inf or nan, without the ZeroDivisionError
        # branch that would stop the vectoriser (no denominator here can be 0)
        vector = numba.njit(inline="always", error_model="numpy", cache=cache)
        _dot = numba.njit(fastmath={"reassoc"}, cache=cache)(_row_dot)
        _deriv = inline(_row_deriv)
        _f2i, _i2f = f2i, i2f
        _vexp = vector(_exp)
        _vlogistic, _vrobust = vector(_logistic), vector(_robust)
        tile_step = numba.njit(nogil=True, error_model="numpy", cache=cache)
        _vderiv_tile = tile_step(_deriv_tile)
        _vmargins, _vaccumulate = tile_step(_margins), tile_step(_accumulate)
        return _Compiled(
            numba.njit(nogil=True, cache=cache)(_fused_rows),
            numba.njit(nogil=True, error_model="numpy", cache=cache)(_batched_rows),
            numba.njit(nogil=True, error_model="numpy", cache=cache)(_exp_array),
        )

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


def _resolve(loss: Loss) -> tuple[Any, int, float] | None:
    """(compiled kernels, loss code, loss scale) for a shipped loss; ``None`` when numba is
    missing or disabled, or ``loss`` is not a shipped loss."""
    if not ENABLED:
        return None
    code = _loss_code(loss)
    if code is None:
        return None
    compiled = _compiled()
    if compiled is None:
        return None
    return compiled, *code


def fused_kernel(loss: Loss) -> Callable[..., None] | None:
    """``f(X, w, y, start, stop, out)``: out += sum over rows start..stop-1 of
    l'(<x_i, w>, y_i) x_i for a C-ordered float64 X, float64 w (d,), y (n,) and out (d,);
    ``None`` when numba is missing or disabled, or ``loss`` is not a shipped loss."""
    resolved = _resolve(loss)
    if resolved is None:
        return None
    compiled, kind, scale = resolved
    kernel = compiled.fused

    def run(X: np.ndarray, w: np.ndarray, y: np.ndarray, start: int, stop: int, out) -> None:
        kernel(X, w, np.ascontiguousarray(y, dtype=np.float64), start, stop, kind, scale, out)

    return run


#: Rows and columns of one tile of the batched kernel: margins (tile x chunk) in L1 and
#: W's and out's chunk (2 x d x chunk) within 64 KiB.
TILE_DOUBLES = 2048


def batched_kernel(loss: Loss) -> Callable[..., None] | None:
    """``f(X, W, y, start, stop, out)``: out += sum over rows start..stop-1 of
    x_i l'(x_i^T W, y_i)^T for a C-ordered float64 X, C-ordered float64 W (d, B) or (d,),
    y (n,) and out shaped like W; ``None`` when numba is missing or disabled, or ``loss``
    is not a shipped loss."""
    resolved = _resolve(loss)
    if resolved is None:
        return None
    compiled, kind, scale = resolved
    kernel = compiled.batched

    def run(X: np.ndarray, W: np.ndarray, y: np.ndarray, start: int, stop: int, out) -> None:
        d = X.shape[1]
        B = W.shape[1] if W.ndim == 2 else 1
        chunk = min(B, max(8, (4096 // max(d, 1)) // 8 * 8))
        tile = max(4, min(TILE_DOUBLES // chunk, 32768 // max(d, 1)) // 4 * 4)
        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        W2, out2 = (W, out) if W.ndim == 2 else (W.reshape(-1, 1), out.reshape(-1, 1))
        kernel(X, W2, yv, start, stop, kind, scale, out2, tile, chunk)

    return run


def derivative_kernel(loss: Loss) -> Callable[[np.ndarray, np.ndarray], np.ndarray] | None:
    """``f(m, y)``: m = l'(m, y) in place (and returned) for C-ordered float64 margins m of
    shape (rows,) or (rows, B) and labels y (rows,) or (rows, 1), with the vectorised loss
    derivative of the batched kernel (equal to ``loss.d1`` within a few ulp); ``None``
    when numba is missing or disabled, or ``loss`` is not a shipped loss."""
    resolved = _resolve(loss)
    if resolved is None:
        return None
    _, kind, scale = resolved
    tile = _vderiv_tile

    def run(m: np.ndarray, y: np.ndarray) -> np.ndarray:
        if not (m.flags.c_contiguous and m.dtype == np.float64):
            raise ValueError("m must be a C-ordered float64 array")
        rows = m.shape[0]
        cols = m.shape[1] if m.ndim == 2 else 1
        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        tile(m.reshape(-1), yv, 0, rows, cols, kind, scale)
        return m

    return run


def exp(x: np.ndarray) -> np.ndarray:
    """The kernels' vectorisable exp on a float64 array (for tests); needs numba."""
    compiled = _compiled()
    if compiled is None:
        raise RuntimeError("numba is not installed")
    x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)
    out = np.empty_like(x)
    compiled.exp_array(x, out)
    return out
