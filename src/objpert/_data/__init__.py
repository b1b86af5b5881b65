"""The data contract: turn user input into what the theorems assume.

Assumption 1 of Watkins & Arora (2026) needs every row to have norm <= zeta, and the
certificate needs n, d and zeta as *public* values: stated by the caller (zeta, the
intercept scaling) or public by construction (n and d, the shape of the table; objpert,
like the paper, treats the number of rows as public). Nothing here feeds a statistic of
the data into a certificate; the count of clipped rows is reported to the caller only.

- :mod:`objpert._data.contract`: features in memory (dense, pandas, CSR), row bounds, the
  intercept column;
- :mod:`objpert._data.labels`: public label sets, the binary label map, targets;
- :mod:`objpert._data.distributed`: the same contract checked on a dask.distributed
  cluster (imported only for Dask input).

:func:`prepare` and :func:`for_plan` accept either kind of input.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from objpert._data.contract import (
    NORM_RTOL,
    PreparedData,
    add_intercept,
    as_feature_matrix,
    bound_rows,
    check_numeric_columns,
    for_plan_in_memory,
    is_dask,
    nonfinite_error,
    norm_error,
    prepare_in_memory,
    row_norms,
    total_norm,
)
from objpert._data.labels import (
    as_targets,
    binary_classes,
    check_label_set,
    class_codes,
    encode_binary,
)

__all__ = [
    "NORM_RTOL",
    "PreparedData",
    "add_intercept",
    "as_feature_matrix",
    "as_targets",
    "binary_classes",
    "bound_rows",
    "check_label_set",
    "check_numeric_columns",
    "class_codes",
    "encode_binary",
    "for_plan",
    "is_dask",
    "nonfinite_error",
    "norm_error",
    "prepare",
    "row_norms",
    "total_norm",
]


def prepare(
    X: Any,
    y: Any,
    *,
    data_norm: float,
    labels: str = "binary",
    fit_intercept: bool = True,
    intercept_scaling: float | None = None,
    clip: bool = True,
    classes: Any = None,
) -> PreparedData:
    """Validate and shape (X, y) for a mechanism.

    ``labels``: ``"binary"`` (to -1/+1) or ``"real"``. With ``fit_intercept`` a constant
    column of value ``intercept_scaling`` (default ``data_norm``) is appended *after* the
    feature rows are bounded, so the certificate uses zeta = sqrt(data_norm^2 + c^2):
    a larger c regularises the intercept less but enlarges zeta (more noise, larger L).
    ``classes``: the public label set (:func:`binary_classes`). Dask input (arrays,
    DataFrames) is checked and prepared on its workers
    (:func:`objpert._data.distributed.prepare_dask`; ``X`` of the result is a DaskEngine).
    """
    kwargs = dict(
        data_norm=data_norm,
        labels=labels,
        fit_intercept=fit_intercept,
        intercept_scaling=intercept_scaling,
        clip=clip,
        classes=classes,
    )
    if is_dask(X) or is_dask(y):
        from objpert._data.distributed import prepare_dask

        return prepare_dask(X, y, **kwargs)
    return prepare_in_memory(X, y, **kwargs)


def for_plan(
    X: Any, y: Any, *, n: int, d: int, zeta: float, label_kind: str, clip: bool
) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray, int]:
    """(X, y) checked against a plan's public n, d, zeta and label kind, rows bounded
    (clipped when ``clip``): (matrix, labels, rows clipped). Used by every mechanism.
    Dask input gives (a DaskEngine holding the labels, None, rows clipped); an engine with
    a ``for_plan`` method (data checked where they live, e.g. on Spark executors) checks
    itself against the plan and gives (engine holding the labels ``y`` selects, None, 0)."""
    kwargs = dict(n=n, d=d, zeta=zeta, label_kind=label_kind, clip=clip)
    held = getattr(X, "for_plan", None)
    if held is not None:  # an engine holding rows checked where they live (objpert.spark)
        return held(y, **kwargs)
    if is_dask(X) or is_dask(y):
        from objpert._data.distributed import for_plan_dask

        return for_plan_dask(X, y, **kwargs)
    return for_plan_in_memory(X, y, **kwargs)
