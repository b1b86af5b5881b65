"""The data contract: turn user input into what the theorems assume.

Assumption 1 of Watkins & Arora (2026) needs every row to have norm <= zeta, and the
certificate needs n, d and zeta as *public* values: stated by the caller (zeta, the
intercept scaling) or public by construction (n and d, the shape of the table — objpert,
like the paper, treats the number of rows as public). Nothing here feeds a statistic of
the data into a certificate; the count of clipped rows is reported to the caller only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from objpert.data.labels import as_targets, encode_binary
from objpert.errors import check_positive
from objpert.exceptions import DataError

# A row whose computed norm exceeds zeta by at most this relative amount is rounding of a
# row at the bound (e.g. one just clipped to it), not a violation of Assumption 1.
NORM_RTOL = 1e-12


def _is_sparse(X: Any) -> bool:
    return sparse.issparse(X)


def _is_numeric_dtype(t: Any) -> bool:
    """numpy numeric or bool dtypes, and pandas extension dtypes of kind b/i/u/f (nullable
    boolean, Int64, Float64). Dtypes numpy cannot interpret (pandas' string dtype, the default
    for text columns from pandas 3 on; categoricals) are not numeric."""
    try:
        return bool(np.issubdtype(t, np.number) or np.issubdtype(t, np.bool_))
    except TypeError:
        return getattr(t, "kind", None) in ("b", "i", "u", "f")


def is_dask(obj: Any) -> bool:
    """Whether ``obj`` is a Dask collection or a Dask engine (held on a dask cluster)."""
    return hasattr(obj, "__dask_graph__") or getattr(obj, "is_dask_engine", False)


def check_numeric_columns(X: Any) -> None:
    """Refuse a (pandas or Dask) DataFrame with non-numeric columns, naming them."""
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        bad = [str(c) for c, t in X.dtypes.items() if not _is_numeric_dtype(t)]
        if bad:
            raise DataError(
                f"features must be numeric; columns {bad[:5]} are not: encode them first "
                "(e.g. one-hot with public categories)"
            )


def nonfinite_error(count: int) -> DataError:
    return DataError(f"X has {count} non-finite values (NaN or inf); impute or drop them first")


def norm_error(count: int, zeta: float) -> DataError:
    return DataError(
        f"{count} rows have norm above data_norm = {zeta:g} (Assumption 1); pass clip=True "
        "to scale them down to data_norm, or state a larger public data_norm"
    )


def as_feature_matrix(X: Any) -> np.ndarray | sparse.csr_matrix:
    """Dense float64 (C order) or CSR float64; refuses non-numeric, non-2-D, non-finite input."""
    if _is_sparse(X):
        M = sparse.csr_matrix(X, dtype=np.float64)
        values = M.data
    else:
        check_numeric_columns(X)  # pandas DataFrame: name the offending columns
        try:
            M = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError("features must be numeric: encode non-numeric columns first") from None
        if M.ndim != 2:
            raise DataError(f"X must be 2-D (n_samples, n_features); got shape {M.shape}")
        M = np.ascontiguousarray(M)
        values = M
    if M.shape[0] == 0 or M.shape[1] == 0:
        raise DataError(f"X must have at least one row and one column; got shape {M.shape}")
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise nonfinite_error(bad)
    return M


def row_norms(X: np.ndarray | sparse.csr_matrix) -> np.ndarray:
    if _is_sparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def bound_rows(
    X: np.ndarray | sparse.csr_matrix, zeta: float, *, clip: bool
) -> tuple[np.ndarray | sparse.csr_matrix, int]:
    """Rows scaled to norm <= zeta (Assumption 1): clipped when ``clip``, else refused.

    Returns the matrix (a copy when rows were clipped) and the number of clipped rows.
    """
    zeta = check_positive("data_norm", zeta)
    norms = row_norms(X)
    over = norms > zeta * (1.0 + NORM_RTOL)
    count = int(np.count_nonzero(over))
    if count == 0:
        return X, 0
    if not clip:
        raise norm_error(count, zeta)
    scale = np.ones_like(norms)
    scale[over] = zeta / norms[over]
    if _is_sparse(X):
        return sparse.csr_matrix(sparse.diags(scale) @ X), count
    return X * scale[:, None], count


def add_intercept(
    X: np.ndarray | sparse.csr_matrix, scaling: float
) -> np.ndarray | sparse.csr_matrix:
    """Append the constant feature ``scaling`` (the intercept column)."""
    col = np.full((X.shape[0], 1), scaling)
    if _is_sparse(X):
        return sparse.hstack([X, sparse.csr_matrix(col)], format="csr")
    return np.hstack([X, col])


def total_norm(data_norm: float, intercept_scaling: float) -> float:
    """zeta of the certificate when an intercept column of value c is appended:
    sqrt(data_norm^2 + c^2)."""
    return math.hypot(data_norm, intercept_scaling)


@dataclass(frozen=True)
class PreparedData:
    """Data meeting the contract: rows of norm <= zeta, labels encoded for the loss.

    ``X`` is what the gradient engine reads: a dense or CSR matrix in memory, or, for data
    on a cluster, a :class:`~objpert.engines.distributed.DaskEngine` holding the checked
    partitions (then ``y`` is a lazy Dask array and :attr:`distributed` is True).
    """

    X: Any
    y: Any
    zeta: float  # the certificate's row-norm bound (intercept column included)
    data_norm: float  # the stated bound on the feature rows
    intercept_scaling: float  # 0.0 without an intercept column
    n_clipped: int
    classes: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def distributed(self) -> bool:
        """Whether the features are held on a cluster (a Dask engine) rather than in memory."""
        return bool(getattr(self.X, "is_dask_engine", False))


def prepare_in_memory(
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
    ``classes``: the public label set (see :func:`~objpert.data.labels.binary_classes`;
    for "binary" labels).
    """
    M = as_feature_matrix(X)
    if labels == "binary":
        yy, classes = encode_binary(y, classes)
    elif labels == "real":
        yy, classes = as_targets(y), None
    else:
        raise DataError(f"labels must be 'binary' or 'real'; got {labels!r}")
    if yy.shape[0] != M.shape[0]:
        raise DataError(f"X has {M.shape[0]} rows but y has {yy.shape[0]} labels")
    M, clipped = bound_rows(M, data_norm, clip=clip)
    c = 0.0
    if fit_intercept:
        c = check_positive(
            "intercept_scaling", data_norm if intercept_scaling is None else intercept_scaling
        )
        M = add_intercept(M, c)
    return PreparedData(M, yy, total_norm(data_norm, c), float(data_norm), c, clipped, classes)


def for_plan_in_memory(
    X: Any, y: Any, *, n: int, d: int, zeta: float, label_kind: str, clip: bool
) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray, int]:
    """(X, y) checked against a plan's public n, d, zeta and label kind, rows bounded
    (clipped when ``clip``): (matrix, labels, rows clipped)."""
    M = as_feature_matrix(X)
    if M.shape != (n, d):
        raise DataError(f"the plan is for data of shape ({n}, {d}) (public n and d); got {M.shape}")
    yy = encode_binary(y)[0] if label_kind == "binary" else as_targets(y)
    if yy.shape[0] != n:
        raise DataError(f"X has {n} rows but y has {yy.shape[0]} labels")
    M, clipped = bound_rows(M, zeta, clip=clip)
    return M, yy, clipped
