"""The comparison's runs: every method on the same public split, the same declared
bounds (the dataset's public data_norm, the labels {-1, +1}), ``seeds`` releases per
target epsilon, paired by seed."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from objpert.apps.compare.methods import (
    DEFAULT_METHODS,
    DETERMINISTIC,
    FITTERS,
    canonical_method,
    reference_of,
    rules,
)
from objpert.apps.compare.stats import mean_se, paired_difference, time_summary
from objpert.apps.datasets import Dataset, load
from objpert.apps.demo import split
from objpert.data import PreparedData, prepare
from objpert.engines.glm import GLMObjective
from objpert.errors import ParameterError, check_int, check_open_unit, check_positive

__all__ = ["QUICK", "Cell", "CompareRow", "compare_dataset", "run", "seed_of", "summarise"]

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
        """The row of :meth:`to_dict` (as written in compare.json)."""
        tuples = ("accuracy_diff", "objective_diff", "accuracies", "objectives")
        return cls(**{k: tuple(v) if k in tuples else v for k, v in data.items()})


def _evaluate(P: PreparedData, Pte: PreparedData, w: np.ndarray) -> tuple[float, float]:
    """(test accuracy of sign(<x, w>), mean logistic training loss, unregularised)."""
    acc = float(np.mean(np.where(Pte.X @ w > 0, 1.0, -1.0) == Pte.y))
    return acc, float(GLMObjective(P.X, P.y, "logistic", 0.0).value(w))


def _cell(method: str, P: PreparedData, Pte: PreparedData, eps: float, delta: float,
          seeds: int) -> Cell:  # fmt: skip
    fit = FITTERS[method]
    runs = 1 if method in DETERMINISTIC else seeds
    fits = [fit(P, eps, delta, seed_of(s)) for s in range(runs)]
    values = [_evaluate(P, Pte, f.weights) for f in fits]
    reps = seeds // runs  # a deterministic fit stands for every seed of the pairing
    return Cell(
        tuple(a for a, _ in values) * reps,
        tuple(o for _, o in values) * reps,
        tuple(f.seconds for f in fits),
        max(f.epsilon for f in fits),
        max(f.delta for f in fits),
        tuple(f.cpu_seconds for f in fits),
    )


def _diffprivlib_cells(ds, Xtr, ytr, Xte, yte, epsilons, seeds, env_dir):
    from objpert.apps.external import run_diffprivlib

    out = run_diffprivlib(
        Xtr, ytr, Xte, yte, epsilons=epsilons, seeds=seeds, data_norm=ds.data_norm,
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
            float(eps), 0.0,
        )  # fmt: skip
    return cells, {"versions": out["versions"], "privacy": out["privacy"]}


def summarise(dataset: str, method: str, eps: float, delta: float, cell: Cell,
              reference: Cell | None, versus: str, note: str = "") -> CompareRow:  # fmt: skip
    """A :class:`CompareRow` from a cell and the cell it is paired with (None: none)."""
    nan3 = (math.nan, math.nan, math.nan)
    paired = reference is not None and len(reference.accuracies) == len(cell.accuracies)
    return CompareRow(
        dataset, method, eps, delta, len(cell.accuracies),
        *mean_se(cell.accuracies), *mean_se(cell.objectives),
        versus if paired else "",
        paired_difference(cell.accuracies, reference.accuracies) if paired else nan3,
        paired_difference(cell.objectives, reference.objectives) if paired else nan3,
        *time_summary(cell.seconds), float(np.median(cell.cpu_seconds)),
        cell.certified_epsilon, cell.certified_delta, note,
        cell.accuracies, cell.objectives,
    )  # fmt: skip


def compare_dataset(
    ds: Dataset,
    epsilons: Sequence[float],
    delta: float,
    seeds: int,
    methods: Sequence[str],
    progress: Callable[[int], None] | None = None,
    env_dir=None,
) -> tuple[list[CompareRow], dict]:
    """Every method of ``methods`` at every target epsilon on one dataset."""
    Xtr, Xte, ytr, yte = split(ds)
    P = prepare(Xtr, ytr, data_norm=ds.data_norm)
    Pte = prepare(Xte, yte, data_norm=ds.data_norm)
    methods = list(dict.fromkeys(map(canonical_method, methods)))
    cells: dict[tuple[str, float], Cell] = {}
    meta: dict = {}
    for method in methods:
        if method == "diffprivlib":
            got, meta["diffprivlib"] = _diffprivlib_cells(
                ds, Xtr, ytr, Xte, yte, epsilons, seeds, env_dir
            )
            cells.update({(method, e): c for e, c in got.items()})
            if progress:
                progress(len(epsilons) * seeds)
            continue
        for eps in epsilons:
            cells[(method, eps)] = _cell(method, P, Pte, eps, delta, seeds)
            if progress:
                progress(seeds)
    for versus in {reference_of(m) for m in methods} - set(methods):
        for eps in epsilons:  # the reference of a pairing is run even if not asked for
            cells[(versus, eps)] = _cell(versus, P, Pte, eps, delta, seeds)
    rows = [
        summarise(ds.name, m, e, delta, cells[(m, e)],
                  None if reference_of(m) == m else cells[(reference_of(m), e)],
                  reference_of(m), "pure epsilon-DP" if m == "diffprivlib" else "")
        for m in methods for e in epsilons
    ]  # fmt: skip
    return rows, meta


def run(
    names: Sequence[str],
    epsilons: Sequence[float],
    delta: float,
    seeds: int,
    methods: Sequence[str] = DEFAULT_METHODS,
    progress: Callable[[int], None] | None = None,
    env_dir=None,
) -> tuple[list[CompareRow], dict]:
    """The comparison of ``methods`` on each dataset of ``names`` at each target epsilon,
    ``seeds`` releases each. An empty list of datasets, epsilons or methods, a seed count
    below 1 or a target out of range is a ParameterError (never an empty or NaN table).
    ``meta`` holds the rules, the wall time of the run and the load average."""
    names, epsilons, methods = list(names), list(epsilons), list(methods)
    for what, items in (("datasets", names), ("epsilons", epsilons), ("methods", methods)):
        if not items:
            raise ParameterError(f"the comparison needs at least one of its {what}; got none")
    epsilons = [check_positive(f"epsilons[{i}]", e) for i, e in enumerate(epsilons)]
    delta = check_open_unit("delta", delta)
    seeds = check_int("seeds", seeds, 1)
    datasets = [load(name) for name in names]  # an unknown dataset fails before any work
    load_before, t0, c0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
    rows: list[CompareRow] = []
    meta: dict = {}
    for ds in datasets:
        r, m = compare_dataset(ds, epsilons, delta, seeds, methods, progress, env_dir)
        rows += r
        meta.update(m)
    wanted = {canonical_method(m) for m in methods}
    meta |= {
        "rules": {k: v for k, v in rules().items() if k in wanted or k == "watkins_arora"},
        "datasets": names, "epsilons": epsilons, "delta": delta, "seeds": seeds,
        "seed_rule": "release s of every method uses seed 1000 s + 17",
        "wall_seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
        "load_average": [load_before, os.getloadavg()[0]], "cpus": os.cpu_count(),
    }  # fmt: skip
    return rows, meta
