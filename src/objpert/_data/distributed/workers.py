"""What runs on the workers: one partition checked under the contract, labels encoded."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from objpert._data.contract import (
    add_intercept,
    bound_rows,
    count_nonfinite,
)
from objpert._data.distributed.cluster import (
    _guard_partition,
)
from objpert._data.labels import as_targets
from objpert._engines.distributed import (
    aligned,
)
from objpert.exceptions import DataError

__all__: list[str] = []  # internal to objpert._data.distributed

# ---------------------------------------------------------------- on the workers


def _split_frame_part(part: Any, label: str | None) -> tuple[np.ndarray, Any]:
    """A DataFrame partition to (features as float64, labels or None)."""
    feats = part.drop(columns=[label]) if label is not None else part
    d = feats.shape[1]
    _guard_partition(len(feats), 8.0 * (3 * d + 1), "converted to float64 and checked")
    X = feats.to_numpy(dtype=np.float64, na_value=np.nan)
    return X, (None if label is None else part[label].to_numpy())


def _check_labels(yb: Any, labels: str | None) -> tuple[np.ndarray, dict[str, Any]]:
    """One partition of labels: (labels as checked, statistics): "real" targets as float64
    (an error in the statistics), the classes found otherwise."""
    stats: dict[str, Any] = {"error": None, "classes": None, "y_rows": int(np.size(yb))}
    y = np.asarray(yb).ravel()
    if labels == "real":
        try:
            y = aligned(as_targets(y))
        except DataError as err:
            stats["error"] = err
    elif labels is not None:
        stats["classes"] = np.unique(y)
    return y, stats


def _check_block(
    Xb: Any, yb: Any, zeta: float, clip: bool, intercept: float, labels: str | None
) -> tuple[Any, Any, dict[str, Any]]:
    """One partition under the contract: (X_b bounded [+ intercept], y_b, statistics).

    Errors are returned in the statistics (raised by the client, which sees all
    partitions); rows above zeta are always clipped here and refused by the client when
    clipping is off. ``yb`` None: labels held elsewhere (checked on the client).
    """
    stats: dict[str, Any] = {"error": None, "nonfinite": 0, "clipped": 0, "classes": None}
    if not sparse.issparse(Xb):
        rows, d = np.shape(Xb)
        convert = 0 if getattr(Xb, "dtype", None) == np.float64 else 1
        per_row = 8.0 * ((1 + convert) * d + ((d + 1) if intercept else 0))
        _guard_partition(rows, per_row, "checked (clipped copy, intercept column)")
    X = sparse.csr_matrix(Xb, dtype=np.float64) if sparse.issparse(Xb) else aligned(Xb)
    stats["rows"], stats["cols"] = X.shape
    stats["y_rows"] = None
    values = X.data if sparse.issparse(X) else X
    stats["nonfinite"] = count_nonfinite(values)
    if stats["nonfinite"] == 0:
        X, stats["clipped"] = bound_rows(X, zeta, clip=True)
        if intercept:
            X = add_intercept(X, intercept)
    y = None
    if yb is not None:
        y, label_stats = _check_labels(yb, labels)
        stats.update(label_stats)
    return X, y, stats


def _encode_block(y: np.ndarray, classes: np.ndarray, labels: str) -> np.ndarray:
    """Labels to -1/+1 (classes[1] -> +1, as :func:`objpert._data.encode_binary`) or to
    class codes 0..K-1 (float)."""
    if labels == "binary":
        return np.where(y == classes[1], 1.0, -1.0)
    return np.searchsorted(classes, y).astype(np.float64)
