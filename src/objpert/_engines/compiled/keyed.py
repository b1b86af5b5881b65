"""The loops of the keyed sweep (:class:`~objpert._engines.keyed.KeyedEngine`), as plain
Python; :mod:`.build` compiles them as it compiles :mod:`.loops`.

A keyed matrix stores each row as a key k(i) into a table of the distinct patterns of its
indicator columns (columns whose non-zeros share one value) beside its other, dense,
columns. The rows are sorted by key, so the rows of key k are one run, rows kptr[k] to
kptr[k+1] - 1. At one point w the margin of row i is <x_i, w> = T[k(i)] + sum_j D[j, i]
w[dense_j], with the table T[k] = <v_k, w> over the pattern v_k of key k
(:func:`key_table`), and the gradient sum_i r_i x_i has its indicator part V^T h, h[k] =
the sum of r_i over the run of key k (:func:`key_untable`), and its dense part D r: the
GLM gradient of eq. (1) of Watkins & Arora (2026), the sum over rows taken in another
order.
"""

from __future__ import annotations

import numpy as np

from objpert._engines.compiled.loops import deriv_tile

__all__ = ["KEYED_TILE", "key_table", "key_untable", "keyed_parts", "keyed_rows", "keyed_step"]

#: Rows per tile: the tile's margins stay in L1 between the products and the derivative.
KEYED_TILE = 512


def key_table(vptr, vcol, vval, w, T):
    """T[k] = sum over the stored entries of pattern k of vval * w[vcol] (CSR arrays)."""
    for k in range(T.shape[0]):
        t = 0.0
        for e in range(vptr[k], vptr[k + 1]):
            t += vval[e] * w[vcol[e]]
        T[k] = t


def key_untable(vptr, vcol, vval, h, out):
    """out[vcol] += vval * h[k] for every pattern k, k ascending."""
    for k in range(h.shape[0]):
        hk = h[k]
        for e in range(vptr[k], vptr[k + 1]):
            out[vcol[e]] += vval[e] * hk


def keyed_rows(D, w, cols, kptr, T, y, counts, start, stop, kind, scale, gD, h):
    """Rows start..stop-1 (whole runs of keys: the rows of key k are kptr[k]..kptr[k+1]-1)
    of the keyed sweep at one point w: h[k] += the sum of r_i = c_i l'(<x_i, w>, y_i) over
    the run of key k and gD[j] += sum_i r_i D[j, i] (four partial sums a tile, added in
    order). ``D`` (dense columns x rows), ``cols``: the dense columns' indices in w. Tiles
    of :data:`KEYED_TILE` rows: the margins (T[k] over each run, then the dense columns),
    the derivatives vectorised (:func:`~.loops.deriv_tile`), the products."""
    nd = D.shape[0]
    M = np.empty(KEYED_TILE)
    k = np.searchsorted(kptr, start, side="right") - 1  # the key of row start
    for s in range(start, stop, KEYED_TILE):
        rows = min(s + KEYED_TILE, stop) - s
        i, kk = 0, k
        while i < rows:  # the tile's runs: each key's table value
            e = min(kptr[kk + 1] - s, rows)
            t = T[kk]
            for r in range(i, e):
                M[r] = t
            if s + e == kptr[kk + 1]:
                kk += 1
            i = e
        for j in range(nd):
            x, wj = D[j, s : s + rows], w[cols[j]]
            for r in range(rows):
                M[r] += x[r] * wj
        deriv_tile(M, y, s, rows, 1, kind, scale)
        for r in range(rows):
            M[r] *= counts[s + r]
        four = rows - rows % 4
        for j in range(nd):
            x = D[j, s : s + rows]
            a0 = a1 = a2 = a3 = 0.0
            for r in range(0, four, 4):
                a0 += M[r] * x[r]
                a1 += M[r + 1] * x[r + 1]
                a2 += M[r + 2] * x[r + 2]
                a3 += M[r + 3] * x[r + 3]
            for r in range(four, rows):
                a0 += M[r] * x[r]
            gD[j] += (a0 + a1) + (a2 + a3)
        i = 0
        while i < rows:  # the runs' sums, four partial sums each
            e = min(kptr[k + 1] - s, rows)
            a0 = a1 = a2 = a3 = 0.0
            r = i
            while r + 4 <= e:
                a0 += M[r]
                a1 += M[r + 1]
                a2 += M[r + 2]
                a3 += M[r + 3]
                r += 4
            while r < e:
                a0 += M[r]
                r += 1
            h[k] += (a0 + a1) + (a2 + a3)
            if s + e == kptr[k + 1]:
                k += 1
            i = e


def keyed_parts(D, w, cols, kptr, T, y, counts, cuts, parts, kind, scale, gDs, h):
    """:func:`keyed_rows` over rows cuts[p]..cuts[p+1]-1 for each part p in ``parts``, into
    gDs[p] (the parts' runs of keys are disjoint, so they share h)."""
    for p in parts:
        keyed_rows(D, w, cols, kptr, T, y, counts, cuts[p], cuts[p + 1], kind, scale, gDs[p], h)


def keyed_step(vptr, vcol, vval, D, w, cols, kptr, y, counts, cuts, kind, scale, out):
    """out = sum_i c_i l'(<x_i, w>, y_i) x_i (``out`` zeros on entry) in one call: the table
    (:func:`key_table`), every part of ``cuts`` one after the other into its own partial
    sum of the dense columns (added in part order, as threads would add them), then the
    indicator columns from the runs' sums (:func:`key_untable`)."""
    T = np.empty(vptr.shape[0] - 1)
    key_table(vptr, vcol, vval, w, T)
    h = np.zeros(T.shape[0])
    parts = cuts.shape[0] - 1
    partial = np.zeros((parts, D.shape[0]))
    for p in range(parts):
        keyed_rows(D, w, cols, kptr, T, y, counts, cuts[p], cuts[p + 1], kind, scale, partial[p], h)
    for j in range(D.shape[0]):
        g = partial[0, j]
        for p in range(1, parts):
            g += partial[p, j]
        out[cols[j]] = g
    key_untable(vptr, vcol, vval, h, out)
