"""The data contract on a dask.distributed cluster: the Dask half of :mod:`objpert._data`.

Input: Dask arrays (rows in any chunks; columns are merged into one chunk), Dask
DataFrames (read lazily, e.g. by :func:`from_parquet` or :func:`from_csv`), or in-memory
arrays scattered to the cluster. The contract (finite values, rows of norm <= zeta,
labels) is checked on the workers in one pass over the data, with the functions of
:mod:`objpert._data` applied to each partition; unknown partition sizes (CSV) are learnt in
that pass. The checked partitions stay on the workers inside a
:class:`~objpert._engines.distributed.DaskEngine`.

Memory is checked first, from public sizes only: partitions are sized from the workers'
``memory_limit``, and data whose checked copy cannot fit in the cluster's memory
(``CLUSTER_MEMORY_FRACTION`` of it) are refused before anything is read. Faults (a lost or
frozen worker, the scheduler gone) end cleanly: see :mod:`objpert._engines.distributed`.
"""

from objpert._data.distributed.checking import _Recipe as _Recipe  # patched by the fault tests
from objpert._data.distributed.checking import for_plan_dask, prepare_dask
from objpert._data.distributed.cluster import (
    CLUSTER_MEMORY_FRACTION,
    LABELS,
    PARTITION_MEMORY_FRACTION,
    PARTITION_MEMORY_LIMIT,
    get_client,
    worker_memory,
)
from objpert._data.distributed.readers import from_csv, from_parquet, map_rows

__all__ = [
    "CLUSTER_MEMORY_FRACTION",
    "LABELS",
    "PARTITION_MEMORY_FRACTION",
    "PARTITION_MEMORY_LIMIT",
    "for_plan_dask",
    "from_csv",
    "from_parquet",
    "get_client",
    "map_rows",
    "prepare_dask",
    "worker_memory",
]
