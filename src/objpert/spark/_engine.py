"""The Spark engine: the rows of a DataFrame, checked once, read by DataFrame queries only.

:func:`prepare_spark` reduces the DataFrame to its feature and label columns and runs the
first pass (:func:`~objpert.spark._tasks.check_partition`): every Arrow batch becomes one
row holding the batch's rows under the public bounds (clipped, intercept column appended)
as float64 bytes and its labels, with the statistics of the data contract (nulls, named
by column; non-finite values; vectors of different lengths; rows above ``data_norm``;
labels); n is counted. These rows are cached (``DataFrame.cache``), and every later pass
is one query ``blocks.mapInArrow(...)`` returning one row per partition
(:func:`~objpert.spark._tasks.sum_partition`): a gradient X^T l'(Xw, y), or a gradient and
a d x d Hessian X^T diag(l'') X. The driver adds the partitions in partition order, so a
pass's result does not depend on which task finished first. No SparkContext, RDD,
broadcast, JVM handle or socket is used: the same code runs on a classic session and on
Spark Connect. The plan, the certificate and the noise stay on the driver.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from objpert._data.contract import NORM_RTOL, PreparedData, nonfinite_error, norm_error, total_norm
from objpert._data.labels import check_label_set, class_codes
from objpert._losses import Loss
from objpert._validation import check_positive, optional, validated
from objpert.exceptions import DataError
from objpert.spark._tasks import (
    PASS_SCHEMA,
    LabelTarget,
    Layout,
    block_schema,
    check_partition,
    sum_partition,
)

__all__ = ["SparkEngine", "prepare_spark", "quiet_pyspark"]

_LABEL_KINDS = ("classes", "real")


class SparkEngine:
    """X and labels in a cached Spark DataFrame; every product is one DataFrame pass.

    Built by :func:`prepare_spark`. :meth:`glm_gradient` (one pass) is what
    :class:`objpert._engines.glm.GLMObjective` asks of an engine; :meth:`gradient_hessian`
    (one pass) is the distributed Newton method's. :attr:`passes` counts the passes
    (the first, checking pass included). :meth:`for_plan` gives the engine of one
    release's labels (:class:`LabelTarget`). :meth:`close` unpersists the frame."""

    is_spark_engine = True

    def __init__(self, frame: Any, layout: Layout, n: int, d: int, target: LabelTarget | None):
        self.frame, self.layout, self.n, self.d, self.target = frame, layout, n, d, target
        # (loss, labels, sums at w = 0) computed by the checking pass, or None
        self.at_zero: tuple[Loss, LabelTarget, np.ndarray] | None = None
        self._passes = [1]  # shared by the engines of one fit: the checking pass

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.d

    @property
    def passes(self) -> int:
        """Passes over the data so far (the checking pass included)."""
        return self._passes[0]

    def for_plan(
        self, y: Any, *, n: int, d: int, zeta: float, label_kind: str, clip: bool
    ) -> tuple[SparkEngine, None, int]:
        """:func:`objpert._data.for_plan` for rows held here: the plan's public n and d
        must be the frame's shape, its zeta at least the bound the rows were checked
        against; ``y`` a :class:`LabelTarget` of the loss's label kind. (engine, None, 0)."""
        if (n, d) != self.shape:
            raise DataError(
                f"the plan is for data of shape ({n}, {d}) (public n and d); got {self.shape}"
            )
        bound = total_norm(self.layout.data_norm, self.layout.intercept)
        if zeta < bound * (1.0 - NORM_RTOL):
            raise DataError(
                f"the plan's zeta {zeta:g} is below the bound {bound:g} the rows were "
                "checked against: prepare the data with the plan's data_norm"
            )
        if not isinstance(y, LabelTarget):
            raise DataError("labels of a Spark engine are chosen with LabelTarget(kind, k)")
        want = "real" if label_kind == "real" else "ovr"
        if y.kind != want or (want == "ovr" and self.layout.classes is None):
            raise DataError(f"the loss needs {label_kind} labels; got {y}")
        engine = SparkEngine(self.frame, self.layout, self.n, self.d, y)
        engine._passes, engine.at_zero = self._passes, self.at_zero
        return engine, None, 0

    def pad_to(self, n: int) -> None:
        """Complete the rows to ``n`` with zero rows (one privacy unit's missing rows): a
        zero row adds nothing to a pass's sums, so only :attr:`n` changes."""
        if n < self.n:
            raise DataError(f"{self.n} rows kept exceed the {n} the units allow")
        self.n = int(n)

    def _sum(self, loss: Loss, w: np.ndarray, hessian: bool) -> np.ndarray:
        if self.target is None:
            raise DataError("choose the labels first: engine.for_plan(LabelTarget(...), ...)")
        layout, target = self.layout, self.target

        def fn(batches):
            return sum_partition(batches, layout, target, loss, w, hessian)

        rows = self.frame.mapInArrow(fn, PASS_SCHEMA).collect()
        self._passes[0] += 1
        parts = sorted((int(r["part"]), np.frombuffer(r["payload"])) for r in rows)
        total = parts[0][1].copy()
        for _, part in parts[1:]:  # in partition order: the same sum whoever ran first
            total += part
        return total

    def glm_gradient(self, W: np.ndarray, y: Any, loss: Loss) -> np.ndarray:
        """X^T l'(XW, y) (unscaled) on the labels of :attr:`target`, ``W`` (d,) or (d, B)
        (one pass per column); ``y`` is ignored."""
        W = np.asarray(W, dtype=np.float64)
        if W.ndim == 1:
            return self._sum(loss, np.ascontiguousarray(W), False)
        return np.column_stack([self._sum(loss, np.ascontiguousarray(w), False) for w in W.T])

    def matvec(self, W: np.ndarray) -> np.ndarray:
        """Not on Spark: Xw is n numbers, and the releases here need only sums over rows."""
        raise DataError("X w is not computed on Spark (n numbers to the driver): use sums")

    rmatvec = matvec

    def gradient_hessian(self, w: np.ndarray, loss: Loss) -> tuple[np.ndarray, np.ndarray]:
        """(X^T l'(Xw, y), X^T diag(l''(Xw, y)) X), unscaled, in one pass (none at
        w = 0 when the checking pass summed them: :attr:`at_zero`)."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        zero = self.at_zero
        if zero is not None and not w.any() and (zero[0], zero[1]) == (loss, self.target):
            out = zero[2].copy()  # summed by the checking pass
        else:
            out = self._sum(loss, w, True)
        return out[: self.d], out[self.d :].reshape(self.d, self.d)

    def close(self) -> None:
        """Unpersist the cached blocks."""
        self.frame.unpersist()

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextmanager
def quiet_pyspark() -> Iterator[None]:
    """pyspark's own FutureWarning about the installed pandas version, raised by its
    Arrow and pandas entry points at every call, silenced for our calls only."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="PySpark does not yet fully support", category=FutureWarning
        )
        yield


# ---------------------------------------------------------------- the data contract


def _columns(df: Any, features: str | Sequence[str], label: str) -> tuple[Any, Any, dict]:
    """The DataFrame reduced to float64 features (one array column, or numeric columns)
    and the label column; the feature columns as the tasks name them; the tasks' names
    back to the DataFrame's (for errors)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions as sf
    from pyspark.sql.types import ArrayType, BooleanType, NumericType, StringType

    names = set(df.columns)
    wanted = [features] if isinstance(features, str) else list(features)
    missing = [c for c in [*wanted, label] if c not in names]
    if missing:
        raise DataError(f"the DataFrame has no column {missing[0]!r}; it has {sorted(names)}")
    types = {f.name: f.dataType for f in df.schema.fields}
    numeric = isinstance(types[label], NumericType | BooleanType)
    if not numeric and not isinstance(types[label], StringType):
        raise DataError(
            f"labelCol {label!r} must hold numbers or strings; got {types[label].simpleString()}"
        )
    y = sf.col(label).cast("double" if numeric else "string").alias("y")
    if isinstance(features, str):
        t = types[features]
        if isinstance(t, VectorUDT):
            col = vector_to_array(sf.col(features), "float64")
        elif isinstance(t, ArrayType) and isinstance(t.elementType, NumericType):
            col = sf.col(features).cast("array<double>")
        else:
            raise DataError(
                f"featuresCol {features!r} must be a Vector or an array of numbers; got "
                f"{t.simpleString()} (give numeric columns as inputCols)"
            )
        return df.select(col.alias("f"), y), "f", {"f": features, "y": label}
    bad = [c for c in wanted if not isinstance(types[c], NumericType)]
    if bad:
        raise DataError(f"features must be numeric; columns {bad[:5]} are not: encode them first")
    cols = [sf.col(c).cast("double").alias(f"f{j}") for j, c in enumerate(wanted)]
    names_back = {f"f{j}": c for j, c in enumerate(wanted)} | {"y": label}
    return df.select(*cols, y), tuple(names_back)[:-1], names_back


@validated(data_norm=check_positive, intercept_scaling=optional(check_positive))
def prepare_spark(
    df: Any,
    features: str | Sequence[str],
    label: str,
    *,
    data_norm: float,
    labels: str = "classes",
    fit_intercept: bool = True,
    intercept_scaling: float | None = None,
    clip: bool = True,
    classes: Any = None,
    bounds: Sequence[tuple[float, float]] | None = None,
    first: tuple[Loss, LabelTarget] | None = None,
    _fault: str | None = None,
) -> PreparedData:
    """:func:`objpert._data.prepare` for a Spark DataFrame: ``X`` of the result is a
    :class:`SparkEngine` over the feature and label columns (close it when done), ``y``
    None. The checked blocks are cached for the fit (``close`` unpersists them).

    ``features``: a Vector (or array of numbers) column, or a list of numeric columns
    (then ``bounds``, optional: a declared (lo, hi) per column, each value clipped to
    it); ``label``: the label column. ``labels``: "classes" (codes of the sorted
    ``classes``, the public label set; read from the data when None) or "real". n, the
    number of rows, is counted in the first pass (public, as everywhere in objpert). A
    DataError (the frame unpersisted) when the rows break the contract: missing values
    (the column named), non-finite values, vectors of different lengths, rows above
    ``data_norm`` with ``clip=False``, labels outside ``classes``. ``first``: a loss and
    labels (real targets, or declared ``classes``) whose gradient and Hessian at w = 0
    the checking pass sums too (:attr:`SparkEngine.at_zero`).
    """
    if labels not in _LABEL_KINDS:
        raise DataError(f"labels must be one of {_LABEL_KINDS}; got {labels!r}")
    c = 0.0
    if fit_intercept:
        c = data_norm if intercept_scaling is None else intercept_scaling
    declared = None if classes is None else check_label_set(classes)
    frame, names, back = _columns(df, features, label)
    if bounds is not None:
        bounds = tuple((float(lo), float(hi)) for lo, hi in bounds)
    known = None if declared is None else tuple(declared.tolist())
    layout = Layout(names, "y", data_norm, c, bounds, labels, known)
    if first is not None and labels == "classes" and declared is None:
        first = None  # the labels are known only after the check
    label_type = "double" if frame.schema["y"].dataType.typeName() == "double" else "string"
    blocks = frame.mapInArrow(
        lambda b: check_partition(b, layout, first), block_schema(label_type)
    ).cache()
    try:
        rows = sorted(blocks.select("part", "stats", "gh").collect(), key=lambda r: r["part"])
        stats = [json.loads(r["stats"]) for r in rows]
        n, width, clipped, found = _checked(stats, back, data_norm, clip, labels)
        if labels == "classes":
            values = np.asarray(found)
            if declared is not None:
                class_codes(values, declared)  # refuses labels outside the declared set
                found = declared
            else:
                found = values
            layout = Layout(names, "y", data_norm, c, bounds, labels, tuple(found.tolist()))
        layout = dataclasses.replace(layout, fault=_fault)
    except BaseException:
        blocks.unpersist()
        raise
    d = width + (1 if c else 0)
    engine = SparkEngine(blocks, layout, n, d, None)
    sums = [np.frombuffer(r["gh"]) for r, st in zip(rows, stats, strict=True) if st["widths"]]
    if first is not None and all(len(v) == d + d * d for v in sums):
        total = sums[0].copy()
        for v in sums[1:]:  # in partition order, and the batches' order in each
            total += v
        engine.at_zero = (first[0], first[1], total)
    kept = None if labels == "real" else np.asarray(layout.classes)
    return PreparedData(engine, None, total_norm(data_norm, c), data_norm, c, clipped, kept)


def _checked(
    stats: list[dict[str, Any]], back: dict[str, str], data_norm: float, clip: bool, labels: str
) -> tuple[int, int, int, list[Any]]:
    """The contract's errors raised on the driver from every partition's statistics:
    (n, width, rows clipped, distinct labels)."""
    n = sum(s["rows"] for s in stats)
    if n == 0:
        raise DataError("the DataFrame has no rows")
    nulls: dict[str, int] = {}
    for s in stats:
        for name, count in s["nulls"].items():
            nulls[name] = nulls.get(name, 0) + count
    missing = {back.get(k, k): v for k, v in nulls.items() if v}
    if missing:
        where = ", ".join(f"{v} in column {k!r}" for k, v in missing.items())
        raise DataError(f"missing values (null): {where}; drop or impute them first")
    if any(s["ragged"] for s in stats):
        raise DataError("the feature vectors have different lengths: every row needs d values")
    widths = {w for s in stats for w in s["widths"]}
    if len(widths) != 1:
        raise DataError(f"the feature vectors have different lengths ({sorted(widths)})")
    nonfinite = sum(s["nonfinite"] for s in stats)
    if nonfinite:
        raise nonfinite_error(nonfinite)
    if labels == "real" and any(s["bad_target"] for s in stats):
        raise DataError(f"regression targets ({back['y']!r}) must be finite numbers")
    clipped = sum(s["clipped"] for s in stats)
    if clipped and not clip:
        raise norm_error(clipped, data_norm)
    found = sorted({v for s in stats for v in s["labels"]}, key=lambda v: (str(type(v)), v))
    return n, widths.pop(), clipped, found
