"""What a serving task of the Spark engine runs on an executor.

The task reads its partition once through Arrow, converts it to one float64 block and
checks it under the data contract (:func:`_block`: finite values, rows of norm <=
``data_norm`` clipped or counted, an intercept column appended, labels read), connects
back to the driver and answers its requests on the block until told to stop
(:func:`serve`). The driver's side is :mod:`objpert.spark._driver`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Client
from typing import Any

import numpy as np

from objpert._data.contract import NORM_RTOL, row_norms
from objpert._data.labels import as_targets, class_codes
from objpert._engines.distributed import aligned
from objpert._engines.distributed_direct import gradient_block
from objpert.exceptions import DataError

__all__ = ["LabelTarget", "Source", "serve"]


@dataclass(frozen=True)
class LabelTarget:
    """Which labels a release descends on, from the labels the tasks hold: ``"ovr"``:
    +1 for class code ``k``, -1 otherwise (binary: k = 1, the larger class); ``"real"``:
    the real targets as they are."""

    kind: str
    k: int = 0


@dataclass(frozen=True)
class Source:
    """What every serving task is given (pickled into the job's closure)."""

    features: str | tuple[str, ...]  # one array column, or numeric columns
    label: str
    data_norm: float
    intercept: float  # c of the intercept column; 0.0 for none
    labels: str  # "classes" or "real"
    address: tuple[str, int]
    authkey: bytes
    fault: tuple[str, int, str] | None = None  # testing: (flag file, step, "raise"/"exit")


def _block(batches: Iterator[Any], src: Source) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The task's partition as one float64 block (+ intercept column), its raw labels and
    the statistics of the check (errors are returned there, raised by the driver)."""

    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    stats: dict[str, Any] = {"missing": 0, "ragged": False, "nonfinite": 0, "error": None}
    width = None if isinstance(src.features, str) else len(src.features)
    for rb in batches:
        if isinstance(src.features, str):
            col = rb.column(src.features)
            stats["missing"] += col.null_count
            if col.null_count:
                col = col.filter(col.is_valid())
            lengths = np.diff(np.asarray(col.offsets))
            if lengths.size:
                width = int(lengths[0]) if width is None else width
                if np.any(lengths != width):
                    stats["ragged"] = True
                    continue
            values = col.flatten().to_numpy(zero_copy_only=False)
            xs.append(np.asarray(values, dtype=np.float64).reshape(-1, width or 0))
        else:
            cols = [rb.column(c) for c in src.features]
            stats["missing"] += sum(c.null_count for c in cols)
            xs.append(
                np.column_stack([c.to_numpy(zero_copy_only=False) for c in cols]).astype(
                    np.float64, copy=False
                )
            )
        lab = rb.column(src.label)
        stats["missing"] += lab.null_count
        ys.append(np.asarray(lab.to_numpy(zero_copy_only=False)))
        del rb
    width = width or 0
    rows = sum(len(x) for x in xs)
    extra = 1 if src.intercept else 0
    X = np.empty((rows, width + extra), dtype=np.float64)
    at = 0
    for x in xs:
        X[at : at + len(x), :width] = x
        at += len(x)
    xs.clear()
    y = np.concatenate(ys) if ys else np.empty(0)
    stats.update(rows=rows, cols=width, y_rows=int(y.size), clipped=0, classes=None)
    values = X[:, :width]
    stats["nonfinite"] = int(values.size - np.count_nonzero(np.isfinite(values)))
    if stats["nonfinite"] == 0 and rows:
        norms = row_norms(np.ascontiguousarray(values) if extra else values)
        over = norms > src.data_norm * (1.0 + NORM_RTOL)
        stats["clipped"] = int(np.count_nonzero(over))
        if stats["clipped"]:  # Assumption 1: rows scaled down to data_norm (in place)
            values[over] *= (src.data_norm / norms[over])[:, None]
    if extra:
        X[:, width] = src.intercept
    if src.labels == "real":
        try:
            y = aligned(as_targets(y)) if y.size else y.astype(np.float64)
        except DataError as err:
            stats["error"] = err
    else:
        stats["classes"] = np.unique(y) if y.size else y
    return X, y, stats


def _labels_for(target: LabelTarget, y: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
    if target.kind == "real":
        return y
    assert codes is not None
    return np.where(codes == target.k, 1.0, -1.0)


def _answer(msg: tuple[Any, ...], X: np.ndarray, y: np.ndarray, state: dict[str, Any]) -> Any:
    """One request of the driver on the task's block."""
    what = msg[0]
    if what == "classes":
        state["codes"] = class_codes(y, msg[1]).astype(np.float64)
        state["targets"] = {}
        return None
    if what == "matvec":
        return X @ aligned(msg[2])
    if what == "rmatvec":
        return X.T @ aligned(msg[2])
    target = msg[3]
    cache = state.setdefault("targets", {})
    if target not in cache:
        cache.clear()
        cache[target] = aligned(_labels_for(target, y, state.get("codes")))
    if what == "labels":
        return cache[target]
    return gradient_block(X, cache[target], msg[2], msg[4])  # "grad"


def serve(batches: Iterator[Any], src: Source) -> Iterator[Any]:
    """A serving task (``mapInArrow``): build and check the block, say hello to the
    driver with its statistics, answer requests until told to stop."""
    import pyarrow as pa
    from pyspark import TaskContext

    X, y, stats = _block(batches, src)
    part = TaskContext.get().partitionId()
    conn = Client(src.address, authkey=src.authkey)
    try:
        conn.send(("hello", part, stats))
        state: dict[str, Any] = {}
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            if src.fault is not None and msg[0] == "grad" and msg[1] == src.fault[1]:
                _fault(src.fault)
            reply = _answer(msg, X, y, state)
            if reply is not None:
                conn.send((msg[1], part, reply))
    finally:
        conn.close()
    yield pa.RecordBatch.from_pydict({"part": [part]})


def _fault(fault: tuple[str, int, str]) -> None:
    """Testing: fail this task once (the flag file is removed first), by an exception or
    by ending the Python worker."""
    path, _, how = fault
    try:
        os.remove(path)
    except FileNotFoundError:
        return
    if how == "exit":
        os._exit(1)
    raise RuntimeError("objpert testing fault: this task fails once")
