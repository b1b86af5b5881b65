"""Gradient steps sent straight to the workers that hold the partitions.

A step of the task path (:meth:`objpert._engines.distributed.DaskEngine._gather`) builds a
small task graph, sends it to the scheduler, waits for the scheduler to report the tasks
done and gathers their results through it: several round trips per step. Here the
partitions stay where the check put them (in each worker's data store, under the keys of
the engine's futures) and each step is one request per worker, sent from the client to
the worker directly, answered with the d floats per partition; the scheduler takes no part
in a step. The per-partition computation is the task path's, so the results are the same
bit for bit.

Where the workers are reached over plain TCP (``tcp://`` and ``inproc://`` addresses), a
step does not go through Dask's messages at all (:func:`open_channels`): each worker serves
the engine on a socket of its own, from a thread of its own, holding the engine's
partitions; a step sends the iterate as raw float64 bytes and reads back the partial
gradients as raw bytes (no pickling, no event loop on either side). The connection is
authenticated with a random token given to the worker through Dask. Elsewhere (``tls://``
and other transports, or a worker whose socket cannot be reached) a step is one Dask
message per worker (:func:`direct_gradient`).

A request that cannot be served here (a worker gone, a partition no longer on the worker
it was on) returns None: the engine repeats the step on the task path, which recovers
lost partitions, and places the partitions again before the next step.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import math
import pickle
import secrets
import selectors
import socket
import struct
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from objpert._engines.dense import DenseEngine
from objpert._losses import Loss

__all__ = [
    "CONNECT_SECONDS",
    "HANDLER",
    "IDLE_SECONDS",
    "INLINE_ENTRIES",
    "PENDING_CONNECTIONS",
    "Channels",
    "DirectTimeout",
    "Pins",
    "aligned",
    "direct_gradient",
    "install",
    "open_channels",
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

#: A worker's socket for an engine closes after this many seconds without a request (its
#: references to the partitions go with it; a later step places the partitions again).
IDLE_SECONDS = 300.0

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
        if _inline(parts):
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


def _inline(parts: Sequence[tuple[Any, Any]]) -> bool:
    """Whether partitions are small enough to compute where the request is read (no hop to
    the worker's threads): at most :data:`INLINE_ENTRIES` stored entries in all."""
    return sum(_entries(X) for X, _ in parts) <= INLINE_ENTRIES


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


# ---------------------------------------------------------------- steps over sockets

_HEAD = struct.Struct("<QQ")  # an operation (or a status), the size of what follows
_STEP, _LOSS = 1, 2  # requests: a gradient step at W; the loss of the next steps
_OK, _FAILED = 0, 1  # replies: the partial gradients; a pickled exception
_TOKEN_BYTES = 32
_SCHEMES = ("tcp://", "inproc://")  # workers reached over plain TCP (or in this process)


def _recv_exact(conn: socket.socket, size: int) -> bytearray | None:
    """``size`` bytes read from ``conn``; None when the peer closed first."""
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        k = conn.recv_into(view[got:])
        if not k:
            return None
        got += k
    return buf


def _message(op: int, body: bytes) -> bytes:
    return _HEAD.pack(op, len(body)) + body


def _pack_array(W: np.ndarray) -> bytes:
    """A step request: the dimensions, then the float64 entries (8-byte aligned)."""
    return _message(_STEP, struct.pack(f"<Q{W.ndim}q", W.ndim, *W.shape) + W.tobytes())


def _unpack_array(body: bytearray) -> np.ndarray:
    (ndim,) = struct.unpack_from("<Q", body)
    shape = struct.unpack_from(f"<{ndim}q", body, 8)
    return np.frombuffer(body, dtype=np.float64, offset=8 * (ndim + 1)).reshape(shape)


def _host(address: str) -> str:
    """The host a worker at ``address`` listens on (this machine's loopback for inproc)."""
    if address.startswith("tcp://"):
        from distributed.comm import get_address_host

        return str(get_address_host(address))
    return "127.0.0.1"


def _serve(
    wanted: dict[str, list[tuple[Any, Any]]], token: bytes, idle: float, dask_worker: Any = None
) -> tuple[str, int] | None:
    """On a worker (``client.run``, on its event loop): a socket serving gradient steps of
    the partitions ``wanted[its address]`` from a thread; (host, port), or None when a
    partition is not held here."""
    keys = wanted.get(dask_worker.address)
    if keys is None:
        return None
    try:
        parts = [(dask_worker.data[kx], dask_worker.data[ky]) for kx, ky in keys]
    except KeyError:
        return None
    host = _host(dask_worker.address)
    family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0][0]
    server = socket.create_server((host, 0), family=family)
    pool = dask_worker.executors["default"]
    args = (server, token, parts, pool, idle)
    threading.Thread(target=_serve_steps, args=args, name="objpert-steps", daemon=True).start()
    return host, int(server.getsockname()[1])


#: The most connections a worker's socket holds at once while it waits for the token (a
#: connection beyond it closes the one that has waited longest).
PENDING_CONNECTIONS = 64


def _accept(server: socket.socket, token: bytes, wait: float) -> socket.socket | None:
    """The first connection within ``wait`` seconds that gives ``token``; None when none
    does. Every pending connection is accepted at once and their tokens are read side by
    side (:mod:`selectors`), so a silent or slow peer never holds up the engine's
    connection: each has :data:`CONNECT_SECONDS` to give its token, a wrong token or an
    early close ends it at once, and the others are closed when the token arrives."""
    deadline = time.monotonic() + wait
    server.setblocking(False)
    pending: dict[socket.socket, tuple[bytearray, float]] = {}  # -> (bytes read, give up at)
    with selectors.DefaultSelector() as sel:
        sel.register(server, selectors.EVENT_READ)
        try:
            while (left := deadline - time.monotonic()) > 0:
                now = time.monotonic()
                for conn, (_, end) in list(pending.items()):
                    if end <= now:  # silent too long
                        _drop(sel, pending, conn)
                soonest = min((end for _, end in pending.values()), default=deadline)
                for key, _ in sel.select(max(0.0, min(left, soonest - now))):
                    if key.fileobj is server:
                        _accept_pending(server, sel, pending)
                        continue
                    conn = key.fileobj
                    assert isinstance(conn, socket.socket)
                    buf = pending[conn][0]
                    try:
                        complete = _read_token(conn, buf, len(token))
                    except OSError:  # closed or failed before its token
                        _drop(sel, pending, conn)
                        continue
                    if not complete:
                        continue
                    if not hmac.compare_digest(bytes(buf), token):
                        _drop(sel, pending, conn)  # a wrong token
                        continue
                    sel.unregister(conn)
                    del pending[conn]
                    conn.setblocking(True)
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    return conn
            return None
        except OSError:  # the listening socket itself failed
            return None
        finally:
            for conn in list(pending):
                _drop(sel, pending, conn)


def _accept_pending(
    server: socket.socket,
    sel: selectors.BaseSelector,
    pending: dict[socket.socket, tuple[bytearray, float]],
) -> None:
    """Accept every connection waiting on ``server`` (non-blocking), each given
    :data:`CONNECT_SECONDS` to send its token; past :data:`PENDING_CONNECTIONS` the
    connection that has waited longest is closed."""
    while True:
        try:
            conn, _ = server.accept()
        except (BlockingIOError, InterruptedError):
            return
        conn.setblocking(False)
        if len(pending) >= PENDING_CONNECTIONS:
            oldest = min(pending, key=lambda c: pending[c][1])
            _drop(sel, pending, oldest)
        pending[conn] = (bytearray(), time.monotonic() + CONNECT_SECONDS)
        sel.register(conn, selectors.EVENT_READ)


def _read_token(conn: socket.socket, buf: bytearray, size: int) -> bool:
    """Read what ``conn`` has sent of its token into ``buf``; True once ``size`` bytes are
    there. A peer that closed first raises ConnectionResetError (and one that failed, its
    OSError)."""
    try:
        chunk = conn.recv(size - len(buf))
    except (BlockingIOError, InterruptedError):
        return False
    if not chunk:
        raise ConnectionResetError("closed before its token")
    buf += chunk
    return len(buf) >= size


def _drop(
    sel: selectors.BaseSelector,
    pending: dict[socket.socket, tuple[bytearray, float]],
    conn: socket.socket,
) -> None:
    pending.pop(conn, None)
    with contextlib.suppress(KeyError, ValueError):
        sel.unregister(conn)
    conn.close()


def _serve_steps(
    server: socket.socket, token: bytes, parts: list[tuple[Any, Any]], pool: Any, idle: float
) -> None:
    """A worker's thread: accept the engine's connection, then answer its requests until it
    closes, fails or stays idle for ``idle`` seconds (the references to the partitions go
    with it)."""
    with server:
        conn = _accept(server, token, idle)
    if conn is None:
        return
    with conn:
        conn.settimeout(idle)
        loss = None
        try:
            while (head := _recv_exact(conn, _HEAD.size)) is not None:
                op, size = _HEAD.unpack(head)
                body = _recv_exact(conn, size)
                if body is None:
                    return
                if op == _LOSS:
                    loss = pickle.loads(body)  # sent by the holder of the token
                    continue
                reply = _answer(parts, _unpack_array(body), loss, pool)
                if reply is None:
                    return  # the worker is closing: the engine's task path takes over
                conn.sendall(reply)
        except OSError:  # the engine went away, or idle too long
            return


def _answer(parts: list[tuple[Any, Any]], W: np.ndarray, loss: Any, pool: Any) -> bytes | None:
    """The reply to a step: the partial gradients as raw float64, or the pickled error of
    the computation; None when the worker's threads are shut down."""
    try:
        if _inline(parts):
            results = [gradient_block(X, y, W, loss) for X, y in parts]
        else:
            try:
                futures = [pool.submit(gradient_block, X, y, W, loss) for X, y in parts]
            except RuntimeError:
                return None
            results = [f.result() for f in futures]
        body = b"".join(np.ascontiguousarray(r, dtype=np.float64).tobytes() for r in results)
        return _message(_OK, body)
    except Exception as err:
        try:
            return _message(_FAILED, pickle.dumps(err))
        except Exception:
            return _message(_FAILED, pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}")))


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _close_all(socks: list[socket.socket]) -> None:
    for s in socks:
        s.close()


class Channels:
    """The client's connections to the workers' sockets, one per worker holding
    partitions (made by :func:`open_channels`); closed on any fault."""

    def __init__(self, placed: Pins, socks: list[socket.socket], n_parts: int):
        self.placed, self.n_parts = placed, n_parts
        self._socks = socks
        self._loss: Loss | None = None
        weakref.finalize(self, _close_all, socks)

    @property
    def closed(self) -> bool:
        return not self._socks

    def close(self) -> None:
        """Drop the connections (a reply still on its way is never read); the workers'
        threads end and release the partitions."""
        socks, self._socks = self._socks, []
        _close_all(socks)

    def gradient(self, W: np.ndarray, loss: Loss, timeout: float) -> list[np.ndarray] | None:
        """The partial gradients of all partitions in partition order, answered within
        ``timeout`` seconds (else :class:`DirectTimeout`); None when a connection fails (a
        worker gone: the task path recovers). Any exception closes the channels."""
        if self.closed:
            return None
        W = np.ascontiguousarray(W, dtype=np.float64)
        request = _pack_array(W)
        if loss is not self._loss:
            request = _message(_LOSS, pickle.dumps(loss)) + request
        deadline = None if math.isinf(timeout) else time.monotonic() + timeout
        try:
            for s in self._socks:
                s.settimeout(_left(deadline))
                s.sendall(request)
            self._loss = loss
            replies = self._receive(deadline)
        except TimeoutError:  # a send that did not go through in time
            self.close()
            raise DirectTimeout([addr for addr, _, _ in self.placed]) from None
        except OSError:
            self.close()
            return None
        except BaseException:  # a timeout, Ctrl-C: no reply of this step is read later
            self.close()
            raise
        return self._unpack(replies, W)

    def _receive(self, deadline: float | None) -> list[bytearray]:
        """Each worker's whole reply (DirectTimeout naming those not done by ``deadline``;
        ConnectionError when one closes)."""
        bufs = [bytearray() for _ in self._socks]
        sizes: list[int | None] = [None] * len(self._socks)
        with selectors.DefaultSelector() as sel:
            for i, s in enumerate(self._socks):
                sel.register(s, selectors.EVENT_READ, i)
            while sel.get_map():
                left = _left(deadline)
                if left == 0.0:
                    waiting = sorted(key.data for key in sel.get_map().values())
                    raise DirectTimeout([self.placed[i][0] for i in waiting])
                for key, _ in sel.select(left):
                    i = key.data
                    chunk = key.fileobj.recv(1 << 16)  # type: ignore[union-attr]
                    if not chunk:
                        raise ConnectionResetError("a worker closed its socket")
                    bufs[i] += chunk
                    if sizes[i] is None and len(bufs[i]) >= _HEAD.size:
                        sizes[i] = _HEAD.size + _HEAD.unpack_from(bufs[i])[1]
                    if sizes[i] is not None and len(bufs[i]) >= sizes[i]:
                        sel.unregister(key.fileobj)
        return bufs

    def _unpack(self, replies: list[bytearray], W: np.ndarray) -> list[np.ndarray] | None:
        out: list[Any] = [None] * self.n_parts
        for (_, idx, _), buf in zip(self.placed, replies, strict=True):
            status, size = _HEAD.unpack_from(buf)
            if status == _FAILED:
                raise pickle.loads(buf[_HEAD.size :])  # an error of the computation
            if status != _OK or size != 8 * W.size * len(idx):
                self.close()
                return None
            blocks = np.frombuffer(buf, dtype=np.float64, offset=_HEAD.size)
            for i, r in zip(idx, blocks.reshape(len(idx), *W.shape), strict=True):
                out[i] = r
        return out


def open_channels(
    client: Any, placed: Pins, n_parts: int, timeout: float, idle: float | None = None
) -> Channels | None:
    """Sockets to the workers of ``placed``, each served by a thread of its worker holding
    its partitions (the partitions' data, not their keys: a step reads nothing from the
    worker's store). None where a worker is not reached over plain TCP (``tls://``), a
    partition is no longer where placed or a socket cannot be reached: the steps then go
    by Dask messages. A scheduler that does not answer raises TimeoutError. ``idle``:
    seconds a worker's socket waits for the next request (None: :data:`IDLE_SECONDS`)."""
    idle = IDLE_SECONDS if idle is None else idle
    if not all(addr.startswith(_SCHEMES) for addr, _, _ in placed):
        return None
    token = secrets.token_bytes(_TOKEN_BYTES)
    wanted = {addr: keys for addr, _, keys in placed}
    limit = None if math.isinf(timeout) else timeout
    where = client.sync(
        client._run, _serve, wanted, token, idle, workers=list(wanted), callback_timeout=limit
    )
    socks: list[socket.socket] = []
    try:
        for addr, _, _ in placed:
            found = where.get(addr)
            if found is None:
                raise ConnectionError(f"no socket at {addr}")
            s = socket.create_connection(tuple(found), timeout=min(timeout, CONNECT_SECONDS))
            socks.append(s)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(token)
    except OSError:
        _close_all(socks)
        return None
    return Channels(placed, socks, n_parts)
