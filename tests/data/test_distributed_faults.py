"""Faults on a 2-process LocalCluster end cleanly, and data too large are refused at once.

A worker killed mid-fit is recovered (in-memory partitions scattered again from the
client, Dask partitions recomputed by the scheduler) with the result of the fit without
the fault; a frozen worker (SIGSTOP) or a closed scheduler ends the fit within its timeout
with one line of ClusterError and no weights (a scheduler frozen mid-fit does not stop the
direct steps; the next fit ends within its step_timeout); data whose copies cannot fit in
memory (the client's, or the workers' memory_limit) are refused before anything is
scanned or sent.
Every cluster is closed and every worker process it started is gone after the tests.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

from objpert._data import contract, prepare  # noqa: E402
from objpert._data.distributed import from_csv, from_parquet, prepare_dask  # noqa: E402
from objpert._engines import distributed as engines  # noqa: E402
from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression  # noqa: E402
from objpert.exceptions import (  # noqa: E402
    ClusterError,
    DataError,
    ParameterError,
)

pytestmark = [
    pytest.mark.load,
    pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning"),
    pytest.mark.filterwarnings("ignore::objpert.exceptions.PrivacyLeakWarning"),
]

N, D = 2000, 5
EST = dict(epsilon=4.0, delta=1e-5, mu=1.0, data_norm=1.0, max_iter=30, random_state=7)
CLASSES = dict(classes=[0, 1])
NO_MEMORY_MANAGEMENT = {  # tiny memory_limit values, not enforced: the checks read them
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
}


@contextlib.contextmanager
def local_cluster(**kwargs):
    """A LocalCluster of 2 worker processes and its client; on exit both are closed and any
    worker process they started that is still alive is killed (by its pid)."""
    before = {p.pid for p in multiprocessing.active_children()}
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", **kwargs
    )
    client = distributed.Client(cluster, timeout=60)  # a loaded machine connects slowly
    try:
        yield cluster, client
    finally:  # a scheduler closed by a test is not waited for (connect timeout)
        with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
            for close in (client.close, cluster.close):
                with contextlib.suppress(Exception):
                    close(timeout=10)
        for child in multiprocessing.active_children():
            if child.pid not in before:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
                child.join(5)


@pytest.fixture(scope="module")
def cluster():
    with local_cluster() as (c, client):
        yield c, client


@pytest.fixture
def client(cluster):
    """The module's client, once both workers are up: a worker killed by an earlier test is
    restarted by its nanny, slowly on a loaded machine; a test skips (with the reason)
    rather than fail when it is not back within 180 s."""
    _, client = cluster
    try:
        client.wait_for_workers(2, timeout=180)
    except (TimeoutError, distributed.exceptions.WorkerStartTimeoutError):
        pytest.skip("a worker killed by an earlier test was not restarted within 180 s")
    return client


@pytest.fixture(scope="module")
def tiny():
    """Workers whose memory_limit is 4 MiB (not enforced)."""
    with dask.config.set(NO_MEMORY_MANAGEMENT), local_cluster(memory_limit="4MiB") as pair:
        yield pair[1]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    y = (X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + 0.1 * rng.normal(size=N) > 0).astype(int)
    t = X @ np.array([1.0, -2.0, 0.5, 0.0, 1.0]) + 0.3 * rng.normal(size=N)
    return X, y, t


def at_step(monkeypatch, step, action):
    """Run ``action(engine)`` before gradient step ``step`` of every DaskEngine."""
    original = engines.DaskEngine.glm_gradient
    seen = []

    def gradient(self, W, y, loss):
        seen.append(self)
        if len(seen) == step:
            action(self)
        return original(self, W, y, loss)

    monkeypatch.setattr(engines.DaskEngine, "glm_gradient", gradient)
    return seen


def holder(client, futures):
    """(address, pid) of a worker holding some of ``futures``."""
    pids = client.run(os.getpid)
    holders = sorted({a for v in client.who_has(futures).values() for a in v})
    return holders[0], pids[holders[0]]


def close(a, b, rel=1e-12):
    a, b = np.asarray(a), np.asarray(b)
    assert np.max(np.abs(a - b)) <= rel * np.max(np.abs(b))


def one_line(err):
    text = str(err.value)
    assert "\n" not in text and "Traceback" not in text
    return text


# ---------------------------------------------------------------- a worker killed


def test_killed_worker_with_scattered_input_is_recovered(client, data, monkeypatch):
    X, y, _ = data
    ref = PrivateLogisticRegression(**EST, **CLASSES).set_params(client=client).fit(X, y)
    killed = []

    def kill(engine):
        pid = holder(client, engine._x)[1]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    seen = at_step(monkeypatch, 5, kill)
    start = time.perf_counter()
    got = PrivateLogisticRegression(**EST, **CLASSES).set_params(client=client).fit(X, y)
    elapsed = time.perf_counter() - start
    assert killed and len(seen) == got.n_iter_.sum() > 5
    assert seen[-1].restores == 1 and seen[-1].direct_steps >= len(seen) - 3
    close(got.coef_, ref.coef_)
    close(got.intercept_, ref.intercept_)
    assert elapsed < 50  # recovered, not waiting out the 60 s step timeout (loaded: slack)
    client.wait_for_workers(2, timeout=180)
    assert killed[0] not in client.run(os.getpid).values()  # the worker was restarted


def test_killed_worker_with_dask_input_is_recomputed(client, data, monkeypatch):
    X, _, t = data
    ref = PrivateRobustRegression(**EST).fit(X, t)  # in memory
    chunked = (da.from_array(X, chunks=(500, D)), da.from_array(t, chunks=500))
    at_step(monkeypatch, 4, lambda e: os.kill(holder(client, e._x)[1], signal.SIGKILL))
    got = PrivateRobustRegression(**EST).set_params(client=client).fit(*chunked)
    close(got.coef_, ref.coef_, rel=1e-10)


def test_killed_worker_during_the_check_is_recovered(client, data, monkeypatch):
    X, y, _ = data
    ref = prepare_dask(X, y, data_norm=1.0, client=client, partitions=4)
    from objpert._data import distributed as on_cluster

    original = on_cluster._Recipe.statistics
    calls = []

    def statistics(self, futures, doing):
        calls.append(doing)
        if len(calls) == 1:  # the first check: kill a worker holding scattered blocks
            engines.collect(client, futures, timeout=20, doing=doing, gather=False)
            os.kill(holder(client, futures)[1], signal.SIGKILL)
        return original(self, futures, doing)

    monkeypatch.setattr(on_cluster._Recipe, "statistics", statistics)
    got = prepare_dask(X, y, data_norm=1.0, client=client, partitions=4)
    assert got.X.lengths == ref.X.lengths
    w = np.linspace(-1, 1, D + 1)
    close(got.X.matvec(w), ref.X.matvec(w))
    assert np.array_equal(got.X.labels(), ref.X.labels())


# ---------------------------------------------------------------- a worker frozen


@pytest.mark.slow
def test_frozen_worker_ends_the_fit_within_the_timeout(client, data, monkeypatch):
    """A worker frozen during a (direct) step: the fit's step_timeout ends it. The checks
    before the steps wait up to 60 s (a loaded machine); the steps' timeout is 4 s from the
    freeze on (the engine reads it at every step)."""
    X, y, _ = data
    frozen = []

    def freeze(engine):
        pid = holder(client, engine._x)[1]
        engine.timeout = 4.0
        frozen.append((pid, time.perf_counter()))
        os.kill(pid, signal.SIGSTOP)

    at_step(monkeypatch, 3, freeze)
    est = PrivateLogisticRegression(**EST, **CLASSES)
    try:
        with pytest.raises(ClusterError, match="did not finish within 4 s") as err:
            est.set_params(client=client, step_timeout=60).fit(X, y)
    finally:
        for pid, _ in frozen:
            os.kill(pid, signal.SIGCONT)
    elapsed = time.perf_counter() - frozen[0][1]
    assert 4 <= elapsed < 12
    assert one_line(err).startswith("A gradient step") and "timeout=" in str(err.value)
    assert not hasattr(est, "coef_")  # nothing released
    assert client.submit(lambda: 1, pure=False).result(timeout=20) == 1


@pytest.mark.slow
def test_frozen_worker_ends_the_check_within_the_timeout(client, data):
    X, y, _ = data
    pid = sorted(client.run(os.getpid).items())[0][1]
    os.kill(pid, signal.SIGSTOP)
    try:
        for args in ((X, y), (da.from_array(X, chunks=500), da.from_array(y, chunks=500))):
            start = time.perf_counter()
            with pytest.raises(ClusterError, match="did not finish within 2 s") as err:
                prepare_dask(*args, data_norm=1.0, client=client, timeout=2)
            assert time.perf_counter() - start < 12  # 2 s, and slack for a loaded machine
            assert "nothing was released" in one_line(err)
    finally:
        os.kill(pid, signal.SIGCONT)
    assert client.submit(lambda: 1, pure=False).result(timeout=20) == 1


def test_timeout_is_checked_and_inherited(client, data):
    X, y, _ = data
    with pytest.raises(ParameterError, match="timeout"):
        prepare_dask(X, y, data_norm=1.0, client=client, timeout=0)
    prepared = prepare_dask(X, y, data_norm=1.0, client=client, timeout=2.5)
    assert prepared.X.timeout == 2.5
    from objpert._data.distributed import for_plan_dask

    engine, _, _ = for_plan_dask(
        prepared.X, None, n=N, d=D + 1, zeta=prepared.zeta, label_kind="binary", clip=False
    )
    assert engine.timeout == 2.5
    assert prepare_dask(X, y, data_norm=1.0, client=client).X.timeout == engines.STEP_TIMEOUT


# ---------------------------------------------------------------- the scheduler gone


@pytest.mark.slow
def test_closed_scheduler_ends_the_fit_cleanly(data, monkeypatch):
    X, y, _ = data
    with local_cluster() as (cluster, client):
        est = PrivateLogisticRegression(**EST, **CLASSES)
        closed = []

        def close_scheduler(engine):
            closed.append(time.perf_counter())
            cluster.sync(cluster.scheduler.close)

        at_step(monkeypatch, 3, close_scheduler)
        with pytest.raises(ClusterError, match="connection to the Dask scheduler") as err:
            est.set_params(client=client).fit(X, y)
        assert time.perf_counter() - closed[0] < 10
        assert "nothing was released" in one_line(err)
        assert not hasattr(est, "coef_")


# ---------------------------------------------------------------- the scheduler frozen


SCHEDULER = """
import sys, distributed
cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
print(cluster.scheduler_address, flush=True)
sys.stdin.read()
cluster.close(timeout=10)
"""


@contextlib.contextmanager
def cluster_in_subprocess():
    """(scheduler process, its address): a LocalCluster run by a subprocess of its own
    session; closed, and its process group killed if need be, on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SCHEDULER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc, proc.stdout.readline().strip()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
        with contextlib.suppress(Exception):
            proc.stdin.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


@pytest.mark.slow
def test_frozen_scheduler_ends_the_fit_within_the_step_timeout(data, monkeypatch):
    X, y, _ = data
    ref = PrivateLogisticRegression(**EST, **CLASSES).fit(X, y)
    with cluster_in_subprocess() as (proc, address):
        assert address.startswith("tcp://")
        client = distributed.Client(address, timeout=60)
        try:
            client.wait_for_workers(2, timeout=120)
            # frozen after the first step: the direct steps need no scheduler
            original, seen = engines.DaskEngine.glm_gradient, []

            def gradient(self, W, yy, loss):
                seen.append(self)
                if len(seen) == 3:
                    os.kill(proc.pid, signal.SIGSTOP)
                return original(self, W, yy, loss)

            monkeypatch.setattr(engines.DaskEngine, "glm_gradient", gradient)
            got = (
                PrivateLogisticRegression(**EST, **CLASSES)
                .set_params(client=client, step_timeout=30)
                .fit(X, y)
            )
            assert len(seen) == got.n_iter_[0] > 3 and seen[-1].direct_steps >= len(seen) - 1
            close(got.coef_, ref.coef_)
            # still frozen: the next fit ends within its timeout, nothing released
            est = PrivateLogisticRegression(**EST, **CLASSES)
            start = time.perf_counter()
            # the scheduler is asked first, or the check of the data on the workers waits for
            # it first (which one depends on timing): either way the scheduler is named as
            # not answering within the step timeout
            with pytest.raises(ClusterError, match=r"within 2 s") as err:
                est.set_params(client=client, step_timeout=2).fit(X, y)
            assert time.perf_counter() - start < 30
            assert "scheduler" in one_line(err) and "answer" in one_line(err)
            assert "nothing was" in one_line(err)
            assert not hasattr(est, "coef_")
        finally:
            os.kill(proc.pid, signal.SIGCONT)
            client.close(timeout=10)


# ---------------------------------------------------------------- memory


def test_memmap_too_large_is_refused_before_any_scan(tmp_path, monkeypatch):
    n, d = 20_000, 10
    mm = np.memmap(tmp_path / "x.f32", dtype=np.float32, mode="w+", shape=(n, d))
    mm[:] = 0.01
    y = np.arange(n) % 2
    mm64 = np.memmap(tmp_path / "x.f64", dtype=np.float64, mode="w+", shape=(n, d))
    monkeypatch.setattr(contract, "available_memory", lambda: 1 << 20)  # 1 MiB left

    def scanned(*args, **kwargs):
        raise AssertionError("the data were scanned before the refusal")

    with monkeypatch.context() as m:
        m.setattr(contract, "count_nonfinite", scanned)
        m.setattr(contract, "row_norms", scanned)
        start = time.perf_counter()
        with pytest.raises(DataError, match=r"needs about 3\.8 MiB of memory but 1\.0 MiB"):
            prepare(mm, y, data_norm=1.0)  # float32: the float64 copy, clipped, intercept
        with pytest.raises(DataError, match=r"X \(20000 x 10 float64\).*Dask") as err:
            PrivateLogisticRegression(**EST, **CLASSES).fit(mm64, y)
        assert time.perf_counter() - start < 2
        one_line(err)
    monkeypatch.setenv(contract.MEMORY_CHECK_ENV, "0")  # the check skipped: the data fit
    assert prepare(mm, y, data_norm=1.0).X.shape == (n, d + 1)


def test_memory_estimate_and_available_memory():
    X = np.zeros((1000, 10))
    B = 8 * 1000 * 10
    assert contract.conversion_bytes(X) == 0
    assert contract.conversion_bytes(X.astype(np.float32)) == B
    assert contract.conversion_bytes(np.asfortranarray(X)) == B
    peak = contract.in_memory_peak(X, clip=True, intercept=True)
    assert 2 * B < peak <= 2.5 * B  # the clipped copy, then the copy with the intercept
    assert contract.in_memory_peak(X, clip=False, intercept=False) < 0.5 * B
    avail = contract.available_memory()
    assert avail is None or avail > 0


def test_dask_data_too_large_for_the_workers_are_refused_at_once(tiny, tmp_path):
    X = da.zeros((1_000_000, 20), chunks=(100_000, 20))  # 160 MB, never computed
    y = da.ones(1_000_000, chunks=100_000)
    start = time.perf_counter()
    with pytest.raises(DataError, match=r"needs about 183\.1 MiB of worker memory") as err:
        PrivateRobustRegression(**EST).set_params(client=tiny).fit(X, y)
    assert time.perf_counter() - start < 10
    assert "8.0 MiB (memory_limit)" in one_line(err)
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(60_000, 10)) / 10, columns=list("abcdefghij"))
    frame.assign(label=rng.integers(0, 2, 60_000)).to_parquet(tmp_path / "big.parquet")
    Xp, yp = from_parquet(str(tmp_path / "big.parquet"), None, "label")
    start = time.perf_counter()
    with pytest.raises(DataError, match=r"Parquet data \(60000 rows x 10 feature columns\)"):
        PrivateLogisticRegression(**EST, **CLASSES).set_params(client=tiny).fit(Xp, yp)
    with pytest.raises(DataError, match="worker memory once checked"):
        prepare_dask(frame.to_numpy(), np.zeros(60_000), data_norm=1.0, client=tiny)
    assert time.perf_counter() - start < 10
    assert tiny.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)) == 0


def test_partitions_are_sized_from_the_memory_limit(tiny, data, tmp_path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20_000, D)) / 10
    t = X.sum(axis=1)
    prepared = prepare_dask(X, t, data_norm=1.0, labels="real", client=tiny)
    assert prepared.X.partitions > 2  # more than one per worker thread: blocks fit
    got = PrivateRobustRegression(**EST).set_params(client=tiny).fit(X, t)
    close(got.coef_, PrivateRobustRegression(**EST).fit(X, t).coef_, rel=1e-10)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(D)]).assign(label=t)
    frame.to_csv(tmp_path / "big.csv", index=False)  # a partition of unknown size
    Xc, yc = from_csv(str(tmp_path / "big.csv"), None, "label")
    with pytest.raises(DataError, match="a partition of 20000 rows needs about"):
        PrivateRobustRegression(**EST).set_params(client=tiny).fit(Xc, yc)  # refused on the worker
