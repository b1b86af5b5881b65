"""Input to row partitions: Dask arrays and DataFrames, Parquet sizes from the footers, in-memory
arrays scattered in blocks sized for the workers."""

from __future__ import annotations

import itertools
import math
import time
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from objpert._data.contract import (
    _is_numeric_dtype,
    as_feature_matrix,
    check_numeric_columns,
)
from objpert._data.distributed.cluster import (
    _LABEL,
    _METADATA_SECONDS,
    _partition_rows,
    _require_cluster_memory,
    _RowCost,
    worker_memory,
)
from objpert._data.distributed.workers import (
    _split_frame_part,
)
from objpert._engines.distributed import (
    DaskEngine,
    collect,
    nrows,
    running,
    scheduler_lost,
)
from objpert.exceptions import ClusterError, DataError

__all__: list[str] = []  # internal to objpert._data.distributed

# ---------------------------------------------------------------- Parquet sizes


@dataclass(frozen=True)
class _FrameSize:
    """What the Parquet footers tell of a frame: rows, the largest row group, bytes per row
    of the columns read (uncompressed), and bytes per row of the features alone."""

    rows: int
    row_group_max: int
    file_rows_max: int
    row_bytes: float
    feature_bytes: float
    features: int


_SIZES: dict[int, tuple[Any, _FrameSize]] = {}  # id(frame) -> (weak reference, size)


def _remember(frame: Any, size: _FrameSize) -> None:
    key = id(frame)
    try:
        ref = weakref.ref(frame, lambda _, key=key: _SIZES.pop(key, None))
    except TypeError:
        return
    _SIZES[key] = (ref, size)


def _known_size(frame: Any) -> _FrameSize | None:
    entry = _SIZES.get(id(frame))
    return entry[1] if entry is not None and entry[0]() is frame else None


def _parquet_size(
    paths: Any, columns: list[str] | None, label: str, read_kwargs: dict[str, Any]
) -> _FrameSize | None:
    """Rows and bytes per row from the Parquet footers (best effort, a few seconds at most;
    None when the files cannot be read here or a row filter is given)."""
    if read_kwargs.get("filters") is not None:
        return None
    start = time.monotonic()
    try:
        import pyarrow.parquet as pq
        from fsspec.core import get_fs_token_paths

        fs, _, found = get_fs_token_paths(paths, storage_options=read_kwargs.get("storage_options"))
        files: list[str] = []
        for p in found:
            if fs.isdir(p):
                files += sorted(f for f in fs.find(p) if f.endswith((".parq", ".parquet", ".pq")))
            else:
                files.append(p)
        rows, group_max, file_max, schema = 0, 0, 0, None
        for f in files:
            if time.monotonic() - start > _METADATA_SECONDS:
                return None
            with fs.open(f, "rb") as handle:
                pf = pq.ParquetFile(handle)
                md = pf.metadata
                rows += md.num_rows
                file_max = max(file_max, md.num_rows)
                for g in range(md.num_row_groups):
                    group_max = max(group_max, md.row_group(g).num_rows)
                schema = schema or pf.schema_arrow
        if schema is None or rows == 0:
            return None
        names = [n for n in schema.names if columns is None or n in columns]
        features = [n for n in names if n != label]

        def width(name: str) -> float:
            try:
                return max(1.0, schema.field(name).type.bit_width / 8)
            except ValueError:  # variable width (strings): refused later as non-numeric
                return 8.0

        return _FrameSize(
            rows,
            group_max,
            file_max,
            float(sum(width(n) for n in names)),
            float(sum(width(n) for n in features)),
            len(features),
        )
    except Exception:
        return None


# ---------------------------------------------------------------- input to partitions


@dataclass
class _Input:
    """The row partitions of (X, y) before they are checked.

    ``xs``: feature partitions (delayed objects or futures); ``ys``: label partitions on the
    cluster ([] for none); ``y_local``: labels in memory, cut like X (checked on the client,
    then scattered next to their features); ``memory``: (source, cuts) of in-memory
    features, scattered again from the client when a worker holding them is lost;
    ``parent``: the engine the features come from (remade first); ``parent_labels``: the
    labels are the parent's.
    """

    xs: list[Any]
    ys: list[Any]
    y_local: list[np.ndarray] | None = None
    memory: tuple[Any, np.ndarray] | None = None
    parent: DaskEngine | None = None
    parent_labels: bool = False

    @property
    def has_labels(self) -> bool:
        return bool(self.ys) or self.y_local is not None


def _as_rows_array(X: Any) -> Any:
    """A Dask array with one column chunk."""
    if not _is_numeric_dtype(X.dtype):
        raise DataError("features must be numeric: encode non-numeric columns first")
    if X.ndim != 2:
        raise DataError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X


def _label_blocks(y: Any, chunks: tuple[float, ...]) -> tuple[list[Any], list[Any] | None]:
    """Labels cut into the row partitions ``chunks`` of X: (delayed blocks, None) for labels
    on the cluster, ([], numpy blocks) for labels in memory."""
    if hasattr(y, "to_dask_array"):  # Dask Series / one-column DataFrame
        y = y.to_dask_array()
    if not hasattr(y, "__dask_graph__"):
        y = np.asarray(y)
        if y.shape[0] != sum(chunks):
            raise DataError(f"X has {int(sum(chunks))} rows but y has {y.shape[0]} labels")
        cuts = np.cumsum((0, *chunks)).astype(int)
        return [], [y[a:b] for a, b in itertools.pairwise(cuts)]
    y = y.rechunk({1: -1}) if y.ndim == 2 else y
    known = not any(math.isnan(c) for c in (*chunks, *y.chunks[0]))
    if known and y.chunks[0] != chunks:
        if y.shape[0] != sum(chunks):
            raise DataError(f"X has {int(sum(chunks))} rows but y has {y.shape[0]} labels")
        y = y.rechunk({0: chunks})
    if y.numblocks[0] != len(chunks):
        raise DataError(
            "X and y must be partitioned alike (the same row partitions); take both from "
            "one DataFrame, or give Dask arrays of known chunk sizes"
        )
    blocks = y.to_delayed()
    return list(blocks[:, 0] if blocks.ndim == 2 else blocks), None


def _itemsize(dtype: Any) -> float:
    try:
        return float(np.dtype(dtype).itemsize)
    except TypeError:  # pandas extension dtypes
        return float(getattr(dtype, "itemsize", 8))


def _memory_source(X: Any, M: Any) -> Any:
    """What the client keeps to scatter in-memory row blocks again: X itself when row
    slices of it convert to the same blocks (ndarray, CSR, pandas), else the matrix M."""
    if isinstance(X, np.ndarray) or hasattr(X, "iloc"):
        return X
    if sparse.issparse(X) and X.format == "csr":
        return X
    return M


def _memory_block(source: Any, a: int, b: int) -> Any:
    part = source.iloc[a:b] if hasattr(source, "iloc") else source[a:b]
    return as_feature_matrix(part)


def _scatter(client: Any, data: Any, timeout: float, doing: str, **kwargs: Any) -> Any:
    """``client.scatter`` within ``timeout`` seconds, its faults as ClusterError (its own
    ``timeout`` does not bound the transfer to a frozen worker: the call is bounded here)."""
    if not running(client):
        raise scheduler_lost(client, doing)
    bounded = getattr(client, "_scatter", None)  # the coroutine behind Client.scatter
    try:
        if math.isinf(timeout) or bounded is None:
            return client.scatter(data, **kwargs)
        return client.sync(bounded, data, timeout=timeout, callback_timeout=timeout, **kwargs)
    except TimeoutError:
        if not running(client):
            raise scheduler_lost(client, doing) from None
        raise ClusterError(
            f"{doing[:1].upper()}{doing[1:]} did not finish within {timeout:g} s (sending "
            "data to the workers: none connected, or one frozen or unreachable?); nothing "
            "was released: check the workers and fit again"
        ) from None
    except OSError:
        raise scheduler_lost(client, doing) from None


def _row_blocks(
    X: Any, y: Any, client: Any, partitions: int | None, *, intercept: bool, timeout: float
) -> _Input:
    """The row partitions of (X, y), after checking that their checked copy fits in the
    workers' memory (in-memory input and Dask arrays are cut to fit)."""
    import dask

    if getattr(X, "is_dask_engine", False):  # already on the cluster
        if y is None:
            return _Input(list(X._x), list(X._y or []), parent=X, parent_labels=X._y is not None)
        ys, local = _label_blocks(y, X.lengths)
        return _Input(list(X._x), ys, local, parent=X)
    workers = worker_memory(client, timeout)
    if hasattr(X, "to_dask_array") and hasattr(X, "columns"):  # Dask DataFrame
        check_numeric_columns(X)
        size = _known_size(X)
        if size is not None:
            d = len(X.columns)
            cost = _RowCost.of(size.row_bytes, 8.0 * d, convert=True, intercept=intercept)
            parts = max(1, X.npartitions)
            rows_max = min(size.file_rows_max, max(size.row_group_max, -(-size.rows // parts)))
            _require_cluster_memory(
                workers,
                size.rows,
                cost,
                rows_max,
                f"the Parquet data ({size.rows} rows x {d} feature columns)",
                "read them in smaller partitions (from_parquet(..., blocksize=...)), or "
                "write the files with smaller row groups",
            )
        label = None
        if y is not None and hasattr(y, "__dask_graph__"):
            if hasattr(y, "to_dask_array") and getattr(y, "ndim", 1) == 2:
                y = y.iloc[:, 0]
            elif not hasattr(y, "to_dask_array"):
                import dask.dataframe as dd

                y = dd.from_dask_array(y.ravel() if y.ndim == 2 else y)
            label = _LABEL
            try:
                X = X.assign(**{_LABEL: y})  # one read of each partition for X and y
            except ValueError as err:
                raise DataError(f"X and y must be partitioned alike: {err}") from None
        pairs = [
            dask.delayed(_split_frame_part, nout=2, pure=True)(p, label) for p in X.to_delayed()
        ]
        xs, chunks = [p[0] for p in pairs], (math.nan,) * len(pairs)
        if label is not None:
            return _Input(xs, [p[1] for p in pairs])
    elif hasattr(X, "__dask_graph__"):
        X = _as_rows_array(X)
        n, d = X.shape
        if not math.isnan(n) and X.numblocks[0] and not any(math.isnan(c) for c in X.chunks[0]):
            size = _itemsize(X.dtype)
            cost = _RowCost.of(
                d * size, 8.0 * d, convert=X.dtype != np.float64, intercept=intercept
            )
            rows = _partition_rows(workers, cost)
            if rows is not None and max(X.chunks[0]) > rows:
                X = X.rechunk({0: rows})  # partitions sized from the workers' memory
            _require_cluster_memory(
                workers,
                int(n),
                cost,
                int(max(X.chunks[0])),
                f"X ({int(n)} x {d} {X.dtype})",
                "rechunk X into smaller row chunks",
            )
        xs, chunks = list(X.to_delayed()[:, 0]), X.chunks[0]
    else:  # in memory: checked here, scattered in row blocks
        M = as_feature_matrix(X)
        n, d = M.shape
        f64_row = _stored_bytes(M) / max(n, 1)
        cost = _RowCost.of(f64_row, f64_row, convert=False, intercept=intercept)
        k = partitions or max(1, sum(t for _, _, t in workers))
        rows = None if partitions else _partition_rows(workers, cost)
        if rows is not None:
            k = max(k, math.ceil(n / rows))  # partitions sized from the workers' memory
        cuts = np.linspace(0, n, min(k, max(n, 1)) + 1).astype(int)
        _require_cluster_memory(
            workers,
            n,
            cost,
            int(np.diff(cuts).max()),
            f"X ({n} x {d})",
            "give more partitions= (or leave it to objpert)",
        )
        ys, local = ([], None) if y is None else _label_blocks(y, tuple(np.diff(cuts)))
        doing = "the transfer of the data to the workers"
        xs = _scatter(
            client, [M[a:b] for a, b in itertools.pairwise(cuts)], timeout, doing, hash=False
        )
        return _Input(xs, ys, local, memory=(_memory_source(X, M), cuts))
    if y is None:
        return _Input(xs, [])
    if not hasattr(y, "__dask_graph__") and any(math.isnan(c) for c in chunks):
        # in-memory labels for partitions of unknown size: one extra pass to count rows
        counts = client.compute([dask.delayed(nrows)(x) for x in xs])
        doing = "the count of rows in each partition"
        chunks = tuple(collect(client, counts, timeout=timeout, doing=doing, per_result=True))
    ys, local = _label_blocks(y, chunks)
    return _Input(xs, ys, local)


def _stored_bytes(M: Any) -> int:
    if sparse.issparse(M):
        return int(M.data.nbytes + M.indices.nbytes + M.indptr.nbytes)
    return int(M.nbytes)
