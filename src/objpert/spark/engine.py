"""The Spark engine: rows of a Spark DataFrame held as numpy blocks by serving tasks.

A fit starts one Spark job over the DataFrame (coalesced to at most one partition per
task slot, ``SparkContext.defaultParallelism``). Each of its tasks reads its partition
once through Arrow (``mapInArrow``), converts it to one float64 block, checks it under the
data contract (finite values, rows of norm <= ``data_norm`` clipped or counted, an
intercept column of public value c appended, labels read) and connects back to the
driver over an authenticated socket (:mod:`multiprocessing.connection`, a random key per
fit). The task then *serves* its block for the whole fit: a gradient step sends the
iterate w (d floats) to every task and reads back X_b^T l'(X_b w, y_b) (d floats per
block), the driver adds them in block order (:func:`~objpert.engines.distributed.
_sum_in_order`), so the result does not depend on which task answered first. No row is
serialised after the first pass; the plan, certificate and noise stay on the driver.

Faults: a task that fails or whose Python worker dies is retried by Spark
(``spark.task.maxFailures``); the retried task reads its partition again from the
DataFrame's lineage, must find the statistics of the first check (rows, rows clipped)
and is sent the pending request again: the same numbers, so the same release. A job that
fails for good, a step that waits more than ``timeout`` seconds, or a block that differs
when read again end the fit with a :class:`~objpert.exceptions.ClusterError` before any
weights exist.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection, Listener, wait
from typing import Any

import numpy as np

from objpert.data.contract import (
    NORM_RTOL,
    PreparedData,
    nonfinite_error,
    norm_error,
    row_norms,
    total_norm,
)
from objpert.data.labels import as_targets, check_label_set, class_codes
from objpert.engines.distributed import _sum_in_order, aligned, step_timeout
from objpert.engines.distributed_direct import gradient_block
from objpert.exceptions import ClusterError, DataError
from objpert.losses import Loss
from objpert.validation import check_positive

__all__ = [
    "CHECK_TIMEOUT",
    "LabelTarget",
    "SparkEngine",
    "prepare_spark",
]

#: Seconds the first pass (every task reading, converting and checking its partition) and
#: the rebuild of a block by a retried task may take before a ClusterError.
CHECK_TIMEOUT = 1800.0

_LABEL_KINDS = ("classes", "real")


@dataclass(frozen=True)
class LabelTarget:
    """Which labels a release descends on, from the labels the tasks hold: ``"ovr"``:
    +1 for class code ``k``, -1 otherwise (binary: k = 1, the larger class); ``"real"``:
    the real targets as they are."""

    kind: str
    k: int = 0


@dataclass(frozen=True)
class _Source:
    """What every serving task is given (pickled into the job's closure)."""

    features: str | tuple[str, ...]  # one array column, or numeric columns
    label: str
    data_norm: float
    intercept: float  # c of the intercept column; 0.0 for none
    labels: str  # "classes" or "real"
    address: tuple[str, int]
    authkey: bytes
    fault: tuple[str, int, str] | None = None  # testing: (flag file, step, "raise"/"exit")


# ---------------------------------------------------------------- on the executors


def _block(batches: Iterator[Any], src: _Source) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The task's partition as one float64 block (+ intercept column), its raw labels and
    the statistics of the check (errors are returned there, raised by the driver)."""

    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    stats: dict[str, Any] = {"missing": 0, "ragged": False, "nonfinite": 0, "error": None}
    width = None if isinstance(src.features, str) else len(src.features)
    for rb in batches:
        if isinstance(src.features, str):
            col = rb.column(src.features)
            stats["missing"] += col.null_count
            if col.null_count:
                col = col.filter(col.is_valid())
            lengths = np.diff(np.asarray(col.offsets))
            if lengths.size:
                width = int(lengths[0]) if width is None else width
                if np.any(lengths != width):
                    stats["ragged"] = True
                    continue
            values = col.flatten().to_numpy(zero_copy_only=False)
            xs.append(np.asarray(values, dtype=np.float64).reshape(-1, width or 0))
        else:
            cols = [rb.column(c) for c in src.features]
            stats["missing"] += sum(c.null_count for c in cols)
            xs.append(
                np.column_stack([c.to_numpy(zero_copy_only=False) for c in cols]).astype(
                    np.float64, copy=False
                )
            )
        lab = rb.column(src.label)
        stats["missing"] += lab.null_count
        ys.append(np.asarray(lab.to_numpy(zero_copy_only=False)))
        del rb
    width = width or 0
    rows = sum(len(x) for x in xs)
    extra = 1 if src.intercept else 0
    X = np.empty((rows, width + extra), dtype=np.float64)
    at = 0
    for x in xs:
        X[at : at + len(x), :width] = x
        at += len(x)
    xs.clear()
    y = np.concatenate(ys) if ys else np.empty(0)
    stats.update(rows=rows, cols=width, y_rows=int(y.size), clipped=0, classes=None)
    values = X[:, :width]
    stats["nonfinite"] = int(values.size - np.count_nonzero(np.isfinite(values)))
    if stats["nonfinite"] == 0 and rows:
        norms = row_norms(np.ascontiguousarray(values) if extra else values)
        over = norms > src.data_norm * (1.0 + NORM_RTOL)
        stats["clipped"] = int(np.count_nonzero(over))
        if stats["clipped"]:  # Assumption 1: rows scaled down to data_norm (in place)
            values[over] *= (src.data_norm / norms[over])[:, None]
    if extra:
        X[:, width] = src.intercept
    if src.labels == "real":
        try:
            y = aligned(as_targets(y)) if y.size else y.astype(np.float64)
        except DataError as err:
            stats["error"] = err
    else:
        stats["classes"] = np.unique(y) if y.size else y
    return X, y, stats


def _labels_for(target: LabelTarget, y: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
    if target.kind == "real":
        return y
    assert codes is not None
    return np.where(codes == target.k, 1.0, -1.0)


def _answer(msg: tuple[Any, ...], X: np.ndarray, y: np.ndarray, state: dict[str, Any]) -> Any:
    """One request of the driver on the task's block."""
    what = msg[0]
    if what == "classes":
        state["codes"] = class_codes(y, msg[1]).astype(np.float64)
        state["targets"] = {}
        return None
    if what == "matvec":
        return X @ aligned(msg[2])
    if what == "rmatvec":
        return X.T @ aligned(msg[2])
    target = msg[3]
    cache = state.setdefault("targets", {})
    if target not in cache:
        cache.clear()
        cache[target] = aligned(_labels_for(target, y, state.get("codes")))
    if what == "labels":
        return cache[target]
    return gradient_block(X, cache[target], msg[2], msg[4])  # "grad"


def _serve(batches: Iterator[Any], src: _Source) -> Iterator[Any]:
    """A serving task (``mapInArrow``): build and check the block, say hello to the
    driver with its statistics, answer requests until told to stop."""
    import pyarrow as pa
    from pyspark import TaskContext

    X, y, stats = _block(batches, src)
    part = TaskContext.get().partitionId()
    conn = Client(src.address, authkey=src.authkey)
    try:
        conn.send(("hello", part, stats))
        state: dict[str, Any] = {}
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            if src.fault is not None and msg[0] == "grad" and msg[1] == src.fault[1]:
                _fault(src.fault)
            reply = _answer(msg, X, y, state)
            if reply is not None:
                conn.send((msg[1], part, reply))
    finally:
        conn.close()
    yield pa.RecordBatch.from_pydict({"part": [part]})


def _fault(fault: tuple[str, int, str]) -> None:
    """Testing: fail this task once (the flag file is removed first), by an exception or
    by ending the Python worker."""
    path, _, how = fault
    try:
        os.remove(path)
    except FileNotFoundError:
        return
    if how == "exit":
        os._exit(1)
    raise RuntimeError("objpert testing fault: this task fails once")


# ---------------------------------------------------------------- on the driver


@dataclass
class _Tasks:
    """The driver's side of the serving job: the listener, the job, one connection per
    block, the statistics of the first check."""

    listener: Listener
    hellos: queue.Queue = field(default_factory=queue.Queue)
    conns: dict[int, Connection] = field(default_factory=dict)
    stats: dict[int, dict[str, Any]] = field(default_factory=dict)
    classes: np.ndarray | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    closed: bool = False


def _accept(tasks: _Tasks) -> None:
    """Accept the tasks' connections (authenticated) and queue their hellos."""
    while not tasks.closed:
        try:
            conn = tasks.listener.accept()
        except OSError:
            if tasks.closed:
                return
            continue  # a connection that failed to authenticate
        try:
            hello = conn.recv()
        except (EOFError, OSError):
            conn.close()
            continue
        tasks.hellos.put((conn, hello))


def _run_job(sc: Any, frame: Any, group: str, tasks: _Tasks) -> None:
    try:
        sc.setJobGroup(group, "objpert: serving the checked blocks of a private fit", True)
        frame.collect()
    except BaseException as err:  # reported by the driver on its next call
        tasks.error = err
    finally:
        tasks.done.set()


class SparkEngine:
    """X and labels held by the tasks of one Spark job, as one checked numpy block each.

    Built by :func:`prepare_spark`. ``glm_gradient`` is one round trip per step (the
    iterate out, d floats per block back, added in block order); ``matvec``/``rmatvec``
    move n floats (tests, audits). :meth:`for_plan` gives the engine of one release's
    labels (:class:`LabelTarget`). :meth:`close` ends the job; a fit closes it."""

    is_spark_engine = True

    def __init__(self, state: _Shared, target: LabelTarget | None = None):
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
        """:func:`objpert.data.for_plan` for rows held here: the plan's public n and d
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


class _Shared:
    """The state the engines of one fit share (their labels differ)."""

    def __init__(self, sc: Any, tasks: _Tasks, group: str, k: int, timeout: float):
        self.sc, self.tasks, self.group, self.k, self.timeout = sc, tasks, group, k, timeout
        self.lengths: tuple[int, ...] = ()
        self.n = self.d = 0
        self.zeta = 0.0
        self.classes: np.ndarray | None = None
        self.steps = 0  # requests sent (each step numbered: the testing fault picks one)
        self.retries = 0  # tasks replaced after a fault (reported, for tests)

    # ------------------------------------------------------------ connections

    def _failed(self, doing: str) -> ClusterError:
        err = self.tasks.error
        detail = " ".join(str(err).split())[:400] if err is not None else "it ended early"
        return ClusterError(
            f"the Spark job serving the data failed during {doing} ({detail}); nothing was "
            "released: check the executors (their logs: memory?) and fit again"
        )

    def _next_hello(self, deadline: float, doing: str) -> tuple[Connection, Any]:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClusterError(
                    f"{doing[:1].upper()}{doing[1:]} did not finish within {CHECK_TIMEOUT:g} s "
                    f"(waiting for {self.k} Spark tasks, one per block, to read their rows; "
                    "fewer free task slots than blocks?); nothing was released"
                )
            try:
                return self.tasks.hellos.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.tasks.done.is_set() and self.tasks.hellos.empty():
                    raise self._failed(doing) from None

    def first_pass(self) -> list[dict[str, Any]]:
        """Wait for every task's hello: the statistics of each block, in block order."""
        doing = "the check of the data on the executors"
        deadline = time.monotonic() + CHECK_TIMEOUT
        while len(self.tasks.conns) < self.k:
            conn, (_, part, stats) = self._next_hello(deadline, doing)
            old = self.tasks.conns.pop(part, None)
            if old is not None:
                old.close()
            self.tasks.conns[part] = conn
            self.tasks.stats[part] = stats
        return [self.tasks.stats[i] for i in range(self.k)]

    def _replace(self, part: int, doing: str) -> None:
        """Wait for the retried task of block ``part`` (and of any other block that says
        hello meanwhile); its block must check as the first did."""
        deadline = time.monotonic() + CHECK_TIMEOUT
        while part not in self.tasks.conns:
            conn, (_, got, stats) = self._next_hello(deadline, doing)
            first = self.tasks.stats[got]
            if (stats["rows"], stats["clipped"], stats["nonfinite"]) != (
                first["rows"],
                first["clipped"],
                first["nonfinite"],
            ):
                raise ClusterError(
                    f"a Spark task retried during {doing} read its rows differently from the "
                    "first time (a non-deterministic source?); nothing was released: cache or "
                    "checkpoint the DataFrame and fit again"
                )
            old = self.tasks.conns.pop(got, None)
            if old is not None:
                old.close()
            if self.tasks.classes is not None:
                conn.send(("classes", self.tasks.classes))
            self.tasks.conns[got] = conn
            self.retries += 1

    def round(self, what: str, args: Sequence[Any], *extra: Any) -> list[Any]:
        """One request per block (``args[i]`` to block i), the answers in block order;
        a task lost meanwhile is replaced by its retry and asked again."""
        doing = {"grad": "a gradient step"}.get(what, f"a request ({what})")
        if self.tasks.closed:
            raise ClusterError("this Spark engine is closed: its fit has ended")
        self.steps += 1
        step = self.steps
        out: list[Any] = [None] * self.k
        pending = set(range(self.k))
        lost: set[int] = set()

        def send(i: int) -> None:
            try:
                self.tasks.conns[i].send((what, step, args[i], *extra))
            except (OSError, EOFError, KeyError):
                self.tasks.conns.pop(i, None)
                lost.add(i)

        for i in range(self.k):
            send(i)
        while pending:
            for i in sorted(lost):
                self._replace(i, doing)
                lost.discard(i)
                send(i)
            live = {self.tasks.conns[i]: i for i in pending if i in self.tasks.conns}
            ready = wait(list(live), timeout=self.timeout if not lost else 0.5)
            if not ready and not lost:
                if self.tasks.done.is_set():
                    raise self._failed(doing)
                raise ClusterError(
                    f"{doing[:1].upper()}{doing[1:]} did not finish within {self.timeout:g} s "
                    "(a Spark task did not answer: frozen or overloaded executor?); nothing "
                    "was released: check the executors and fit again, or allow more time "
                    "(stepTimeout)"
                )
            for conn in ready:
                i = live[conn]
                try:
                    got_step, _, value = conn.recv()
                except (EOFError, OSError):
                    conn.close()
                    self.tasks.conns.pop(i, None)
                    lost.add(i)
                    continue
                if got_step == step:
                    out[i] = value
                    pending.discard(i)
        return out

    def set_classes(self, classes: np.ndarray) -> None:
        self.tasks.classes = self.classes = classes
        for i in range(self.k):
            self.tasks.conns[i].send(("classes", classes))

    def close(self) -> None:
        if self.tasks.closed:
            return
        self.tasks.closed = True
        for conn in self.tasks.conns.values():
            try:
                conn.send(("stop",))
                conn.close()
            except (OSError, EOFError):
                pass
        self.tasks.listener.close()
        self.tasks.done.wait(30.0)
        if not self.tasks.done.is_set():
            self.sc.cancelJobGroup(self.group)


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
    and the label column, and the features as :class:`_Source` names them."""
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
    """:func:`objpert.data.prepare` for a Spark DataFrame: ``X`` of the result is a
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
    src = _Source(names, "y", data_norm, c, labels, (host, listener.address[1]), authkey, _fault)
    tasks = _Tasks(listener)
    schema = StructType([StructField("part", LongType())])
    served = frame.mapInArrow(lambda batches: _serve(batches, src), schema)
    group = f"objpert-{uuid.uuid4().hex}"
    shared = _Shared(sc, tasks, group, k, timeout)
    from pyspark import InheritableThread

    threading.Thread(target=_accept, args=(tasks,), daemon=True).start()
    InheritableThread(target=_run_job, args=(sc, served, group, tasks), daemon=True).start()
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
    shared: _Shared,
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
