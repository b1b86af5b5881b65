"""Deprecated: the Dask engine is :mod:`objpert.engines.distributed`, the data contract on a
cluster (readers, :func:`prepare_dask`, :func:`for_plan_dask`, :func:`map_rows`,
:func:`get_client`) is :mod:`objpert.data.distributed`. This module re-exports both."""

from __future__ import annotations

import warnings

from objpert.data.distributed import (
    LABELS,
    for_plan_dask,
    from_csv,
    from_parquet,
    get_client,
    map_rows,
    prepare_dask,
)
from objpert.engines.distributed import DaskEngine

__all__ = [
    "LABELS",
    "DaskEngine",
    "for_plan_dask",
    "from_csv",
    "from_parquet",
    "get_client",
    "map_rows",
    "prepare_dask",
]

warnings.warn(
    "objpert.engines.dask_engine is deprecated: use objpert.data.distributed (readers, "
    "prepare_dask, for_plan_dask, map_rows, get_client) and objpert.engines.distributed "
    "(DaskEngine)",
    DeprecationWarning,
    stacklevel=2,
)
