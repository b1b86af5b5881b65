"""The data contract on a dask.distributed cluster: the Dask half of :mod:`objpert.data`.

Input: Dask arrays (rows in any chunks; columns are merged into one chunk), Dask
DataFrames (read lazily, e.g. by :func:`from_parquet` or :func:`from_csv`), or in-memory
arrays scattered to the cluster. The contract (finite values, rows of norm <= zeta,
labels) is checked on the workers in one pass over the data, with the functions of
:mod:`objpert.data` applied to each partition; unknown partition sizes (CSV) are learnt in
that pass. The checked partitions stay on the workers inside a
:class:`~objpert.engines.distributed.DaskEngine`.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

from objpert.data.contract import (
    PreparedData,
    _is_numeric_dtype,
    add_intercept,
    as_feature_matrix,
    bound_rows,
    check_numeric_columns,
    nonfinite_error,
    norm_error,
    total_norm,
)
from objpert.data.labels import as_targets, binary_classes, check_label_set, class_codes
from objpert.engines.distributed import DaskEngine, aligned, nrows
from objpert.errors import check_positive
from objpert.exceptions import DataError

__all__ = [
    "LABELS",
    "for_plan_dask",
    "from_csv",
    "from_parquet",
    "get_client",
    "map_rows",
    "prepare_dask",
]

#: Label handling of :func:`prepare_dask`: "classes" maps labels to class codes 0..K-1.
LABELS = ("binary", "real", "classes")
_LABEL = "__objpert_label__"  # the label column while features and labels travel together
_LOCAL: dict[str, Any] = {}  # the LocalCluster client started by get_client(None)
_CLIENTS: dict[str, Any] = {}  # clients connected by address


def get_client(client: Any = None) -> Any:
    """A ``distributed.Client``: ``client`` itself, a client connected to the scheduler
    address ``client`` (str), or (None) the current client, else a local cluster of
    threads started once per process."""
    from distributed import Client, LocalCluster

    if isinstance(client, Client):
        return client
    if isinstance(client, str):
        if client not in _CLIENTS or _CLIENTS[client].status != "running":
            _CLIENTS[client] = Client(client, set_as_default=False)
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


# ---------------------------------------------------------------- on the workers


def _split_frame_part(part: Any, label: str | None) -> tuple[np.ndarray, Any]:
    """A DataFrame partition to (features as float64, labels or None)."""
    feats = part.drop(columns=[label]) if label is not None else part
    X = feats.to_numpy(dtype=np.float64, na_value=np.nan)
    return X, (None if label is None else part[label].to_numpy())


def _check_block(
    Xb: Any, yb: Any, zeta: float, clip: bool, intercept: float, labels: str | None
) -> tuple[Any, Any, dict[str, Any]]:
    """One partition under the contract: (X_b bounded [+ intercept], y_b, statistics).

    Errors are returned in the statistics (raised by the client, which sees all
    partitions); rows above zeta are always clipped here and refused by the client when
    clipping is off.
    """
    stats: dict[str, Any] = {"error": None, "nonfinite": 0, "clipped": 0, "classes": None}
    X = sparse.csr_matrix(Xb, dtype=np.float64) if sparse.issparse(Xb) else aligned(Xb)
    stats["rows"], stats["cols"] = X.shape
    stats["y_rows"] = None if yb is None else int(np.size(yb))
    values = X.data if sparse.issparse(X) else X
    stats["nonfinite"] = int(np.count_nonzero(~np.isfinite(values)))
    if stats["nonfinite"] == 0:
        X, stats["clipped"] = bound_rows(X, zeta, clip=True)
        if intercept:
            X = add_intercept(X, intercept)
    y = None
    if yb is not None:
        y = np.asarray(yb).ravel()
        if labels == "real":
            try:
                y = aligned(as_targets(y))
            except DataError as err:
                stats["error"] = err
        elif labels is not None:
            stats["classes"] = np.unique(y)
    return X, y, stats


def _encode_block(y: np.ndarray, classes: np.ndarray, labels: str) -> np.ndarray:
    """Labels to -1/+1 (classes[1] -> +1, as :func:`objpert.data.encode_binary`) or to
    class codes 0..K-1 (float)."""
    if labels == "binary":
        return np.where(y == classes[1], 1.0, -1.0)
    return np.searchsorted(classes, y).astype(np.float64)


# ---------------------------------------------------------------- input to partitions


def _as_rows_array(X: Any) -> Any:
    """A Dask array with one column chunk."""
    if not _is_numeric_dtype(X.dtype):
        raise DataError("features must be numeric: encode non-numeric columns first")
    if X.ndim != 2:
        raise DataError(f"X must be 2-D (n_samples, n_features); got shape {X.shape}")
    return X.rechunk({1: -1}) if X.numblocks[1] > 1 else X


def _label_blocks(y: Any, chunks: tuple[float, ...], client: Any) -> list[Any]:
    """Labels cut into the row partitions ``chunks`` of X (delayed or futures)."""
    if hasattr(y, "to_dask_array"):  # Dask Series / one-column DataFrame
        y = y.to_dask_array()
    if not hasattr(y, "__dask_graph__"):
        y = np.asarray(y)
        if y.shape[0] != sum(chunks):
            raise DataError(f"X has {int(sum(chunks))} rows but y has {y.shape[0]} labels")
        cuts = np.cumsum((0, *chunks)).astype(int)
        return client.scatter([y[a:b] for a, b in itertools.pairwise(cuts)], hash=False)
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
    return list(blocks[:, 0] if blocks.ndim == 2 else blocks)


def _row_blocks(X: Any, y: Any, client: Any, partitions: int | None) -> tuple[list, list]:
    """(X blocks, y blocks) aligned by rows, as delayed objects or futures ([] for no y)."""
    import dask

    if getattr(X, "is_dask_engine", False):
        if y is None:
            return list(X._x), list(X._y or [])
        return list(X._x), _label_blocks(y, X.lengths, client)
    if hasattr(X, "to_dask_array") and hasattr(X, "columns"):  # Dask DataFrame
        check_numeric_columns(X)
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
            return xs, [p[1] for p in pairs]
    elif hasattr(X, "__dask_graph__"):
        X = _as_rows_array(X)
        xs, chunks = list(X.to_delayed()[:, 0]), X.chunks[0]
    else:  # in memory: checked here, scattered in row blocks
        M = as_feature_matrix(X)
        k = partitions or max(1, sum(client.nthreads().values()))
        cuts = np.linspace(0, M.shape[0], min(k, max(M.shape[0], 1)) + 1).astype(int)
        xs = client.scatter([M[a:b] for a, b in itertools.pairwise(cuts)], hash=False)
        ys = [] if y is None else _label_blocks(y, tuple(np.diff(cuts)), client)
        return xs, ys
    if y is None:
        return xs, []
    if not hasattr(y, "__dask_graph__") and any(math.isnan(c) for c in chunks):
        # in-memory labels for partitions of unknown size: one extra pass to count rows
        chunks = tuple(client.gather(client.compute([dask.delayed(nrows)(x) for x in xs])))
    return xs, _label_blocks(y, chunks, client)


def _check(
    client: Any,
    xs: list,
    ys: list,
    zeta: float,
    clip: bool,
    intercept: float,
    labels: str | None,
    declared: Any = None,
) -> tuple[DaskEngine, int, np.ndarray | None]:
    """Check and bound every partition on the workers (one pass over the data), then
    raise the contract's errors on the client: (engine, rows clipped, classes).
    ``declared``: the public label set (None: binary labels by the fixed map of
    :func:`objpert.data.binary_classes`, classes read from the data otherwise)."""
    import dask

    check = dask.delayed(_check_block, pure=False)
    if ys and len(ys) != len(xs):
        raise DataError("X and y must be partitioned alike (the same row partitions)")
    futures = client.compute(
        [
            check(xb, yb, zeta, clip, intercept, labels)
            for xb, yb in zip(xs, ys or [None] * len(xs), strict=True)
        ]
    )
    stats = client.gather(client.map(operator.itemgetter(2), futures, pure=False))
    n = sum(s["rows"] for s in stats)
    if n == 0:
        raise DataError("X has no rows")
    nonfinite = sum(s["nonfinite"] for s in stats)
    if nonfinite:
        raise nonfinite_error(nonfinite)
    if ys:
        n_labels = sum(s["y_rows"] for s in stats)
        if n_labels != n or any(s["y_rows"] != s["rows"] for s in stats):
            raise DataError(f"X has {n} rows but y has {n_labels} labels (row by row)")
    keep = [i for i, s in enumerate(stats) if s["rows"] > 0]  # drop empty partitions
    stats, futures = [stats[i] for i in keep], [futures[i] for i in keep]
    d = stats[0]["cols"] + (1 if intercept else 0)
    classes = None
    if ys:
        for s in stats:
            if s["error"] is not None:
                raise s["error"]
        if labels in ("binary", "classes"):
            found = np.unique(np.concatenate([s["classes"] for s in stats]))
            if found.dtype.kind == "f":
                as_targets(found)  # refuses NaN / inf labels
            if labels == "binary":
                classes = binary_classes(found, declared)
            elif declared is not None:
                classes = check_label_set(declared)
                class_codes(found, classes)  # refuses labels outside the declared set
            else:
                classes = found
    clipped = sum(s["clipped"] for s in stats)
    if clipped and not clip:
        raise norm_error(clipped, zeta)
    x_parts = client.map(operator.itemgetter(0), futures, pure=False)
    y_parts = None
    if ys:
        y_parts = client.map(operator.itemgetter(1), futures, pure=False)
        if classes is not None:
            y_parts = client.map(_encode_block, y_parts, classes=classes, labels=labels, pure=False)
    engine = DaskEngine(x_parts, y_parts, [s["rows"] for s in stats], d, client)
    return engine, clipped, classes


# ---------------------------------------------------------------- the data contract


def for_plan_dask(
    X: Any,
    y: Any,
    *,
    n: int,
    d: int,
    zeta: float,
    label_kind: str,
    clip: bool,
    client: Any = None,
    partitions: int | None = None,
) -> tuple[DaskEngine, None, int]:
    """:func:`objpert.data.for_plan` for Dask input (or a DaskEngine, checked again):
    (engine holding the -1/+1 or real labels, None, rows clipped). ``client`` and
    ``partitions`` as in :func:`prepare_dask`."""
    zeta = check_positive("data_norm", zeta)
    client = X.client if getattr(X, "is_dask_engine", False) else get_client(client)
    xs, ys = _row_blocks(X, y, client, partitions)
    if not ys:
        raise DataError("labels are needed: give y (or an engine holding labels)")
    engine, clipped, _ = _check(client, xs, ys, zeta, clip, 0.0, label_kind)
    if engine.shape != (n, d):
        raise DataError(
            f"the plan is for data of shape ({n}, {d}) (public n and d); got {engine.shape}"
        )
    return engine, None, clipped


def prepare_dask(
    X: Any,
    y: Any,
    *,
    data_norm: float,
    labels: str = "binary",
    fit_intercept: bool = True,
    intercept_scaling: float | None = None,
    clip: bool = True,
    client: Any = None,
    partitions: int | None = None,
    classes: Any = None,
) -> PreparedData:
    """:func:`objpert.data.prepare` on a cluster: ``X`` of the result is a
    :class:`DaskEngine`, ``y`` the encoded labels as a Dask array partitioned like it.

    ``labels``: "binary" (-1/+1), "real", or "classes" (codes 0..K-1 of the sorted
    classes, returned in ``classes``). ``client``: see :func:`get_client` (a DaskEngine
    input keeps its own). ``partitions``: row blocks for in-memory input (default: one per
    worker thread). ``classes``: the public label set (codes then index it; labels
    outside it are refused).
    """
    if labels not in LABELS:
        raise DataError(f"labels must be one of {LABELS}; got {labels!r}")
    data_norm = check_positive("data_norm", data_norm)
    c = 0.0
    if fit_intercept:
        c = check_positive(
            "intercept_scaling", data_norm if intercept_scaling is None else intercept_scaling
        )
    client = X.client if getattr(X, "is_dask_engine", False) else get_client(client)
    xs, ys = _row_blocks(X, y, client, partitions)
    if not ys:
        raise DataError("labels are needed: give y")
    engine, clipped, classes = _check(client, xs, ys, data_norm, clip, c, labels, classes)
    return PreparedData(
        engine,  # type: ignore[arg-type]
        engine.labels_array(),
        total_norm(data_norm, c),
        data_norm,
        c,
        clipped,
        classes,
    )


# ---------------------------------------------------------------- readers and prediction


def _split_frame(df: Any, feature_columns: Sequence[str] | None, label_column: str) -> tuple:
    if feature_columns is None:
        feature_columns = [c for c in df.columns if c != label_column]
    return df[list(feature_columns)], df[label_column]


def from_parquet(
    paths: Any, feature_columns: Sequence[str] | None, label_column: str, **read_kwargs: Any
) -> tuple[Any, Any]:
    """(X, y) read lazily from Parquet (local or shared storage: ``s3://``, ``hdfs://``,
    ...): a Dask DataFrame of the feature columns (default: all but the label) and a Dask
    Series of labels, read once per partition when fitted."""
    import dask.dataframe as dd

    columns = None if feature_columns is None else [*feature_columns, label_column]
    df = dd.read_parquet(paths, columns=columns, **read_kwargs)
    return _split_frame(df, feature_columns, label_column)


def from_csv(
    paths: Any, feature_columns: Sequence[str] | None, label_column: str, **read_kwargs: Any
) -> tuple[Any, Any]:
    """As :func:`from_parquet` for CSV files (partition sizes are learnt when checked)."""
    import dask.dataframe as dd

    if feature_columns is not None:
        read_kwargs.setdefault("usecols", [*feature_columns, label_column])
    df = dd.read_csv(paths, **read_kwargs)
    return _split_frame(df, feature_columns, label_column)


def _rows_fn(part: Any, fn: Any) -> np.ndarray:
    return np.asarray(fn(part))


def map_rows(fn: Any, X: Any) -> Any:
    """``fn`` (rows -> per-row outputs, e.g. an estimator's ``predict``) applied to each row
    partition of a Dask array or DataFrame: a lazy Dask array (nothing is computed)."""
    import dask
    import dask.array as da

    if hasattr(X, "to_dask_array") and hasattr(X, "columns"):
        import pandas as pd

        probe = np.asarray(fn(pd.DataFrame(np.zeros((1, len(X.columns))), columns=X.columns)))
        parts, lengths = list(X.to_delayed()), [math.nan] * X.npartitions
    else:
        X = _as_rows_array(X)
        probe = np.asarray(fn(np.zeros((1, X.shape[1]))))
        parts, lengths = list(X.to_delayed()[:, 0]), list(X.chunks[0])
    apply = dask.delayed(_rows_fn, pure=True)
    blocks = [
        da.from_delayed(apply(p, fn), shape=(k, *probe.shape[1:]), dtype=probe.dtype)
        for p, k in zip(parts, lengths, strict=True)
    ]
    return da.concatenate(blocks)
