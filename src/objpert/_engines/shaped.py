"""Engines shaped by the data: exact merging of duplicate rows, one-hot columns as CSR or
as one key per row.

Two identities of the GLM gradient of eq. (1) of Watkins & Arora (2026) make the same
descent cheaper without changing what it computes:

* **Duplicate rows.** sum_i x_i l'(<x_i, w>, y_i) = sum_u c_u x_u l'(<x_u, w>, y_u) over
  the unique (row, label) pairs u with their counts c_u, so :class:`WeightedEngine` runs
  eq. (4) on the merged pairs; the public n stays the 1/n factor and the counts enter only
  as multiplicities. w_N is the same up to rounding (the sum is taken in another order).
* **One-hot blocks.** Columns whose values lie in {0, c} (indicator columns, one-hot
  encodings) are mostly zeros; stored as CSR they cost 12 bytes per non-zero instead of 8
  per entry, at a few times the cost per entry. :func:`step_cost` estimates a step's cost
  for dense, CSR, dense continuous columns beside a CSR block (:class:`SplitEngine`),
  and the keyed rows (:class:`~objpert._engines.keyed.KeyedEngine`: the indicator
  columns of a row as the index of its pattern of non-zeros among the distinct ones, no
  entry stored), merged or not.

:func:`shape_engine` applies both where they pay. The output is the same function of the
data whichever layout runs (rounding aside); what they change is the time to fit, which
depends on the number of unique rows, the sparsity and the patterns: the time is a side channel
(docs/threat-model.md), and none of these statistics enters the model, its file or its
certificate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from objpert._engines.array import Engine, make_engine
from objpert._engines.compiled import available as compiled_available
from objpert._engines.compiled import numba_kernels
from objpert._engines.keyed import KeyedEngine, key_rows
from objpert._engines.sparse import SparseEngine
from objpert._losses import Loss
from objpert._validation import check_choice
from objpert.exceptions import ParameterError

__all__ = [
    "CSR_ENTRY_COST",
    "DENSE_TWO_PASS_COST",
    "FUSED_CSR_ENTRY_COST",
    "KEYED_DENSE_COST",
    "KEYED_KEY_COST",
    "KEYED_ROW_COST",
    "LAYOUTS",
    "SHAPING_PAYS",
    "DataShape",
    "SplitEngine",
    "WeightedEngine",
    "choose_layout",
    "group_features",
    "indicator_columns",
    "merge_rows",
    "shape_engine",
]

#: Cost of one step per entry, in units of a dense entry in the fused dense sweep: a dense
#: entry in two plain passes (merged rows, the split layout's dense block), a stored CSR
#: entry (either sweep). Measured on flights (benchmarks/data_shape.py, docs/performance.md):
#: 6.8 ns per dense entry fused, 12 ns in two passes, 24-26 ns per CSR entry.
DENSE_TWO_PASS_COST = 2.0
CSR_ENTRY_COST = 3.5
#: A stored CSR entry in the compiled weighted sweep at one point w with one label per row
#: (:func:`~objpert._engines.compiled.loops.csr_rows`: a gather and a scatter per entry,
#: its row's derivative included). Flights, benchmarks/data_shape.py: 8.2 ms a step for
#: the 1.14 million entries of the merged rows against 21.3 ms for 12.3 million dense.
FUSED_CSR_ENTRY_COST = 4.0
#: The keyed layout (:class:`~objpert._engines.keyed.KeyedEngine`) in the compiled sweep,
#: per row (its label, count, loss derivative and share of its pattern's sum), per dense
#: entry of a row, and per indicator column of each distinct pattern (the table of
#: patterns, twice a step). Flights, benchmarks/data_shape.py: 3.0 ms a step for the
#: 163,203 merged rows (3 dense columns, 2,748 patterns of 38 columns) against 28.6 ms for
#: the 12.3 million dense entries, 11.4 ms for merged CSR (docs/performance.md).
KEYED_ROW_COST = 4.0
KEYED_DENSE_COST = 1.0
KEYED_KEY_COST = 0.5
#: Shaping is taken only when its cost per step is at most this fraction of the dense one.
SHAPING_PAYS = 0.8
#: The layouts :func:`choose_layout` picks from.
LAYOUTS: tuple[str, ...] = ("dense", "csr", "split", "keyed")


@dataclass(frozen=True)
class DataShape:
    """What :func:`shape_engine` found and chose (statistics of the private data: shown to
    the person running the fit, never stored with the model)."""

    n: int
    d: int
    rows: int  # the rows the engine sweeps: the unique (row, label) pairs when merged
    indicator_columns: int
    layout: str
    merged: bool
    keys: int = 0  # the distinct patterns of the indicator columns (the keyed layout)


def _row_hash(keys: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of the uint64 view of the keys (equal rows, equal hashes):
    the sum over columns of splitmix64(key ^ salt_j). The mixing matters: float bits end in
    runs of zeros, on which a plain linear hash collides. One compiled pass where numba
    is in use (:func:`~objpert._engines.compiled.shaping.row_hash`), else numpy."""
    salt = np.random.default_rng(0x5EED).integers(1, 2**63, keys.shape[1], dtype=np.uint64)
    kernels = _compiled()
    if kernels is not None:
        out = np.empty(keys.shape[0], np.uint64)
        kernels.row_hash(np.ascontiguousarray(keys), salt, out)
        return out
    z = keys ^ salt
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z.sum(axis=1, dtype=np.uint64)


def _compiled() -> Any:
    """The compiled kernel set when numba's kernels are in use (else None: numpy)."""
    return numba_kernels()


def _rows_match(keys: np.ndarray, first: np.ndarray, inverse: np.ndarray) -> bool:
    """Whether every row of keys equals the row first[inverse[i]] bit for bit."""
    kernels = _compiled()
    if kernels is not None:
        return bool(kernels.rows_match(keys, first.astype(np.int64), inverse.astype(np.int64)))
    return bool(np.array_equal(keys[first][inverse], keys))


def merge_rows(
    X: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The unique (row, label) pairs of dense X (n, d) and y (n,) or (n, B), compared bit
    for bit, in the order of first appearance: (X_u, y_u, counts, inverse) with
    X[i] = X_u[inverse[i]], y[i] = y_u[inverse[i]] and sum(counts) = n."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    xk = X.view(np.uint64)
    yk = np.ascontiguousarray(y.reshape(len(y), -1)).view(np.uint64)
    # a 64-bit hash of each row's bits (its features' hash plus its labels') sorts fast;
    # rows sharing a hash are then compared bit for bit, and any collision falls back to
    # sorting the rows' bytes themselves
    hashed = _row_hash(xk) + _row_hash(yk)
    _, first, inverse, counts = np.unique(
        hashed, return_index=True, return_inverse=True, return_counts=True
    )
    inverse = inverse.ravel()
    if not (_rows_match(xk, first, inverse) and _rows_match(yk, first, inverse)):
        keys = np.ascontiguousarray(np.column_stack([xk, yk]))
        void = keys.view(np.dtype((np.void, 8 * keys.shape[1]))).ravel()
        _, first, inverse, counts = np.unique(
            void, return_index=True, return_inverse=True, return_counts=True
        )
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    u = first[order]
    return X[u], y[u], counts[order].astype(np.float64), rank[inverse.ravel()]


def group_features(
    X: np.ndarray, y: np.ndarray, counts: np.ndarray, inverse: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The merged pairs of :func:`merge_rows` reordered so that pairs with the same row
    (other labels) are adjacent: (X, y, counts, inverse, same), same[i] = 1 when row i
    equals row i - 1 bit for bit (a hash groups them; the flag is an exact comparison)."""
    keys = np.ascontiguousarray(X).view(np.uint64)
    _, first, group = np.unique(_row_hash(keys), return_index=True, return_inverse=True)
    order = np.argsort(first[group.ravel()], kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    ks = keys[order]
    same = np.zeros(len(order), np.uint8)
    same[1:] = np.all(ks[1:] == ks[:-1], axis=1)
    return X[order], y[order], counts[order], rank[inverse], same


def indicator_columns(X: np.ndarray, chunk: int = 65536) -> tuple[np.ndarray, np.ndarray]:
    """(mask, nnz): the columns of X whose non-zero values are all equal (values in {0, c}),
    and every column's count of non-zeros; in one compiled pass where numba is in use, else
    read in row chunks of ``chunk`` rows."""
    n, d = X.shape
    nnz = np.zeros(d, dtype=np.int64)
    lo = np.full(d, np.inf)
    hi = np.full(d, -np.inf)
    kernels = _compiled()
    if kernels is not None:
        kernels.indicator_scan(np.ascontiguousarray(X, dtype=np.float64), nnz, lo, hi)
        return (nnz == 0) | (lo == hi), nnz
    for s in range(0, n, chunk):
        block = X[s : s + chunk]
        nz = block != 0
        nnz += nz.sum(axis=0)
        lo = np.minimum(lo, np.where(nz, block, np.inf).min(axis=0))
        hi = np.maximum(hi, np.where(nz, block, -np.inf).max(axis=0))
    return (nnz == 0) | (lo == hi), nnz


def step_cost(
    rows: int,
    mask: np.ndarray,
    nnz: np.ndarray,
    layout: str,
    merged: bool,
    fused: bool = False,
    keys: int = 0,
) -> float:
    """Estimated cost of one step on ``rows`` rows (unique pairs when ``merged``) in
    ``layout``, in dense fused entries: dense rows d, fused unless merged; CSR
    ``CSR_ENTRY_COST`` per stored entry (``FUSED_CSR_ENTRY_COST`` when ``fused``: the
    compiled sweep at one point); split: its dense block in two passes beside CSR; keyed
    (``keys`` distinct patterns of the indicator columns): ``KEYED_ROW_COST`` per row,
    ``KEYED_DENSE_COST`` per dense entry and ``KEYED_KEY_COST`` per pattern and indicator
    column when ``fused``, twice the row cost and the dense entries in two passes
    otherwise (numpy)."""
    d = len(mask)
    if layout == "dense":
        return rows * d * (DENSE_TWO_PASS_COST if merged else 1.0)
    if layout == "csr":
        return (FUSED_CSR_ENTRY_COST if fused else CSR_ENTRY_COST) * float(nnz.sum())
    dense = int((~mask).sum())
    if layout == "keyed":
        if fused:
            per_row = KEYED_ROW_COST + KEYED_DENSE_COST * dense
        else:
            per_row = 2 * KEYED_ROW_COST + DENSE_TWO_PASS_COST * dense
        return rows * per_row + KEYED_KEY_COST * keys * int(mask.sum())
    return DENSE_TWO_PASS_COST * rows * dense + CSR_ENTRY_COST * float(nnz[mask].sum())


def choose_layout(
    rows: int,
    mask: np.ndarray,
    nnz: np.ndarray,
    merged: bool = False,
    fused: bool = False,
    keys: int = 0,
) -> tuple[str, float]:
    """(layout, cost) of the cheapest layout of :data:`LAYOUTS` by :func:`step_cost` (split
    only when some columns are indicators, keyed only when their ``keys`` are given)."""
    layouts = [
        k for k in LAYOUTS if k in ("dense", "csr") or (mask.any() and (k != "keyed" or keys))
    ]
    costs = {k: step_cost(rows, mask, nnz, k, merged, fused, keys) for k in layouts}
    best = min(costs, key=costs.__getitem__)
    return best, costs[best]


class SplitEngine:
    """X as its dense continuous columns beside a CSR block of indicator columns:
    X @ W = X_dense @ W[dense] + X_csr @ W[indicator]."""

    def __init__(self, X: np.ndarray, mask: np.ndarray) -> None:
        self.n, self.d = (int(s) for s in X.shape)
        self.dense_cols = np.flatnonzero(~mask)
        self.sparse_cols = np.flatnonzero(mask)
        self.dense = np.ascontiguousarray(X[:, self.dense_cols], dtype=np.float64)
        self.csr = sparse.csr_matrix(X[:, self.sparse_cols], dtype=np.float64)
        self._csr_t = self.csr.T.tocsr()

    def matvec(self, W: np.ndarray) -> np.ndarray:
        out = self.dense @ W[self.dense_cols]
        out += self.csr @ W[self.sparse_cols]
        return out

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        out = np.empty((self.d, *R.shape[1:]))
        out[self.dense_cols] = self.dense.T @ R
        out[self.sparse_cols] = self._csr_t @ R
        return out


class WeightedEngine:
    """The merged (row, label) pairs of a data set: an inner engine over the unique rows,
    their labels and counts; ``n`` is the public n. ``glm_gradient(W, None, loss)`` is
    sum_u c_u x_u l'(<x_u, W>, y_u), the full data's sum over rows; ``matvec`` and
    ``labels`` give the full data's X @ W and y (for values and Hessian products)."""

    def __init__(self, inner: Engine, y: np.ndarray, counts: np.ndarray, inverse: np.ndarray):
        self.inner, self.y, self.counts = inner, np.asarray(y, dtype=np.float64), counts
        self.inverse = inverse
        self.n, self.d = len(inverse), inner.d

    def labels(self) -> np.ndarray:
        return self.y[self.inverse]

    def matvec(self, W: np.ndarray) -> np.ndarray:
        return self.inner.matvec(W)[self.inverse]

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        R = np.asarray(R, dtype=np.float64)
        summed = np.zeros((self.inner.n, *R.shape[1:]))
        np.add.at(summed, self.inverse, R)
        return self.inner.rmatvec(summed)

    def glm_gradient(self, W: np.ndarray, y: Any, loss: Loss) -> np.ndarray:
        if y is not None:
            raise ParameterError("a merged engine holds its labels: pass y=None")
        if getattr(self.inner, "counts", None) is not None:
            return self.inner.glm_gradient(W, self.y, loss)  # its sweep weighs the rows
        m = self.inner.matvec(W)
        labels = self.y[:, None] if m.ndim == 2 and self.y.ndim == 1 else self.y
        loss.d1_into(m, labels, m)
        m *= self.counts[:, None] if m.ndim == 2 else self.counts
        return self.inner.rmatvec(m)


def _layout_engine(
    X: np.ndarray,
    layout: str,
    mask: np.ndarray,
    n_jobs: int | None,
    counts: np.ndarray,
    same: np.ndarray | None = None,
) -> Engine:
    if layout == "csr":  # row weights: the fused weighted sweep (ones when not merged)
        A = sparse.csr_matrix(X)
        return SparseEngine(A, threads=n_jobs, counts=counts, same=same)
    if layout == "split":
        return SplitEngine(X, mask)
    return make_engine(X, n_jobs=n_jobs)


def _keyed_engine(
    X: np.ndarray,
    y: np.ndarray,
    counts: np.ndarray,
    inverse: np.ndarray,
    mask: np.ndarray,
    n_jobs: int | None,
    key: np.ndarray | None = None,
) -> WeightedEngine:
    """The rows X (labels y, weights counts; the full data's row i is row inverse[i])
    sorted by their keys (:func:`~objpert._engines.keyed.key_rows`, stable; ``key``: those
    already computed) in a :class:`~objpert._engines.keyed.KeyedEngine`, held by a
    :class:`WeightedEngine`."""
    key = key_rows(X, mask)[0] if key is None else key
    order = np.argsort(key, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    inner = KeyedEngine(X[order], mask, key[order], counts[order], threads=n_jobs)
    return WeightedEngine(inner, y[order], counts[order], rank[inverse])


def shape_engine(
    X: Any,
    y: np.ndarray,
    *,
    merge: bool | None = None,
    layout: str | None = None,
    n_jobs: int | None = None,
) -> tuple[Engine, np.ndarray | None, DataShape]:
    """(engine, labels for :class:`~objpert._engines.glm.GLMObjective`, what was chosen)
    for dense X and labels y. ``merge``: merge duplicate (row, label) pairs; ``layout``:
    one of :data:`LAYOUTS`; None: the cheapest by :func:`step_cost`, and the plain dense
    engine unless shaping costs at most ``SHAPING_PAYS`` of it. A merged engine holds its
    labels (returned labels None). Sparse X is returned as
    :func:`~objpert._engines.array.make_engine` builds it."""
    y = np.asarray(y, dtype=np.float64)
    if layout is not None:
        layout = check_choice("layout", layout, LAYOUTS)
    if merge is not None and not isinstance(merge, bool | np.bool_):
        raise ParameterError(f"merge must be True, False or None; got {merge!r}")
    if sparse.issparse(X):
        n, d = X.shape
        return make_engine(X, n_jobs=n_jobs), y, DataShape(n, d, n, 0, "csr", False)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, d = X.shape
    fused = y.ndim == 1 and compiled_available()  # the compiled sweeps at one point
    merged_rows = merge_rows(X, y) if merge is not False else None
    options = []  # (cost, merged, layout, indicator columns, mask)
    keyed = None  # (key, K) of the rows of the fewest: K is the same merged or not
    for merged in (False, True) if merge is None else (bool(merge),):
        Xm = merged_rows[0] if merged else X
        mask, nnz = indicator_columns(Xm)
        if mask.any() and layout in (None, "keyed") and keyed is None:
            keyed = key_rows(merged_rows[0] if merged_rows is not None else X, mask)
        keys = 0 if keyed is None else keyed[1]
        if layout is None:
            chosen, cost = choose_layout(len(Xm), mask, nnz, merged, fused, keys)
        else:
            chosen, cost = layout, step_cost(len(Xm), mask, nnz, layout, merged, fused, keys)
        options.append((cost, merged, chosen, int(mask.sum()), mask))
    cost, merged, chosen, indicators, mask = min(options, key=lambda o: o[0])
    if merge is None and layout is None and cost > SHAPING_PAYS * n * d:
        merged, chosen = False, "dense"
    merged = merged and merged_rows is not None
    rows = len(merged_rows[0]) if merged else n
    shape = DataShape(n, d, rows, indicators, chosen, merged, keys if chosen == "keyed" else 0)
    if chosen == "keyed":
        rows_of = (*merged_rows,) if merged else (X, y, np.ones(n), np.arange(n))
        key = keyed[0] if keyed is not None and len(keyed[0]) == rows else None
        return _keyed_engine(*rows_of, mask, n_jobs, key), None, shape
    if not merged:
        built = _layout_engine(X, chosen, mask, n_jobs, np.ones(n))
        return built, y, shape
    Xu, yu, counts, inverse, same = group_features(*merged_rows)
    inner = _layout_engine(Xu, chosen, mask, n_jobs, counts, same if yu.ndim == 1 else None)
    return WeightedEngine(inner, yu, counts, inverse), None, shape
