"""The regularised softmax (multinomial logistic) objective, on the engines of
:mod:`objpert._engines.array`.

F(W) = (1/n) sum_i [log sum_k exp(<x_i, w_k>) - <x_i, w_{y_i}>] + (mu/2) ||W||_F^2 for
W in R^{d x K}; gradient (1/n) X^T (P - Y) + mu W with P the row-wise softmax of X W and
Y the one-hot labels; Hessian-vector product (1/n) X^T (P * U - P * rowsum(P * U)) + mu V
with U = X V (the per-row Hessian (diag(p) - p p^T) (x) x x^T applied to V). The K columns
are coupled through the softmax, so a step is one product X W with all K columns at once
and one product X^T R: the engine's ``matvec`` and ``rmatvec`` (dense, CSR, threaded
blocks), never a loop over rows or classes.

The solvers see flat vectors: W is stored as ``w = W.ravel()`` (row-major, d K entries),
and ``value``, ``gradient`` and ``hvp`` accept a vector (d K,) or a batch (d K, B).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp, softmax

from objpert._engines.array import Engine, make_engine
from objpert._validation import check_int
from objpert.exceptions import DataError

__all__ = ["SoftmaxObjective"]


class SoftmaxObjective:
    """F(.; S) of the softmax loss for data held by an engine, integer class codes in
    [0, K) and a ridge coefficient mu."""

    def __init__(
        self,
        X: Any,
        codes: np.ndarray,
        n_classes: int,
        mu: float,
        *,
        threads: int | None = None,
        block_rows: int | None = None,
        n_jobs: int | None = None,
    ):
        self.engine: Engine = make_engine(X, threads=threads, block_rows=block_rows, n_jobs=n_jobs)
        self.k = check_int("n_classes", n_classes, 2)
        codes = np.asarray(codes)
        if codes.shape != (self.engine.n,) or not np.issubdtype(codes.dtype, np.integer):
            raise DataError(f"codes must be {self.engine.n} integers; got {codes.shape}")
        if codes.size and (codes.min() < 0 or codes.max() >= self.k):
            raise DataError(f"class codes must lie in [0, {self.k})")
        self.codes = codes.astype(np.intp)
        self.mu = float(mu)
        self.n, self.d = self.engine.n, self.engine.d
        self.size = self.d * self.k  # the flat dimension of the solvers

    def _matrix(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(w, dtype=np.float64).reshape(self.d, self.k)

    def _each(self, W: np.ndarray, fn) -> np.ndarray:
        if W.ndim == 1:
            return fn(W)
        return np.column_stack([fn(W[:, b]) for b in range(W.shape[1])])

    def scores(self, w: np.ndarray) -> np.ndarray:
        """X W: (n, K)."""
        return np.asarray(self.engine.matvec(self._matrix(w)))

    def probabilities(self, w: np.ndarray) -> np.ndarray:
        """P = softmax(X W) row by row: (n, K)."""
        return softmax(self.scores(w), axis=1)

    def value(self, W: np.ndarray) -> np.ndarray | float:
        def one(w: np.ndarray) -> float:
            S = self.scores(w)
            data = float(np.sum(logsumexp(S, axis=1) - S[np.arange(self.n), self.codes]))
            return data / self.n + 0.5 * self.mu * float(w @ w)

        if W.ndim == 1:
            return one(W)
        return np.array([one(W[:, b]) for b in range(W.shape[1])])

    def gradient(self, W: np.ndarray) -> np.ndarray:
        """(1/n) X^T (P - Y) + mu W, flat."""

        def one(w: np.ndarray) -> np.ndarray:
            R = self.probabilities(w)
            R[np.arange(self.n), self.codes] -= 1.0
            R /= self.n
            g = np.asarray(self.engine.rmatvec(R)).ravel()
            g += self.mu * w
            return g

        return self._each(W, one)

    def hvp(self, w: np.ndarray, V: np.ndarray) -> np.ndarray:
        """The Hessian at one point w applied to V (d K,) or (d K, B)."""
        P = self.probabilities(w)

        def one(v: np.ndarray) -> np.ndarray:
            U = np.asarray(self.engine.matvec(self._matrix(v)))
            R = P * U
            R -= P * R.sum(axis=1, keepdims=True)
            R /= self.n
            return np.asarray(self.engine.rmatvec(R)).ravel() + self.mu * v

        return self._each(V, one)

    def hessian(self, w: np.ndarray) -> np.ndarray:
        """The dense (d K) x (d K) Hessian (for small problems: tests)."""
        return self.hvp(w, np.eye(self.size))
