"""The Spark engine: rows of a Spark DataFrame held as numpy blocks by serving tasks.

A fit starts one Spark job over the DataFrame (coalesced to at most one partition per
task slot, ``SparkContext.defaultParallelism``). Each of its tasks reads its partition
once through Arrow (``mapInArrow``), converts it to one float64 block, checks it under the
data contract (finite values, rows of norm <= ``data_norm`` clipped or counted, an
intercept column of public value c appended, labels read) and connects back to the
driver over an authenticated socket (:mod:`multiprocessing.connection`, a random key per
fit). The task then *serves* its block for the whole fit: a gradient step sends the
iterate w (d floats) to every task and reads back X_b^T l'(X_b w, y_b) (d floats per
block), the driver adds them in block order (:func:`~objpert._engines.distributed.
_sum_in_order`), so the result does not depend on which task answered first. No row is
serialised after the first pass; the plan, certificate and noise stay on the driver.

Faults: a task that fails or whose Python worker dies is retried by Spark
(``spark.task.maxFailures``); the retried task reads its partition again from the
DataFrame's lineage, must find the statistics of the first check (rows, rows clipped)
and is sent the pending request again: the same numbers, so the same release. A job that
fails for good, a step that waits more than ``timeout`` seconds, or a block that differs
when read again end the fit with a :class:`~objpert.exceptions.ClusterError` before any
weights exist.

What the tasks run is :mod:`objpert.spark._executor`; the driver's side of the job (its
connections, the rounds of requests, the retried tasks) is :mod:`objpert.spark._driver`.
"""

from __future__ import annotations

import secrets
import socket
import threading
import uuid
from collections.abc import Sequence
from multiprocessing.connection import Listener
from typing import Any

import numpy as np

from objpert._data.contract import (
    NORM_RTOL,
    PreparedData,
    nonfinite_error,
    norm_error,
    total_norm,
)
from objpert._data.labels import as_targets, check_label_set, class_codes
from objpert._engines.distributed import _sum_in_order, step_timeout
from objpert._losses import Loss
from objpert._validation import check_positive
from objpert.exceptions import DataError
from objpert.spark._driver import ServingJob, ServingTasks, accept_tasks, run_job
from objpert.spark._executor import LabelTarget, Source, serve

__all__ = ["SparkEngine", "prepare_spark"]

_LABEL_KINDS = ("classes", "real")


class SparkEngine:
    """X and labels held by the tasks of one Spark job, as one checked numpy block each.

    Built by :func:`prepare_spark`. ``glm_gradient`` is one round trip per step (the
    iterate out, d floats per block back, added in block order); ``matvec``/``rmatvec``
    move n floats (tests, audits). :meth:`for_plan` gives the engine of one release's
    labels (:class:`LabelTarget`). :meth:`close` ends the job; a fit closes it."""

    is_spark_engine = True

    def __init__(self, state: ServingJob, target: LabelTarget | None = None):
        self._s = state
        self.target = target
        self.n, self.d = state.n, state.d

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.d

    @property
    def blocks(self) -> int:
        return len(self._s.lengths)

    @property
    def lengths(self) -> tuple[int, ...]:
        return self._s.lengths

    def for_plan(
        self, y: Any, *, n: int, d: int, zeta: float, label_kind: str, clip: bool
    ) -> tuple[SparkEngine, None, int]:
        """:func:`objpert._data.for_plan` for rows held here: the plan's public n and d
        must be the blocks' shape, its zeta at least the bound the rows were checked
        against; ``y`` a :class:`LabelTarget` of the loss's label kind. (engine, None, 0)."""
        if (n, d) != self.shape:
            raise DataError(
                f"the plan is for data of shape ({n}, {d}) (public n and d); got {self.shape}"
            )
        if zeta < self._s.zeta * (1.0 - NORM_RTOL):
            raise DataError(
                f"the plan's zeta {zeta:g} is below the bound {self._s.zeta:g} the rows were "
                "checked against: prepare the data with the plan's data_norm"
            )
        if not isinstance(y, LabelTarget):
            raise DataError("labels of a Spark engine are chosen with LabelTarget(kind, k)")
        want = "real" if label_kind == "real" else "ovr"
        if y.kind != want or (want == "ovr" and self._s.classes is None):
            raise DataError(f"the loss needs {label_kind} labels; got {y}")
        return SparkEngine(self._s, y), None, 0

    def glm_gradient(self, W: np.ndarray, y: Any, loss: Loss) -> np.ndarray:
        """X^T l'(XW, y) (unscaled) on the labels of :attr:`target`; ``y`` is ignored."""
        if self.target is None:
            raise DataError("choose the labels first: engine.for_plan(LabelTarget(...), ...)")
        W = np.asarray(W, dtype=np.float64)
        return _sum_in_order(self._s.round("grad", [W] * self.blocks, self.target, loss))

    def matvec(self, W: np.ndarray) -> np.ndarray:
        W = np.asarray(W, dtype=np.float64)
        return np.concatenate(self._s.round("matvec", [W] * self.blocks), axis=0)

    def rmatvec(self, R: np.ndarray) -> np.ndarray:
        pieces = np.split(np.asarray(R, dtype=np.float64), np.cumsum(self.lengths)[:-1])
        return _sum_in_order(self._s.round("rmatvec", pieces))

    def labels(self) -> np.ndarray:
        """The labels of :attr:`target` gathered to the driver (n floats: tests, audits)."""
        if self.target is None:
            raise DataError("choose the labels first: engine.for_plan(LabelTarget(...), ...)")
        return np.concatenate(self._s.round("labels", [None] * self.blocks, self.target))

    def close(self) -> None:
        """End the serving job (its tasks stop, their blocks are freed)."""
        self._s.close()

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---------------------------------------------------------------- the data contract


def _address(sc: Any) -> tuple[str, str]:
    """(address to listen on, address the executors connect to)."""
    conf = sc.getConf()
    if str(sc.master).startswith("local"):
        return "127.0.0.1", "127.0.0.1"
    host = conf.get("spark.driver.host") or socket.gethostname()
    return "0.0.0.0", host


def _columns(df: Any, features: str | Sequence[str], label: str) -> tuple[Any, Any]:
    """The DataFrame reduced to float64 features (one array column, or numeric columns)
    and the label column, and the features as :class:`~objpert.spark._executor.Source` names
    them."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions as sf
    from pyspark.sql.types import ArrayType, NumericType

    names = set(df.columns)
    wanted = [features] if isinstance(features, str) else list(features)
    missing = [c for c in [*wanted, label] if c not in names]
    if missing:
        raise DataError(f"the DataFrame has no column {missing[0]!r}; it has {sorted(names)}")
    types = {f.name: f.dataType for f in df.schema.fields}
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
        return df.select(col.alias("f"), sf.col(label).alias("y")), "f"
    bad = [c for c in wanted if not isinstance(types[c], NumericType)]
    if bad:
        raise DataError(f"features must be numeric; columns {bad[:5]} are not: encode them first")
    cols = [sf.col(c).cast("double").alias(f"f{j}") for j, c in enumerate(wanted)]
    return df.select(*cols, sf.col(label).alias("y")), tuple(f"f{j}" for j in range(len(wanted)))


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
    timeout: float | None = None,
    _fault: tuple[str, int, str] | None = None,
) -> PreparedData:
    """:func:`objpert._data.prepare` for a Spark DataFrame: ``X`` of the result is a
    :class:`SparkEngine` serving the checked blocks (close it when done), ``y`` None.

    ``features``: a Vector (or array of numbers) column, or a list of numeric columns;
    ``label``: the label column. ``labels``: "classes" (codes of the sorted ``classes``,
    the public label set; read from the data when None) or "real". n, the number of rows,
    is counted in the same pass (public, as everywhere in objpert). ``timeout``: seconds
    a step may wait for the tasks (None: 60 s). A DataError (after the job is ended) when
    the rows break the contract: missing or non-finite values, vectors of different
    lengths, rows above ``data_norm`` with ``clip=False``, labels outside ``classes``.
    """
    from pyspark.sql.types import LongType, StructField, StructType

    if labels not in _LABEL_KINDS:
        raise DataError(f"labels must be one of {_LABEL_KINDS}; got {labels!r}")
    data_norm = check_positive("data_norm", data_norm)
    c = 0.0
    if fit_intercept:
        c = check_positive(
            "intercept_scaling", data_norm if intercept_scaling is None else intercept_scaling
        )
    declared = None if classes is None else check_label_set(classes)
    timeout = step_timeout(timeout, "stepTimeout")
    sc = df.sparkSession.sparkContext
    frame, names = _columns(df, features, label)
    k = max(1, min(frame.rdd.getNumPartitions(), int(sc.defaultParallelism)))
    if frame.rdd.getNumPartitions() > k:
        frame = frame.coalesce(k)
    bind, host = _address(sc)
    authkey = secrets.token_bytes(32)
    listener = Listener((bind, 0), authkey=authkey)
    src = Source(names, "y", data_norm, c, labels, (host, listener.address[1]), authkey, _fault)
    tasks = ServingTasks(listener)
    schema = StructType([StructField("part", LongType())])
    served = frame.mapInArrow(lambda batches: serve(batches, src), schema)
    group = f"objpert-{uuid.uuid4().hex}"
    shared = ServingJob(sc, tasks, group, k, timeout)
    from pyspark import InheritableThread

    threading.Thread(target=accept_tasks, args=(tasks,), daemon=True).start()
    InheritableThread(target=run_job, args=(sc, served, group, tasks), daemon=True).start()
    try:
        stats = shared.first_pass()
        engine = _checked(shared, stats, data_norm, c, clip, labels, declared)
    except BaseException:
        shared.close()
        raise
    return PreparedData(
        engine, None, shared.zeta, data_norm, c, int(sum(s["clipped"] for s in stats)),
        shared.classes,
    )  # fmt: skip


def _checked(
    shared: ServingJob,
    stats: list[dict[str, Any]],
    data_norm: float,
    c: float,
    clip: bool,
    labels: str,
    declared: np.ndarray | None,
) -> SparkEngine:
    """The contract's errors raised on the driver from every block's statistics, then the
    engine (labels encoded on the tasks)."""
    n = sum(s["rows"] for s in stats)
    if n == 0:
        raise DataError("the DataFrame has no rows")
    if any(s["ragged"] for s in stats):
        raise DataError("the feature vectors have different lengths: every row needs d values")
    widths = {s["cols"] for s in stats if s["rows"]}
    if len(widths) != 1:
        raise DataError(f"the feature vectors have different lengths ({sorted(widths)})")
    missing = sum(s["missing"] for s in stats)
    if missing:
        raise DataError(
            f"the features or labels have {missing} missing values (null); drop or impute "
            "them first"
        )
    nonfinite = sum(s["nonfinite"] for s in stats)
    if nonfinite:
        raise nonfinite_error(nonfinite)
    for s in stats:
        if s["error"] is not None:
            raise s["error"]
    clipped = sum(s["clipped"] for s in stats)
    if clipped and not clip:
        raise norm_error(clipped, data_norm)
    shared.lengths = tuple(int(s["rows"]) for s in stats)
    shared.n, shared.d = n, widths.pop() + (1 if c else 0)
    shared.zeta = total_norm(data_norm, c)
    if labels == "classes":
        found = [s["classes"] for s in stats if len(s["classes"])]
        values = np.unique(np.concatenate(found))
        if values.dtype.kind == "f":
            as_targets(values)  # refuses NaN / inf labels
        if declared is not None:
            class_codes(values, declared)  # refuses labels outside the declared set
            classes = declared
        else:
            classes = values
        shared.set_classes(classes)
    return SparkEngine(shared)
