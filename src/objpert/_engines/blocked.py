"""The fused, row-blocked gradient sweep shared by the dense and sparse engines.

Every gradient of the regularised GLM (eq. 1) is X^T l'(X W, y) plus terms that do not
touch X. Computed as two passes, X @ W then X.T @ r, it reads X from memory twice. A
:class:`BlockedEngine` instead walks X once, in row blocks small enough to stay in cache:
for each block it forms the margins X_b W, the loss derivatives r_b = l'(X_b W, y_b) and
adds X_b^T r_b to a running sum, so X_b is still cached for the second product. The blocks
are split into a fixed number of contiguous parts (:func:`~objpert._engines.threads.
parts_for`), each accumulating its own partial gradient, added in part order, so the
result does not depend on the thread count; the parts are shared out among the worker
threads (numpy's matmul, the ufuncs, scipy's sparsetools and the compiled kernels
release the GIL), which sleep between steps. BLAS runs single-threaded meanwhile, so
workers and BLAS threads never compete for the cores. ``threads=None`` picks the count
once per batch width from the work and the idle cores
(:func:`~objpert._engines.threads.choose_threads`); a problem too small for threads to
pay is computed in the caller's thread.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from objpert._engines.threads import available_cores, choose_threads, parts_for
from objpert._losses import Loss

__all__ = [
    "PARALLEL_MIN_WORK",
    "BlockedEngine",
    "available_cores",
    "run_shares",
    "single_threaded_blas",
    "sum_in_order",
]

#: Below this much work per gradient (see ``BlockedEngine.work``) the sweep is one block in
#: the caller's thread: handing blocks to a pool costs tens of microseconds.
PARALLEL_MIN_WORK = 1 << 21

_POOL_LOCK = threading.Lock()
_POOLS: dict[int, ThreadPoolExecutor] = {}


def _after_fork_in_child() -> None:
    """In a forked child (called by :mod:`objpert._forksafe`): the parent's pool threads do
    not exist here, so the pools are forgotten (started afresh on use) with their lock;
    the BLAS limit of a sweep that was running in another thread is lifted."""
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    _POOLS.clear()
    _SINGLE_THREADED_BLAS.after_fork_in_child()


def _pool(workers: int) -> ThreadPoolExecutor:
    """A persistent pool of ``workers`` threads, shared by every engine."""
    with _POOL_LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(workers, "objpert-engine")
        return pool


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded in this process (numpy's and scipy's OpenBLAS)."""
    return ThreadpoolController()


class _SingleThreadedBlas:
    """Every loaded BLAS runs one thread while a sweep is inside.

    The limit is process-wide, so sweeps that overlap in several threads (e.g. Dask
    partitions) share it: the first to enter sets it and restores it when it leaves, the
    others leave it alone. threadpoolctl (>= 3.8) lets only one thread at a time change
    a pthreads OpenBLAS; from any other thread the limit is silently not applied.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._limiter: Any = None

    def __enter__(self) -> None:
        with self._lock:
            if self._owner is None:
                self._owner = threading.get_ident()
                self._limiter = _blas().limit(limits=1, user_api="blas").__enter__()
            if self._owner == threading.get_ident():
                self._depth += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            if self._owner == threading.get_ident():
                self._depth -= 1
                if self._depth == 0:
                    self._limiter.__exit__(None, None, None)
                    self._owner = self._limiter = None

    def after_fork_in_child(self) -> None:
        """A fresh lock; a limit set by a thread that does not exist in this forked child
        is restored (that thread will never leave its sweep here)."""
        self._lock = threading.Lock()
        if self._owner is not None and self._owner != threading.get_ident():
            limiter, self._owner, self._limiter, self._depth = self._limiter, None, None, 0
            with contextlib.suppress(Exception):  # threadpoolctl refused: BLAS stays at 1
                limiter.__exit__(None, None, None)


_SINGLE_THREADED_BLAS = _SingleThreadedBlas()


def single_threaded_blas() -> _SingleThreadedBlas:
    """Context manager: every loaded BLAS runs one thread inside it (restored on exit)."""
    return _SINGLE_THREADED_BLAS


def run_shares(share: Any, count: int, threads: int) -> None:
    """share(0) in the caller's thread, share(1) .. share(count - 1) on the shared pool of
    ``threads - 1`` sleeping threads, BLAS on one thread meanwhile; returns when all are
    done (re-raising the first error)."""
    with single_threaded_blas():
        futures = [_pool(threads - 1).submit(share, k) for k in range(1, count)]
        try:
            share(0)
        finally:
            for future in futures:
                future.result()


def sum_in_order(partial: np.ndarray) -> np.ndarray:
    """partial[0] + partial[1] + ... added in that order (the same result whatever thread
    computed which part)."""
    out = partial[0]
    for part in partial[1:]:
        out += part
    return out


class BlockedEngine(ABC):
    """Base of the in-memory engines: ``n``, ``d``, ``matvec``, ``rmatvec`` and the fused
    ``glm_gradient``. Subclasses set ``X`` and supply the block bounds and block kernel."""

    X: Any
    n: int
    d: int

    def __init__(self, threads: int | None) -> None:
        # None: automatic (choose_threads, once per batch width); -1: every core
        self.automatic = threads is None
        cores = available_cores()
        self.threads = cores if threads is None or threads == -1 else max(1, int(threads))
        self._lock = threading.Lock()
        self._buffers: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._bounds: dict[int, np.ndarray] = {}
        self._chosen: dict[int, int] = {}
        self._layouts: dict[tuple[int, int], tuple[np.ndarray, list[range]]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for key in ("_lock", "_buffers", "_bounds", "_chosen", "_layouts"):
            del state[key]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._buffers, self._bounds = threading.Lock(), {}, {}
        self._chosen, self._layouts = {}, {}

    def layout(self, B: int, threads: int) -> tuple[np.ndarray, list[range]]:
        """(row cuts of the sweep's parts, the parts of each thread) for W with B columns:
        :func:`~objpert._engines.threads.parts_for` parts of whole blocks (the same for
        every thread count), shared out in contiguous runs among at most ``threads``
        threads; computed once per (B, threads)."""
        cached = self._layouts.get((B, threads))
        if cached is None:
            bounds = self.bounds(B)
            blocks = len(bounds) - 1
            parts = min(parts_for(self.threads), blocks)
            cuts = bounds[[blocks * k // parts for k in range(parts + 1)]]
            workers = min(threads, parts)
            shares = [
                range(parts * k // workers, parts * (k + 1) // workers) for k in range(workers)
            ]
            cached = self._layouts[(B, threads)] = (np.ascontiguousarray(cuts, np.int64), shares)
        return cached

    def threads_for(self, B: int) -> int:
        """Worker threads of a gradient at B points: ``threads`` when it was given, else
        :func:`~objpert._engines.threads.choose_threads`, decided on the first gradient of
        that width and kept for every later one (steady across a release's steps)."""
        chosen = self._chosen.get(B)
        if chosen is None:
            chosen = self.threads
            if self.automatic:
                chosen = min(self.threads, choose_threads(self.work(B), None))
            self._chosen[B] = chosen
        return chosen

    def matvec(self, W: np.ndarray) -> np.ndarray:
        return np.asarray(self.X @ W)

    @abstractmethod
    def work(self, B: int) -> int:
        """Cost of one gradient at B points, in multiply-adds (a loss derivative ~ 16)."""

    @abstractmethod
    def rmatvec(self, R: np.ndarray) -> np.ndarray: ...

    def bounds(self, B: int) -> np.ndarray:
        """Row offsets 0 = b_0 < ... < b_k = n of the cache-sized blocks for W with B columns."""
        cached = self._bounds.get(B)
        if cached is None:
            cached = self._bounds[B] = self._block_bounds(B)
        return cached

    @abstractmethod
    def _block_bounds(self, B: int) -> np.ndarray: ...

    def _padded(self, W: np.ndarray, y: np.ndarray, loss: Loss) -> tuple[np.ndarray, np.ndarray]:
        """(W, y) as the threaded sweep takes them (a subclass may add columns, whose
        gradient columns are dropped after the sweep)."""
        return W, y

    @abstractmethod
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
        """out += X_b^T l'(X_b W, y_b) over the consecutive blocks in ``bounds``, with
        ``margins`` (rows x B) and ``work`` (d x B) as scratch space."""

    def _scratch(self, W: np.ndarray, rows: int, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """Preallocated scratch of worker ``slot`` for W's shape (reused across calls)."""
        cols = W.shape[1:]
        key = W.shape[1] if W.ndim == 2 else 0
        slots = self._buffers.setdefault(key, [])
        while len(slots) <= slot:
            slots.append((np.empty((rows, *cols)), np.empty((self.d, *cols))))
        margins, work = slots[slot]
        if margins.shape[0] < rows:
            margins = np.empty((rows, *cols))
            slots[slot] = (margins, work)
        return margins, work

    def glm_gradient(self, W: np.ndarray, y: np.ndarray, loss: Loss) -> np.ndarray:
        """X^T l'(X W, y), the unscaled sum over rows, in one sweep over X.

        W has shape (d,) or (d, B) (B points at once, one read of X for all of them); y has
        shape (n,), or (n, B) for a label per column (column b: X^T l'(X W_b, y_b)).
        Returns a new array shaped like W.
        """
        W = np.ascontiguousarray(W, dtype=np.float64)
        B = W.shape[1] if W.ndim == 2 else 1
        yv = y if W.ndim == 1 or y.ndim == 2 else y[:, None]
        labelled = yv.ndim == 2 and yv.shape[1] > 1
        with self._lock:
            if self.work(B) < PARALLEL_MIN_WORK:  # cheap: all in cache, the caller's thread
                Wp, yp = self._padded(W, yv, loss) if labelled else (W, yv)
                out = np.zeros_like(Wp)
                scratch = self._scratch(Wp, self.n, 0)
                self._sweep(np.array([0, self.n]), Wp, yp, loss, out, *scratch)
            else:
                threads = self.threads_for(B)
                Wp, yp = self._padded(W, yv, loss)
                out = self._parts(Wp, yp, loss, threads)
        return out if Wp is W else np.ascontiguousarray(out[:, :B])

    def _parts(self, W: np.ndarray, y: np.ndarray, loss: Loss, threads: int) -> np.ndarray:
        """The sweep in its fixed parts, shared out among ``threads`` threads (the caller's
        takes the first share), the partial sums added in part order."""
        B = W.shape[1] if W.ndim == 2 else 1
        bounds = self.bounds(B)
        cuts, shares = self.layout(B, threads)
        starts = np.searchsorted(bounds, cuts)  # each part: a run of whole blocks
        rows = int(np.diff(bounds).max())
        partial = np.zeros((len(cuts) - 1, *W.shape))
        scratch = [self._scratch(W, rows, k) for k in range(len(shares))]

        def share(k: int) -> None:
            for p in shares[k]:
                blocks = bounds[starts[p] : starts[p + 1] + 1]
                self._sweep(blocks, W, y, loss, partial[p], *scratch[k])

        run_shares(share, len(shares), self.threads)
        return sum_in_order(partial)
