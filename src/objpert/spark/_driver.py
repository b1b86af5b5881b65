"""The driver's side of the Spark engine's serving job.

The driver listens for the serving tasks (:mod:`objpert.spark._executor`), runs the job
that holds them, waits for every block's first check (:meth:`ServingJob.first_pass`) and
sends each request to every block in rounds (:meth:`ServingJob.round`), replacing a task
that Spark retried and checking that it read its rows as the first time did.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Listener, wait
from typing import Any

import numpy as np

from objpert.exceptions import ClusterError

__all__ = ["CHECK_TIMEOUT", "ServingJob", "ServingTasks", "accept_tasks", "run_job"]

#: Seconds the first pass (every task reading, converting and checking its partition) and
#: the rebuild of a block by a retried task may take before a ClusterError.
CHECK_TIMEOUT = 1800.0


@dataclass
class ServingTasks:
    """The driver's side of the serving job: the listener, the job, one connection per
    block, the statistics of the first check."""

    listener: Listener
    hellos: queue.Queue = field(default_factory=queue.Queue)
    conns: dict[int, Connection] = field(default_factory=dict)
    stats: dict[int, dict[str, Any]] = field(default_factory=dict)
    classes: np.ndarray | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    closed: bool = False


def accept_tasks(tasks: ServingTasks) -> None:
    """Accept the tasks' connections (authenticated) and queue their hellos."""
    while not tasks.closed:
        try:
            conn = tasks.listener.accept()
        except OSError:
            if tasks.closed:
                return
            continue  # a connection that failed to authenticate
        try:
            hello = conn.recv()
        except (EOFError, OSError):
            conn.close()
            continue
        tasks.hellos.put((conn, hello))


def run_job(sc: Any, frame: Any, group: str, tasks: ServingTasks) -> None:
    try:
        sc.setJobGroup(group, "objpert: serving the checked blocks of a private fit", True)
        frame.collect()
    except BaseException as err:  # reported by the driver on its next call
        tasks.error = err
    finally:
        tasks.done.set()


class ServingJob:
    """The serving job as the engines of one fit share it (their labels differ): its
    tasks' connections, the blocks' shape and bound, the rounds of requests."""

    def __init__(self, sc: Any, tasks: ServingTasks, group: str, k: int, timeout: float):
        self.sc, self.tasks, self.group, self.k, self.timeout = sc, tasks, group, k, timeout
        self.lengths: tuple[int, ...] = ()
        self.n = self.d = 0
        self.zeta = 0.0
        self.classes: np.ndarray | None = None
        self.steps = 0  # requests sent (each step numbered: the testing fault picks one)
        self.retries = 0  # tasks replaced after a fault (reported, for tests)

    # ------------------------------------------------------------ connections

    def _failed(self, doing: str) -> ClusterError:
        err = self.tasks.error
        detail = " ".join(str(err).split())[:400] if err is not None else "it ended early"
        return ClusterError(
            f"the Spark job serving the data failed during {doing} ({detail}); nothing was "
            "released: check the executors (their logs: memory?) and fit again"
        )

    def _next_hello(self, deadline: float, doing: str) -> tuple[Connection, Any]:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClusterError(
                    f"{doing[:1].upper()}{doing[1:]} did not finish within {CHECK_TIMEOUT:g} s "
                    f"(waiting for {self.k} Spark tasks, one per block, to read their rows; "
                    "fewer free task slots than blocks?); nothing was released"
                )
            try:
                return self.tasks.hellos.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.tasks.done.is_set() and self.tasks.hellos.empty():
                    raise self._failed(doing) from None

    def first_pass(self) -> list[dict[str, Any]]:
        """Wait for every task's hello: the statistics of each block, in block order."""
        doing = "the check of the data on the executors"
        deadline = time.monotonic() + CHECK_TIMEOUT
        while len(self.tasks.conns) < self.k:
            conn, (_, part, stats) = self._next_hello(deadline, doing)
            old = self.tasks.conns.pop(part, None)
            if old is not None:
                old.close()
            self.tasks.conns[part] = conn
            self.tasks.stats[part] = stats
        return [self.tasks.stats[i] for i in range(self.k)]

    def _replace(self, part: int, doing: str) -> None:
        """Wait for the retried task of block ``part`` (and of any other block that says
        hello meanwhile); its block must check as the first did."""
        deadline = time.monotonic() + CHECK_TIMEOUT
        while part not in self.tasks.conns:
            conn, (_, got, stats) = self._next_hello(deadline, doing)
            first = self.tasks.stats[got]
            if (stats["rows"], stats["clipped"], stats["nonfinite"]) != (
                first["rows"],
                first["clipped"],
                first["nonfinite"],
            ):
                raise ClusterError(
                    f"a Spark task retried during {doing} read its rows differently from the "
                    "first time (a non-deterministic source?); nothing was released: cache or "
                    "checkpoint the DataFrame and fit again"
                )
            old = self.tasks.conns.pop(got, None)
            if old is not None:
                old.close()
            if self.tasks.classes is not None:
                conn.send(("classes", self.tasks.classes))
            self.tasks.conns[got] = conn
            self.retries += 1

    def round(self, what: str, args: Sequence[Any], *extra: Any) -> list[Any]:
        """One request per block (``args[i]`` to block i), the answers in block order;
        a task lost meanwhile is replaced by its retry and asked again."""
        doing = {"grad": "a gradient step"}.get(what, f"a request ({what})")
        if self.tasks.closed:
            raise ClusterError("this Spark engine is closed: its fit has ended")
        self.steps += 1
        step = self.steps
        out: list[Any] = [None] * self.k
        pending = set(range(self.k))
        lost: set[int] = set()

        def send(i: int) -> None:
            try:
                self.tasks.conns[i].send((what, step, args[i], *extra))
            except (OSError, EOFError, KeyError):
                self.tasks.conns.pop(i, None)
                lost.add(i)

        for i in range(self.k):
            send(i)
        while pending:
            for i in sorted(lost):
                self._replace(i, doing)
                lost.discard(i)
                send(i)
            live = {self.tasks.conns[i]: i for i in pending if i in self.tasks.conns}
            ready = wait(list(live), timeout=self.timeout if not lost else 0.5)
            if not ready and not lost:
                if self.tasks.done.is_set():
                    raise self._failed(doing)
                raise ClusterError(
                    f"{doing[:1].upper()}{doing[1:]} did not finish within {self.timeout:g} s "
                    "(a Spark task did not answer: frozen or overloaded executor?); nothing "
                    "was released: check the executors and fit again, or allow more time "
                    "(stepTimeout)"
                )
            for conn in ready:
                i = live[conn]
                try:
                    got_step, _, value = conn.recv()
                except (EOFError, OSError):
                    conn.close()
                    self.tasks.conns.pop(i, None)
                    lost.add(i)
                    continue
                if got_step == step:
                    out[i] = value
                    pending.discard(i)
        return out

    def set_classes(self, classes: np.ndarray) -> None:
        self.tasks.classes = self.classes = classes
        for i in range(self.k):
            self.tasks.conns[i].send(("classes", classes))

    def close(self) -> None:
        if self.tasks.closed:
            return
        self.tasks.closed = True
        for conn in self.tasks.conns.values():
            try:
                conn.send(("stop",))
                conn.close()
            except (OSError, EOFError):
                pass
        self.tasks.listener.close()
        self.tasks.done.wait(30.0)
        if not self.tasks.done.is_set():
            self.sc.cancelJobGroup(self.group)
