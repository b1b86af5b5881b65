"""Dense engine: the fused row-blocked sweep of :mod:`objpert._engines.blocked` on an ndarray."""

from __future__ import annotations

import itertools

import numpy as np

from objpert._engines import blocked, compiled
from objpert._engines.blocked import BlockedEngine
from objpert._engines.threads import parts_for
from objpert._losses import Loss

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
            # about BLOCK_BYTES a block, and a multiple of the sweep's parts of equal size,
            # so that the parts are equal (work is proportional to rows)
            parts = parts_for(self.threads)
            target = max(16, BLOCK_BYTES // (8 * (self.d + B)))
            blocks = parts * -(-self.n // (parts * target))
            rows = max(1, -(-self.n // blocks))
        return np.append(np.arange(0, self.n, rows), self.n)

    def _padded(self, W: np.ndarray, y: np.ndarray, loss: Loss) -> tuple[np.ndarray, np.ndarray]:
        """W (and per-column labels) widened with zero columns (labels 1) to a multiple of
        8 columns (4 with a label per column), the widths of the compiled kernels' register
        blocks; other widths would take their plain loops. The extra columns' gradients
        are dropped. The widened labels are built once per label array (the same object
        at every step of a descent; an array changed in place is not seen again)."""
        B = W.shape[1] if W.ndim == 2 else 1
        labelled = y.ndim == 2 and y.shape[1] > 1
        block = 4 if labelled else 8
        if B == 1 or B % block == 0 or compiled.batched_kernel(loss) is None:
            return W, y
        width = -(-B // block) * block
        Wp = np.zeros((self.d, width))
        Wp[:, :B] = W
        if labelled:
            cached = getattr(self, "_widened", None)
            if cached is None or cached[0] is not y or cached[1].shape != (self.n, width):
                yp = np.ones((self.n, width))
                yp[:, :B] = y
                cached = self._widened = (y, yp)
            return Wp, cached[1]
        return Wp, y

    def _parts(self, W: np.ndarray, y: np.ndarray, loss: Loss, threads: int) -> np.ndarray:
        """The sweep's parts with the compiled kernels: one call per thread for its share
        of the parts (no Python between the parts), partial sums added in part order."""
        kernel = compiled.parts_kernel(loss)
        if kernel is None:
            return super()._parts(W, y, loss, threads)
        cuts, shares = self.layout(W.shape[1] if W.ndim == 2 else 1, threads)
        partial = np.zeros((len(cuts) - 1, *W.shape))
        X = self.X

        def share(k: int) -> None:
            run = shares[k]
            kernel(X, W, y, cuts[run.start : run.stop + 1], partial[run.start : run.stop])

        blocked.run_shares(share, len(shares), self.threads)
        return blocked.sum_in_order(partial)

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
        labelled = y.ndim == 2 and y.shape[1] > 1
        if labelled or self.work(B) >= blocked.PARALLEL_MIN_WORK:
            # the threaded path (not the cheap one; and a label per column, which the numpy
            # sweep's derivative kernel does not take): the compiled row kernel for one
            # point, the tiled kernel with the vectorised loss derivative for several
            kernel = (compiled.fused_kernel if W.ndim == 1 else compiled.batched_kernel)(loss)
            if kernel is not None:
                kernel(self.X, W, y, int(bounds[0]), int(bounds[-1]), out)
                return
        # the numpy sweep (the cheap path, or no numba): BLAS products, and the loss
        # derivative by the compiled vectorised one where there is one (several times
        # faster than scipy's expit), else by loss.d1_into
        X, matmul = self.X, np.matmul
        fast = compiled.derivative_kernel(loss)
        if y.ndim == 2 and y.shape[1] > 1:  # a label per column: numpy's broadcasting
            fast = None
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
