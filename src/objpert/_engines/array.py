"""The engine protocol, the plain two-pass engine and :func:`make_engine`."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from scipy import sparse

from objpert._engines.dense import DenseEngine
from objpert._engines.sparse import SparseEngine

__all__ = [
    "MIN_BLOCKED_SIZE",
    "ArrayEngine",
    "Engine",
    "make_engine",
]

#: Dense matrices with fewer entries go to :class:`ArrayEngine`: they sit in cache, so one
#: sweep saves nothing and threads cost more than they bring.
MIN_BLOCKED_SIZE = 1 << 15


class Engine(Protocol):
    """What a gradient engine supplies: the shape and the two products with X.

    An engine may also implement ``glm_gradient(W, y, loss) = X.T @ loss.d1(X @ W, y)``
    (the unscaled sum over rows) in one sweep over X; :class:`~objpert._engines.glm.
    GLMObjective` then uses it.
    """

    n: int
    d: int

    def matvec(self, W: np.ndarray) -> np.ndarray: ...

    def rmatvec(self, R: np.ndarray) -> np.ndarray: ...


class ArrayEngine:
    """X @ W and X.T @ R for a dense ndarray or a CSR matrix, in two plain passes.

    It has no fused gradient, so GLMObjective evaluates the documented order
    r = l'(Xw, y); r /= n; g = X^T r; g += mu w bit for bit.
    """

    def __init__(self, X: np.ndarray | sparse.csr_matrix):
        self.X = X
        self.n, self.d = (int(s) for s in X.shape)
        self._XT = X.T.tocsr() if sparse.issparse(X) else None

    def matvec(self, W: np.ndarray) -> np.ndarray:
        return self.X @ W

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        if self._XT is not None:
            return self._XT @ R
        return self.X.T @ R


def make_engine(
    X: Any,
    *,
    threads: int | None = None,
    block_rows: int | None = None,
    n_jobs: int | None = None,
) -> Engine:
    """The engine for X; an engine (anything with ``matvec`` and ``rmatvec``) is returned
    unchanged.

    scipy.sparse input: :class:`~objpert._engines.sparse.SparseEngine` (as CSR), never
    densified. Dense input: :class:`~objpert._engines.dense.DenseEngine` (fused, threaded
    sweep) from ``MIN_BLOCKED_SIZE`` entries on or when ``threads`` or ``block_rows`` is
    given, :class:`ArrayEngine` below. ``threads``: the engine's worker threads (None:
    automatic, :func:`~objpert._engines.threads.choose_threads`; -1: every core).
    ``n_jobs`` (None, -1 or k >= 1) is the same count, given without forcing the blocked
    engine on a small matrix; ``threads`` wins when both are given.
    """
    if hasattr(X, "matvec") and hasattr(X, "rmatvec"):
        return X
    if sparse.issparse(X):
        threads = n_jobs if threads is None else threads
        return SparseEngine(X, threads=threads, block_rows=block_rows)
    X = np.asarray(X)
    if X.size < MIN_BLOCKED_SIZE and threads is None and block_rows is None:
        return ArrayEngine(X)  # one thread (BLAS runs one in a release): n_jobs is moot
    return DenseEngine(X, threads=n_jobs if threads is None else threads, block_rows=block_rows)
