"""The fused, row-blocked gradient sweep shared by the dense and sparse engines.

Every gradient of the regularised GLM (eq. 1) is X^T l'(X W, y) plus terms that do not
touch X. Computed as two passes, X @ W then X.T @ r, it reads X from memory twice. A
:class:`BlockedEngine` instead walks X once, in row blocks small enough to stay in cache:
for each block it forms the margins X_b W, the loss derivatives r_b = l'(X_b W, y_b) and
adds X_b^T r_b to a running sum, so X_b is still cached for the second product. The blocks
are split into ``threads`` contiguous ranges, one per worker thread (numpy's matmul, the
ufuncs and scipy's sparsetools release the GIL), each accumulating its own partial
gradient; BLAS runs single-threaded meanwhile, so workers and BLAS threads never compete
for the cores. A problem too small for threads to pay is computed in the caller's thread.
"""

from __future__ import annotations

import functools
import os
import threading
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from objpert.losses import Loss

__all__ = [
    "PARALLEL_MIN_WORK",
    "BlockedEngine",
    "available_cores",
    "single_threaded_blas",
]

#: Below this much work per gradient (see ``BlockedEngine.work``) the sweep is one block in
#: the caller's thread: handing blocks to a pool costs tens of microseconds.
PARALLEL_MIN_WORK = 1 << 21

_POOL_LOCK = threading.Lock()
_POOLS: dict[int, ThreadPoolExecutor] = {}


def available_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _forget_pools() -> None:
    """In a forked child: the parent's pool threads do not exist here; start afresh."""
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    _POOLS.clear()


os.register_at_fork(after_in_child=_forget_pools)


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


_SINGLE_THREADED_BLAS = _SingleThreadedBlas()


def single_threaded_blas() -> _SingleThreadedBlas:
    """Context manager: every loaded BLAS runs one thread inside it (restored on exit)."""
    return _SINGLE_THREADED_BLAS


class BlockedEngine(ABC):
    """Base of the in-memory engines: ``n``, ``d``, ``matvec``, ``rmatvec`` and the fused
    ``glm_gradient``. Subclasses set ``X`` and supply the block bounds and block kernel."""

    X: Any
    n: int
    d: int

    def __init__(self, threads: int | None) -> None:
        self.threads = max(1, int(threads) if threads is not None else available_cores())
        self._lock = threading.Lock()
        self._buffers: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._bounds: dict[int, np.ndarray] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"], state["_buffers"], state["_bounds"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock, self._buffers, self._bounds = threading.Lock(), {}, {}

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

    def _parallel(self, W: np.ndarray, loss: Loss) -> Any:
        """A compiled ``f(X, W, y, cuts)`` summing the sweeps of the row ranges
        cuts[k]..cuts[k+1]-1 in parallel itself, or None: the ranges go to the pool."""
        return None

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
        shape (n,). Returns a new array shaped like W.
        """
        W = np.ascontiguousarray(W, dtype=np.float64)
        B = W.shape[1] if W.ndim == 2 else 1
        yv = y if W.ndim == 1 else y[:, None]
        out = np.zeros_like(W)
        with self._lock:
            if self.work(B) < PARALLEL_MIN_WORK:  # cheap: two passes, all in cache
                self._sweep(np.array([0, self.n]), W, yv, loss, out, *self._scratch(W, self.n, 0))
                return out
            bounds = self.bounds(B)
            rows = int(np.diff(bounds).max())
            workers = min(self.threads, len(bounds) - 1)
            cuts = [(len(bounds) - 1) * k // workers for k in range(workers + 1)]
            parallel = self._parallel(W, loss)
            if parallel is not None:  # compiled kernels (no BLAS) on numba's spinning pool
                return parallel(self.X, W, y, bounds[cuts])
            partial = [out, *(np.zeros_like(W) for _ in range(1, workers))]
            scratch = [self._scratch(W, rows, k) for k in range(workers)]
            ranges = [bounds[cuts[k] : cuts[k + 1] + 1] for k in range(workers)]
            with single_threaded_blas():
                # the caller's thread sweeps the first range, the pool the others
                futures = [
                    _pool(self.threads - 1).submit(
                        self._sweep, ranges[k], W, yv, loss, partial[k], *scratch[k]
                    )
                    for k in range(1, workers)
                ]
                try:
                    self._sweep(ranges[0], W, yv, loss, out, *scratch[0])
                finally:
                    for future in futures:
                        future.result()
        for part in partial[1:]:
            out += part
        return out
