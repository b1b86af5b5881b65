"""Releases where users run them: many releases per sweep, steady threads, a busy machine.

Every figure is the ratio of medians over interleaved rounds (each round times the
objpert side and its baseline one after the other), with the min and max of each side in
the note; BLAS runs one thread throughout. Each figure is measured twice: as the machine
is, and under a competing CPU-bound process the benchmark starts itself
(:func:`competing_load`), on every core but one:

- ``batched_b64_gain``: 64 releases by one ``release_batch`` against 64
  ``perturbed_gradient_descent`` calls (same plan and data); threshold >= 4 (a speed-up);
- ``one_vs_rest_gain`` (synthetic 20,000 x 50) and ``one_vs_rest_digits_gain``
  (scikit-learn's digits, 1797 x 64): the K = 10 one-vs-rest releases of a multiclass
  fit by ``release_targets`` (one sweep per step for all classes) against the K releases
  one after the other, as the estimators ran them before (``perturbed_gradient_descent``
  per class); threshold >= 3;
- ``one_vs_rest_fit`` (synthetic 20,000 x 50) and ``one_vs_rest_fit_digits``: a K = 10
  class ``PrivateLogisticRegression(multi_class="ovr").fit`` (its joint calibration, at
  the PLD composition of the K releases, and the K releases in one descent) against K
  binary fits on the same rows (class k against the rest, each at the same target), the
  calibration caches cleared before each side (:func:`~objpert.apps._bench.common.
  clear_calibration_caches`), so each pays its calibration once, as in a fresh process;
  threshold <= 1/3 (a ratio of times);
- ``single_thread_step``: one step of eq. (4) with ``n_jobs=1`` against the same step
  with the single-point compiled kernel over all rows in one call (the one-thread path
  before the sweeps were cut into fixed parts); threshold <= 1.1;
- ``auto_threads_step``: one step with ``n_jobs=None`` (automatic) against ``n_jobs=1``,
  on a problem large enough for threads (reported only).
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from objpert._engines.blocked import available_cores, single_threaded_blas
from objpert.apps._bench.common import BenchResult, clear_calibration_caches, round_times

__all__ = [
    "BATCHED_GAIN_THRESHOLD",
    "ONE_VS_REST_FIT_THRESHOLD",
    "ONE_VS_REST_THRESHOLD",
    "SINGLE_THREAD_THRESHOLD",
    "bench_threads",
    "competing_load",
    "spread",
]

BATCHED_GAIN_THRESHOLD = 4.0  # B = 64 at once >= 4 x the throughput of 64 single releases
ONE_VS_REST_THRESHOLD = 3.0  # K one-vs-rest releases at once >= 3 x one after the other
ONE_VS_REST_FIT_THRESHOLD = 1 / 3  # a K-class fit <= 1/3 of K binary fits, calibration included
SINGLE_THREAD_THRESHOLD = 1.1  # a one-thread step <= 1.1 x the one-call kernel step

_SPIN = (
    "import signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nwhile True: pass"
)


@contextlib.contextmanager
def competing_load(processes: int | None = None) -> Iterator[int]:
    """CPU-bound Python processes (default: one per core but one, at least one) running
    while the block runs; they are ended (by their own ids) when it leaves. Yields their
    number."""
    count = max(1, available_cores() - 1) if processes is None else max(0, int(processes))
    procs = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(count)]
    try:
        yield count
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover - a stuck child
                p.kill()
                p.wait()


def spread(times: list[float]) -> tuple[float, float, float]:
    """(min, median, max) of a list of times."""
    return min(times), statistics.median(times), max(times)


def _fmt(times: list[float]) -> str:
    lo, mid, hi = spread(times)
    return f"{mid:.4g} s ({lo:.4g}-{hi:.4g})"


def _problem(n: int, d: int, seed: int, classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Rows of norm <= 1 and labels 0..classes-1 from a noisy linear model (seeded)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X *= (rng.uniform(0.1, 1.0, n) / np.linalg.norm(X, axis=1))[:, None]
    scores = X @ rng.standard_normal((d, classes)) + 0.3 * rng.standard_normal((n, classes))
    return X, np.argmax(scores, axis=1) if classes > 2 else (scores[:, 0] > 0).astype(int)


def _plan(n: int, d: int, max_iter: int, epsilon: float = 4.0) -> Any:
    from objpert.certify import _calibration as calibration

    return calibration.tight(
        "logistic",
        n=n,
        d=d,
        zeta=1.0,
        epsilon=epsilon,
        delta=1e-5,
        mu=0.05,
        max_iter=max_iter,
        objective="empirical",
    )


def _ratio_row(
    name: str,
    fns: tuple[Callable[[], Any], Callable[[], Any]],
    labels: tuple[str, str],
    bar: float,
    kind: str,
    rounds: int,
    note: str,
    speedup: bool,
) -> BenchResult:
    """Ratio of medians of (objpert, baseline) over interleaved rounds; ``speedup``: the
    ratio is baseline / objpert and ``seconds`` is the baseline's (as bench_batched)."""
    with single_threaded_blas(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the testing-seed warning of every call
        ours, theirs = round_times(*fns, repeats=rounds, settle=0.05)
    mine, base = statistics.median(ours), statistics.median(theirs)
    detail = f"{labels[0]}: {_fmt(ours)}; {labels[1]}: {_fmt(theirs)} (median (min-max))"
    if speedup:
        return BenchResult(name, base, labels[0], mine, base / mine, bar, kind, f"{note}; {detail}")
    return BenchResult(name, mine, labels[1], base, mine / base, bar, kind, f"{note}; {detail}")


def _batched(quick: bool, rounds: int, seed: int) -> BenchResult:
    from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_batch

    n, d, B = (2_000, 20, 16) if quick else (10_000, 20, 64)
    X, y = _problem(n, d, seed)
    plan = _plan(n, d, 5000)

    def singles() -> None:
        for b in range(B):
            perturbed_gradient_descent(X, y, plan, seed + b)

    return _ratio_row(
        "batched_b64_gain",
        (lambda: release_batch(X, y, plan, B, seed), singles),
        (f"release_batch (B={B})", f"{B} perturbed_gradient_descent calls"),
        BATCHED_GAIN_THRESHOLD,
        "min",
        rounds,
        f"n={n}, d={d}, B={B}, N={plan.iterations}",
        speedup=True,
    )


def _digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled digits (1797 x 64, ten classes), pixels / 16 / 8 (rows of
    norm <= 1)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return np.asarray(X, dtype=np.float64) / 128.0, np.asarray(y)


def _one_vs_rest(quick: bool, rounds: int, seed: int, digits: bool = False) -> BenchResult:
    from objpert.mechanisms._perturbed_gd import perturbed_gradient_descent, release_targets

    K = 10
    if digits:
        (X, codes), N = _digits(), 100 if quick else 300
        n, d = X.shape
    else:
        n, d, N = (2_000, 10, 100) if quick else (20_000, 50, 300)
        X, codes = _problem(n, d, seed, classes=K)
    X = np.column_stack([X * np.sqrt(0.5), np.full(n, np.sqrt(0.5))])  # an intercept column
    targets = [np.where(codes == k, 1.0, -1.0) for k in range(K)]
    plan = _plan(n, d + 1, N, epsilon=1.0)
    rngs = list(np.random.SeedSequence(seed).spawn(K))

    def one_by_one() -> None:
        for t, rng in zip(targets, rngs, strict=True):
            perturbed_gradient_descent(X, t, plan, rng)

    return _ratio_row(
        "one_vs_rest_digits_gain" if digits else "one_vs_rest_gain",
        (lambda: release_targets(X, targets, plan, rngs), one_by_one),
        (f"release_targets (K={K})", f"{K} perturbed_gradient_descent calls"),
        ONE_VS_REST_THRESHOLD,
        "min",
        rounds,
        f"{'digits, ' if digits else ''}n={n}, d={d + 1} (intercept column), K={K} classes, "
        f"N={plan.iterations}",
        speedup=True,
    )


def _one_vs_rest_fit(quick: bool, rounds: int, seed: int, digits: bool = False) -> BenchResult:
    from objpert.estimators import PrivateLogisticRegression

    K = 10
    if digits:
        X, codes = _digits()
        X, codes = (X[:600], codes[:600]) if quick else (X, codes)
    else:
        X, codes = _problem(*((2_000, 10) if quick else (20_000, 50)), seed, classes=K)
    n, d = X.shape
    small = {"mu": 0.05, "max_iter": 200} if quick else {}  # quick: a cheap calibration

    def model(classes: list[int]) -> Any:
        return PrivateLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=1.0, classes=classes, random_state=seed,
            verbose=False, multi_class="ovr", **small,
        )  # fmt: skip

    def fresh() -> None:  # each side calibrates once, as in a new process
        clear_calibration_caches()

    def multiclass() -> None:
        fresh()
        model(list(range(K))).fit(X, codes)

    def binaries() -> None:
        fresh()
        for k in range(K):
            model([0, 1]).fit(X, (codes == k).astype(int))

    fresh()
    steps = int(model(list(range(K))).fit(X, codes).n_iter_[0])
    binary_steps = int(model([0, 1]).fit(X, (codes == 0).astype(int)).n_iter_[0])
    return _ratio_row(
        "one_vs_rest_fit_digits" if digits else "one_vs_rest_fit",
        (multiclass, binaries),
        (f"{K}-class fit", f"{K} binary fits"),
        ONE_VS_REST_FIT_THRESHOLD,
        "max",
        rounds,
        f"{'digits, ' if digits else ''}n={n}, d={d}, K={K}, epsilon=1, delta=1e-6; "
        f"N={steps} steps per class (binary fits: N={binary_steps}); calibration included",
        speedup=False,
    )


def _one_vs_rest_fit_digits(quick: bool, rounds: int, seed: int) -> BenchResult:
    return _one_vs_rest_fit(quick, rounds, seed, digits=True)


def _steps(objective: Any, w: np.ndarray, steps: int) -> Callable[[], None]:
    def run() -> None:
        v = w.copy()
        for _ in range(steps):
            v -= 0.5 * objective.gradient(v)

    return run


def _single_thread(quick: bool, rounds: int, seed: int) -> BenchResult:
    from objpert._engines import compiled
    from objpert._engines.glm import GLMObjective
    from objpert._losses import get_loss

    n, d, steps = (5_000, 42, 20) if quick else (25_000, 42, 50)
    X, labels = _problem(n, d, seed)
    y = np.where(labels == 1, 1.0, -1.0)
    loss, mu = get_loss("logistic"), 0.05
    objective = GLMObjective(X, y, loss, mu, n_jobs=1)
    kernel = compiled.fused_kernel(loss)
    w = np.random.default_rng(seed).standard_normal(d) * 0.1

    def one_call() -> None:  # the former one-thread step: one kernel call over every row
        v = w.copy()
        for _ in range(steps):
            g = np.zeros(d)
            if kernel is not None:
                kernel(X, v, y, 0, n, g)
            else:
                g = X.T @ loss.d1(X @ v, y)
            g /= n
            g += mu * v
            v -= 0.5 * g

    return _ratio_row(
        "single_thread_step",
        (_steps(objective, w, steps), one_call),
        ("n_jobs=1", "one kernel call"),
        SINGLE_THREAD_THRESHOLD,
        "max",
        max(rounds, 5 if quick else 25),  # short rounds: more of them (3% apart on 7 vs 25)
        f"n={n}, d={d}, {steps} steps a round, seconds per round",
        speedup=False,
    )


def _auto_threads(quick: bool, rounds: int, seed: int) -> BenchResult:
    from objpert._engines.glm import GLMObjective
    from objpert._engines.threads import choose_threads

    n, d, steps = (40_000, 50, 5) if quick else (400_000, 50, 10)
    X, labels = _problem(n, d, seed)
    y = np.where(labels == 1, 1.0, -1.0)
    auto = GLMObjective(X, y, "logistic", 0.05)
    one = GLMObjective(X, y, "logistic", 0.05, n_jobs=1)
    w = np.random.default_rng(seed).standard_normal(d) * 0.1
    chosen = choose_threads(n * (2 * d + 16), None)
    row = _ratio_row(
        "auto_threads_step",
        (_steps(auto, w, steps), _steps(one, w, steps)),
        ("n_jobs=None", "n_jobs=1"),
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        rounds,
        f"n={n}, d={d}, {steps} steps a round; automatic count now: {chosen} thread(s) "
        f"of {available_cores()}",
        speedup=False,
    )
    return row


def _one_vs_rest_digits(quick: bool, rounds: int, seed: int) -> BenchResult:
    return _one_vs_rest(quick, rounds, seed, digits=True)


_FIGURES = (
    _batched,
    _one_vs_rest,
    _one_vs_rest_digits,
    _one_vs_rest_fit,
    _one_vs_rest_fit_digits,
    _single_thread,
    _auto_threads,
)


def bench_threads(
    *, quick: bool = False, rounds: int | None = None, seed: int = 0, load: bool = True
) -> list[BenchResult]:
    """The figures of the module as the machine is, then (``load``) each again under
    :func:`competing_load` (its rows' names end in ``_under_load``)."""
    rounds = (3 if quick else 7) if rounds is None else max(1, int(rounds))
    rows = [figure(quick, rounds, seed) for figure in _FIGURES]
    if load:
        with competing_load() as count:
            for figure in _FIGURES:
                r = figure(quick, rounds, seed)
                rows.append(
                    BenchResult(
                        f"{r.name}_under_load",
                        r.seconds,
                        r.baseline,
                        r.baseline_seconds,
                        r.ratio,
                        r.bar,
                        r.bar_kind,
                        f"{r.note}; {count} competing CPU-bound process(es)",
                    )
                )
    return rows
