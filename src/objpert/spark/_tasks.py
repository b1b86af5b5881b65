"""What the Spark tasks run: one partition of the cached frame read through Arrow, turned
into one float64 block under the data contract, and reduced to a few numbers.

Every pass over the data is a DataFrame query ``frame.mapInArrow(fn, schema)`` whose
function is one of :func:`check_partition` (the first pass: the statistics of the
contract) and :func:`sum_partition` (a gradient, or a gradient and a d x d Hessian, of
the partition's rows at the driver's iterate). Each yields one row per partition, its
partition index and its numbers as float64 bytes; the driver adds the partitions in
index order (:mod:`objpert.spark._engine`). Nothing here holds state between passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert._data.contract import NORM_RTOL, row_norms
from objpert._data.labels import class_codes
from objpert._engines.blocked import single_threaded_blas
from objpert._losses import Loss

__all__ = ["LabelTarget", "Layout", "check_partition", "sum_partition"]

#: The schema of every pass's output: one row per partition.
PASS_SCHEMA = "part long, payload binary"


@dataclass(frozen=True)
class LabelTarget:
    """Which labels a release uses, from the label column: ``"ovr"``: +1 for class code
    ``k`` of the public label set, -1 otherwise (binary: k = 1, the larger class);
    ``"real"``: the real targets as they are."""

    kind: str
    k: int = 0


@dataclass(frozen=True)
class Layout:
    """How a task reads its rows (pickled into each pass's closure): the feature columns
    of the cached frame (one array column, or numeric columns), the public bounds
    (per-column ``bounds``, then rows of norm above ``data_norm`` scaled down to it) and
    the value ``intercept`` of the appended intercept column (0: none)."""

    features: str | tuple[str, ...]
    label: str
    data_norm: float
    intercept: float
    bounds: tuple[tuple[float, float], ...] | None = None
    label_kind: str = "classes"  # "classes" (a label set) or "real" (regression targets)
    classes: tuple[Any, ...] | None = None  # the label set, sorted (set after the check)


def _partition() -> int:
    from pyspark import TaskContext

    return int(TaskContext.get().partitionId())


def _features(rb: Any, layout: Layout) -> tuple[np.ndarray, dict[str, int], bool]:
    """The batch's features as float64 (rows, width), the nulls per source column and
    whether the vectors have different lengths."""
    if isinstance(layout.features, str):
        col = rb.column(layout.features)
        nulls = {layout.features: col.null_count}
        if col.null_count:
            col = col.filter(col.is_valid())
        lengths = np.diff(np.asarray(col.offsets))
        flat = col.flatten()
        nulls[layout.features] += flat.null_count  # null entries inside a vector
        width = int(lengths[0]) if lengths.size else 0
        if np.any(lengths != width):
            return np.empty((0, 0)), nulls, True
        values = np.asarray(flat.to_numpy(zero_copy_only=False), dtype=np.float64)
        return values.reshape(-1, width), nulls, False
    cols = [rb.column(c) for c in layout.features]
    nulls = {c: col.null_count for c, col in zip(layout.features, cols, strict=True)}
    X = np.empty((rb.num_rows, len(cols)), dtype=np.float64)
    for j, col in enumerate(cols):
        X[:, j] = col.to_numpy(zero_copy_only=False)
    return X, nulls, False


def _bounded(X: np.ndarray, layout: Layout) -> tuple[np.ndarray, int]:
    """The rows under the public bounds, the intercept column appended: (block, rows of
    norm above data_norm). Columns are first clipped to ``bounds`` (declared), then rows
    of norm above data_norm (1 + NORM_RTOL) scaled down to data_norm (Assumption 1), as
    in memory."""
    clipped = 0
    if layout.bounds is not None:
        lo, hi = np.asarray(layout.bounds, dtype=np.float64).T
        X = np.clip(X, lo, hi)
    extra = 1 if layout.intercept else 0
    out = np.empty((X.shape[0], X.shape[1] + extra), dtype=np.float64)
    out[:, : X.shape[1]] = X
    if X.shape[0]:
        norms = row_norms(X)
        over = norms > layout.data_norm * (1.0 + NORM_RTOL)
        if over.any():
            out[over, : X.shape[1]] *= (layout.data_norm / norms[over])[:, None]
            clipped = int(np.count_nonzero(over))
    if extra:
        out[:, -1] = layout.intercept
    return out, clipped


def check_partition(batches: Iterator[Any], layout: Layout) -> Iterator[Any]:
    """The first pass: the statistics of the partition under the contract (rows, width,
    nulls per column, ragged vectors, non-finite values, rows clipped, the distinct labels
    or whether every label is a finite number), as JSON bytes."""
    import pyarrow as pa

    stats: dict[str, Any] = {
        "rows": 0, "widths": [], "nulls": {}, "ragged": False, "nonfinite": 0, "clipped": 0,
        "labels": [], "bad_target": False,
    }  # fmt: skip
    labels: set[Any] = set()
    for rb in batches:
        X, nulls, ragged = _features(rb, layout)
        lab = rb.column(layout.label)
        nulls[layout.label] = lab.null_count
        for name, count in nulls.items():
            stats["nulls"][name] = stats["nulls"].get(name, 0) + int(count)
        stats["rows"] += rb.num_rows
        if ragged:
            stats["ragged"] = True
            continue
        if X.shape[0] and X.shape[1] not in stats["widths"]:
            stats["widths"].append(int(X.shape[1]))
        finite = np.isfinite(X)
        stats["nonfinite"] += int(X.size - np.count_nonzero(finite))
        if X.shape[0] and finite.all():
            stats["clipped"] += _bounded(X, layout)[1]
        y = lab.drop_null().to_numpy(zero_copy_only=False)
        if layout.label_kind == "classes":
            labels.update(np.unique(y).tolist())
        elif not _numeric(y) or not np.isfinite(y.astype(np.float64)).all():
            stats["bad_target"] = True
    stats["labels"] = sorted(labels, key=lambda v: (str(type(v)), v))
    yield pa.RecordBatch.from_pydict(
        {"part": [_partition()], "payload": [json.dumps(stats).encode()]}
    )


def _numeric(y: np.ndarray) -> bool:
    return y.dtype.kind in "biuf"


def _targets(y: Any, layout: Layout, target: LabelTarget) -> np.ndarray:
    if target.kind == "real":
        return np.asarray(y, dtype=np.float64)
    assert layout.classes is not None
    codes = class_codes(y, np.asarray(layout.classes))
    return np.where(codes == target.k, 1.0, -1.0)


def sum_partition(
    batches: Iterator[Any],
    layout: Layout,
    target: LabelTarget,
    loss: Loss,
    w: np.ndarray,
    hessian: bool,
) -> Iterator[Any]:
    """One pass at the iterate ``w`` (d,): the partition's X^T l'(Xw, y) and, with
    ``hessian``, X^T diag(l''(Xw, y)) X (d x d), as float64 bytes (d or d + d^2 numbers)."""
    import pyarrow as pa

    d = w.shape[0]
    g = np.zeros(d)
    H = np.zeros((d, d)) if hessian else None
    with single_threaded_blas():  # the tasks run in parallel: one BLAS thread each
        for rb in batches:
            X, _, _ = _features(rb, layout)
            if not X.shape[0]:
                continue
            X, _ = _bounded(X, layout)
            y = _targets(rb.column(layout.label).to_numpy(zero_copy_only=False), layout, target)
            m = X @ w
            g += X.T @ loss.d1(m, y)
            if H is not None:
                curv = loss.d2(m, y)
                H += X.T @ (X * curv[:, None])
    out = g if H is None else np.concatenate([g, H.ravel()])
    yield pa.RecordBatch.from_pydict({"part": [_partition()], "payload": [out.tobytes()]})
