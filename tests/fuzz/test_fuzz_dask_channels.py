"""Fuzz and faults: gradient steps over the workers' own sockets
(:func:`objpert._engines.distributed_direct.open_channels`, :class:`Channels`).

The worker side runs in this process on a stand-in worker (its data store, its threads,
its address), so no cluster is started: random partitions and iterates give the
partial gradients computed where the data are, bit for bit; a connection without the
token is refused; an error of the computation reaches the client; a frozen worker ends
the step within its timeout, Ctrl-C at once, and a worker gone gives None.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fuzz_support import fuzz
from hypothesis import given
from hypothesis import strategies as st
from scipy import sparse

from objpert._engines import distributed_direct as direct
from objpert._losses import get_loss

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.load]


class Worker:
    """What :func:`direct._serve` reads of a dask worker."""

    def __init__(self, address, data):
        self.address, self.data = address, data
        self.executors = {"default": ThreadPoolExecutor(1)}


class Client:
    """What :func:`direct.open_channels` asks of a client: run a function on workers."""

    def __init__(self, workers):
        self.workers = {w.address: w for w in workers}

    def sync(self, fn, *args, callback_timeout=None, **kwargs):
        return fn(*args, **kwargs)

    def _run(self, fn, *args, workers):
        return {a: fn(*args, dask_worker=self.workers[a]) for a in workers}


class Slow:
    """A loss whose derivative waits ``seconds`` first, or raises (picklable)."""

    def __init__(self, seconds=0.0, fail=False):
        self.seconds, self.fail, self.loss = seconds, fail, get_loss("logistic")

    def d1(self, m, y):
        time.sleep(self.seconds)
        if self.fail:
            raise ValueError("a bad derivative")
        return self.loss.d1(m, y)


def channels_for(parts_by_worker, timeout=10.0, idle=None):
    """Channels to stand-in workers holding ``parts_by_worker`` [[(X, y), ...], ...]."""
    workers, placed, i = [], [], 0
    for w, parts in enumerate(parts_by_worker):
        keys = [(f"x{i + j}", f"y{i + j}") for j in range(len(parts))]
        data = {
            k: v
            for (kx, ky), (X, y) in zip(keys, parts, strict=True)
            for k, v in ((kx, X), (ky, y))
        }
        workers.append(Worker(f"tcp://127.0.0.1:{40000 + w}", data))
        placed.append((workers[-1].address, list(range(i, i + len(parts))), keys))
        i += len(parts)
    return direct.open_channels(Client(workers), placed, i, timeout, idle)


def dense(rng, rows, d):
    return rng.normal(size=(rows, d)), np.where(rng.random(rows) < 0.5, -1.0, 1.0)


@fuzz(25)
@given(
    sizes=st.lists(st.lists(st.integers(1, 30), min_size=1, max_size=3), min_size=1, max_size=3),
    d=st.integers(1, 6),
    k=st.sampled_from([None, 2, 3]),
    loss=st.sampled_from(["logistic", "robust"]),
    as_sparse=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_channels_give_the_partial_gradients_bit_for_bit(sizes, d, k, loss, as_sparse, seed):
    rng = np.random.default_rng(seed)
    parts = [[dense(rng, rows, d) for rows in worker] for worker in sizes]
    if as_sparse:
        parts = [[(sparse.csr_matrix(X * (X > 0.5)), y) for X, y in ps] for ps in parts]
    chans = channels_for(parts)
    try:
        for _ in range(2):  # the loss is sent once, then kept by the workers
            W = rng.normal(size=(d,) if k is None else (d, k))
            got = chans.gradient(W, get_loss(loss), 10.0)
            want = [direct.gradient_block(X, y, W, get_loss(loss)) for ps in parts for X, y in ps]
            assert len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                assert g.shape == W.shape and np.array_equal(g, w)
    finally:
        chans.close()


def test_a_connection_without_the_token_is_refused():
    rng = np.random.default_rng(0)
    X, y = dense(rng, 20, 3)
    worker = Worker("tcp://127.0.0.1:1", {"x": X, "y": y})
    host, port = direct._serve({worker.address: [("x", "y")]}, b"t" * 32, 5.0, worker)
    with socket.create_connection((host, port), timeout=5) as intruder:
        intruder.sendall(b"x" * 32 + direct._pack_array(np.ones(3)))
        with contextlib.suppress(ConnectionResetError):  # reset, or:
            assert intruder.recv(100) == b""  # closed without an answer
    rightful = socket.create_connection((host, port), timeout=5)
    rightful.sendall(b"t" * 32)
    chans = direct.Channels([(worker.address, [0], [("x", "y")])], [rightful], 1)
    loss = get_loss("logistic")
    assert np.array_equal(chans.gradient(np.ones(3), loss, 5.0)[0], X.T @ loss.d1(X.sum(1), y))
    chans.close()
    assert direct.open_channels(Client([]), [("tls://h:1", [0], [("x", "y")])], 1, 5.0) is None


def test_errors_timeouts_interrupts_and_lost_workers():
    rng = np.random.default_rng(1)
    S, y = sparse.csr_matrix(rng.normal(size=(30, 4))), np.ones(30)
    w = np.ones(4)
    chans = channels_for([[(S, y)], [(S, y)]])
    with pytest.raises(ValueError, match="a bad derivative"):  # the computation's own error
        chans.gradient(w, Slow(fail=True), 5.0)
    assert np.array_equal(
        chans.gradient(w, Slow(), 5.0)[1], S.T @ get_loss("logistic").d1(S @ w, y)
    )
    start = time.perf_counter()
    with pytest.raises(direct.DirectTimeout) as late:  # a worker too slow (frozen)
        chans.gradient(w, Slow(seconds=1.5), 0.3)
    assert time.perf_counter() - start < 1.0 and len(late.value.args[0]) == 2
    assert chans.closed and chans.gradient(w, Slow(), 5.0) is None  # nothing read later

    chans = channels_for([[(S, y)]])
    main = threading.main_thread().ident
    sent: list[float] = []

    def interrupt() -> None:
        sent.append(time.perf_counter())
        signal.pthread_kill(main, signal.SIGINT)

    # Python's own Ctrl-C handler, whatever an earlier test in this process installed; the
    # worker's step is long, so that a timer delayed by a busy machine still falls inside it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.2, interrupt).start()
        with pytest.raises(KeyboardInterrupt):  # Ctrl-C during a step
            chans.gradient(w, Slow(seconds=10.0), 30.0)
        assert time.perf_counter() - sent[0] < 1.0 and chans.closed
    finally:
        signal.signal(signal.SIGINT, previous)

    chans = channels_for([[(S, y)]], idle=0.1)  # the worker's socket closes: gone
    time.sleep(0.4)
    assert chans.gradient(w, Slow(), 5.0) is None and chans.closed
