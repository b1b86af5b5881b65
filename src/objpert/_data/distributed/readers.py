"""Readers (Parquet, CSV) and predictions mapped over row partitions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from objpert._data.distributed.cluster import (
    _current_client,
    _partition_rows,
    _RowCost,
    worker_memory,
)
from objpert._data.distributed.partitions import (
    _as_rows_array,
    _parquet_size,
    _remember,
)

__all__ = [
    "from_csv",
    "from_parquet",
    "map_rows",
]

# ---------------------------------------------------------------- readers and prediction


def _split_frame(df: Any, feature_columns: Sequence[str] | None, label_column: str) -> tuple:
    if feature_columns is None:
        feature_columns = [c for c in df.columns if c != label_column]
    return df[list(feature_columns)], df[label_column]


def from_parquet(
    paths: Any,
    feature_columns: Sequence[str] | None,
    label_column: str,
    *,
    client: Any = None,
    **read_kwargs: Any,
) -> tuple[Any, Any]:
    """(X, y) read lazily from Parquet (local or shared storage: ``s3://``, ``hdfs://``,
    ...): a Dask DataFrame of the feature columns (default: all but the label) and a Dask
    Series of labels, read once per partition when fitted.

    The Parquet footers give the number of rows and the bytes per row, so that a fit
    refuses data too large for the cluster before reading them. With a cluster at hand
    (``client``, else the current client) and no ``blocksize`` or ``split_row_groups``
    given, partitions are sized from the workers' ``memory_limit`` (``split_row_groups``:
    as many row groups per partition as fit).
    """
    import dask.dataframe as dd

    columns = None if feature_columns is None else [*feature_columns, label_column]
    size = _parquet_size(paths, columns, label_column, read_kwargs)
    if size is not None and not {"blocksize", "split_row_groups"} & set(read_kwargs):
        live = _current_client(client)
        if live is not None:
            d = size.features
            cost = _RowCost.of(size.row_bytes, 8.0 * d, convert=True, intercept=True)
            rows = _partition_rows(worker_memory(live), cost)
            if rows is not None and size.file_rows_max > rows and size.row_group_max:
                read_kwargs["split_row_groups"] = max(1, rows // size.row_group_max)
    df = dd.read_parquet(paths, columns=columns, **read_kwargs)
    X, y = _split_frame(df, feature_columns, label_column)
    if size is not None:
        _remember(X, size)
    return X, y


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
