"""Shared pieces of the benchmarks: one result row and best-of-k timers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "CALIBRATION_MODULES",
    "SETTLE_SECONDS",
    "BenchResult",
    "best_time",
    "best_times",
    "clear_calibration_caches",
    "round_times",
    "timed_fit",
]

#: The modules whose cached functions hold calibrations (plans, knees, PLDs of plans).
CALIBRATION_MODULES = (
    "objpert.estimators._planning",
    "objpert.certify._calibration",
    "objpert.certify._multiclass",
    "objpert.accounting._pld",
)


def clear_calibration_caches() -> int:
    """Empty every cache of :data:`CALIBRATION_MODULES` (each module-level function with
    ``cache_clear``), so that the next fit calibrates as in a fresh process; returns how
    many caches were cleared."""
    import importlib

    cleared = 0
    for name in CALIBRATION_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                value.cache_clear()
                cleared += 1
    return cleared


@dataclass(frozen=True)
class BenchResult:
    """One benchmark figure: ``ratio = seconds / baseline_seconds`` (lower is faster),
    compared with its threshold ``bar`` by ``bar_kind`` ("max": ratio <= bar, "min":
    ratio >= bar, None: reported only)."""

    name: str
    seconds: float
    baseline: str
    baseline_seconds: float
    ratio: float
    bar: float | None = None
    bar_kind: str | None = None
    note: str = ""

    @property
    def passed(self) -> bool | None:
        if self.bar is None or self.bar_kind is None:
            return None
        return self.ratio <= self.bar if self.bar_kind == "max" else self.ratio >= self.bar

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}


#: Seconds of sleep before each timed call of :func:`best_times`. OpenBLAS's threads spin
#: for ~0.1 s after a multi-threaded product and slowed whatever ran next by up to 40%
#: here; a descent runs its gradients back to back with BLAS on one thread, never so.
SETTLE_SECONDS = 0.25


def round_times(
    *fns: Callable[[], Any], repeats: int = 5, warmup: int = 1, settle: float = SETTLE_SECONDS
) -> list[list[float]]:
    """Wall times of each function in each of ``repeats`` rounds, after ``warmup`` untimed
    rounds (seconds; one list per function). A round calls every function once, in turn,
    so a function and its baseline are timed under the same conditions even when the
    machine's speed drifts; each timed call starts ``settle`` seconds after the previous
    call ended, so that no thread pool is still spinning from it."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            time.sleep(settle)
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return times


def best_times(
    *fns: Callable[[], Any], repeats: int = 5, warmup: int = 1, settle: float = SETTLE_SECONDS
) -> list[float]:
    """Best wall time of each function over the rounds of :func:`round_times` (seconds)."""
    return [min(ts) for ts in round_times(*fns, repeats=repeats, warmup=warmup, settle=settle)]


def best_time(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """Best wall time of ``repeats`` calls after ``warmup`` untimed calls (seconds)."""
    return best_times(fn, repeats=repeats, warmup=warmup)[0]


def timed_fit(est: Any, X_train: Any, y_train: Any, X_test: Any, y_test: Any) -> tuple:
    """(the fitted estimator, its test score, the fit's wall seconds): one fit with BLAS on
    one thread and its warnings (testing seeds, budgets) silenced, as the accuracy
    benchmarks time their releases."""
    import warnings

    from threadpoolctl import threadpool_limits

    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        est.fit(X_train, y_train)
        seconds = time.perf_counter() - start
    return est, float(est.score(X_test, y_test)), seconds
