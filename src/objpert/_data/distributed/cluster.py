"""The cluster: the client, and the memory its workers have (partition sizes, refusals
of data that cannot fit)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from objpert._data.contract import (
    format_bytes,
    memory_checks_enabled,
)
from objpert.exceptions import ClusterError, DataError

__all__ = [
    "CLUSTER_MEMORY_FRACTION",
    "LABELS",
    "PARTITION_MEMORY_FRACTION",
    "PARTITION_MEMORY_LIMIT",
    "get_client",
    "worker_memory",
]

#: Label handling of :func:`prepare_dask`: "classes" maps labels to class codes 0..K-1.
LABELS = ("binary", "real", "classes")
#: Share of the workers' total ``memory_limit`` that the checked data (features with the
#: intercept column, labels) may take; more is refused before anything is read (Dask
#: starts spilling to disk above 60%).
CLUSTER_MEMORY_FRACTION = 0.6
#: Share of a worker's ``memory_limit`` that the partitions its threads check at once
#: (each with its float64 conversion, clipped copy and intercept column) are sized to.
PARTITION_MEMORY_FRACTION = 0.2
#: ... and the share beyond which partitions that cannot be resized (DataFrames) are
#: refused.
PARTITION_MEMORY_LIMIT = 0.5
_CONNECT_SECONDS = 30.0  # the longest wait for a connection to a scheduler address
_METADATA_SECONDS = 5.0  # time allowed to read Parquet footers for the size estimate
_LABEL = "__objpert_label__"  # the label column while features and labels travel together
_LOCAL: dict[str, Any] = {}  # the LocalCluster client started by get_client(None)
_CLIENTS: dict[str, Any] = {}  # clients connected by address


def get_client(client: Any = None, timeout: float = _CONNECT_SECONDS) -> Any:
    """A ``distributed.Client``: ``client`` itself, a client connected to the scheduler
    address ``client`` (str; ClusterError when it does not answer within ``timeout``
    seconds), or (None) the current client, else a local cluster of threads started once
    per process."""
    from distributed import Client, LocalCluster

    if isinstance(client, Client):
        return client
    if isinstance(client, str):
        if client not in _CLIENTS or _CLIENTS[client].status != "running":
            try:
                _CLIENTS[client] = Client(
                    client, set_as_default=False, timeout=min(timeout, _CONNECT_SECONDS)
                )
            except (OSError, TimeoutError) as err:
                raise ClusterError(
                    f"no Dask scheduler answered at {client} within "
                    f"{min(timeout, _CONNECT_SECONDS):g} s ({type(err).__name__}): check "
                    "the address and that the scheduler runs, and fit again"
                ) from None
        return _CLIENTS[client]
    if client is not None:
        raise TypeError(f"client must be None, a distributed.Client or an address; got {client!r}")
    try:
        from distributed import get_client as current

        return current()
    except ValueError:
        pass
    if "client" not in _LOCAL or _LOCAL["client"].status != "running":
        cluster = LocalCluster(processes=False, dashboard_address=":0")
        _LOCAL["client"] = Client(cluster, set_as_default=False)
    return _LOCAL["client"]


def _current_client(client: Any) -> Any:
    """``client`` (resolved), else the current or objpert's local client; None if none runs
    (the readers never start a cluster)."""
    if client is not None:
        return get_client(client)
    try:
        from distributed import get_client as current

        return current()
    except (ImportError, ValueError):
        pass
    local = _LOCAL.get("client")
    return local if local is not None and local.status == "running" else None


# ---------------------------------------------------------------- memory


def worker_memory(client: Any, timeout: float = 10.0) -> list[tuple[str, int | None, int]]:
    """(address, ``memory_limit`` in bytes or None for none, threads) of each worker
    connected now. A scheduler that does not answer within ``timeout`` seconds (frozen,
    overloaded) is a ClusterError; [] when it cannot tell."""
    from objpert._engines.distributed import _address, ask_scheduler

    try:
        info = ask_scheduler(client, "identity", min(timeout, 10.0), n_workers=-1)
    except TimeoutError:
        raise ClusterError(
            f"the Dask scheduler{_address(client)} did not answer within {min(timeout, 10.0):g} "
            "s when asked for its workers (frozen, overloaded or unreachable?); nothing "
            "was read or released: check the scheduler, restart it and fit again"
        ) from None
    except Exception:  # no answer: nothing to check here (the next call reports the fault)
        return []
    return [
        (addr, int(w.get("memory_limit") or 0) or None, max(1, int(w.get("nthreads") or 1)))
        for addr, w in sorted(info.get("workers", {}).items())
    ]


@dataclass(frozen=True)
class _RowCost:
    """Bytes per row on the workers: ``held`` once checked (features with the intercept
    column, labels), ``checking`` while its partition is checked (the input, its float64
    conversion, a clipped copy, the copy with the intercept column)."""

    held: float
    checking: float

    @classmethod
    def of(cls, in_row: float, f64_row: float, *, convert: bool, intercept: bool) -> _RowCost:
        column = 8.0 if intercept else 0.0
        held = f64_row + column + 24.0  # labels: the engine's, the mechanism's, a temporary
        checking = in_row + (f64_row if convert else 0.0) + f64_row
        return cls(held, checking + ((f64_row + column) if intercept else 0.0))


def _partition_rows(workers: Sequence[tuple[str, int | None, int]], cost: _RowCost) -> int | None:
    """The most rows per partition that PARTITION_MEMORY_FRACTION of every worker's
    memory_limit checks, its threads all at work (None: limits unknown)."""
    budgets = [PARTITION_MEMORY_FRACTION * limit / t for _, limit, t in workers if limit]
    if not budgets or cost.checking <= 0 or not memory_checks_enabled():
        return None
    return max(1, int(min(budgets) // cost.checking))


def _require_cluster_memory(
    workers: Sequence[tuple[str, int | None, int]],
    n: int,
    cost: _RowCost,
    rows_max: int | None,
    what: str,
    advice: str,
) -> None:
    """Refuse (DataError, before anything is read) data whose checked copy exceeds
    CLUSTER_MEMORY_FRACTION of the workers' memory, or whose largest partition cannot be
    checked by the workers' threads within PARTITION_MEMORY_LIMIT of a worker's memory."""
    if not workers or any(limit is None for _, limit, _ in workers):
        return  # no worker yet, or one without a limit: nothing to compare with
    if not memory_checks_enabled():
        return
    total = sum(limit for _, limit, _ in workers if limit)
    need = n * cost.held
    if need > CLUSTER_MEMORY_FRACTION * total:
        raise DataError(
            f"{what} needs about {format_bytes(need)} of worker memory once checked "
            f"(float64 features, intercept column and labels) but the cluster's "
            f"{len(workers)} workers have {format_bytes(total)} (memory_limit), of which "
            f"{CLUSTER_MEMORY_FRACTION:.0%} ({format_bytes(CLUSTER_MEMORY_FRACTION * total)}) "
            "may hold data: add workers or memory, or fit on fewer rows or columns"
        )
    if not rows_max:
        return
    for addr, limit, threads in workers:
        part = rows_max * cost.checking
        if limit and threads * part > PARTITION_MEMORY_LIMIT * limit:
            raise DataError(
                f"{what}: partitions of up to {rows_max} rows need about "
                f"{format_bytes(part)} each while checked, {threads} at a time on worker "
                f"{addr} whose memory_limit is {format_bytes(limit)} (at most "
                f"{PARTITION_MEMORY_LIMIT:.0%} for them): {advice}"
            )


def _worker_limit() -> tuple[int | None, int]:
    """(memory_limit, threads) of the worker running this task ((None, 1) elsewhere)."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return None, 1
    manager = getattr(worker, "memory_manager", None)
    limit = getattr(manager, "memory_limit", None) or getattr(worker, "memory_limit", None)
    threads = getattr(getattr(worker, "state", None), "nthreads", None) or 1
    return (int(limit) if limit else None), int(threads)


def _guard_partition(rows: int, per_row: float, what: str) -> None:
    """On a worker: refuse a partition whose copies cannot fit in its memory_limit (its
    threads all at work) before making them (a DataError instead of a MemoryError)."""
    limit, threads = _worker_limit()
    need = rows * per_row
    if limit and memory_checks_enabled() and threads * need > PARTITION_MEMORY_LIMIT * limit:
        raise DataError(
            f"a partition of {rows} rows needs about {format_bytes(need)} while {what}, "
            f"{threads} at a time on a worker whose memory_limit is {format_bytes(limit)}: "
            "use smaller partitions (from_parquet(..., blocksize=...), "
            "ddf.repartition(npartitions=...)) or more memory per worker thread"
        )
