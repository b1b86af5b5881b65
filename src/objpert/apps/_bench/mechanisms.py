"""Mechanism benchmark: one release of every registered mechanism, reported per name.

Every mechanism of :mod:`objpert.mechanisms._registry` that accepts the logistic loss is
released on one small public logistic problem (seeded rows of norm at most 1, labels 0/1)
on the plan of :func:`objpert.apps._compare.mechanism_plan`, the comparison's public tuning
rule. A mechanism that does not accept it (QOP) is released on a problem of its own loss:
the squared loss with interpolating targets, its reference point the origin. The plans
are made before the clock starts and every release draws fresh noise. A mechanism whose
plan or release raises becomes a row saying why; the others are still timed.

A round releases every mechanism once, in turn (:func:`objpert.apps._bench.common.round_times`),
so that a drift of the machine's speed reaches them all alike. Each row gives the median
seconds per release over the rounds (min and max in the note) and, for the logistic
problem, the ratio to the Watkins & Arora release on the same data (reported only: no
threshold).
"""

from __future__ import annotations

import inspect
import math
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from objpert.apps._bench.common import SETTLE_SECONDS, BenchResult, round_times
from objpert.mechanisms import _registry as registry

__all__ = ["DELTA", "EPSILON", "REFERENCE", "bench_mechanisms", "problem"]

EPSILON, DELTA = 1.0, 1e-5  # the public target of every plan
REFERENCE = "watkins_arora"  # the baseline of the logistic rows
ZETA = 1.0  # public bound on the row norms


def problem(loss: str, n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded (X, y): rows of norm in [0.1, 1]; labels 0/1 of a noisy linear rule
    (``logistic``) or interpolating targets X theta with ||theta|| = 1 (``squared``)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= (rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    theta = rng.standard_normal(d)
    theta /= np.linalg.norm(theta)
    if loss == "logistic":
        return X, (X @ theta + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, X @ theta


def _loss_of(mechanism: registry.Mechanism) -> str | None:
    """The benchmark's problem for a mechanism: logistic if it accepts it, else squared."""
    for loss in ("logistic", "squared"):
        if loss in mechanism.losses:
            return loss
    return None


def _plan(mechanism: registry.Mechanism, loss: str, n: int, d: int) -> Any:
    if loss == "logistic":
        from objpert.apps._compare import mechanism_plan

        return mechanism_plan(mechanism.name, n, d, ZETA, EPSILON, DELTA)
    return mechanism.plan(loss=loss, n=n, d=d, zeta=ZETA, epsilon=EPSILON, delta=DELTA)


def _release(mechanism: registry.Mechanism, X: Any, y: Any, plan: Any) -> Callable[[], Any]:
    """One release with fresh noise (OS entropy), without a progress bar."""
    quiet = (
        {"verbose": False} if "verbose" in inspect.signature(mechanism.release).parameters else {}
    )
    return lambda: mechanism.release(X, y, plan, None, **quiet)


def _iterations(plan: Any) -> str:
    n = getattr(plan, "iterations", None)
    return f", N={n}" if n else ""


def bench_mechanisms(
    n: int = 20_000,
    d: int = 20,
    *,
    quick: bool = False,
    rounds: int = 5,
    warmup: int = 1,
    settle: float = SETTLE_SECONDS,
    seed: int = 0,
) -> list[BenchResult]:
    """Seconds per release of each registered mechanism (median over ``rounds``
    interleaved rounds after ``warmup`` untimed ones of each), in registration order. ``quick``:
    n = 2,000, d = 10 and 3 rounds. A mechanism that accepts neither the logistic nor the
    squared loss is reported as skipped."""
    if quick:
        n, d, rounds = min(n, 2_000), min(d, 10), min(rounds, 3)
    data = {loss: problem(loss, n, d, seed) for loss in ("logistic", "squared")}
    releases: dict[str, Callable[[], Any]] = {}
    about: dict[str, str] = {}
    unmeasured: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a measurement, not a release anyone receives
        for name in registry.names():
            mechanism = registry.get(name)
            loss = _loss_of(mechanism)
            if loss is None:
                unmeasured[name] = "skipped: accepts neither the logistic nor the squared loss"
                continue
            try:
                plan = _plan(mechanism, loss, n, d)
                release = _release(mechanism, *data[loss], plan)
                for _ in range(max(1, warmup)):  # untimed; a broken mechanism shows here
                    release()
            except Exception as err:  # one broken mechanism must not lose the others' rows
                unmeasured[name] = "error: " + " ".join(f"{type(err).__name__}: {err}".split())
                continue
            releases[name] = release
            about[name] = f"{loss}, n={n}, d={d}{_iterations(plan)}"
        measured = round_times(*releases.values(), repeats=rounds, warmup=0, settle=settle)
    times = dict(zip(releases, measured, strict=True))
    base = statistics.median(times[REFERENCE]) if REFERENCE in times else math.nan
    results: list[BenchResult] = []
    for name in registry.names():
        if name in unmeasured:
            results.append(
                BenchResult(
                    f"release {name}", math.nan, "", math.nan, math.nan, note=unmeasured[name]
                )
            )
            continue
        ts = times[name]
        median = statistics.median(ts)
        logistic = about[name].startswith("logistic")
        baseline = f"{REFERENCE} release" if logistic and REFERENCE in times else ""
        base_s = base if baseline else math.nan
        results.append(
            BenchResult(
                f"release {name}",
                median,
                baseline,
                base_s,
                median / base_s if baseline else math.nan,
                note=f"{about[name]}; seconds per release: median of {len(ts)} rounds, "
                f"min {min(ts):.3g}, max {max(ts):.3g}",
            )
        )
    return results
