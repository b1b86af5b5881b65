"""What the Spark tasks run: the rows read through Arrow, checked under the data contract
and kept as float64 blocks, then reduced to a few numbers per pass.

Every pass over the data is a DataFrame query ``frame.mapInArrow(fn, schema)``. The
first, :func:`check_partition`, turns each Arrow batch of the feature and label columns
into one row: the batch's rows under the public bounds (intercept column appended) as
float64 bytes, its labels, and the statistics of the contract; the driver caches these
rows. Each later pass, :func:`sum_partition`, reads a partition's cached blocks (no
conversion: the bytes are the matrix) and yields one row, its partition index and a
gradient, or a gradient and a d x d Hessian, at the driver's iterate as float64 bytes;
the driver adds the partitions in index order (:mod:`objpert.spark._engine`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from objpert._data.contract import NORM_RTOL, row_norms
from objpert._data.labels import class_codes
from objpert._engines.blocked import single_threaded_blas
from objpert._losses import Loss
from objpert.exceptions import DataError

__all__ = ["LabelTarget", "Layout", "block_schema", "check_partition", "sum_partition"]

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
    fault: str | None = None  # testing: a flag file; a pass that finds it ends its worker


def _fault(path: str | None) -> None:
    """Testing: end this task's Python worker once (the flag file is removed first)."""
    if path is None:
        return
    try:
        os.remove(path)
    except FileNotFoundError:
        return
    os._exit(1)


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


def block_schema(label_type: str) -> str:
    """The schema of the checked blocks: one row per Arrow batch of the source."""
    return f"part long, stats string, x binary, y array<{label_type}>, gh binary"


def check_partition(
    batches: Iterator[Any], layout: Layout, first: tuple[Loss, LabelTarget] | None = None
) -> Iterator[Any]:
    """The first pass: each Arrow batch of the partition as one checked block (its rows
    under the public bounds, the intercept column appended, as float64 bytes; its labels)
    with the statistics of the contract (rows, width, nulls per column, ragged vectors,
    non-finite values, rows above the bound, the distinct labels or whether every target
    is a finite number) as JSON. The blocks are cached: the later passes read them.

    ``first`` (a loss and labels known before the check: declared classes, or real
    targets): the block's gradient and Hessian at w = 0 too (``gh``, empty when the
    block breaks the contract), so that the first Newton point costs no pass of its own."""
    import pyarrow as pa

    part = _partition()
    for rb in batches:
        stats: dict[str, Any] = {
            "rows": rb.num_rows, "widths": [], "ragged": False, "nonfinite": 0, "clipped": 0,
            "labels": [], "bad_target": False,
        }  # fmt: skip
        X, nulls, ragged = _features(rb, layout)
        lab = rb.column(layout.label)
        nulls[layout.label] = lab.null_count
        stats["nulls"] = {name: int(count) for name, count in nulls.items()}
        block = b""
        if ragged:
            stats["ragged"] = True
        else:
            if X.shape[0]:
                stats["widths"] = [int(X.shape[1])]
            stats["nonfinite"] = int(X.size - np.count_nonzero(np.isfinite(X)))
            if X.shape[0] and not stats["nonfinite"]:
                Xb, stats["clipped"] = _bounded(X, layout)
                block = Xb.tobytes()
        y = lab.drop_null().to_numpy(zero_copy_only=False)
        if layout.label_kind == "classes":
            stats["labels"] = np.unique(y).tolist()
        elif not _numeric(y) or not np.isfinite(y.astype(np.float64)).all():
            stats["bad_target"] = True
        gh = b""
        clean = not any(stats["nulls"].values()) and not stats["bad_target"]
        if first is not None and block and clean:
            try:
                t = _targets(lab.to_numpy(zero_copy_only=False), layout, first[1])
            except DataError:  # a label outside the declared set: refused by the driver
                t = None
            if t is not None:
                with single_threaded_blas():
                    gh = _sums(Xb, t, first[0], np.zeros(Xb.shape[1]), True).tobytes()
        labels = pa.ListArray.from_arrays(pa.array([0, len(lab)], pa.int32()), lab)
        yield pa.RecordBatch.from_pydict(
            {"part": [part], "stats": [json.dumps(stats)], "x": [block], "y": labels,
             "gh": [gh]}
        )  # fmt: skip


def _numeric(y: np.ndarray) -> bool:
    return y.dtype.kind in "biuf"


def _targets(y: Any, layout: Layout, target: LabelTarget) -> np.ndarray:
    if target.kind == "real":
        return np.asarray(y, dtype=np.float64)
    assert layout.classes is not None
    codes = class_codes(y, np.asarray(layout.classes))
    return np.where(codes == target.k, 1.0, -1.0)


def _sums(X: np.ndarray, y: np.ndarray, loss: Loss, w: np.ndarray, hessian: bool) -> np.ndarray:
    """[X^T l'(Xw, y)] or [X^T l'(Xw, y), X^T diag(l''(Xw, y)) X (row-major)]."""
    m = X @ w
    g = X.T @ loss.d1(m, y)
    if not hessian:
        return g
    return np.concatenate([g, (X.T @ (X * loss.d2(m, y)[:, None])).ravel()])


def sum_partition(
    batches: Iterator[Any],
    layout: Layout,
    target: LabelTarget,
    loss: Loss,
    w: np.ndarray,
    hessian: bool,
) -> Iterator[Any]:
    """One pass at the iterate ``w`` (d,) over the partition's checked blocks: its
    X^T l'(Xw, y) and, with ``hessian``, X^T diag(l''(Xw, y)) X (d x d), as float64
    bytes (d or d + d^2 numbers)."""
    import pyarrow as pa

    _fault(layout.fault)
    d = w.shape[0]
    out = np.zeros(d + d * d if hessian else d)
    with single_threaded_blas():  # the tasks run in parallel: one BLAS thread each
        for rb in batches:
            xs, ys = rb.column("x"), rb.column("y")
            for i in range(rb.num_rows):
                X = np.frombuffer(xs[i].as_buffer(), dtype=np.float64).reshape(-1, d)
                if X.shape[0]:
                    y = ys[i].values.to_numpy(zero_copy_only=False)
                    out += _sums(X, _targets(y, layout, target), loss, w, hessian)
    yield pa.RecordBatch.from_pydict({"part": [_partition()], "payload": [out.tobytes()]})
