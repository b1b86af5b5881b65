"""The Dask engine: X and y partitioned by rows and held on a dask.distributed cluster.

Each row partition (X_b, y_b) is kept in the memory of one worker (a future per
partition). An iteration of perturbed gradient descent is one map-reduce: the client sends
w (d floats) to each worker holding partitions, directly (one request per worker, no
scheduler: :mod:`objpert._engines.distributed_direct`), and the worker computes
X_b^T l'(X_b w, y_b) for each partition it holds; the client adds the d floats per
partition that come back in partition order, so the result does not depend on which worker
finished first. The first step, and a step after a fault, is a task graph through the
scheduler instead (one task per worker thread), with the same numbers. The certificate,
the noise draw and the iterate stay on the client.

Engines are built by the data contract on a cluster (:mod:`objpert._data.distributed`),
which checks and bounds every partition first.

Faults end cleanly. A worker lost during a call is recovered: the call is repeated as a
task graph, the scheduler recomputes partitions read from a Dask graph, and the engine
remakes the others (in-memory input scattered from the client) from the client's copy,
with the same result. Every call waits at most ``timeout`` seconds (:data:`STEP_TIMEOUT`
by default) for the cluster, every question to the scheduler too; a timeout, a scheduler
gone away or partitions that cannot be remade end the call with a one-line
:class:`~objpert.exceptions.ClusterError`, before any weights exist.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from typing import Any

import numpy as np

from objpert._engines.distributed_direct import (
    Channels,
    DirectTimeout,
    Pins,
    aligned,
    direct_gradient,
    install,
    open_channels,
    pins,
)
from objpert._engines.distributed_direct import gradient_block as _gradient_block
from objpert._losses import Loss
from objpert._validation import check_positive
from objpert.exceptions import ClusterError, DataError

__all__ = [
    "RESTORE_ATTEMPTS",
    "STEP_TIMEOUT",
    "DaskEngine",
    "aligned",
    "ask_scheduler",
    "collect",
    "nrows",
    "step_timeout",
]

#: Seconds one call of an engine (a gradient step: one round trip to the workers) may wait
#: for the cluster before the fit ends with a ClusterError (a frozen, overloaded or
#: unreachable worker). The checking pass waits at most this long for each next partition.
#: Override it with ``timeout=`` where the engine is built (``prepare_dask``,
#: ``for_plan_dask``); ``math.inf`` waits for ever.
STEP_TIMEOUT = 60.0
#: Times one call remakes partitions lost with a worker before it gives up.
RESTORE_ATTEMPTS = 3
_ASK_TIMEOUT = 10.0  # seconds for a question to the scheduler (who holds what)


def step_timeout(timeout: float | None, name: str = "timeout") -> float:
    """``timeout`` checked (seconds > 0, ``math.inf`` for none; ParameterError naming the
    argument ``name`` otherwise), STEP_TIMEOUT for None."""
    if timeout is None:
        return float(STEP_TIMEOUT)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout == math.inf:
        return math.inf
    return check_positive(name, timeout)


# ---------------------------------------------------------------- on the workers


def _matvec_block(X: Any, W: np.ndarray) -> np.ndarray:
    return X @ aligned(W)


def _rmatvec_block(X: Any, R: np.ndarray) -> np.ndarray:
    return X.T @ aligned(R)


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


# ---------------------------------------------------------------- faults


class PartitionsLost(Exception):  # noqa: N818 (a signal between engine and builder)
    """Futures were cancelled because data they need left with a worker (internal: the
    engine remakes the partitions, or turns this into a ClusterError)."""


def running(client: Any) -> bool:
    """Whether ``client`` is connected to its scheduler."""
    return getattr(client, "status", "running") == "running"


def _address(client: Any) -> str:
    try:
        return f" at {client.scheduler.address}"
    except Exception:
        return ""


def scheduler_lost(client: Any, doing: str) -> ClusterError:
    return ClusterError(
        f"the connection to the Dask scheduler{_address(client)} was lost during {doing} "
        "(the scheduler closed, crashed or is unreachable); nothing was released: restart "
        "the cluster (or reconnect) and fit again"
    )


def not_remade(doing: str, detail: str) -> ClusterError:
    return ClusterError(
        f"a Dask worker holding partitions of the data was lost during {doing}, and "
        f"{detail}; nothing was released: check the workers (their logs: a memory limit?) "
        "and fit again"
    )


def _reasons(err: BaseException) -> set[str]:
    groups = getattr(err, "error_groups", None)
    if groups is not None:
        return {str(g.reason) for g in groups}
    return {str(getattr(err, "reason", "unknown"))}


def ask_scheduler(client: Any, question: str, timeout: float = _ASK_TIMEOUT, **kwargs: Any) -> Any:
    """A question to the scheduler (``who_has``, ``processing``, ``ncores``) that waits at
    most ``timeout`` seconds (TimeoutError)."""
    return client.sync(getattr(client.scheduler, question), callback_timeout=timeout, **kwargs)


def _busy_workers(client: Any, keys: set[str]) -> list[str]:
    """The workers processing any of ``keys`` (best effort: [] when the scheduler does not
    answer quickly)."""
    try:
        processing = ask_scheduler(client, "processing", 5.0)
    except Exception:
        return []
    return sorted(w for w, ks in processing.items() if keys.intersection(map(str, ks)))


def timed_out(
    client: Any,
    doing: str,
    timeout: float,
    pending: Sequence[Any],
    workers: Sequence[str] | None = None,
) -> ClusterError:
    """The ClusterError of a call that waited ``timeout`` seconds for ``pending`` futures
    (or for the ``workers`` named)."""
    if workers is None:
        busy = _busy_workers(client, {str(f.key) for f in pending}) if running(client) else []
        if not busy and running(client) and not _answers(client):
            return ClusterError(
                f"{doing[:1].upper()}{doing[1:]} did not finish within {timeout:g} s and "
                f"the Dask scheduler{_address(client)} does not answer (frozen, overloaded "
                "or unreachable?); nothing was released: check the scheduler, restart it "
                "and fit again"
            )
    else:
        busy = list(workers)
    who = f"worker {', '.join(busy)} did not answer" if busy else "workers did not answer"
    return ClusterError(
        f"{doing[:1].upper()}{doing[1:]} did not finish within {timeout:g} s ({who}: "
        "frozen, overloaded or unreachable?); nothing was released: check the workers "
        "(client.scheduler_info()), restart any that hang and fit again, or allow more "
        "time (step_timeout= of the estimators' fit, timeout= of prepare_dask/"
        "for_plan_dask, or objpert._engines.distributed.STEP_TIMEOUT)"
    )


def _answers(client: Any) -> bool:
    """Whether the scheduler answers a question within a few seconds."""
    try:
        ask_scheduler(client, "ncores", 3.0)
    except Exception:
        return False
    return True


def collect(
    client: Any,
    futures: Sequence[Any],
    *,
    timeout: float,
    doing: str,
    per_result: bool = False,
    patience: Callable[[], bool] | None = None,
    gather: bool = True,
) -> list[Any]:
    """The results of ``futures``, in order, with the cluster's faults ended cleanly.

    Waits at most ``timeout`` seconds for all of them (``per_result``: for each next one to
    finish, as in a pass over the data), then ClusterError; on a timeout ``patience()``
    (when given) may grant one more period. A scheduler gone away or a task killed with its
    workers is a ClusterError; futures cancelled because their data left with a worker raise
    :class:`PartitionsLost`; an error raised by a task itself propagates unchanged.
    ``gather=False``: only wait (returns []).
    """
    from distributed import wait

    if not running(client):
        raise scheduler_lost(client, doing)
    futures = list(futures)
    limit = None if math.isinf(timeout) else timeout
    try:
        pending = futures
        while pending:
            try:
                with client.as_current():  # wait() uses the current client
                    if per_result:
                        done = wait(pending, timeout=limit, return_when="FIRST_COMPLETED").done
                    else:
                        done = wait(pending, timeout=limit).done
                if any(f.status == "error" for f in done):
                    break  # a task failed: raise its error now
                pending = [f for f in pending if not f.done()]
            except TimeoutError:
                if not running(client):
                    raise scheduler_lost(client, doing) from None
                if patience is not None and patience():
                    continue
                raise timed_out(client, doing, timeout, pending) from None
        if not gather and not any(f.status == "error" for f in futures):
            return []
        try:  # through the scheduler: bounded, as it may freeze after the wait
            return client.sync(client._gather, futures, callback_timeout=limit)
        except TimeoutError:
            raise timed_out(client, doing, timeout, futures) from None
    except ClusterError:
        raise
    except CancelledError as err:
        if not running(client) or "scheduler-connection-lost" in _reasons(err):
            raise scheduler_lost(client, doing) from None
        raise PartitionsLost(", ".join(sorted(_reasons(err)))) from None
    except Exception as err:
        if type(err).__name__ == "KilledWorker":
            raise ClusterError(
                f"a task was lost with its worker too many times during {doing} "
                "(distributed.scheduler.allowed-failures): a worker probably ran out of "
                "memory or crashed; nothing was released: give the workers more memory, "
                "use smaller partitions, and fit again"
            ) from None
        if not running(client):
            raise scheduler_lost(client, doing) from None
        if isinstance(err, OSError) and not any(f.status == "error" for f in futures):
            raise ClusterError(
                f"the connection to a Dask worker failed during {doing} ({type(err).__name__}"
                f": {str(err).splitlines()[0] if str(err) else 'no detail'}); nothing was "
                "released: check the workers and the network, and fit again"
            ) from None
        raise  # an error of the task itself (e.g. the data contract on a worker)


# ---------------------------------------------------------------- the engine


class DaskEngine:
    """X (and optionally labels y) as row partitions held by the workers of a cluster.

    Built by :func:`objpert._data.distributed.prepare_dask` and
    :func:`~objpert._data.distributed.for_plan_dask` (through :func:`objpert._data.prepare`
    and :func:`objpert._data.for_plan`), which check the data contract on the workers.
    ``matvec``/``rmatvec`` move n floats between client and cluster (tests, audits);
    ``glm_gradient`` moves d floats per partition and is what gradient descent uses: one
    request per worker sent to it directly (:attr:`direct`), else one task per worker
    thread (see :meth:`groups`); partial sums are added on the client in partition order
    (deterministic).

    ``timeout``: seconds a call may wait for the cluster (None: :data:`STEP_TIMEOUT`).
    ``origin``: what remakes partitions lost with a worker (``origin.remake(engine)``; set
    by the builders); without one, a lost partition the scheduler cannot recompute ends the
    call with a ClusterError.
    """

    is_dask_engine = True

    def __init__(
        self,
        x_parts: Sequence[Any],
        y_parts: Sequence[Any] | None,
        lengths: Sequence[int],
        d: int,
        client: Any,
        *,
        timeout: float | None = None,
        origin: Any = None,
    ):
        self._x = list(x_parts)
        self._y = None if y_parts is None else list(y_parts)
        self.lengths = tuple(int(k) for k in lengths)
        self.n, self.d = sum(self.lengths), int(d)
        self.client = client
        self.timeout = step_timeout(timeout)
        self._origin = origin
        self._offsets = np.cumsum(self.lengths)[:-1]
        self._groups: list[list[int]] | None = None
        self._pins: Pins | None = None  # where each partition's features and labels are
        self._channels: Channels | None = None  # sockets to the workers (direct steps)
        self._missing: int | None = None
        self.restores = 0  # partitions remade after lost workers (reported, for tests)
        #: Gradient steps sent straight to the workers (see
        #: :mod:`objpert._engines.distributed_direct`); False: every step is a task graph.
        self.direct = True
        #: Direct steps over the workers' own sockets where they are reached over plain TCP
        #: (:func:`~objpert._engines.distributed_direct.open_channels`); False: one Dask
        #: message per worker and step.
        self.sockets = True
        self.direct_steps = 0  # steps served by the direct path (reported, for tests)
        self.socket_steps = 0  # ... of which over the workers' sockets
        self._direct_misses = 0

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.d

    @property
    def partitions(self) -> int:
        return len(self._x)

    @property
    def has_labels(self) -> bool:
        return self._y is not None

    # ------------------------------------------------------------ faults

    def futures(self) -> list[Any]:
        return [*self._x, *(self._y or [])]

    def lost(self) -> list[int]:
        """Partitions whose features or labels were cancelled (lost with a worker)."""
        ys = self._y or [None] * len(self._x)
        return [
            i
            for i, (fx, fy) in enumerate(zip(self._x, ys, strict=True))
            if fx.status == "cancelled" or (fy is not None and fy.status == "cancelled")
        ]

    def remake_lost(self, doing: str) -> None:
        """Remake the partitions lost with a worker (nothing when none is)."""
        if self.lost():
            self._remake(doing)

    def _remake(self, doing: str) -> None:
        if self._origin is None:
            raise not_remade(doing, "the scheduler cannot recompute its partitions")
        self._origin.remake(self, doing)
        self._unplace()
        self.restores += 1

    def _unplace(self) -> None:
        """Forget where the partitions are (the next call places them again)."""
        self._groups = self._pins = None
        if self._channels is not None:
            self._channels.close()
            self._channels = None

    def _call(self, attempt: Callable[[], Any], doing: str) -> Any:
        """``attempt()``, repeated after remaking partitions lost with a worker (at most
        RESTORE_ATTEMPTS times); the same result as without the fault."""
        for k in range(RESTORE_ATTEMPTS + 1):
            try:
                if k:
                    self._remake(doing)
                return attempt()
            except PartitionsLost:
                if self._origin is None:
                    raise not_remade(
                        doing, "the scheduler cannot recompute its partitions"
                    ) from None
        raise not_remade(doing, f"its partitions were lost again after {RESTORE_ATTEMPTS} remakes")

    def _recomputing(self) -> bool:
        """On a timeout: whether the scheduler is recomputing partitions of a lost worker,
        fewer missing than at the last look (then the call may wait one more period)."""
        try:
            keys = [f.key for f in self.futures()]
            who = ask_scheduler(self.client, "who_has", keys=keys)
        except Exception:
            return False
        missing = sum(1 for k in keys if not who.get(k))
        before, self._missing = self._missing, missing
        return missing > 0 and (before is None or missing < before)

    # ------------------------------------------------------------ round trips

    def groups(self) -> list[list[int]]:
        """Partitions grouped by the worker holding them, split over its threads: one
        task per group and iteration (fewer tasks, less scheduling per iteration)."""
        if self._groups is None:
            self._call(self._place, "the placement of the partitions")
        assert self._groups is not None
        return self._groups

    def _place(self) -> None:
        doing = "the placement of the partitions"
        if self._groups is not None:
            return
        sizes = self.client.map(nrows, self._x, pure=False)
        collect(self.client, sizes, timeout=self.timeout, doing=doing)  # all in place
        try:
            who = ask_scheduler(self.client, "who_has", keys=[f.key for f in self._x])
            threads = ask_scheduler(self.client, "ncores")
        except TimeoutError:
            raise ClusterError(
                f"the Dask scheduler{_address(self.client)} did not answer within "
                f"{_ASK_TIMEOUT:g} s during {doing}; nothing was released: check the "
                "scheduler and fit again"
            ) from None
        except OSError:
            raise scheduler_lost(self.client, doing) from None
        by_worker: dict[str, list[int]] = {}
        for i, f in enumerate(self._x):
            by_worker.setdefault(sorted(who.get(f.key) or [""])[0], []).append(i)
        self._unplace()
        if self.direct and self._y is not None:
            self._pins = self._pin(doing)
        self._groups = [
            [int(i) for i in chunk]
            for addr, idx in sorted(by_worker.items())
            for chunk in np.array_split(idx, min(len(idx), threads.get(addr, 1)))
        ]

    def _pin(self, doing: str) -> Pins | None:
        """The partitions by the worker holding both their features and labels, with the
        direct step installed there (None: some partition has no such worker, or the
        workers cannot serve direct steps: every step then is a task graph)."""
        assert self._y is not None
        x_keys, y_keys = [f.key for f in self._x], [f.key for f in self._y]
        collect(self.client, self._y, timeout=self.timeout, doing=doing, gather=False)
        try:
            who = ask_scheduler(self.client, "who_has", keys=[*x_keys, *y_keys])
            placed = pins(x_keys, y_keys, who)
            if placed is not None:
                workers = [addr for addr, _, _ in placed]
                limit = None if math.isinf(self.timeout) else self.timeout
                self.client.sync(self.client._run, install, workers=workers, callback_timeout=limit)
                if self.sockets:
                    n = self.partitions
                    self._channels = open_channels(self.client, placed, n, self.timeout)
        except TimeoutError:
            raise timed_out(self.client, doing, self.timeout, []) from None
        except OSError:
            raise scheduler_lost(self.client, doing) from None
        except Exception:  # a worker without objpert's direct step: the task path only
            return None
        return placed

    def _direct_gradient(self, W: np.ndarray, loss: Loss) -> list[np.ndarray] | None:
        """One direct step (None: served by the task path instead, see :attr:`direct`)."""
        doing = "a gradient step"
        if not self.direct or not running(self.client):
            return None
        if self._groups is None or self.lost():
            return None  # placed (and remade) by the task path first
        if self._pins is None:
            return None
        channels = self._channels if self.sockets else None
        try:
            if channels is not None:
                parts = channels.gradient(W, loss, self.timeout)
            else:
                parts = direct_gradient(
                    self.client, self._pins, W, loss, self.partitions, self.timeout
                )
        except DirectTimeout as late:
            raise timed_out(self.client, doing, self.timeout, [], late.args[0]) from None
        except TimeoutError:
            raise timed_out(self.client, doing, self.timeout, []) from None
        if parts is None:  # a worker lost or a partition moved: place again
            self._unplace()
            self._direct_misses += 1
            self.direct = self._direct_misses <= RESTORE_ATTEMPTS
            return None
        self.direct_steps += 1
        self.socket_steps += channels is not None
        return parts

    def _gather(
        self, fn: Any, columns: Callable[[], Sequence[Sequence[Any]]], doing: str, **kwargs: Any
    ) -> list[Any]:
        """One round trip: ``fn`` on every partition (a task per group), the results in
        partition order whatever the grouping and the order the tasks finish in.
        ``columns()`` gives the per-partition arguments (read again after a remake)."""

        def attempt() -> list[Any]:
            if not running(self.client):  # fail at once: its futures are gone
                raise scheduler_lost(self.client, doing)
            self._place()
            groups = self._groups
            assert groups is not None
            cols = [[[seq[i] for i in g] for g in groups] for seq in columns()]
            futures = self.client.map(_run_group, *cols, fn=fn, pure=False, **kwargs)
            self._missing = None
            results = collect(
                self.client,
                futures,
                timeout=self.timeout,
                doing=doing,
                patience=self._recomputing,
            )
            out: list[Any] = [None] * self.partitions
            for g, rs in zip(groups, results, strict=True):
                for i, r in zip(g, rs, strict=True):
                    out[i] = r
            return out

        return self._call(attempt, doing)

    def matvec(self, W: np.ndarray) -> np.ndarray:
        parts = self._gather(_matvec_block, lambda: [self._x], "the product X w", W=np.asarray(W))
        return np.concatenate(parts, axis=0)

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        pieces = np.split(np.asarray(R), self._offsets, axis=0)
        return _sum_in_order(
            self._gather(_rmatvec_block, lambda: [self._x, pieces], "the product X^T r")
        )

    def glm_gradient(self, W: np.ndarray, y: Any, loss: Loss) -> np.ndarray:
        """X^T l'(XW, y) (unscaled) with the labels held by the workers; ``y`` is ignored
        (GLMObjective passes its own, None for this engine)."""
        if self._y is None:
            raise DataError("this DaskEngine holds no labels: build it with labels")
        W = np.asarray(W)
        parts = self._direct_gradient(W, loss)
        if parts is None:
            parts = self._gather(
                _gradient_block, lambda: [self._x, self._y], "a gradient step", W=W, loss=loss
            )
        return _sum_in_order(parts)

    def labels(self) -> np.ndarray:
        """The labels gathered to the client (n floats: for tests and audits)."""
        if self._y is None:
            raise DataError("this DaskEngine holds no labels")
        doing = "the transfer of the labels to the client"
        parts = self._call(
            lambda: collect(self.client, self._y or [], timeout=self.timeout, doing=doing),
            doing,
        )
        return np.concatenate(parts)

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
