"""The loops that shape the data (:mod:`objpert._engines.shaped`), as plain Python; :mod:`.build`
compiles them. Each is one pass over the rows doing what a few numpy expressions over
whole-matrix temporaries do in :mod:`objpert._engines.shaped`, with the same result.
"""

from __future__ import annotations

import numpy as np

__all__ = ["indicator_scan", "patterns_hold", "row_hash", "rows_match"]


def row_hash(keys, salt, out):
    """out[i] = sum over columns j of splitmix64(keys[i, j] ^ salt[j]) (uint64, wrapping):
    the hash of :func:`objpert._engines.shaped._row_hash`."""
    c1, c2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)
    for i in range(keys.shape[0]):
        acc = np.uint64(0)
        for j in range(keys.shape[1]):
            z = keys[i, j] ^ salt[j]
            z = (z ^ (z >> s30)) * c1
            z = (z ^ (z >> s27)) * c2
            acc += z ^ (z >> s31)
        out[i] = acc


def rows_match(keys, first, inverse):
    """Whether keys[i] equals keys[first[inverse[i]]] bit for bit for every row i."""
    for i in range(keys.shape[0]):
        r = first[inverse[i]]
        for j in range(keys.shape[1]):
            if keys[i, j] != keys[r, j]:
                return False
    return True


def indicator_scan(X, nnz, lo, hi):
    """nnz[j] += the non-zeros of column j, lo[j] and hi[j] their least and greatest
    value (lo, hi start at +inf and -inf)."""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            v = X[i, j]
            if v != 0.0:
                nnz[j] += 1
                if v < lo[j]:
                    lo[j] = v
                if v > hi[j]:
                    hi[j] = v


def patterns_hold(X, cols, P, key):
    """Whether X[i, j] == P[key[i], j] for every row i and every column j of ``cols``."""
    for i in range(X.shape[0]):
        k = key[i]
        for j in cols:
            if X[i, j] != P[k, j]:
                return False
    return True
