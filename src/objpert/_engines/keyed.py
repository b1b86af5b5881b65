"""The keyed layout: a row's indicator columns as one key into a table of their patterns.

An indicator column (its non-zeros all equal, :func:`~objpert._engines.shaped.
indicator_columns`: one-hot encodings, flags, an intercept) is described for a row by
whether it is zero; all of them together by the row's pattern of non-zeros. Tabular data
have few distinct patterns (flights: 2,748 over 169,263 merged rows, for 39 indicator
columns). :class:`KeyedEngine` stores each row as the index k(i) of its pattern among the
distinct ones, beside its other columns as dense float64, and its rows sorted by key (the
rows of key k are one run). The margin is x_i . w = T[k(i)] + D_i . w_D with T = V w
computed once per step from the patterns V (K x d, sparse), and the gradient
sum_i r_i x_i = V^T h + D^T r with h[k] the sum of r_i over the run of pattern k: the GLM
gradient of eq. (1) of Watkins & Arora (2026), its sum over rows taken in another order,
with no stored entry or index per non-zero. A step streams 8 bytes per dense entry plus
16 per row (label, count); the loops are :mod:`objpert._engines.compiled.keyed`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from objpert._engines.blocked import run_shares, sum_in_order
from objpert._engines.threads import available_cores, choose_threads, parts_for
from objpert._losses import Loss
from objpert.exceptions import ParameterError

__all__ = ["KeyedEngine", "key_rows"]


def key_rows(X: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, int]:
    """(key, K): key[i] in 0..K-1 numbers row i's pattern of non-zeros over the columns of
    ``mask`` among the K distinct patterns of X (ordered by their packed bits)."""
    X, mask = np.asarray(X), np.asarray(mask)
    if X.ndim != 2 or mask.shape != X.shape[1:] or mask.dtype != bool:
        raise ParameterError(f"X must be 2-D with a boolean mask entry per column; got X "
                             f"{X.shape}, mask {mask.shape} {mask.dtype}")  # fmt: skip
    rows = X.shape[0]
    bits = np.packbits((X != 0)[:, mask], axis=1)
    words = -(-bits.shape[1] // 8)
    packed = np.zeros((rows, 8 * max(words, 1)), np.uint8)
    packed[:, : bits.shape[1]] = bits
    if packed.shape[1] == 8:
        _, key = np.unique(packed.view(np.uint64).ravel(), return_inverse=True)
    else:
        void = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1])))
        _, key = np.unique(void.ravel(), return_inverse=True)
    key = key.ravel()
    return key, int(key.max()) + 1 if rows else 0


def _patterns_hold(X: np.ndarray, cols: np.ndarray, P: np.ndarray, key: np.ndarray) -> bool:
    """Whether X[i, j] == P[key[i], j] for every row i and column j of ``cols`` (compiled
    where numba is in use, else numpy in chunks of rows)."""
    from objpert._engines.compiled import numba_kernels

    kernels = numba_kernels()
    if kernels is not None:
        return bool(kernels.patterns_hold(np.ascontiguousarray(X), cols.astype(np.int64), P, key))
    return all(
        np.array_equal(X[s : s + 65536][:, cols], P[key[s : s + 65536]][:, cols])
        for s in range(0, X.shape[0], 65536)
    )


class KeyedEngine:
    """X (rows sorted by their key of :func:`key_rows`) as the key of each row, the table
    of patterns of the indicator columns ``mask``, and the other columns dense (stored
    column by column); ``counts``: row weights (the multiplicities of merged rows), which
    ``glm_gradient`` applies: sum_i c_i l'(x_i . w, y_i) x_i. ``threads``: None automatic
    (:func:`~objpert._engines.threads.choose_threads`), -1 every core, or a count; the rows
    are cut into a fixed number of parts at key boundaries, so the result does not depend
    on it."""

    def __init__(
        self,
        X: np.ndarray,
        mask: np.ndarray,
        key: np.ndarray,
        counts: np.ndarray | None = None,
        *,
        threads: int | None = None,
    ) -> None:
        X = np.asarray(X, dtype=np.float64)
        mask = np.asarray(mask, dtype=bool)
        key = np.asarray(key, dtype=np.int64)
        if X.ndim != 2 or mask.shape != X.shape[1:]:
            raise ParameterError(f"X must be 2-D with one mask entry per column; got "
                                 f"X {X.shape}, mask {mask.shape}")  # fmt: skip
        self.n, self.d = (int(s) for s in X.shape)
        if key.shape != (self.n,) or (self.n and np.any(np.diff(key) < 0)):
            raise ParameterError("the rows must be sorted by their keys (one key per row)")
        self.starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if self.n else key
        if self.n and not np.array_equal(key[self.starts], np.arange(len(self.starts))):
            raise ParameterError("the keys must be numbered 0..K-1")
        if counts is not None and np.shape(counts) != (self.n,):
            raise ParameterError(f"counts must have shape ({self.n},); got {np.shape(counts)}")
        self.keys = len(self.starts)
        self.kptr = np.append(self.starts, self.n).astype(np.int64)  # key k: rows kptr[k]..
        self.key = key.astype(np.int32)
        self.dense_cols = np.flatnonzero(~mask)
        self.dense = np.ascontiguousarray(X[:, self.dense_cols].T)
        patterns = np.zeros((self.keys, self.d))
        patterns[:, mask] = X[self.starts][:, mask]  # every row of a key has its pattern
        if not _patterns_hold(X, np.flatnonzero(mask), patterns, self.key):
            raise ParameterError("the columns of mask must be indicator columns (their "
                                 "non-zeros all equal) and the keys their patterns")  # fmt: skip
        self.V = sparse.csr_matrix(patterns)
        self.V.indptr = self.V.indptr.astype(np.int64)
        self.V.indices = self.V.indices.astype(np.int64)
        self.counts = np.ones(self.n) if counts is None else np.asarray(counts, np.float64)
        self.automatic = threads is None
        self.threads = 1 if threads is None else available_cores() if threads == -1 else threads
        self.cuts = self._cuts(min(parts_for(self.threads), max(self.n, 1)))
        self._chosen: int | None = None
        self._kernels: tuple[Loss, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_kernels"] = None  # compiled kernels: fetched again on first use
        return state

    def _cuts(self, parts: int) -> np.ndarray:
        """Row cuts of ``parts`` parts of about equal rows, each a run of whole keys."""
        bounds = np.append(self.starts, self.n)
        targets = self.n * np.arange(1, parts) // parts
        inner = bounds[np.searchsorted(bounds, targets)]
        return np.unique(np.concatenate(([0], inner, [self.n]))).astype(np.int64)

    def work(self, B: int) -> int:
        """Multiply-adds of one gradient at B points (a loss derivative counted as 16)."""
        return B * (self.n * (2 * len(self.dense_cols) + 20) + 2 * self.V.nnz)

    def matvec(self, W: np.ndarray) -> np.ndarray:
        W = np.asarray(W, dtype=np.float64)
        return (self.V @ W)[self.key] + self.dense.T @ W[self.dense_cols]

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        R = np.asarray(R, dtype=np.float64)
        h = np.add.reduceat(R, self.starts, axis=0) if self.n else R[:0]
        out = np.asarray(self.V.T @ h)
        out[self.dense_cols] += self.dense @ R
        return out

    def glm_gradient(self, W: np.ndarray, y: np.ndarray, loss: Loss) -> np.ndarray:
        """sum_i c_i l'(x_i . W, y_i) x_i (the counts c applied), shaped like W: at one
        point with one label per row in one compiled sweep, else in numpy."""
        W = np.ascontiguousarray(W, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        kernels = self._kernel(loss) if W.ndim == 1 and y.ndim == 1 and self.n else None
        if kernels is None:
            m = self.matvec(W)
            loss.d1_into(m, y[:, None] if m.ndim == 2 and y.ndim == 1 else y, m)
            m *= self.counts[:, None] if m.ndim == 2 else self.counts
            return self.rmatvec(m)
        step, sweep, table, untable = kernels
        V, y = self.V, np.ascontiguousarray(y)
        out = np.zeros(self.d)
        parts = len(self.cuts) - 1
        threads = min(self._threads(), parts)
        if threads == 1:
            step(V.indptr, V.indices, V.data, self.dense, W, self.dense_cols, self.kptr, y,
                 self.counts, self.cuts, out)  # fmt: skip
            return out
        T = np.empty(self.keys)
        table(V.indptr, V.indices, V.data, W, T)
        h = np.zeros(self.keys)
        partial = np.zeros((parts, len(self.dense_cols)))
        shares = [
            np.arange(parts * k // threads, parts * (k + 1) // threads) for k in range(threads)
        ]

        def share(k: int) -> None:
            sweep(self.dense, W, self.dense_cols, self.kptr, T, y, self.counts, self.cuts,
                  shares[k], partial, h)  # fmt: skip

        run_shares(share, threads, threads)
        if len(self.dense_cols):
            out[self.dense_cols] = sum_in_order(partial)
        untable(V.indptr, V.indices, V.data, h, out)
        return out

    def _threads(self) -> int:
        """The sweep's threads: the given count, or chosen once from its work."""
        if self._chosen is None:
            self._chosen = self.threads
            if self.automatic:
                self._chosen = choose_threads(self.work(1), None)
        return self._chosen

    def _kernel(self, loss: Loss) -> Any:
        """The compiled keyed kernels for ``loss`` (None: numba or the loss missing)."""
        if self._kernels is None or self._kernels[0] is not loss:
            from objpert._engines.compiled import keyed_kernels

            self._kernels = (loss, keyed_kernels(loss))
        return self._kernels[1]
