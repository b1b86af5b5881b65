"""A worker's gradient socket (:func:`objpert._engines.distributed_direct._serve`) serves
the engine's connection at once even when other clients connected first and stay silent,
send a wrong or partial token, or close: their tokens are read side by side, never one
after the other (a silent peer used to hold the engine up CONNECT_SECONDS each).

The worker side runs in this process on a stand-in worker (its data store, its threads,
its address), so no cluster is started."""

from __future__ import annotations

import contextlib
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from objpert._engines import distributed_direct as direct
from objpert._losses import get_loss

pytestmark = pytest.mark.load

TOKEN = b"t" * 32


class Worker:
    """What :func:`direct._serve` reads of a dask worker."""

    def __init__(self, address, data):
        self.address, self.data = address, data
        self.executors = {"default": ThreadPoolExecutor(1)}


@pytest.fixture
def served():
    """(host, port, X, y) of a worker socket holding one partition."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), np.where(rng.random(40) < 0.5, -1.0, 1.0)
    worker = Worker("tcp://127.0.0.1:1", {"x": X, "y": y})
    host, port = direct._serve({worker.address: [("x", "y")]}, TOKEN, 30.0, worker)
    yield host, port, X, y
    worker.executors["default"].shutdown(wait=False)


def step(host, port, X, y, timeout=10.0):
    """Connect with the token and take one gradient step; (gradient, seconds)."""
    start = time.monotonic()
    rightful = socket.create_connection((host, port), timeout=5)
    rightful.sendall(TOKEN)
    chans = direct.Channels([("tcp://127.0.0.1:1", [0], [("x", "y")])], [rightful], 1)
    loss = get_loss("logistic")
    try:
        got = chans.gradient(np.ones(3), loss, timeout)[0]
    finally:
        chans.close()
    assert np.array_equal(got, direct.gradient_block(X, y, np.ones(3), loss))
    return got, time.monotonic() - start


@pytest.mark.parametrize("silent", [1, 5])
def test_silent_clients_connected_first_do_not_delay_the_engine(served, silent):
    host, port, X, y = served
    peers = [socket.create_connection((host, port), timeout=5) for _ in range(silent)]
    try:
        time.sleep(0.05)  # all in the accept queue before the engine
        _, seconds = step(host, port, X, y)
    finally:
        for p in peers:
            p.close()
    assert seconds < 0.25 * direct.CONNECT_SECONDS, f"{silent} silent peers: {seconds:.2f} s"


def test_wrong_partial_and_closed_peers_do_not_delay_the_engine(served):
    host, port, X, y = served
    wrong = socket.create_connection((host, port), timeout=5)
    wrong.sendall(b"x" * 32)
    partial = socket.create_connection((host, port), timeout=5)
    partial.sendall(TOKEN[:16])  # half a token, then nothing
    closed = socket.create_connection((host, port), timeout=5)
    closed.close()
    silent = socket.create_connection((host, port), timeout=5)
    try:
        time.sleep(0.05)
        _, seconds = step(host, port, X, y)
        assert seconds < 0.25 * direct.CONNECT_SECONDS
        with contextlib.suppress(ConnectionResetError):  # reset, or closed without a word
            assert wrong.recv(10) == b""
        for peer in (partial, silent):  # closed once the engine's connection was taken
            peer.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                assert peer.recv(10) == b""
    finally:
        for peer in (wrong, partial, silent):
            peer.close()


def test_more_silent_peers_than_the_socket_holds(served):
    host, port, X, y = served
    count = direct.PENDING_CONNECTIONS + 10
    peers = [socket.create_connection((host, port), timeout=5) for _ in range(count)]
    try:
        time.sleep(0.1)
        _, seconds = step(host, port, X, y)
    finally:
        for p in peers:
            p.close()
    assert seconds < 0.25 * direct.CONNECT_SECONDS


def test_a_silent_peer_is_closed_after_connect_seconds(monkeypatch):
    monkeypatch.setattr(direct, "CONNECT_SECONDS", 0.3)
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(10, 2)), np.ones(10)
    worker = Worker("tcp://127.0.0.1:2", {"x": X, "y": y})
    host, port = direct._serve({worker.address: [("x", "y")]}, TOKEN, 30.0, worker)
    silent = socket.create_connection((host, port), timeout=5)
    start = time.monotonic()
    with contextlib.suppress(ConnectionResetError):
        assert silent.recv(10) == b""
    assert time.monotonic() - start < 3.0
    silent.close()
    rightful = socket.create_connection((host, port), timeout=5)  # still served
    rightful.sendall(TOKEN)
    chans = direct.Channels([(worker.address, [0], [("x", "y")])], [rightful], 1)
    got = chans.gradient(np.ones(2), get_loss("logistic"), 5.0)[0]
    chans.close()
    assert got.shape == (2,)
    worker.executors["default"].shutdown(wait=False)


def test_no_connection_gives_none_after_the_wait():
    server = socket.create_server(("127.0.0.1", 0))
    start = time.monotonic()
    with server:
        assert direct._accept(server, TOKEN, 0.2) is None
    assert time.monotonic() - start < 1.0
