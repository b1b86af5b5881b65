"""The row and tile loops of the compiled gradient kernels, as plain Python.

Every function here runs as it is (the pure-Python kernel set, for debugging and tests on
a few rows) and is also what :mod:`.build` compiles: each one is compiled against a
namespace where the names it calls (``row_dot``, ``deriv_tile``, ``exp_parts``,
``margins4``, ``prange``, ...) are the compiled versions, with the compile options that
fix its rounding (listed in :mod:`.build`). The functions ``margins4`` .. ``logistic4``
are the plain-Python meaning of the register-blocked LLVM micro-kernels of :mod:`.simd`
that replace them when compiled.

- :func:`fused_rows` (one point w): out += sum_i l'(<x_i, w>, y_i) x_i, four rows at a
  time, each row read once and still in L1 for the second product, the loss derivative
  inline; only the row dot product is compiled with reassociation (so it vectorises).
- :func:`batched_rows` (B points, W of shape (d, B)): rows in tiles and W's columns in
  chunks small enough that the tile's margins, W and ``out`` stay in L1/L2; a chunk of a
  multiple of 8 columns takes the register-blocked products (:func:`simd_tile`), other
  chunks loops over the columns (over the rows when B = 1), four rows of the tile and
  four rows of W per pass. The loss derivative is vectorised too (:func:`deriv_tile`,
  with the branch-free exp of :mod:`.exponential`); products and sums are contracted to FMAs.
- :func:`labelled_rows`: :func:`batched_rows` with a label per row and column (Y of
  shape (n, B)), for one-vs-rest releases run together.
- :func:`csr_rows` (one point w, CSR rows with weights): the fused kernel on the stored
  entries of a sparse matrix, for the shaped engines (:mod:`objpert._engines.shaped`).
- :func:`serial_fused`, :func:`serial_batched`, :func:`serial_labelled`: a kernel over
  several row ranges one after the other, each into its own partial sum (one call for a
  thread's share of a sweep).
- :func:`parallel_fused` and :func:`parallel_batched`: either kernel over several row
  ranges, one range per thread of numba's pool (``prange``; ``range`` here).

Loss codes: :data:`LOGISTIC`, :data:`ROBUST` (pseudo-Huber with scale c), :data:`SQUARED`.
"""

from __future__ import annotations

import math

import numpy as np

from objpert._engines.compiled.exponential import EXP_HI, LOGISTIC_LO, exp_parts, i2f

__all__ = [
    "LOGISTIC",
    "ROBUST",
    "SQUARED",
    "batched_rows",
    "csr_rows",
    "deriv_labelled",
    "deriv_tile",
    "fused_rows",
    "labelled_rows",
    "parallel_batched",
    "parallel_fused",
    "serial_batched",
    "serial_fused",
    "serial_labelled",
]

#: loss codes of the kernels
LOGISTIC, ROBUST, SQUARED = 0, 1, 2

#: numba.prange in the compiled kernels
prange = range


def row_dot(x, w):
    """<x, w>; compiled with reassociation only (no FMA contraction, no approximations),
    so LLVM vectorises the sum, in an order fixed at compile time."""
    t = 0.0
    for j in range(x.shape[0]):
        t += x[j] * w[j]
    return t


def row_deriv(t, yi, kind, scale):
    """l'(t, y) of the loss with code ``kind``."""
    if kind == LOGISTIC:  # -y expit(-y t) with scipy's overflow-free expit, branch-free
        u = -yi * t
        e = math.exp(-abs(u))
        q = 1.0 + e
        return -yi * (1.0 / q if u >= 0.0 else e / q)
    if kind == ROBUST:  # c z / sqrt(1 + z^2), z = (t - y) / c, clamped as in robust()
        z = min(max((t - yi) / scale, -1e300), 1e300)
        return scale * (z / math.hypot(1.0, z))
    return t - yi


def fused_rows(X, w, y, start, stop, kind, scale, out):
    """out += sum_{start <= i < stop} l'(<x_i, w>, y_i) x_i, four rows at a time (one
    pass over ``out`` per four rows)."""
    d = X.shape[1]
    i = start
    while i + 4 <= stop:
        x0, x1, x2, x3 = X[i], X[i + 1], X[i + 2], X[i + 3]
        r0 = row_deriv(row_dot(x0, w), y[i], kind, scale)
        r1 = row_deriv(row_dot(x1, w), y[i + 1], kind, scale)
        r2 = row_deriv(row_dot(x2, w), y[i + 2], kind, scale)
        r3 = row_deriv(row_dot(x3, w), y[i + 3], kind, scale)
        for j in range(d):
            out[j] += (r0 * x0[j] + r1 * x1[j]) + (r2 * x2[j] + r3 * x3[j])
        i += 4
    while i < stop:
        xi = X[i]
        r = row_deriv(row_dot(xi, w), y[i], kind, scale)
        for j in range(d):
            out[j] += r * xi[j]
        i += 1


def logistic(t, yi):
    """-y expit(-y t) = -y / (1 + exp(y t)), branch-free. exp(y t) = p 2^k with one scale
    factor: y t is clamped to [-708, 710], where 2^k stays normal (k >= -1021) and turns to
    inf from y t ~ 709.4 on (k = 1024); below -708, 1 + exp(y t) is 1 in double either way,
    and from 709.4 on the derivative is -0 where the exact one is below 1.2e-308."""
    u = yi * t
    u = LOGISTIC_LO if u < LOGISTIC_LO else u
    u = EXP_HI if u > EXP_HI else u
    p, k = exp_parts(u)
    return -yi / (1.0 + p * i2f((k + 1023) << 52))


def robust(t, yi, scale):
    """c z / hypot(1, z), z = (t - y) / c; hypot(1, z) = sqrt(1 + z^2) (within an ulp)
    where z^2 cannot overflow, |z| beyond (where it equals |z| in double). z is clamped to
    +-1e300, as the loss clamps it: t - y overflows to +-inf for finite t, y near 1.8e308."""
    z = min(max((t - yi) / scale, -1e300), 1e300)
    a = abs(z)
    h = math.sqrt(1.0 + z * z)  # computed either way, so the select vectorises
    return scale * (z / (a if a > 1e150 else h))


def deriv_tile(M, y, s, rows, cols, kind, scale):
    """M[i * cols + b] = l'(M[i * cols + b], y[s + i]) for the tile's rows x cols margins;
    one loop per loss and shape, so each vectorises (over the columns, or the rows when
    cols = 1)."""
    if cols == 1:
        yt = y[s : s + rows]
        if kind == LOGISTIC:
            for i in range(rows):
                M[i] = logistic(M[i], yt[i])
        elif kind == ROBUST:
            for i in range(rows):
                M[i] = robust(M[i], yt[i], scale)
        else:
            for i in range(rows):
                M[i] = M[i] - yt[i]
        return
    for i in range(rows):
        yi = y[s + i]
        m = M[i * cols : (i + 1) * cols]
        if kind == LOGISTIC:
            for b in range(cols):
                m[b] = logistic(m[b], yi)
        elif kind == ROBUST:
            for b in range(cols):
                m[b] = robust(m[b], yi, scale)
        else:
            for b in range(cols):
                m[b] = m[b] - yi


def four_rows(X, M, row, i, cols):
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


def margins(X, W, M, s, rows, c0, c1):
    """M[i * cols + b] = <x_{s+i}, W[:, c0 + b]> for the tile: four rows of the tile and
    four rows of W per pass over the columns (each W load serves four rows, each M store
    four products), accumulated in M."""
    d = X.shape[1]
    cols = c1 - c0
    M[: rows * cols] = 0.0
    i = 0
    while i + 4 <= rows:
        x0, x1, x2, x3, m0, m1, m2, m3 = four_rows(X, M, s + i, i, cols)
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


def accumulate(X, M, out, s, rows, c0, c1):
    """out[j, c0 + b] += sum_i X[s + i, j] M[i * cols + b]: four rows and four columns of
    X per pass over out's columns (each M load serves four columns, each out store four
    products)."""
    d = X.shape[1]
    cols = c1 - c0
    i = 0
    while i + 4 <= rows:
        x0, x1, x2, x3, m0, m1, m2, m3 = four_rows(X, M, s + i, i, cols)
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


# plain-Python meaning of the register-blocked micro-kernels of .simd (compiled: those)


def margins4(X, W, M, row, wcol, mrow, mcol, ldm):
    """M[(mrow + r) ldm + mcol + b] = sum_k X[row + r, k] W[k, wcol + b], r < 4, b < 8."""
    margins_block(X, W, M, row, wcol, mrow, mcol, ldm, 4)


def margins1(X, W, M, row, wcol, mrow, mcol, ldm):
    """As :func:`margins4`, for one row."""
    margins_block(X, W, M, row, wcol, mrow, mcol, ldm, 1)


def margins4h(X, W, M, row, wcol, mrow, mcol, ldm):
    """As :func:`margins4`, for four columns."""
    margins_block(X, W, M, row, wcol, mrow, mcol, ldm, 4, 4)


def margins1h(X, W, M, row, wcol, mrow, mcol, ldm):
    """As :func:`margins4`, for one row and four columns."""
    margins_block(X, W, M, row, wcol, mrow, mcol, ldm, 1, 4)


def margins_block(X, W, M, row, wcol, mrow, mcol, ldm, rows, width=8):
    """:func:`margins4` for ``rows`` rows and ``width`` columns: each margin summed over
    the features in order."""
    for r in range(rows):
        x = X[row + r]
        for b in range(width):
            t = 0.0
            for k in range(X.shape[1]):
                t += x[k] * W[k, wcol + b]
            M[(mrow + r) * ldm + mcol + b] = t


def accumulate4(X, M, out, row, rows, j, mcol, ocol, ldm):
    """out[j + f, ocol + b] += sum_{r < rows} X[row + r, j + f] M[r ldm + mcol + b],
    f < 4, b < 8."""
    accumulate_block(X, M, out, row, rows, j, mcol, ocol, ldm, 4)


def accumulate1(X, M, out, row, rows, j, mcol, ocol, ldm):
    """As :func:`accumulate4`, for one feature."""
    accumulate_block(X, M, out, row, rows, j, mcol, ocol, ldm, 1)


def accumulate4h(X, M, out, row, rows, j, mcol, ocol, ldm):
    """As :func:`accumulate4`, for four columns."""
    accumulate_block(X, M, out, row, rows, j, mcol, ocol, ldm, 4, 4)


def accumulate1h(X, M, out, row, rows, j, mcol, ocol, ldm):
    """As :func:`accumulate4`, for one feature and four columns."""
    accumulate_block(X, M, out, row, rows, j, mcol, ocol, ldm, 1, 4)


def accumulate_block(X, M, out, row, rows, j, mcol, ocol, ldm, features, width=8):
    """:func:`accumulate4` for ``features`` features and ``width`` columns: each sum over
    the rows in order, then added to ``out``."""
    for f in range(features):
        for b in range(width):
            t = 0.0
            for r in range(rows):
                t += X[row + r, j + f] * M[r * ldm + mcol + b]
            out[j + f, ocol + b] += t


def logistic2(M, start, units, yi):
    """M[start + i] = logistic(M[start + i], y) for i < 8 units."""
    for i in range(start, start + 8 * units):
        M[i] = logistic(M[i], yi)


def logistic4(M, start, units, yi):
    """M[start + i] = logistic(M[start + i], y) for i < 16 units."""
    for i in range(start, start + 16 * units):
        M[i] = logistic(M[i], yi)


def simd_margins(X, W, M, s, rows, c0, c1):
    """The tile's margins M[i * cols + b] = <x_{s+i}, W[:, c0 + b]> (c1 - c0 a multiple of
    4), four rows by eight columns at a time (:func:`margins4`), the last four columns of
    a width 4 mod 8 by :func:`margins4h`."""
    cols = c1 - c0
    c8 = c1 - cols % 8  # the columns in blocks of 8; c8..c1: a block of 4, or none
    i = 0
    while i + 4 <= rows:
        for c in range(c0, c8, 8):
            margins4(X, W, M, s + i, c, i, c - c0, cols)
        if c8 < c1:
            margins4h(X, W, M, s + i, c8, i, c8 - c0, cols)
        i += 4
    while i < rows:
        for c in range(c0, c8, 8):
            margins1(X, W, M, s + i, c, i, c - c0, cols)
        if c8 < c1:
            margins1h(X, W, M, s + i, c8, i, c8 - c0, cols)
        i += 1


def simd_accumulate(X, M, out, s, rows, c0, c1):
    """out[:, c0:c1] += X_tile^T R for the tile's derivatives R (c1 - c0 a multiple of 4),
    four features by eight columns at a time (:func:`accumulate4`; the last four columns
    of a width 4 mod 8 by :func:`accumulate4h`)."""
    d = X.shape[1]
    cols = c1 - c0
    c8 = c1 - cols % 8
    for c in range(c0, c8, 8):
        j = 0
        while j + 4 <= d:
            accumulate4(X, M, out, s, rows, j, c - c0, c, cols)
            j += 4
        while j < d:
            accumulate1(X, M, out, s, rows, j, c - c0, c, cols)
            j += 1
    if c8 < c1:
        j = 0
        while j + 4 <= d:
            accumulate4h(X, M, out, s, rows, j, c8 - c0, c8, cols)
            j += 4
        while j < d:
            accumulate1h(X, M, out, s, rows, j, c8 - c0, c8, cols)
            j += 1


def simd_tile(X, W, y, M, out, s, rows, c0, c1, kind, scale):
    """One tile and chunk (c1 - c0 a multiple of 8) with the register-blocked products
    (:func:`margins4` .. :func:`logistic4`): margins four rows by eight columns at a time,
    the loss derivatives in place, then out += X_tile^T R four features by eight columns
    at a time."""
    cols = c1 - c0
    simd_margins(X, W, M, s, rows, c0, c1)
    if kind == LOGISTIC:
        for i in range(rows):
            if cols % 16 == 0:
                logistic4(M, i * cols, cols // 16, y[s + i])
            else:
                logistic2(M, i * cols, cols // 8, y[s + i])
    else:
        deriv_tile(M, y, s, rows, cols, kind, scale)
    simd_accumulate(X, M, out, s, rows, c0, c1)


def deriv_labelled(M, Y, s, rows, c0, c1, kind, scale):
    """M[i * cols + b] = l'(M[i * cols + b], Y[s + i, c0 + b]): the tile's derivatives
    with a label per row and column (one vectorised loop per loss; the logistic one by
    the register-blocked vector code)."""
    cols = c1 - c0
    if kind == LOGISTIC:
        # l'(t, y) = -y / (1 + exp(y t)) = y l'(y t, 1): the products y t in place, the
        # derivative at label 1 over the whole tile by the vector code (:func:`logistic4`),
        # then times y (exact for y = +-1: a sign)
        for i in range(rows):
            m = M[i * cols : (i + 1) * cols]
            yr = Y[s + i, c0:c1]
            for b in range(cols):
                m[b] *= yr[b]
        total = rows * cols
        whole = total - total % 16
        if whole:
            logistic4(M, 0, whole // 16, 1.0)
        for j in range(whole, total):
            M[j] = logistic(M[j], 1.0)
        for i in range(rows):
            m = M[i * cols : (i + 1) * cols]
            yr = Y[s + i, c0:c1]
            for b in range(cols):
                m[b] *= yr[b]
        return
    for i in range(rows):
        m = M[i * cols : (i + 1) * cols]
        yr = Y[s + i, c0:c1]
        if kind == ROBUST:
            for b in range(cols):
                m[b] = robust(m[b], yr[b], scale)
        else:
            for b in range(cols):
                m[b] = m[b] - yr[b]


def labelled_rows(X, W, Y, start, stop, kind, scale, out, tile, chunk):
    """out[:, b] += sum_{start <= i < stop} x_i l'(x_i^T W[:, b], Y[i, b]) for W, Y and out
    of shapes (d, B), (n, B), (d, B): :func:`batched_rows` with a label per column (the
    one-vs-rest releases of a multiclass model). Chunks of a multiple of 4 columns take
    the register-blocked products, others the loops of :func:`margins` and
    :func:`accumulate`; the derivative is :func:`deriv_labelled`."""
    B = W.shape[1]
    M = np.empty(tile * min(chunk, B))
    for s in range(start, stop, tile):
        rows = min(s + tile, stop) - s
        for c0 in range(0, B, chunk):
            c1 = min(c0 + chunk, B)
            blocked = (c1 - c0) % 4 == 0
            if blocked:
                simd_margins(X, W, M, s, rows, c0, c1)
            else:
                margins(X, W, M, s, rows, c0, c1)
            deriv_labelled(M, Y, s, rows, c0, c1, kind, scale)
            if blocked:
                simd_accumulate(X, M, out, s, rows, c0, c1)
            else:
                accumulate(X, M, out, s, rows, c0, c1)


def batched_rows(X, W, y, start, stop, kind, scale, out, tile, chunk):
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
                simd_tile(X, W, y, M, out, s, rows, c0, c1, kind, scale)
                continue
            if cols > 1:
                margins(X, W, M, s, rows, c0, c1)
                deriv_tile(M, y, s, rows, cols, kind, scale)
                accumulate(X, M, out, s, rows, c0, c1)
                continue
            w = np.ascontiguousarray(W[:, c0])
            for i in range(rows):
                M[i] = row_dot(X[s + i], w)
            deriv_tile(M, y, s, rows, 1, kind, scale)
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


def csr_rows(indptr, indices, data, w, y, counts, same, start, stop, kind, scale, out):
    """out += sum_{start <= i < stop} c_i l'(<x_i, w>, y_i) x_i for CSR rows (``indptr``,
    ``indices``, ``data``) with weights ``counts`` (the multiplicities of merged rows), in
    tiles of 256 rows: the tile's margins (each row's stored entries gathered once), their
    derivatives vectorised (:func:`deriv_tile`), then the entries scattered into ``out``
    while still in cache. ``same[i] != 0``: row i has the features of row i - 1 (another
    label): its margin is copied and the run's weighted derivatives are added before one
    scatter. Summation in row order."""
    M = np.empty(256)
    for s in range(start, stop, 256):
        rows = min(s + 256, stop) - s
        for i in range(rows):
            if i > 0 and same[s + i] != 0:
                M[i] = M[i - 1]
                continue
            t = 0.0
            for k in range(indptr[s + i], indptr[s + i + 1]):
                t += data[k] * w[indices[k]]
            M[i] = t
        deriv_tile(M, y, s, rows, 1, kind, scale)
        r = 0.0
        for i in range(rows):
            r += M[i] * counts[s + i]
            if i + 1 < rows and same[s + i + 1] != 0:
                continue  # the next row shares these features: one scatter for the run
            for k in range(indptr[s + i], indptr[s + i + 1]):
                out[indices[k]] += r * data[k]
            r = 0.0


def serial_fused(X, w, y, cuts, kind, scale, outs):
    """outs[t] += the row kernel over rows cuts[t]..cuts[t+1]-1, the ranges one after the
    other in the caller's thread (one call for a thread's share of a sweep's parts)."""
    for t in range(cuts.shape[0] - 1):
        fused_rows(X, w, y, cuts[t], cuts[t + 1], kind, scale, outs[t])


def serial_batched(X, W, y, cuts, kind, scale, outs, tile, chunk):
    """As :func:`serial_fused`, with the batched kernel."""
    for t in range(cuts.shape[0] - 1):
        batched_rows(X, W, y, cuts[t], cuts[t + 1], kind, scale, outs[t], tile, chunk)


def serial_labelled(X, W, Y, cuts, kind, scale, outs, tile, chunk):
    """As :func:`serial_fused`, with the per-column-label kernel."""
    for t in range(cuts.shape[0] - 1):
        labelled_rows(X, W, Y, cuts[t], cuts[t + 1], kind, scale, outs[t], tile, chunk)


def parallel_batched(X, W, y, cuts, kind, scale, outs, tile, chunk):
    """outs[t] += the batched kernel over rows cuts[t]..cuts[t+1]-1, one range per thread
    of numba's pool (whose threads wait for work spinning, not asleep)."""
    for t in prange(cuts.shape[0] - 1):
        batched_rows(X, W, y, cuts[t], cuts[t + 1], kind, scale, outs[t], tile, chunk)


def parallel_fused(X, w, y, cuts, kind, scale, outs):
    """outs[t] += the row kernel over rows cuts[t]..cuts[t+1]-1, one range per thread."""
    for t in prange(cuts.shape[0] - 1):
        fused_rows(X, w, y, cuts[t], cuts[t + 1], kind, scale, outs[t])
