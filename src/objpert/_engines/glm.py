"""The regularised GLM objective of eq. (1), on any engine.

F(w) = (1/n) sum_i l(<x_i, w>, y_i) + (mu/2) ||w||^2, its gradient
(1/n) X^T l'(Xw, y) + mu w and Hessian-vector product (1/n) X^T (l''(Xw, y) * Xv) + mu v.
Every mechanism computes its gradients here. W may be a vector (d,) or a matrix (d, B)
of B points evaluated in one sweep over X; with labels y of shape (n, B) column b is the
objective of the labels y[:, b] (one-vs-rest releases run together). ``threads``,
``block_rows`` and ``n_jobs`` go to :func:`~objpert._engines.array.make_engine`.
``engine`` and ``dtype`` pick an engine shaped by the data, the array-API engine or a GPU
(:func:`~objpert._engines.factory.build_engine`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from objpert._engines.array import Engine, make_engine
from objpert._losses import Loss, get_loss

__all__ = [
    "GLMObjective",
]


class GLMObjective:
    """F(.; S) for data held by an engine, a loss and a ridge coefficient mu."""

    def __init__(
        self,
        X: Any,
        y: np.ndarray | None,
        loss: str | Loss,
        mu: float,
        *,
        threads: int | None = None,
        block_rows: int | None = None,
        n_jobs: int | None = None,
        engine: str = "default",
        dtype: str = "float64",
    ):
        if engine != "default" or dtype != "float64":  # objpert._engines.factory.ENGINES
            from objpert._engines.factory import build_engine

            X, y = build_engine(X, y, engine=engine, dtype=dtype, n_jobs=n_jobs)
        self.engine: Engine = make_engine(X, threads=threads, block_rows=block_rows, n_jobs=n_jobs)
        # y=None: the engine holds the labels (a Dask engine); value/hvp fetch them
        self.y = None if y is None else np.asarray(y, dtype=np.float64)
        # a Loss instance is used as given (the objective only computes with it; which loss
        # a release uses, and its constants, are the mechanism's to re-derive); a name is
        # looked up in the loss registry
        self.loss = loss if isinstance(loss, Loss) else get_loss(loss)
        self.mu = float(mu)
        self.n, self.d = self.engine.n, self.engine.d

    def _y(self, margins: np.ndarray) -> np.ndarray:
        if self.y is None:
            self.y = np.asarray(self.engine.labels(), dtype=np.float64)  # type: ignore[attr-defined]
        if margins.ndim == 1 or self.y.ndim == 2:  # one point, or a label per column
            return self.y
        return self.y[:, None]

    def value(self, W: np.ndarray) -> np.ndarray:
        m = self.engine.matvec(W)
        data = self.loss.value(m, self._y(m)).sum(axis=0) / self.n
        return data + 0.5 * self.mu * np.sum(W * W, axis=0)

    def gradient(self, W: np.ndarray) -> np.ndarray:
        """(1/n) X^T l'(XW, y) + mu W: one sweep over X when the engine has a fused
        ``glm_gradient``, else r = l'(XW, y); r /= n; g = X^T r; g += mu W."""
        fused = getattr(self.engine, "glm_gradient", None)
        if fused is not None:
            g = fused(W, self.y, self.loss)
            g /= self.n
        else:
            m = self.engine.matvec(W)
            r = self.loss.d1(m, self._y(m))
            r /= self.n
            g = self.engine.rmatvec(r)
        g += self.mu * W
        return g

    def hvp(self, W: np.ndarray, V: np.ndarray) -> np.ndarray:
        m = self.engine.matvec(W)
        curv = self.loss.d2(m, self._y(m)) / self.n
        XV = self.engine.matvec(V)
        if curv.ndim < XV.ndim:  # one point w, a batch of directions V
            curv = curv[:, None]
        return self.engine.rmatvec(curv * XV) + self.mu * V

    def hessian(self, w: np.ndarray) -> np.ndarray:
        """The dense d x d Hessian (for small d: tests and audits)."""
        return np.column_stack([self.hvp(w, e) for e in np.eye(self.d)])
