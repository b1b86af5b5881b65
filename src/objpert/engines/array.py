"""In-memory engine for dense numpy and scipy.sparse CSR matrices."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from scipy import sparse


class Engine(Protocol):
    n: int
    d: int

    def matvec(self, W: np.ndarray) -> np.ndarray: ...

    def rmatvec(self, R: np.ndarray) -> np.ndarray: ...


class ArrayEngine:
    """X @ W and X.T @ R for a dense ndarray or a CSR matrix (no densification)."""

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


def make_engine(X: Any) -> Engine:
    """The engine for X (an engine is returned unchanged)."""
    if hasattr(X, "matvec") and hasattr(X, "rmatvec"):
        return X
    return ArrayEngine(X)
