"""Optional compiled (numba) kernels of the fused dense GLM gradient.

For the shipped losses and a single point w, :func:`fused_kernel` returns a function that
adds sum_{s <= i < e} l'(<x_i, w>, y_i) x_i to ``out``, four rows at a time: each row is
read from memory once and is still in L1 for the second product, the loss derivative is
computed inline (no per-block numpy dispatch) and the kernel releases the GIL. Only the
row dot product is compiled with reassociation (so it vectorises); no FMA contraction or
approximate math in it.

:func:`batched_kernel` is the same sweep for B points at once, W of shape (d, B): rows are
taken in tiles (and W's columns in chunks) small enough that the tile's margins, W and
``out`` stay in L1/L2 while every column is processed. When a chunk is a multiple of 8
columns the two products are the register-blocked micro-kernels of
:mod:`objpert.engines.simd` (near a core's FMA peak); otherwise loops over the columns
(over the rows of a tile when B = 1), four rows of the tile and four rows of W per pass,
that the compiler vectorises. The loss derivative is vectorised too; its exp is
:func:`_exp`, a branch-free exp written here (Cody-Waite reduction, a degree-13 Taylor
polynomial, 2^k built from the exponent bits), within 1 ulp of ``np.exp`` (tested) where
libm's scalar ``exp`` would stop the vectoriser. Products and sums are contracted to FMAs
(one rounding where there were two; nothing approximate). :func:`derivative_kernel` is
that vectorised derivative alone, used by the numpy sweep (the cheap path of one or
several points, BLAS products) in place of ``loss.d1_into``, so single releases get it
too.

:func:`parallel_kernel` runs either kernel over several row ranges at once on numba's
thread pool (``parallel=True``), whose threads spin between launches: on a virtual
machine, waking a sleeping thread for every gradient (as a Python thread pool does) cost
~0.3-0.5 ms a step, a quarter of a 64-point step on 10k x 20. The partial sums are added
in range order, so the result does not depend on the threads' timing.

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
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from objpert.losses import LogisticLoss, Loss, PseudoHuberLoss, SquaredLoss

__all__ = [
    "ENABLED",
    "available",
    "batched_kernel",
    "derivative_kernel",
    "fused_kernel",
    "parallel_kernel",
]

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
_LOGISTIC_LO = -708.0  # exp(-708) > 2^-1022: normal

# the compiled bit casts float64 <-> int64, set by _compiled()
_f2i: Callable[[float], int] | None = None
_i2f: Callable[[int], float] | None = None


def _exp_parts(x):  # pragma: no cover - compiled
    """(p, k) with exp(x) = p 2^k, p = exp(r) in [0.7, 1.42]: x = k ln2 + r, |r| <= ln2/2
    (Cody-Waite, k rounded by the 1.5 * 2^52 shifter), exp(r) by its Taylor polynomial of
    degree 13 (truncation < 5e-18) in Estrin's scheme. Branch-free, for |x| <= 746."""
    kd = x * _LOG2E + _SHIFTER
    k = _f2i(kd) - _SHIFTER_BITS
    kf = kd - _SHIFTER
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    r2 = r * r
    r4 = r2 * r2
    a = (_C2 + _C3 * r) + r2 * (_C4 + _C5 * r)
    b = (_C6 + _C7 * r) + r2 * (_C8 + _C9 * r)
    c = (_C10 + _C11 * r) + r2 * (_C12 + _C13 * r)
    return 1.0 + (r + r2 * (a + r4 * (b + r4 * c))), k


def _exp(x):  # pragma: no cover - compiled
    """exp(x), branch-free so that loops over it vectorise: p 2^k from :func:`_exp_parts`,
    2^k applied as two factors 2^h 2^(k-h), h = floor(k/2), each a normal number over the
    whole clamped range (so subnormal and overflowing results are rounded once, by the
    last product, like np.exp). NaN propagates; x is clamped to [-746, 710] (exp = 0 and
    inf there)."""
    x = _EXP_LO if x < _EXP_LO else x
    x = _EXP_HI if x > _EXP_HI else x
    p, k = _vexp_parts(x)
    h = k >> 1
    return (p * _i2f((h + 1023) << 52)) * _i2f((k - h + 1023) << 52)


def _exp_array(x, out):  # pragma: no cover - compiled
    """out[i] = _exp(x[i]) (for tests)."""
    for i in range(x.shape[0]):
        out[i] = _vexp(x[i])


def _logistic(t, yi):  # pragma: no cover - compiled
    """-y expit(-y t) = -y / (1 + exp(y t)), branch-free. exp(y t) = p 2^k with one scale
    factor: y t is clamped to [-708, 710], where 2^k stays normal (k >= -1021) and turns to
    inf from y t ~ 709.4 on (k = 1024); below -708, 1 + exp(y t) is 1 in double either way,
    and from 709.4 on the derivative is -0 where the exact one is below 1.2e-308."""
    u = yi * t
    u = _LOGISTIC_LO if u < _LOGISTIC_LO else u
    u = _EXP_HI if u > _EXP_HI else u
    p, k = _vexp_parts(u)
    return -yi / (1.0 + p * _i2f((k + 1023) << 52))


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


def _four_rows(X, M, row, i, cols):  # pragma: no cover - compiled
    """Rows row..row+3 of X and the matching rows i..i+3 of the tile M (cols wide)."""
    return (
        X[row],
        X[row + 1],
        X[row + 2],
        X[row + 3],
        M[i * cols : (i + 1) * cols],
        M[(i + 1) * cols : (i + 2) * cols],
        M[(i + 2) * cols : (i + 3) * cols],
        M[(i + 3) * cols : (i + 4) * cols],
    )


def _margins(X, W, M, s, rows, c0, c1):  # pragma: no cover - compiled
    """M[i * cols + b] = <x_{s+i}, W[:, c0 + b]> for the tile: four rows of the tile and
    four rows of W per pass over the columns (each W load serves four rows, each M store
    four products), accumulated in M."""
    d = X.shape[1]
    cols = c1 - c0
    M[: rows * cols] = 0.0
    i = 0
    while i + 4 <= rows:
        x0, x1, x2, x3, m0, m1, m2, m3 = _vfour_rows(X, M, s + i, i, cols)
        j = 0
        while j + 4 <= d:
            w0, w1 = W[j, c0:c1], W[j + 1, c0:c1]
            w2, w3 = W[j + 2, c0:c1], W[j + 3, c0:c1]
            a0, a1, a2, a3 = x0[j], x0[j + 1], x0[j + 2], x0[j + 3]
            e0, e1, e2, e3 = x1[j], x1[j + 1], x1[j + 2], x1[j + 3]
            f0, f1, f2, f3 = x2[j], x2[j + 1], x2[j + 2], x2[j + 3]
            g0, g1, g2, g3 = x3[j], x3[j + 1], x3[j + 2], x3[j + 3]
            for b in range(cols):
                v0, v1, v2, v3 = w0[b], w1[b], w2[b], w3[b]
                m0[b] += (a0 * v0 + a1 * v1) + (a2 * v2 + a3 * v3)
                m1[b] += (e0 * v0 + e1 * v1) + (e2 * v2 + e3 * v3)
                m2[b] += (f0 * v0 + f1 * v1) + (f2 * v2 + f3 * v3)
                m3[b] += (g0 * v0 + g1 * v1) + (g2 * v2 + g3 * v3)
            j += 4
        while j < d:
            w0 = W[j, c0:c1]
            a0, e0, f0, g0 = x0[j], x1[j], x2[j], x3[j]
            for b in range(cols):
                v0 = w0[b]
                m0[b] += a0 * v0
                m1[b] += e0 * v0
                m2[b] += f0 * v0
                m3[b] += g0 * v0
            j += 1
        i += 4
    while i < rows:
        x0 = X[s + i]
        m0 = M[i * cols : (i + 1) * cols]
        for j in range(d):
            a0, w0 = x0[j], W[j, c0:c1]
            for b in range(cols):
                m0[b] += a0 * w0[b]
        i += 1


def _accumulate(X, M, out, s, rows, c0, c1):  # pragma: no cover - compiled
    """out[j, c0 + b] += sum_i X[s + i, j] M[i * cols + b]: four rows and four columns of
    X per pass over out's columns (each M load serves four columns, each out store four
    products)."""
    d = X.shape[1]
    cols = c1 - c0
    i = 0
    while i + 4 <= rows:
        x0, x1, x2, x3, m0, m1, m2, m3 = _vfour_rows(X, M, s + i, i, cols)
        j = 0
        while j + 4 <= d:
            o0, o1 = out[j, c0:c1], out[j + 1, c0:c1]
            o2, o3 = out[j + 2, c0:c1], out[j + 3, c0:c1]
            a0, a1, a2, a3 = x0[j], x1[j], x2[j], x3[j]
            e0, e1, e2, e3 = x0[j + 1], x1[j + 1], x2[j + 1], x3[j + 1]
            f0, f1, f2, f3 = x0[j + 2], x1[j + 2], x2[j + 2], x3[j + 2]
            g0, g1, g2, g3 = x0[j + 3], x1[j + 3], x2[j + 3], x3[j + 3]
            for b in range(cols):
                r0, r1, r2, r3 = m0[b], m1[b], m2[b], m3[b]
                o0[b] += (r0 * a0 + r1 * a1) + (r2 * a2 + r3 * a3)
                o1[b] += (r0 * e0 + r1 * e1) + (r2 * e2 + r3 * e3)
                o2[b] += (r0 * f0 + r1 * f1) + (r2 * f2 + r3 * f3)
                o3[b] += (r0 * g0 + r1 * g1) + (r2 * g2 + r3 * g3)
            j += 4
        while j < d:
            a0, a1, a2, a3 = x0[j], x1[j], x2[j], x3[j]
            o = out[j, c0:c1]
            for b in range(cols):
                o[b] += (m0[b] * a0 + m1[b] * a1) + (m2[b] * a2 + m3[b] * a3)
            j += 1
        i += 4
    while i < rows:
        x0 = X[s + i]
        m0 = M[i * cols : (i + 1) * cols]
        for j in range(d):
            a0, o = x0[j], out[j, c0:c1]
            for b in range(cols):
                o[b] += m0[b] * a0
        i += 1


def _simd_tile(X, W, y, M, out, s, rows, c0, c1, kind, scale):  # pragma: no cover
    """One tile and chunk (c1 - c0 a multiple of 8) with the register-blocked products of
    :mod:`objpert.engines.simd`: margins four rows by eight columns at a time, the loss
    derivatives in place, then out += X_tile^T R four features by eight columns at a
    time."""
    d = X.shape[1]
    cols = c1 - c0
    i = 0
    while i + 4 <= rows:
        for c in range(c0, c1, 8):
            _simd_margins4(X, W, M, s + i, c, i, c - c0, cols)
        i += 4
    while i < rows:
        for c in range(c0, c1, 8):
            _simd_margins1(X, W, M, s + i, c, i, c - c0, cols)
        i += 1
    if kind == _LOGISTIC:
        for i in range(rows):
            if cols % 16 == 0:
                _simd_logistic4(M, i * cols, cols // 16, y[s + i])
            else:
                _simd_logistic2(M, i * cols, cols // 8, y[s + i])
    else:
        _vderiv_tile(M, y, s, rows, cols, kind, scale)
    for c in range(c0, c1, 8):
        j = 0
        while j + 4 <= d:
            _simd_accumulate4(X, M, out, s, rows, j, c - c0, c, cols)
            j += 4
        while j < d:
            _simd_accumulate1(X, M, out, s, rows, j, c - c0, c, cols)
            j += 1


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
            if cols % 8 == 0:
                _vsimd_tile(X, W, y, M, out, s, rows, c0, c1, kind, scale)
                continue
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


def _parallel_batched(X, W, y, cuts, kind, scale, outs, tile, chunk):  # pragma: no cover
    """outs[t] += the batched kernel over rows cuts[t]..cuts[t+1]-1, one range per thread
    of numba's pool (whose threads wait for work spinning, not asleep)."""
    for t in numba_prange(cuts.shape[0] - 1):
        _vbatched(X, W, y, cuts[t], cuts[t + 1], kind, scale, outs[t], tile, chunk)


def _parallel_fused(X, w, y, cuts, kind, scale, outs):  # pragma: no cover - compiled
    """outs[t] += the row kernel over rows cuts[t]..cuts[t+1]-1, one range per thread."""
    for t in numba_prange(cuts.shape[0] - 1):
        _vfused(X, w, y, cuts[t], cuts[t + 1], kind, scale, outs[t])


# the compiled pieces of the batched kernel, set by _compiled()
_vexp: Callable[[float], float] | None = None
_vexp_parts: Callable[[float], tuple[float, int]] | None = None
_vlogistic: Callable[..., float] | None = None
_vrobust: Callable[..., float] | None = None
_vderiv_tile: Callable[..., None] | None = None
_vmargins: Callable[..., None] | None = None
_vaccumulate: Callable[..., None] | None = None
_vfour_rows: Callable[..., tuple] | None = None
_vbatched: Callable[..., None] | None = None
_vsimd_tile: Callable[..., None] | None = None
_simd_margins4 = _simd_margins1 = _simd_accumulate4 = _simd_accumulate1 = None
_simd_logistic2 = _simd_logistic4 = None
_vfused: Callable[..., None] | None = None
numba_prange: Callable[..., Any] = range  # numba.prange once numba is imported


class _Compiled(NamedTuple):
    fused: Kernel
    batched: Callable[..., None]
    exp_array: Callable[[np.ndarray, np.ndarray], None]
    parallel_fused: Callable[..., None]
    parallel_batched: Callable[..., None]


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
        global _dot, _deriv, _f2i, _i2f, _vexp, _vexp_parts, _vlogistic, _vrobust
        global _vderiv_tile, _vmargins, _vaccumulate, _vbatched, _vfused, numba_prange
        inline = numba.njit(inline="always", cache=cache)
        # numpy's error model: x / 0 gives inf or nan, without the ZeroDivisionError
        # branch that would stop the vectoriser (no denominator here can be 0); products
        # and sums contracted to FMAs (one rounding instead of two) in the batched kernel
        vector = numba.njit(inline="always", error_model="numpy", cache=cache)
        fma = {"contract"}
        _dot = numba.njit(fastmath={"reassoc"}, cache=cache)(_row_dot)
        _deriv = inline(_row_deriv)
        _f2i, _i2f = f2i, i2f
        _vexp_parts = vector(_exp_parts)
        _vexp = vector(_exp)
        _vlogistic, _vrobust = vector(_logistic), vector(_robust)
        global _vfour_rows
        _vfour_rows = inline(_four_rows)
        tile_step = numba.njit(nogil=True, error_model="numpy", fastmath=fma, cache=cache)
        _vderiv_tile = tile_step(_deriv_tile)
        _vmargins, _vaccumulate = tile_step(_margins), tile_step(_accumulate)
        global _vsimd_tile, _simd_margins4, _simd_margins1, _simd_accumulate4, _simd_accumulate1
        from objpert.engines import simd

        _simd_margins4, _simd_margins1 = simd.margins_block(4), simd.margins_block(1)
        _simd_accumulate4, _simd_accumulate1 = simd.accumulate_block(4), simd.accumulate_block(1)
        global _simd_logistic2, _simd_logistic4
        constants = dict(
            lo=_LOGISTIC_LO,
            hi=_EXP_HI,
            log2e=_LOG2E,
            shifter=_SHIFTER,
            shifter_bits=_SHIFTER_BITS,
            ln2_hi=_LN2_HI,
            ln2_lo=_LN2_LO,
            **{f"c{j}": 1.0 / math.factorial(j) for j in range(2, 14)},
        )
        _simd_logistic2 = simd.logistic_block(2, constants)
        _simd_logistic4 = simd.logistic_block(4, constants)
        _vsimd_tile = tile_step(_simd_tile)
        _vfused = numba.njit(nogil=True, cache=cache)(_fused_rows)
        _vbatched = numba.njit(nogil=True, error_model="numpy", cache=cache)(_batched_rows)
        numba_prange = numba.prange
        parallel = numba.njit(parallel=True, nogil=True, error_model="numpy", cache=cache)
        return _Compiled(
            _vfused,
            _vbatched,
            numba.njit(nogil=True, error_model="numpy", fastmath=fma, cache=cache)(_exp_array),
            parallel(_parallel_fused),
            parallel(_parallel_batched),
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
        tile, chunk = _tiles(X.shape[1], W.shape[1] if W.ndim == 2 else 1)
        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        W2, out2 = (W, out) if W.ndim == 2 else (W.reshape(-1, 1), out.reshape(-1, 1))
        kernel(X, W2, yv, start, stop, kind, scale, out2, tile, chunk)

    return run


#: numba's parallel launches: the workqueue threading layer (numba's fallback when neither
#: OpenMP nor TBB loads) aborts the process on concurrent launches, so they are serialised.
_PARALLEL_LOCK = threading.Lock()


def _tiles(d: int, B: int) -> tuple[int, int]:
    """(tile rows, column chunk) of the batched kernel for W of shape (d, B)."""
    chunk = min(B, max(8, (4096 // max(d, 1)) // 8 * 8))
    tile = max(4, min(TILE_DOUBLES // chunk, 32768 // max(d, 1)) // 4 * 4)
    return tile, chunk


#: The process that launched numba's pool: a child forked from it must not launch (GNU
#: OpenMP does not survive fork; numba terminates such a child), so it gets ``None``.
_LAUNCHED_IN: int | None = None


def _new_lock_after_fork() -> None:
    global _PARALLEL_LOCK
    _PARALLEL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


def parallel_kernel(loss: Loss) -> Callable[..., np.ndarray] | None:
    """``f(X, W, y, cuts)``: sum over t of the fused kernel (W of shape (d,)) or the batched
    kernel (W of shape (d, B)) over rows cuts[t]..cuts[t+1]-1, the ranges run in parallel
    by numba's thread pool (one thread a range; the partial sums added in range order, so
    the result does not depend on thread timing). Its threads spin briefly between
    launches, so a launch costs microseconds where waking a sleeping pool thread costs up
    to a millisecond on a virtual machine. ``None`` as for :func:`fused_kernel`, and in a
    process forked after the pool started (the caller then uses its own threads)."""
    resolved = _resolve(loss)
    if resolved is None or _LAUNCHED_IN not in (None, os.getpid()):
        return None
    compiled, kind, scale = resolved

    def run(X: np.ndarray, W: np.ndarray, y: np.ndarray, cuts: np.ndarray) -> np.ndarray:
        import numba

        yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
        cuts = np.ascontiguousarray(cuts, dtype=np.int64)
        ranges = len(cuts) - 1
        outs = np.zeros((ranges, *W.shape))
        global _LAUNCHED_IN
        with _PARALLEL_LOCK:
            _LAUNCHED_IN = os.getpid()
            before = numba.get_num_threads()
            numba.set_num_threads(min(ranges, numba.config.NUMBA_NUM_THREADS))
            try:
                if W.ndim == 1:
                    compiled.parallel_fused(X, W, yv, cuts, kind, scale, outs)
                else:
                    tile, chunk = _tiles(X.shape[1], W.shape[1])
                    compiled.parallel_batched(X, W, yv, cuts, kind, scale, outs, tile, chunk)
            finally:
                numba.set_num_threads(before)
        out = outs[0]
        for part in outs[1:]:
            out += part
        return out

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
