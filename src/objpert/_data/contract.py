"""The data contract: turn user input into what the theorems assume.

Assumption 1 of Watkins & Arora (2026) needs every row to have norm <= zeta, and the
certificate needs n, d and zeta as *public* values: stated by the caller (zeta, the
intercept scaling) or public by construction (n and d, the shape of the table — objpert,
like the paper, treats the number of rows as public). Nothing here feeds a statistic of
the data into a certificate; the count of clipped rows is reported to the caller only.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from objpert._data.labels import as_targets, encode_binary
from objpert.exceptions import DataError

__all__ = [
    "MEMORY_CHECK_ENV",
    "MEMORY_FRACTION",
    "NORM_RTOL",
    "PreparedData",
    "add_intercept",
    "as_feature_matrix",
    "available_memory",
    "bound_rows",
    "check_numeric_columns",
    "conversion_bytes",
    "count_nonfinite",
    "for_plan_in_memory",
    "format_bytes",
    "in_memory_peak",
    "is_dask",
    "memory_checks_enabled",
    "nonfinite_error",
    "norm_error",
    "prepare_in_memory",
    "require_memory",
    "require_memory_for",
    "row_norms",
    "total_norm",
]

# A row whose computed norm exceeds zeta by at most this relative amount is rounding of a
# row at the bound (e.g. one just clipped to it), not a violation of Assumption 1.
NORM_RTOL = 1e-12

#: Share of the available memory (:func:`available_memory`) that objpert's copies of
#: in-memory data may take: input needing more is refused before it is converted or scanned.
MEMORY_FRACTION = 0.9
#: Set this environment variable to 0 (or off, false, no) to skip the memory checks.
MEMORY_CHECK_ENV = "OBJPERT_MEMORY_CHECK"
_SCAN_ENTRIES = 1 << 22  # entries per block when counting non-finite values


def _is_sparse(X: Any) -> bool:
    return sparse.issparse(X)


def _is_numeric_dtype(t: Any) -> bool:
    """numpy numeric or bool dtypes, and pandas extension dtypes of kind b/i/u/f (nullable
    boolean, Int64, Float64). Dtypes numpy cannot interpret (pandas' string dtype, the default
    for text columns from pandas 3 on; categoricals) are not numeric."""
    if getattr(t, "kind", None) in ("m", "M"):  # timedelta64 counts as an integer to numpy
        return False
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


# ---------------------------------------------------------------- memory


def format_bytes(count: float) -> str:
    """``count`` bytes for a message: "512 KiB", "3.4 GiB"."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(count) < 1024 or unit == "TiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    raise AssertionError("unreachable")


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _cgroup_available() -> int | None:
    """The memory left under this process's cgroup limit (v2, else v1), reclaimable page
    cache counted as free; None without a limit."""
    for limit_file, usage_file, inactive in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current", "inactive_file"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
            "total_inactive_file",
        ),
    ):
        limit, usage = _read_int(limit_file), _read_int(usage_file)
        if limit is None or usage is None or limit >= 1 << 60:  # absent, or no limit
            continue
        cache = 0
        try:
            with open(os.path.join(os.path.dirname(limit_file), "memory.stat")) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == inactive:
                        cache = int(value)
        except (OSError, ValueError):
            pass
        return max(0, limit - usage + cache)
    return None


def available_memory() -> int | None:
    """Bytes this process can still allocate without swapping: psutil's ``available`` when
    psutil is installed, else MemAvailable of /proc/meminfo, else the free pages of
    ``os.sysconf``; bounded by the cgroup (container) limit. None when nothing tells."""
    avail: int | None = None
    try:
        import psutil

        avail = int(psutil.virtual_memory().available)
    except Exception:  # not installed, or no answer on this platform
        avail = _meminfo_available()
        if avail is None:
            try:
                avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
            except (AttributeError, ValueError, OSError):
                avail = None
    limit = _cgroup_available()
    if limit is not None:
        avail = limit if avail is None else min(avail, limit)
    return avail


def memory_checks_enabled() -> bool:
    return os.environ.get(MEMORY_CHECK_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def require_memory(needed: int, what: str) -> None:
    """Refuse (DataError, before anything is allocated) when ``needed`` bytes exceed
    MEMORY_FRACTION of :func:`available_memory`; ``what`` says what they are for."""
    if needed <= 0 or not memory_checks_enabled():
        return
    avail = available_memory()
    if avail is None or needed <= MEMORY_FRACTION * avail:
        return
    raise DataError(
        f"{what} needs about {format_bytes(needed)} of memory but {format_bytes(avail)} is "
        f"available ({MEMORY_FRACTION:.0%} of it usable): fit on a Dask cluster instead "
        "(a Dask array, or objpert._data.distributed.from_parquet; docs/dask.md), or use "
        f"fewer rows or columns ({MEMORY_CHECK_ENV}=0 skips this check)"
    )


def _shape2(X: Any) -> tuple[int, int] | None:
    shape = getattr(X, "shape", None)
    try:
        n, d = (int(s) for s in shape)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        return None
    return n, d


def _float64_bytes(X: Any) -> int:
    """Bytes of X as objpert's float64 matrix (dense, or CSR from the stored entries)."""
    n, d = _shape2(X) or (0, 0)
    if _is_sparse(X):
        index = 8 if n * d >= 1 << 31 else 4
        return int(X.nnz) * (8 + index) + (n + 1) * index
    return 8 * n * d


def conversion_bytes(X: Any) -> int:
    """Bytes :func:`as_feature_matrix` allocates for X (0: X is used as it is, as a float64
    C-ordered ndarray, a numpy memmap included, or a float64 CSR matrix)."""
    if _shape2(X) is None:
        return 0  # shape unknown before conversion (e.g. nested lists): nothing to check
    if _is_sparse(X):
        return 0 if X.format == "csr" and X.dtype == np.float64 else _float64_bytes(X)
    if isinstance(X, np.ndarray) and X.dtype == np.float64 and X.flags.c_contiguous:
        return 0
    return _float64_bytes(X)


def in_memory_peak(X: Any, *, clip: bool, intercept: bool) -> int:
    """The most bytes objpert holds at once while it prepares X in memory, from the public
    shape and dtype only: the float64 conversion, a clipped copy (assumed whenever ``clip``:
    whether rows are clipped depends on the data) and the copy with the intercept column."""
    shape = _shape2(X)
    if shape is None:
        return 0
    n, _ = shape
    B = _float64_bytes(X)
    conv = conversion_bytes(X)
    clipped = B if clip else 0
    held = B if (conv or clip) else 0  # objpert's copy once the rows are bounded
    column = (B + (12 if _is_sparse(X) else 8) * n) if intercept else 0
    return max(conv + clipped, held + column) + 32 * n  # + norms, scales and masks


def _describe(X: Any) -> str:
    shape = _shape2(X)
    kind = "sparse " if _is_sparse(X) else ""
    dtype = getattr(X, "dtype", None)
    dtype = "" if dtype is None else f" {dtype}"
    return "X" if shape is None else f"X ({kind}{shape[0]} x {shape[1]}{dtype})"


def require_memory_for(X: Any, *, clip: bool, intercept: bool) -> None:
    """Refuse X at once, before it is converted or scanned, when :func:`in_memory_peak`
    exceeds the memory available (:func:`require_memory`)."""
    parts = ["float64 conversion"] if conversion_bytes(X) else []
    parts += ["a clipped copy"] * bool(clip) + ["the intercept column"] * bool(intercept)
    what = f"{_describe(X)} in float64" + (f" ({', '.join(parts)})" if parts else "")
    require_memory(in_memory_peak(X, clip=clip, intercept=intercept), what)


def count_nonfinite(values: np.ndarray) -> int:
    """NaN and inf entries, counted block by block (no temporary the size of ``values``)."""
    if values.ndim != 2:  # the stored entries of a sparse matrix
        values = values.reshape(-1, 1)
    step = max(1, _SCAN_ENTRIES // max(1, values.shape[1]))
    bad = 0
    for a in range(0, values.shape[0], step):
        block = values[a : a + step]
        bad += block.size - int(np.count_nonzero(np.isfinite(block)))
    return bad


def nonfinite_error(count: int, where: str = "") -> DataError:
    """The refusal of X with ``count`` NaN or inf entries (``where``: the first one)."""
    at = f", the first {where}" if where else ""
    return DataError(f"X has {count} non-finite values (NaN or inf){at}; impute or drop them first")


def first_nonfinite(M: np.ndarray | sparse.csr_matrix, columns: Any = None) -> str:
    """Where the first NaN or inf of M is: its row (counting from 0) and column (by name
    when ``columns`` names them). Called on the error path only."""
    if sparse.issparse(M):
        coo = M.tocoo()
        bad = ~np.isfinite(coo.data)
        rows, cols = coo.row[bad], coo.col[bad]
        first = int(np.lexsort((cols, rows))[0])
        row, col = int(rows[first]), int(cols[first])
    else:
        row, col = (int(v) for v in np.argwhere(~np.isfinite(M))[0])
    name = repr(str(columns[col])) if columns is not None and col < len(columns) else str(col)
    return f"at row {row} (counting from 0), column {name}"


def norm_error(count: int, zeta: float) -> DataError:
    return DataError(
        f"{count} rows have norm above data_norm = {zeta:g} (Assumption 1); pass clip=True "
        "to scale them down to data_norm, or state a larger public data_norm"
    )


def as_feature_matrix(X: Any) -> np.ndarray | sparse.csr_matrix:
    """Dense float64 (C order) or CSR float64; refuses non-numeric, non-2-D, non-finite input,
    and (at once, before converting or scanning) input whose float64 copy would not fit in
    the available memory (:func:`require_memory`)."""
    need = conversion_bytes(X)
    if need:
        require_memory(need + 32 * (_shape2(X) or (0, 0))[0], f"{_describe(X)} in float64")
    frame = hasattr(X, "columns") and hasattr(X, "dtypes")  # a frame: a dtype per column
    dtypes = list(X.dtypes) if frame else [getattr(X, "dtype", None)]
    if "c" in [getattr(t, "kind", None) for t in dtypes]:  # numpy: imaginary parts dropped
        raise DataError("Complex data not supported: features must be real numbers")
    if _is_sparse(X):
        M = sparse.csr_matrix(X, dtype=np.float64)
        values = M.data
    else:
        check_numeric_columns(X)  # pandas DataFrame: name the offending columns
        if getattr(getattr(X, "dtype", None), "kind", None) in ("m", "M"):
            raise DataError(
                "features cannot be dates or times: encode them as numbers with public "
                "bounds (e.g. days since a public origin, scaled to a public range)"
            )
        try:
            if hasattr(X, "columns") and hasattr(X, "to_numpy"):  # pd.NA of Float64 -> NaN
                M = X.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                M = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError("features must be numeric: encode non-numeric columns first") from None
        except OverflowError:  # a Python integer beyond the float64 range
            raise DataError(
                "features must be finite: a value is beyond the float64 range (1.798e+308)"
            ) from None
        if M.ndim != 2:
            raise DataError(f"X must be 2-D (n_samples, n_features); got shape {M.shape}")
        M = np.ascontiguousarray(M)
        values = M
    if M.shape[0] == 0 or M.shape[1] == 0:
        raise DataError(f"X must have at least one row and one column; got shape {M.shape}")
    bad = count_nonfinite(values)
    if bad:
        raise nonfinite_error(bad, first_nonfinite(M, getattr(X, "columns", None)))
    return M


# Rows whose squared entries could overflow or underflow have their norm recomputed scaled.
_SAFE_SQUARE = (1e-150, 1e150)


def row_norms(X: np.ndarray | sparse.csr_matrix) -> np.ndarray:
    """Euclidean norm of each row, without overflow or underflow: the squares are summed
    directly (the common case, unchanged), and a row with an entry beyond 1e150 (or all
    nonzero entries below 1e-150) is recomputed as m * ||x / m|| with m = max |x_j|, so
    a row of entries near 1e200 has norm ~1e200, not inf (and is clipped, not zeroed)."""
    with np.errstate(over="ignore"):
        if _is_sparse(X):
            squares = np.asarray(X.multiply(X).sum(axis=1)).ravel()
            top = np.asarray(X.max(axis=1).todense()).ravel()
            bottom = np.asarray(X.min(axis=1).todense()).ravel()
        elif X.shape[1]:
            squares = np.einsum("ij,ij->i", X, X)
            top, bottom = X.max(axis=1), X.min(axis=1)  # no |X| copy of the matrix
        else:
            squares = top = bottom = np.zeros(X.shape[0])
    big = np.maximum(top, -bottom)
    norms = np.sqrt(squares)
    lo, hi = _SAFE_SQUARE
    redo = np.flatnonzero((big > hi) | ((big > 0) & (big < lo) & (squares < lo * lo)))
    for i in redo:  # rare: only rows at the edge of double range
        row = X.getrow(i).toarray().ravel() if _is_sparse(X) else X[i]
        m = float(np.max(np.abs(row)))
        norms[i] = m * float(np.sqrt(np.sum((row / m) ** 2)))
    return norms


def bound_rows(
    X: np.ndarray | sparse.csr_matrix, zeta: float, *, clip: bool
) -> tuple[np.ndarray | sparse.csr_matrix, int]:
    """Rows scaled to norm <= zeta (Assumption 1): clipped when ``clip``, else refused.

    Returns the matrix (a copy when rows were clipped) and the number of clipped rows.
    With ``clip``, X is refused at once (before its norms are computed) when a copy would
    not fit in the available memory (:func:`require_memory`).
    """
    zeta = float(zeta)
    if clip:
        require_memory(_float64_bytes(X) + 32 * X.shape[0], f"a clipped copy of {_describe(X)}")
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
    on a cluster, a :class:`~objpert._engines.distributed.DaskEngine` holding the checked
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
    ``classes``: the public label set (see :func:`~objpert._data.labels.binary_classes`;
    for "binary" labels). X whose float64 copies (:func:`in_memory_peak`) would not fit in
    the available memory is refused at once, before it is converted or scanned.
    """
    require_memory_for(X, clip=clip, intercept=fit_intercept)
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
        c = float(data_norm if intercept_scaling is None else intercept_scaling)
        M = add_intercept(M, c)
    return PreparedData(M, yy, total_norm(data_norm, c), float(data_norm), c, clipped, classes)


def for_plan_in_memory(
    X: Any, y: Any, *, n: int, d: int, zeta: float, label_kind: str, clip: bool
) -> tuple[np.ndarray | sparse.csr_matrix, np.ndarray, int]:
    """(X, y) checked against a plan's public n, d, zeta and label kind, rows bounded
    (clipped when ``clip``): (matrix, labels, rows clipped)."""
    require_memory_for(X, clip=clip, intercept=False)
    M = as_feature_matrix(X)
    if M.shape != (n, d):
        raise DataError(f"the plan is for data of shape ({n}, {d}) (public n and d); got {M.shape}")
    yy = encode_binary(y)[0] if label_kind == "binary" else as_targets(y)
    if yy.shape[0] != n:
        raise DataError(f"X has {n} rows but y has {yy.shape[0]} labels")
    M, clipped = bound_rows(M, zeta, clip=clip)
    return M, yy, clipped
