"""Gradient steps sent straight to the workers that hold the partitions.

A step of the task path (:meth:`objpert.engines.distributed.DaskEngine._gather`) builds a
small task graph, sends it to the scheduler, waits for the scheduler to report the tasks
done and gathers their results through it: several round trips per step. Here the
partitions stay where the check put them (in each worker's data store, under the keys of
the engine's futures) and each step is one request per worker, sent from the client to
the worker directly, answered with the d floats per partition; the scheduler takes no part
in a step. The per-partition computation is the task path's, so the results are the same
bit for bit.

A request that cannot be served here (a worker gone, a partition no longer on the worker
it was on) returns None: the engine repeats the step on the task path, which recovers
lost partitions, and places the partitions again before the next step.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from objpert.engines.dense import DenseEngine
from objpert.losses import Loss

__all__ = [
    "CONNECT_SECONDS",
    "HANDLER",
    "INLINE_ENTRIES",
    "DirectTimeout",
    "Pins",
    "aligned",
    "direct_gradient",
    "install",
    "pins",
]

#: The name of the request a worker serves once :func:`install` ran on it.
HANDLER = "objpert_glm_gradient"

#: Requests over at most this many stored entries (about a millisecond of arithmetic) are
#: computed on the worker's event loop, larger ones on its threads.
INLINE_ENTRIES = 1 << 18

#: The longest wait for a new connection to a worker (a worker gone refuses it at once,
#: and the connection is retried until then; the step then goes by the task graph).
CONNECT_SECONDS = 3.0

#: Per worker address: the partition indices it serves and their (features, labels) keys.
Pins = list[tuple[str, list[int], list[tuple[Any, Any]]]]


def aligned(a: Any) -> np.ndarray:
    """float64, C order, aligned: arrays unpickled from the network can sit at odd
    addresses, where numpy's matmul leaves BLAS for a loop many times slower."""
    return np.require(a, dtype=np.float64, requirements=["C", "A"])


def gradient_block(X: Any, y: np.ndarray, W: np.ndarray, loss: Loss) -> np.ndarray:
    """X_b^T l'(X_b W, y_b): dense blocks in one fused, cache-blocked sweep (the in-memory
    DenseEngine on one thread: the worker's threads run partitions in parallel)."""
    W = aligned(W)
    if isinstance(X, np.ndarray):
        return DenseEngine(aligned(X), threads=1).glm_gradient(W, aligned(y), loss)
    m = X @ W
    return X.T @ loss.d1(m, y if m.ndim == 1 else y[:, None])


class _Steps:
    """The worker side: partial gradients of partitions in the worker's data store."""

    def __init__(self, worker: Any):
        self.worker = worker

    async def glm_gradient(self, keys: Sequence[tuple[Any, Any]], W: Any, loss: Loss) -> Any:
        """[X_b^T l'(X_b W, y_b) for each (features key, labels key)], computed on the
        worker's threads; {"status": "missing"} when a key is not held here."""
        from distributed.protocol import to_serialize

        data = self.worker.data
        try:
            parts = [(data[kx], data[ky]) for kx, ky in keys]
        except KeyError:
            return {"status": "missing"}
        if sum(_entries(X) for X, _ in parts) <= INLINE_ENTRIES:
            results = [gradient_block(X, y, W, loss) for X, y in parts]  # no thread hop
        else:
            loop = asyncio.get_running_loop()
            pool = self.worker.executors["default"]
            results = await asyncio.gather(
                *(loop.run_in_executor(pool, gradient_block, X, y, W, loss) for X, y in parts)
            )
        return {"status": "OK", "result": to_serialize(list(results))}


def _entries(X: Any) -> int:
    nnz = getattr(X, "nnz", None)
    return int(nnz) if nnz is not None else int(np.prod(np.shape(X)))


def install(dask_worker: Any) -> bool:
    """Make ``dask_worker`` serve :data:`HANDLER` (run on every worker by ``client.run``)."""
    if HANDLER not in dask_worker.handlers:
        dask_worker.handlers[HANDLER] = _Steps(dask_worker).glm_gradient
    return True


def pins(
    x_keys: Sequence[Any], y_keys: Sequence[Any], who_has: dict[Any, Sequence[str]]
) -> Pins | None:
    """Each partition assigned to a worker holding both its features and its labels, in
    worker order; None when some partition has no such worker."""
    by_worker: dict[str, tuple[list[int], list[tuple[Any, Any]]]] = {}
    for i, (kx, ky) in enumerate(zip(x_keys, y_keys, strict=True)):
        common = sorted(set(who_has.get(kx) or ()) & set(who_has.get(ky) or ()))
        if not common:
            return None
        idx, keys = by_worker.setdefault(common[0], ([], []))
        idx.append(i)
        keys.append((kx, ky))
    return [(addr, idx, keys) for addr, (idx, keys) in sorted(by_worker.items())]


class DirectTimeout(Exception):  # noqa: N818 (turned into a ClusterError by the engine)
    """Workers did not answer a direct step in time (``args[0]``: their addresses)."""


def direct_gradient(
    client: Any, placed: Pins, W: np.ndarray, loss: Loss, n_parts: int, timeout: float
) -> list[np.ndarray] | None:
    """The partial gradients of all partitions in partition order, one request per worker
    answered within ``timeout`` seconds (else :class:`DirectTimeout`); None when a request
    cannot be served (a worker gone, a key moved, a worker without the handler)."""
    from distributed.core import send_recv
    from distributed.protocol import to_serialize

    W_msg, loss_msg = to_serialize(np.asarray(W)), to_serialize(loss)

    async def ask(addr: str, keys: list[tuple[Any, Any]]) -> Any:
        pool = client.rpc
        comm = await pool.connect(addr, timeout=min(timeout, CONNECT_SECONDS))
        try:
            return await send_recv(
                comm,
                op=HANDLER,
                keys=to_serialize(keys),
                W=W_msg,
                loss=loss_msg,
                serializers=getattr(pool, "serializers", None),
                deserializers=getattr(pool, "deserializers", None),
            )
        except BaseException:
            comm.abort()  # a reply may still come: never read by a later request
            raise
        finally:
            pool.reuse(addr, comm)

    async def step() -> Any:
        tasks = [asyncio.ensure_future(ask(addr, keys)) for addr, _, keys in placed]
        limit = None if math.isinf(timeout) else timeout
        _, pending = await asyncio.wait(tasks, timeout=limit)
        for t in pending:
            t.cancel()
        if pending:
            return DirectTimeout([placed[tasks.index(t)][0] for t in pending])
        return [t.result() if t.exception() is None else t.exception() for t in tasks]

    backstop = None if math.isinf(timeout) else timeout + 10.0
    replies = client.sync(step, callback_timeout=backstop)
    if isinstance(replies, DirectTimeout):
        raise replies
    out: list[Any] = [None] * n_parts
    for (_, idx, _), reply in zip(placed, replies, strict=True):
        if isinstance(reply, OSError):
            return None  # the worker is gone (or unreachable): the task path recovers
        if isinstance(reply, BaseException):
            raise reply  # an error of the computation itself
        if not isinstance(reply, dict) or reply.get("status") != "OK":
            return None  # a key moved or lost, or a worker without the handler
        for i, r in zip(idx, reply["result"], strict=True):
            out[i] = r
    return out
