"""Sparse engine: the fused row-blocked sweep of :mod:`objpert._engines.blocked` on CSR data.

X is never densified. Each block is a run of CSR rows; X_b W is scipy's ``csr_matvec(s)``
on the rows' slice of ``indptr`` and X_b^T r is ``csc_matvec(s)`` on the same three arrays
(the CSR rows of X are the CSC columns of X^T), both from scipy's sparsetools, which
release the GIL and accumulate into their output, so no block is ever copied. With row
weights ``counts`` (the multiplicities of merged rows, :mod:`objpert._engines.shaped`) the
sweep is sum_i c_i x_i l'(<x_i, W>, y_i), and at one point w it runs the compiled fused
kernel (:func:`~objpert._engines.compiled.csr_rows_kernel`: each row's entries read once,
once for a run of rows with the same features, flagged by ``same``).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from scipy import sparse
from scipy.sparse import _sparsetools

from objpert._engines.blocked import BlockedEngine
from objpert._losses import Loss

__all__ = ["BLOCK_NNZ", "SparseEngine"]

#: Target stored entries per block (data and indices: 12-16 bytes each).
BLOCK_NNZ = 1 << 16


class SparseEngine(BlockedEngine):
    """A CSR matrix swept in row blocks of about ``block_nnz`` stored entries (or
    ``block_rows`` rows) by ``threads`` workers."""

    def __init__(
        self,
        X: sparse.csr_matrix | sparse.csr_array,
        *,
        threads: int | None = None,
        block_rows: int | None = None,
        block_nnz: int = BLOCK_NNZ,
        counts: np.ndarray | None = None,
        same: np.ndarray | None = None,
    ) -> None:
        super().__init__(threads)
        X = sparse.csr_matrix(X, dtype=np.float64)
        index = np.promote_types(X.indptr.dtype, X.indices.dtype)
        X.indptr, X.indices = (
            X.indptr.astype(index, copy=False),
            X.indices.astype(index, copy=False),
        )
        self.X = X
        self.n, self.d = (int(s) for s in X.shape)
        self.block_rows = None if block_rows is None else max(1, int(block_rows))
        self.block_nnz = max(1, int(block_nnz))
        self.counts = None if counts is None else np.ascontiguousarray(counts, np.float64)
        # same[i]: row i repeats row i - 1's features (merged rows of several labels)
        self.same = np.zeros(self.n, np.uint8) if same is None else np.asarray(same, np.uint8)
        self._fused: tuple[Loss, Any] | None = None  # (loss, its compiled CSR kernel)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_fused"] = None  # a compiled kernel: rebuilt on first use
        return state

    def matvec(self, W: np.ndarray) -> np.ndarray:
        return np.asarray(self.X @ W)

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        return np.asarray(self.X.T @ R)

    def work(self, B: int) -> int:
        return B * (2 * self.X.nnz + 16 * self.n)

    def _block_bounds(self, B: int) -> np.ndarray:
        if self.block_rows is not None:
            return np.append(np.arange(0, self.n, self.block_rows), self.n)
        indptr = self.X.indptr
        per_block = max(1, self.block_nnz // B)
        targets = np.arange(per_block, int(indptr[-1]), per_block)
        cuts = np.searchsorted(indptr, targets)
        return np.unique(np.concatenate(([0], cuts, [self.n])))

    def _sweep(
        self,
        bounds: np.ndarray,
        W: np.ndarray,
        y: np.ndarray,
        loss: Loss,
        out: np.ndarray,
        margins: np.ndarray,
        work: np.ndarray,
    ) -> None:
        X, d, d1, c = self.X, self.d, loss.d1_into, self.counts
        indptr, indices, data = X.indptr, X.indices, X.data
        kernel = self._kernel(loss) if W.ndim == 1 and c is not None else None
        if kernel is not None:
            yv = np.ascontiguousarray(np.reshape(y, -1), dtype=np.float64)
            for s, e in itertools.pairwise(bounds.tolist()):
                kernel(indptr, indices, data, W, yv, c, self.same, s, e, out)
            return
        if W.ndim == 1:
            for s, e in itertools.pairwise(bounds.tolist()):
                ptr, m = indptr[s : e + 1], margins[: e - s]
                m.fill(0.0)
                _sparsetools.csr_matvec(e - s, d, ptr, indices, data, W, m)
                r = d1(m, y[s:e], m)
                if c is not None:
                    r *= c[s:e]
                _sparsetools.csc_matvec(d, e - s, ptr, indices, data, r, out)
            return
        B, w, g = W.shape[1], W.ravel(), out.ravel()
        for s, e in itertools.pairwise(bounds.tolist()):
            ptr, m = indptr[s : e + 1], margins[: e - s]
            m.fill(0.0)
            _sparsetools.csr_matvecs(e - s, d, B, ptr, indices, data, w, m.ravel())
            r = d1(m, y[s:e], m)
            if c is not None:
                r *= c[s:e, None]
            _sparsetools.csc_matvecs(d, e - s, B, ptr, indices, data, r.ravel(), g)

    def _kernel(self, loss: Loss) -> Any:
        """The compiled weighted CSR kernel for ``loss`` (None: numba or the loss missing)."""
        if self._fused is None or self._fused[0] is not loss:
            from objpert._engines.compiled import csr_rows_kernel

            self._fused = (loss, csr_rows_kernel(loss))
        return self._fused[1]
