"""The Dask engine: X and y partitioned by rows and held on a dask.distributed cluster.

Each row partition (X_b, y_b) is kept in the memory of one worker (a future per
partition). An iteration of perturbed gradient descent is one map-reduce: the client sends
w (d floats) to one task per worker thread, which computes X_b^T l'(X_b w, y_b) for each
partition that worker holds; the client adds the d floats per partition that come back in
partition order, so the result does not depend on which worker finished first. The
certificate, the noise draw and the iterate stay on the client.

Engines are built by the data contract on a cluster (:mod:`objpert.data.distributed`),
which checks and bounds every partition first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from objpert.engines.dense import DenseEngine
from objpert.exceptions import DataError
from objpert.losses import Loss

__all__ = ["DaskEngine", "aligned", "nrows"]


# ---------------------------------------------------------------- on the workers


def aligned(a: Any) -> np.ndarray:
    """float64, C order, aligned: arrays unpickled from the network can sit at odd
    addresses, where numpy's matmul leaves BLAS for a loop many times slower."""
    return np.require(a, dtype=np.float64, requirements=["C", "A"])


def _matvec_block(X: Any, W: np.ndarray) -> np.ndarray:
    return X @ aligned(W)


def _rmatvec_block(X: Any, R: np.ndarray) -> np.ndarray:
    return X.T @ aligned(R)


def _gradient_block(X: Any, y: np.ndarray, W: np.ndarray, loss: Loss) -> np.ndarray:
    """X_b^T l'(X_b W, y_b): dense blocks in one fused, cache-blocked sweep (the in-memory
    DenseEngine on one thread: the worker's threads run partitions in parallel)."""
    W = aligned(W)
    if isinstance(X, np.ndarray):
        return DenseEngine(aligned(X), threads=1).glm_gradient(W, aligned(y), loss)
    m = X @ W
    return X.T @ loss.d1(m, y if m.ndim == 1 else y[:, None])


def nrows(X: Any) -> int:
    return int(X.shape[0])


def _run_group(*columns: Sequence[Any], fn: Any, **kwargs: Any) -> list[Any]:
    """``fn`` on each partition of a group (the partitions one worker thread serves)."""
    return [fn(*args, **kwargs) for args in zip(*columns, strict=True)]


def _sum_in_order(parts: Sequence[np.ndarray]) -> np.ndarray:
    """Sum in partition order: the same floating-point result on every run."""
    total = np.array(parts[0], dtype=np.float64, copy=True)
    for part in parts[1:]:
        total += part
    return total


# ---------------------------------------------------------------- the engine


class DaskEngine:
    """X (and optionally labels y) as row partitions held by the workers of a cluster.

    Built by :func:`objpert.data.distributed.prepare_dask` and
    :func:`~objpert.data.distributed.for_plan_dask` (through :func:`objpert.data.prepare`
    and :func:`objpert.data.for_plan`), which check the data contract on the workers.
    ``matvec``/``rmatvec`` move n floats between client and cluster (tests, audits);
    ``glm_gradient`` moves d floats per partition and is what gradient descent uses.
    Each call is one round trip of one task per worker thread (see :meth:`groups`);
    partial sums are added on the client in partition order (deterministic).
    """

    is_dask_engine = True

    def __init__(
        self,
        x_parts: Sequence[Any],
        y_parts: Sequence[Any] | None,
        lengths: Sequence[int],
        d: int,
        client: Any,
    ):
        self._x = list(x_parts)
        self._y = None if y_parts is None else list(y_parts)
        self.lengths = tuple(int(k) for k in lengths)
        self.n, self.d = sum(self.lengths), int(d)
        self.client = client
        self._offsets = np.cumsum(self.lengths)[:-1]
        self._groups: list[list[int]] | None = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.d

    @property
    def partitions(self) -> int:
        return len(self._x)

    @property
    def has_labels(self) -> bool:
        return self._y is not None

    def groups(self) -> list[list[int]]:
        """Partitions grouped by the worker holding them, split over its threads: one
        task per group and iteration (fewer tasks, less scheduling per iteration)."""
        if self._groups is None:
            self.client.gather(self.client.map(nrows, self._x, pure=False))  # all in place
            who = self.client.who_has(self._x)
            threads = self.client.nthreads()
            by_worker: dict[str, list[int]] = {}
            for i, f in enumerate(self._x):
                by_worker.setdefault((who.get(f.key) or [""])[0], []).append(i)
            self._groups = [
                [int(i) for i in chunk]
                for addr, idx in sorted(by_worker.items())
                for chunk in np.array_split(idx, min(len(idx), threads.get(addr, 1)))
            ]
        return self._groups

    def _gather(self, fn: Any, *per_partition: Sequence[Any], **kwargs: Any) -> list[Any]:
        """One round trip: ``fn`` on every partition (a task per group), the results in
        partition order whatever the grouping and the order the tasks finish in."""
        groups = self.groups()
        columns = [[[seq[i] for i in g] for g in groups] for seq in per_partition]
        futures = self.client.map(_run_group, *columns, fn=fn, pure=False, **kwargs)
        out: list[Any] = [None] * self.partitions
        for g, results in zip(groups, self.client.gather(futures), strict=True):
            for i, r in zip(g, results, strict=True):
                out[i] = r
        return out

    def matvec(self, W: np.ndarray) -> np.ndarray:
        return np.concatenate(self._gather(_matvec_block, self._x, W=np.asarray(W)), axis=0)

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        pieces = np.split(np.asarray(R), self._offsets, axis=0)
        return _sum_in_order(self._gather(_rmatvec_block, self._x, pieces))

    def glm_gradient(self, W: np.ndarray, y: Any, loss: Loss) -> np.ndarray:
        """X^T l'(XW, y) (unscaled) with the labels held by the workers; ``y`` is ignored
        (GLMObjective passes its own, None for this engine)."""
        if self._y is None:
            raise DataError("this DaskEngine holds no labels: build it with labels")
        return _sum_in_order(
            self._gather(_gradient_block, self._x, self._y, W=np.asarray(W), loss=loss)
        )

    def labels(self) -> np.ndarray:
        """The labels gathered to the client (n floats: for tests and audits)."""
        if self._y is None:
            raise DataError("this DaskEngine holds no labels")
        return np.concatenate(self.client.gather(self._y))

    def labels_array(self) -> Any:
        """The labels as a Dask array partitioned like X (lazy; nothing moves)."""
        import dask.array as da

        if self._y is None:
            raise DataError("this DaskEngine holds no labels")
        blocks = [
            da.from_delayed(f, shape=(k,), dtype=np.float64)
            for f, k in zip(self._y, self.lengths, strict=True)
        ]
        return da.concatenate(blocks)
