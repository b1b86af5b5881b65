"""The check pass over every partition, and the recipe that remakes lost partitions; the
contract's entry points :func:`prepare_dask` and :func:`for_plan_dask`."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from objpert._data.contract import (
    PreparedData,
    nonfinite_error,
    norm_error,
    total_norm,
)
from objpert._data.distributed.cluster import (
    LABELS,
    get_client,
)
from objpert._data.distributed.partitions import (
    _Input,
    _memory_block,
    _row_blocks,
    _scatter,
)
from objpert._data.distributed.workers import (
    _check_block,
    _check_labels,
    _encode_block,
)
from objpert._data.labels import as_targets, binary_classes, check_label_set, class_codes
from objpert._engines.distributed import (
    RESTORE_ATTEMPTS,
    DaskEngine,
    PartitionsLost,
    ask_scheduler,
    collect,
    not_remade,
    step_timeout,
)
from objpert.exceptions import DataError

__all__ = [
    "for_plan_dask",
    "prepare_dask",
]

# ---------------------------------------------------------------- checking and remaking


class _Recipe:
    """How an engine's partitions were made, to make those lost with a worker again.

    Partition j of the engine is source partition ``keep[j]``: its features are checked
    again from their source (in-memory blocks scattered again from the client, the Dask
    graph, or the parent engine's partitions, remade first), its labels scattered again
    from the client's copy under the same keys (so that Dask graphs built on them, such as
    the engine's :meth:`~objpert._engines.distributed.DaskEngine.labels_array`, stay valid)
    or checked again. The remade partitions must give the statistics of the first check
    (rows, rows clipped): the same data, the same result.
    """

    def __init__(
        self,
        client: Any,
        inp: _Input,
        zeta: float,
        intercept: float,
        labels: str | None,
        timeout: float,
    ):
        self.client, self.inp, self.zeta, self.intercept = client, inp, zeta, intercept
        self.labels, self.timeout = labels, timeout
        self.keep: list[int] = []
        self.expected: list[tuple[int, int]] = []
        self.classes: np.ndarray | None = None
        self.reuse = False  # the features are the parent's partitions, unchanged
        self.y_keys: list[str] | None = None  # labels scattered from the client
        self.y_blocks: list[np.ndarray] | None = None

    def _features(self, idx: Sequence[int], doing: str) -> list[Any]:
        """The feature input of source partitions ``idx``, now."""
        inp = self.inp
        if inp.memory is not None:
            source, cuts = inp.memory
            blocks = [_memory_block(source, cuts[i], cuts[i + 1]) for i in idx]
            return _scatter(self.client, blocks, self.timeout, doing, hash=False)
        if inp.parent is not None:
            return [inp.parent._x[i] for i in idx]
        return [inp.xs[i] for i in idx]

    def _labels(self, i: int) -> Any:
        if self.inp.parent_labels:
            assert self.inp.parent is not None and self.inp.parent._y is not None
            return self.inp.parent._y[i]
        return self.inp.ys[i] if self.inp.ys else None

    def submit(self, idx: Sequence[int], xs: Sequence[Any]) -> list[Any]:
        """The check of source partitions ``idx`` (features ``xs``): futures of
        (X_b, y_b, statistics)."""
        import dask

        check = dask.delayed(_check_block, pure=False)
        tasks = [
            check(x, self._labels(i), self.zeta, True, self.intercept, self.labels)
            for x, i in zip(xs, idx, strict=True)
        ]
        return self.client.compute(tasks)

    def statistics(self, futures: Sequence[Any], doing: str) -> list[dict[str, Any]]:
        parts = self.client.map(operator.itemgetter(2), futures, pure=False)
        return collect(self.client, parts, timeout=self.timeout, doing=doing, per_result=True)

    def label_parts(self, futures: Sequence[Any]) -> list[Any]:
        """The engine's label partitions from checked partitions (encoded on the workers)."""
        parts = self.client.map(operator.itemgetter(1), futures, pure=False)
        if self.classes is not None and self.labels in ("binary", "classes"):
            parts = self.client.map(
                _encode_block, parts, classes=self.classes, labels=self.labels, pure=False
            )
        return parts

    def scatter_labels(self, js: Sequence[int], beside: Sequence[Any], doing: str) -> list[Any]:
        """Labels ``js`` (checked and encoded on the client) scattered under their keys to
        the workers holding the futures ``beside`` (their features)."""
        assert self.y_keys is not None and self.y_blocks is not None
        collect(self.client, beside, timeout=self.timeout, doing=doing, gather=False)
        try:
            who = ask_scheduler(self.client, "who_has", keys=[f.key for f in beside])
        except Exception:
            who = {}
        by_worker: dict[str | None, dict[str, np.ndarray]] = {}
        for j, f in zip(js, beside, strict=True):
            holders = sorted(who.get(f.key) or [])
            by_worker.setdefault(holders[0] if holders else None, {})[self.y_keys[j]] = (
                self.y_blocks[j]
            )
        out: dict[str, Any] = {}
        for addr, data in by_worker.items():
            place = {} if addr is None else {"workers": [addr]}
            out.update(_scatter(self.client, data, self.timeout, doing, **place))
        return [out[self.y_keys[j]] for j in js]

    def remake(self, engine: DaskEngine, doing: str) -> None:
        """Make the partitions of ``engine`` lost with a worker again, in place."""
        parent = self.inp.parent
        if parent is not None:
            parent.remake_lost(doing)
        doing = f"the remake of partitions lost with a worker (in {doing})"
        lost_x = [j for j, f in enumerate(engine._x) if f.status == "cancelled"]
        lost_y = [j for j, f in enumerate(engine._y or []) if f.status == "cancelled"]
        if self.reuse:
            assert parent is not None
            engine._x, lost_x = [parent._x[i] for i in self.keep], []
        local = self.y_keys is not None
        redo = sorted(set(lost_x) | (set() if local else set(lost_y)))
        if redo:
            idx = [self.keep[j] for j in redo]
            futures = self.submit(idx, self._features(idx, doing))
            for j, s in zip(redo, self.statistics(futures, doing), strict=True):
                if (s["rows"], s["clipped"]) != self.expected[j] or s["nonfinite"]:
                    raise not_remade(doing, "a remade partition differs from the first check")
            if not self.reuse:
                new_x = self.client.map(operator.itemgetter(0), futures, pure=False)
                for j, f in zip(redo, new_x, strict=True):
                    engine._x[j] = f
            if engine._y is not None and not local:
                for j, f in zip(redo, self.label_parts(futures), strict=True):
                    engine._y[j] = f
        if local and lost_y and engine._y is not None:
            beside = [engine._x[j] for j in lost_y]
            for j, f in zip(lost_y, self.scatter_labels(lost_y, beside, doing), strict=True):
                engine._y[j] = f


def _check(
    client: Any,
    inp: _Input,
    zeta: float,
    clip: bool,
    intercept: float,
    labels: str | None,
    declared: Any = None,
    timeout: float | None = None,
) -> tuple[DaskEngine, int, np.ndarray | None]:
    """Check and bound every partition on the workers (one pass over the data), then
    raise the contract's errors on the client: (engine, rows clipped, classes).
    ``declared``: the public label set (None: binary labels by the fixed map of
    :func:`objpert._data.binary_classes`, classes read from the data otherwise)."""
    if inp.ys and len(inp.ys) != len(inp.xs):
        raise DataError("X and y must be partitioned alike (the same row partitions)")
    timeout = step_timeout(timeout)
    recipe = _Recipe(client, inp, zeta, intercept, labels, timeout)
    doing = "the check of the data on the workers"
    idx = list(range(len(inp.xs)))
    for attempt in range(RESTORE_ATTEMPTS + 1):
        try:
            if attempt and inp.parent is not None:
                inp.parent.remake_lost(doing)
            xs = inp.xs if attempt == 0 else recipe._features(idx, doing)
            futures = recipe.submit(idx, xs)
            stats = recipe.statistics(futures, doing)
            break
        except PartitionsLost:
            if attempt == RESTORE_ATTEMPTS:
                raise not_remade(
                    doing, f"it was lost again after {RESTORE_ATTEMPTS} tries"
                ) from None
    checked_labels = None
    if inp.y_local is not None:  # labels in memory: checked here, partition by partition
        checked_labels = [_check_labels(b, labels) for b in inp.y_local]
        for s, (_, label_stats) in zip(stats, checked_labels, strict=True):
            s.update(label_stats)
    n = sum(s["rows"] for s in stats)
    if n == 0:
        raise DataError("X has no rows")
    nonfinite = sum(s["nonfinite"] for s in stats)
    if nonfinite:
        raise nonfinite_error(nonfinite)
    if inp.has_labels:
        n_labels = sum(s["y_rows"] for s in stats)
        if n_labels != n or any(s["y_rows"] != s["rows"] for s in stats):
            raise DataError(f"X has {n} rows but y has {n_labels} labels (row by row)")
    keep = [i for i, s in enumerate(stats) if s["rows"] > 0]  # drop empty partitions
    stats, kept = [stats[i] for i in keep], [futures[i] for i in keep]
    d = stats[0]["cols"] + (1 if intercept else 0)
    classes = None
    if inp.has_labels:
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
    if inp.memory is not None or inp.parent is not None:
        inp.xs = []  # the raw blocks are released: a remake scatters them again
    recipe.keep, recipe.classes = keep, classes
    recipe.expected = [(s["rows"], s["clipped"]) for s in stats]
    recipe.reuse = inp.parent is not None and clipped == 0 and not intercept
    if recipe.reuse:
        assert inp.parent is not None
        x_parts = [inp.parent._x[i] for i in keep]  # unchanged by the check: no copy
    else:
        x_parts = client.map(operator.itemgetter(0), kept, pure=False)
    y_parts = None
    if checked_labels is not None:
        blocks = [checked_labels[i][0] for i in keep]
        if classes is not None and labels in ("binary", "classes"):
            blocks = [_encode_block(b, classes, labels) for b in blocks]
        token = uuid.uuid4().hex
        recipe.y_keys = [f"objpert-labels-{token}-{j}" for j in range(len(keep))]
        recipe.y_blocks = blocks
        y_parts = recipe.scatter_labels(range(len(keep)), kept, "the placement of the labels")
    elif inp.has_labels:
        y_parts = recipe.label_parts(kept)
    lengths = [s["rows"] for s in stats]
    engine = DaskEngine(x_parts, y_parts, lengths, d, client, timeout=timeout, origin=recipe)
    return engine, clipped, classes


# ---------------------------------------------------------------- the data contract


def _client_and_timeout(X: Any, client: Any, timeout: float | None) -> tuple[Any, float]:
    """The client and step timeout of a fit: a DaskEngine keeps its own client and, unless
    ``timeout`` is given, its timeout; other input connects to ``client`` (bounded by the
    timeout)."""
    if getattr(X, "is_dask_engine", False):
        return X.client, step_timeout(X.timeout if timeout is None else timeout)
    timeout = step_timeout(timeout)
    return get_client(client, timeout), timeout


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
    timeout: float | None = None,
) -> tuple[DaskEngine, None, int]:
    """:func:`objpert._data.for_plan` for Dask input (or a DaskEngine, checked again):
    (engine holding the -1/+1 or real labels, None, rows clipped). ``client``,
    ``partitions`` and ``timeout`` as in :func:`prepare_dask` (a DaskEngine input keeps its
    client and, by default, its timeout)."""
    zeta = float(zeta)
    client, timeout = _client_and_timeout(X, client, timeout)
    inp = _row_blocks(X, y, client, partitions, intercept=False, timeout=timeout)
    if not inp.has_labels:
        raise DataError("labels are needed: give y (or an engine holding labels)")
    engine, clipped, _ = _check(client, inp, zeta, clip, 0.0, label_kind, timeout=timeout)
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
    timeout: float | None = None,
) -> PreparedData:
    """:func:`objpert._data.prepare` on a cluster: ``X`` of the result is a
    :class:`DaskEngine`, ``y`` the encoded labels as a Dask array partitioned like it.

    ``labels``: "binary" (-1/+1), "real", or "classes" (codes 0..K-1 of the sorted
    classes, returned in ``classes``). ``client``: see :func:`get_client` (a DaskEngine
    input keeps its own). ``partitions``: row blocks for in-memory input (default: one per
    worker thread, more when a block would not fit the workers' memory). ``classes``: the
    public label set (codes then index it; labels outside it are refused). ``timeout``:
    seconds each gradient step may wait for the cluster, and the checking pass for each
    next partition, before a ClusterError (None: STEP_TIMEOUT of
    :mod:`objpert._engines.distributed`, 60 s; ``math.inf``: no limit).

    Data whose checked copy would not fit in the workers' memory are refused (DataError)
    before anything is read or sent.
    """
    if labels not in LABELS:
        raise DataError(f"labels must be one of {LABELS}; got {labels!r}")
    data_norm = float(data_norm)
    c = 0.0
    if fit_intercept:
        c = float(data_norm if intercept_scaling is None else intercept_scaling)
    client, timeout = _client_and_timeout(X, client, timeout)
    inp = _row_blocks(X, y, client, partitions, intercept=bool(c), timeout=timeout)
    if not inp.has_labels:
        raise DataError("labels are needed: give y")
    engine, clipped, classes = _check(
        client, inp, data_norm, clip, c, labels, classes, timeout=timeout
    )
    return PreparedData(
        engine,  # type: ignore[arg-type]
        engine.labels_array(),
        total_norm(data_norm, c),
        data_norm,
        c,
        clipped,
        classes,
    )
