"""The comparison's runs: every method on the same public split, the same declared
bounds (the dataset's public data_norm, the labels {-1, +1}), ``seeds`` releases per
target epsilon, paired by seed."""

from __future__ import annotations

import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from objpert._data import PreparedData, prepare
from objpert._engines.glm import GLMObjective
from objpert._engines.threads import available_cores
from objpert.apps._compare.methods import (
    DEFAULT_METHODS,
    DETERMINISTIC,
    canonical_method,
    fit_seeds,
    reference_of,
    rules,
)
from objpert.apps._compare.stats import mean_se, paired_difference, time_summary
from objpert.apps._demo import split
from objpert.apps.datasets import Dataset, load
from objpert.exceptions import ParameterError

__all__ = [
    "QUICK",
    "Cell",
    "CompareRow",
    "compare_dataset",
    "default_workers",
    "run",
    "seed_of",
    "summarise",
]

#: ``objpert compare --quick``: one dataset, two targets, the full run's seeds (so each of
#: its cells can be checked against the same cell of the full run).
QUICK: dict = {"datasets": ("health_insurance",), "epsilons": (0.3, 3.0), "seeds": 10}


def seed_of(s: int) -> int:
    """The seed of release s (the same for every method: the pairing)."""
    return 1000 * s + 17


@dataclass(frozen=True)
class Cell:
    """The per-release values of one (dataset, method, epsilon): test accuracies,
    training objectives and wall times, index s the release of :func:`seed_of` (s)."""

    accuracies: tuple[float, ...]
    objectives: tuple[float, ...]
    seconds: tuple[float, ...]
    certified_epsilon: float
    certified_delta: float
    cpu_seconds: tuple[float, ...] = (math.nan,)
    note: str = ""


@dataclass(frozen=True)
class CompareRow:
    """One (dataset, method, epsilon) of the comparison. Means with standard errors over
    ``runs`` releases; ``*_diff`` the paired difference (this method minus ``versus``) with
    its 95% interval; wall time per release (median, min, max) and the median CPU time
    (NaN where not measured: diffprivlib's own process); the largest certified
    (epsilon, delta) over the releases."""

    dataset: str
    method: str
    epsilon: float
    delta: float
    runs: int
    accuracy_mean: float
    accuracy_se: float
    objective_mean: float
    objective_se: float
    versus: str
    accuracy_diff: tuple[float, float, float]
    objective_diff: tuple[float, float, float]
    seconds_median: float
    seconds_min: float
    seconds_max: float
    cpu_seconds_median: float
    certified_epsilon: float
    certified_delta: float
    note: str = ""
    accuracies: tuple[float, ...] = field(default=(), repr=False)
    objectives: tuple[float, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> CompareRow:
        """The row of :meth:`to_dict` (as written in compare.json, where null stands for a
        NaN or an infinity: the non-private row's epsilon is +inf)."""
        tuples = ("accuracy_diff", "objective_diff", "accuracies", "objectives")

        def number(v: Any) -> Any:
            return math.nan if v is None else v

        return cls(**{
            k: tuple(map(number, v)) if k in tuples else number(v) for k, v in data.items()
        })  # fmt: skip


def _evaluate(P: PreparedData, Pte: PreparedData, w: np.ndarray) -> tuple[float, float]:
    """(test accuracy of sign(<x, w>), mean logistic training loss, unregularised)."""
    acc = float(np.mean(np.where(Pte.X @ w > 0, 1.0, -1.0) == Pte.y))
    return acc, float(GLMObjective(P.X, P.y, "logistic", 0.0).value(w))


def _cell(method: str, P: PreparedData, Pte: PreparedData, eps: float, delta: float,
          seeds: int) -> Cell:  # fmt: skip
    runs = 1 if method in DETERMINISTIC else seeds
    fits, note = fit_seeds(method, P, eps, delta, [seed_of(s) for s in range(runs)])
    values = [_evaluate(P, Pte, f.weights) for f in fits]
    reps = seeds // runs  # a deterministic fit stands for every seed of the pairing
    return Cell(
        tuple(a for a, _ in values) * reps,
        tuple(o for _, o in values) * reps,
        tuple(f.seconds for f in fits),
        max(f.epsilon for f in fits),
        max(f.delta for f in fits),
        tuple(f.cpu_seconds for f in fits),
        note,
    )


def _diffprivlib_cells(ds, Xtr, ytr, Xte, yte, epsilons, seeds, env_dir):
    from objpert.apps._external import run_diffprivlib

    out = run_diffprivlib(
        Xtr, ytr, Xte, yte, epsilons=epsilons, seeds=[seed_of(s) for s in range(seeds)],
        data_norm=ds.data_norm,
        env_dir=env_dir,
    )  # fmt: skip
    cells = {}
    sign = np.where(ytr == 1, 1.0, -1.0)
    for eps in epsilons:
        rs = sorted((r for r in out["rows"] if r["epsilon"] == eps), key=lambda r: r["seed"])
        # its model is on the raw features (w . x + b): the same objective on the same rows
        objs = [
            float(
                np.mean(np.logaddexp(0.0, -sign * (Xtr @ np.asarray(r["coef"]) + r["intercept"])))
            )
            for r in rs
        ]
        cells[eps] = Cell(
            tuple(r["accuracy"] for r in rs), tuple(objs), tuple(r["seconds"] for r in rs),
            float(eps), 0.0, note="pure epsilon-DP",
        )  # fmt: skip
    return cells, {"versions": out["versions"], "privacy": out["privacy"]}


@dataclass(frozen=True)
class _Task:
    """One cell of the run: ``method`` at ``epsilon`` on the dataset ``dataset``, ``seeds``
    releases; ``counted``: whether it counts in the progress (a pairing's reference that
    was not asked for does not)."""

    dataset: str
    method: str
    epsilon: float
    delta: float
    seeds: int
    env_dir: str | None = None
    counted: bool = True


#: This process's datasets by name: (dataset, Xtr, Xte, ytr, yte, train P, test P).
_DATA: dict[str, tuple] = {}


def _install(datasets: Sequence[Dataset]) -> None:
    """The public split and the prepared data of each dataset, for this process's tasks."""
    _DATA.clear()
    for ds in datasets:
        Xtr, Xte, ytr, yte = split(ds)
        P, Pte = (prepare(X, y, data_norm=ds.data_norm) for X, y in ((Xtr, ytr), (Xte, yte)))
        _DATA[ds.name] = (ds, Xtr, Xte, ytr, yte, P, Pte)


def _cpu_now() -> float:
    """CPU seconds of this process and of its child processes that have ended (the
    workers, diffprivlib's process)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _run_task(task: _Task) -> tuple[_Task, Cell, dict]:
    """(task, its cell, its metadata)."""
    ds, Xtr, Xte, ytr, yte, P, Pte = _DATA[task.dataset]
    if task.method == "diffprivlib":
        got, meta = _diffprivlib_cells(
            ds, Xtr, ytr, Xte, yte, [task.epsilon], task.seeds, task.env_dir
        )
        return task, got[task.epsilon], {"diffprivlib": meta}
    return task, _cell(task.method, P, Pte, task.epsilon, task.delta, task.seeds), {}


def _tasks(names: Sequence[str], epsilons: Sequence[float], delta: float, seeds: int,
           methods: Sequence[str], env_dir) -> list[_Task]:  # fmt: skip
    """Every cell of the run, the external peer's first (each its own process, the longest
    cells), then per dataset each method's in order, then the pairings' references that
    were not asked for."""
    env = None if env_dir is None else str(env_dir)
    methods = list(dict.fromkeys(map(canonical_method, methods)))
    cell = [(m, e) for m in methods for e in epsilons]
    cell.sort(key=lambda me: me[0] != "diffprivlib")
    extra = [(v, e) for v in sorted({reference_of(m) for m in methods} - set(methods))
             for e in epsilons]  # fmt: skip
    return [
        _Task(name, m, e, delta, seeds, env, counted)
        for counted, pairs in ((True, cell), (False, extra))
        for m, e in pairs
        for name in names
    ]


def _context() -> multiprocessing.context.BaseContext:
    """How the workers start: forked on Linux (nothing to import again, and a caller's
    script needs no ``__main__`` guard; the engines' thread pools are rebuilt in a forked
    child), spawned elsewhere."""
    fork = sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if fork else "spawn")


def _results(tasks: list[_Task], datasets: Sequence[Dataset],
             workers: int) -> Iterator[tuple[_Task, Cell, dict]]:  # fmt: skip
    """Each task's result as it completes: in this process (``workers`` 1) or on a pool
    of ``workers`` processes (each with its own copy of the datasets)."""
    if workers <= 1 or len(tasks) <= 1:
        _install(datasets)
        try:
            yield from map(_run_task, tasks)
        finally:
            _DATA.clear()
        return
    pool = ProcessPoolExecutor(
        min(workers, len(tasks)), mp_context=_context(), initializer=_install,
        initargs=(datasets,),
    )  # fmt: skip
    try:
        for future in as_completed([pool.submit(_run_task, t) for t in tasks]):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def summarise(dataset: str, method: str, eps: float, delta: float, cell: Cell,
              reference: Cell | None, versus: str, note: str = "") -> CompareRow:  # fmt: skip
    """A :class:`CompareRow` from a cell and the cell it is paired with (None: none); its
    note ``note``, else the cell's."""
    nan3 = (math.nan, math.nan, math.nan)
    paired = reference is not None and len(reference.accuracies) == len(cell.accuracies)
    return CompareRow(
        dataset, method, eps, delta, len(cell.accuracies),
        *mean_se(cell.accuracies), *mean_se(cell.objectives),
        versus if paired else "",
        paired_difference(cell.accuracies, reference.accuracies) if paired else nan3,
        paired_difference(cell.objectives, reference.objectives) if paired else nan3,
        *time_summary(cell.seconds), float(np.median(cell.cpu_seconds)),
        cell.certified_epsilon, cell.certified_delta, note or cell.note,
        cell.accuracies, cell.objectives,
    )  # fmt: skip


def _rows(names: Sequence[str], epsilons: Sequence[float], delta: float,
          methods: Sequence[str], cells: dict[tuple[str, str, float], Cell],
          ) -> list[CompareRow]:  # fmt: skip
    """The rows of the asked-for methods, each paired with its reference's cell."""
    methods = list(dict.fromkeys(map(canonical_method, methods)))
    return [
        summarise(name, m, e, delta, cells[(name, m, e)],
                  None if reference_of(m) == m else cells[(name, reference_of(m), e)],
                  reference_of(m))
        for name in names for m in methods for e in epsilons
    ]  # fmt: skip


def _compute(datasets: Sequence[Dataset], epsilons: Sequence[float], delta: float,
             seeds: int, methods: Sequence[str], progress: Callable[[int], None] | None,
             env_dir, workers: int) -> tuple[list[CompareRow], dict]:  # fmt: skip
    """Every cell of the run (on ``workers`` processes), then the rows; ``meta`` holds the
    external peer's versions."""
    names = [ds.name for ds in datasets]
    tasks = _tasks(names, epsilons, delta, seeds, methods, env_dir)
    cells: dict[tuple[str, str, float], Cell] = {}
    meta: dict = {}
    for task, cell, m in _results(tasks, datasets, workers):
        cells[(task.dataset, task.method, task.epsilon)] = cell
        meta.update(m)
        if progress and task.counted:
            progress(task.seeds)
    return _rows(names, epsilons, delta, methods, cells), meta


def compare_dataset(
    ds: Dataset,
    epsilons: Sequence[float],
    delta: float,
    seeds: int,
    methods: Sequence[str],
    progress: Callable[[int], None] | None = None,
    env_dir=None,
    workers: int = 1,
) -> tuple[list[CompareRow], dict]:
    """Every method of ``methods`` at every target epsilon on one dataset."""
    return _compute([ds], epsilons, delta, seeds, methods, progress, env_dir, workers)


def default_workers() -> int:
    """The comparison's worker processes by default: one per core this process may use."""
    return available_cores()


def run(
    names: Sequence[str],
    epsilons: Sequence[float],
    delta: float,
    seeds: int,
    methods: Sequence[str] = DEFAULT_METHODS,
    progress: Callable[[int], None] | None = None,
    env_dir=None,
    workers: int | None = None,
) -> tuple[list[CompareRow], dict]:
    """The comparison of ``methods`` on each dataset of ``names`` at each target epsilon,
    ``seeds`` releases each. An empty list of datasets, epsilons or methods, a seed count
    below 1 or a target out of range is a ParameterError (never an empty or NaN table).
    The cells run on ``workers`` processes (None: :func:`default_workers`; 1: this one);
    they are independent, so the rows do not depend on it. ``meta`` holds the rules, the
    wall time of the run, its CPU time (this process, its workers and diffprivlib's
    processes), the load average and the workers."""
    names, epsilons, methods = list(names), list(epsilons), list(methods)
    for what, items in (("datasets", names), ("epsilons", epsilons), ("methods", methods)):
        if not items:
            raise ParameterError(f"the comparison needs at least one of its {what}; got none")
    workers = default_workers() if workers is None else workers
    datasets = [load(name) for name in names]  # an unknown dataset fails before any work
    load_before, t0, c0 = os.getloadavg()[0], time.perf_counter(), _cpu_now()
    rows, meta = _compute(datasets, epsilons, delta, seeds, methods, progress, env_dir, workers)
    wanted = {canonical_method(m) for m in methods}
    meta |= {
        "rules": {k: v for k, v in rules().items() if k in wanted or k == "watkins_arora"},
        "datasets": names, "epsilons": epsilons, "delta": delta, "seeds": seeds,
        "seed_rule": "release s of every method uses seed 1000 s + 17",
        "wall_seconds": time.perf_counter() - t0,
        "cpu_seconds": _cpu_now() - c0,
        "load_average": [load_before, os.getloadavg()[0]], "cpus": os.cpu_count(),
        "workers": workers,
    }  # fmt: skip
    return rows, meta
