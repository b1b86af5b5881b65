"""Dense engine: the fused row-blocked sweep of :mod:`objpert.engines.blocked` on an ndarray."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from objpert.engines import blocked, compiled
from objpert.engines.blocked import BlockedEngine
from objpert.losses import Loss

__all__ = ["BLOCK_BYTES", "DenseEngine"]

#: Target bytes of one row block of X plus its margins: small enough to stay in a core's
#: cache between the two products (1297 rows at d = 100; 1k-2k rows were best here).
BLOCK_BYTES = 1 << 20


class DenseEngine(BlockedEngine):
    """A C-ordered float64 matrix X swept in cache-sized row blocks by ``threads`` workers.

    ``block_rows`` fixes the rows per block (default: about ``BLOCK_BYTES`` of X and
    margins per block).
    """

    def __init__(
        self, X: np.ndarray, *, threads: int | None = None, block_rows: int | None = None
    ) -> None:
        super().__init__(threads)
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        if self.X.ndim != 2:
            raise ValueError(f"X must be 2-D; got shape {self.X.shape}")
        self.n, self.d = (int(s) for s in self.X.shape)
        self.block_rows = None if block_rows is None else max(1, int(block_rows))

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        return self.X.T @ R

    def work(self, B: int) -> int:
        return self.n * B * (2 * self.d + 16)

    def _block_bounds(self, B: int) -> np.ndarray:
        if self.block_rows is not None:
            rows = self.block_rows
        else:
            # about BLOCK_BYTES a block, and a multiple of ``threads`` blocks of equal size,
            # so that the workers' ranges are equal (work is proportional to rows)
            target = max(16, BLOCK_BYTES // (8 * (self.d + B)))
            blocks = self.threads * -(-self.n // (self.threads * target))
            rows = max(1, -(-self.n // blocks))
        return np.append(np.arange(0, self.n, rows), self.n)

    def _parallel(self, W: np.ndarray, loss: Loss) -> Any:
        return compiled.parallel_kernel(loss)

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
        B = W.shape[1] if W.ndim == 2 else 1
        if self.work(B) >= blocked.PARALLEL_MIN_WORK:
            # the threaded path (not the cheap one): the compiled row kernel for one point,
            # the tiled kernel with the vectorised loss derivative for several
            kernel = (compiled.fused_kernel if W.ndim == 1 else compiled.batched_kernel)(loss)
            if kernel is not None:
                kernel(self.X, W, y, int(bounds[0]), int(bounds[-1]), out)
                return
        # the numpy sweep (the cheap path, or no numba): BLAS products, and the loss
        # derivative by the compiled vectorised one where there is one (several times
        # faster than scipy's expit), else by loss.d1_into
        X, matmul = self.X, np.matmul
        fast = compiled.derivative_kernel(loss)
        for s, e in itertools.pairwise(bounds.tolist()):
            Xb = X[s:e]
            m = margins[: e - s]
            matmul(Xb, W, out=m)
            if fast is not None:
                fast(m, y[s:e])
            else:
                loss.d1_into(m, y[s:e], m)
            matmul(Xb.T, m, out=work)
            out += work
