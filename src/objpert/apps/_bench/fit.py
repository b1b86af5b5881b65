"""End-to-end fit: objpert's private logistic regression against scikit-learn and diffprivlib.

All three fit the same 300,000 training rows of :func:`objpert.apps.datasets.load_flights`
(public preprocessing, public seeded split) with the same BLAS thread count: threadpoolctl
in this process, ``OPENBLAS/OMP/MKL_NUM_THREADS`` for diffprivlib's subprocess, which times
its own ``fit`` (the interpreter start and data transfer are not counted).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from objpert.apps._bench.common import BenchResult, best_time
from objpert.exceptions import ParameterError

__all__ = [
    "BLAS_ENV",
    "DELTA",
    "FIT_ROWS",
    "QUICK_ROWS",
    "SPLIT_SEED",
    "TEST_ROWS",
    "bench_fit",
    "blas_env",
    "flights_split",
]

FIT_ROWS = 300_000
QUICK_ROWS = 3_000
TEST_ROWS = 25_000  # held-out rows scored (at most; all that remain when fewer)
SPLIT_SEED = 0  # the split is public: a fixed seed
DELTA = 1e-6  # PrivateLogisticRegression's default
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def flights_split(rows: int, seed: int = SPLIT_SEED):
    """``rows`` training rows and up to TEST_ROWS test rows of the flights data (stratified)."""
    from sklearn.model_selection import train_test_split

    from objpert.apps.datasets import load_flights

    ds = load_flights()
    if not 2 <= rows < ds.n:
        raise ParameterError(f"rows must be in [2, {ds.n}); got {rows}")
    test = min(ds.n - rows, TEST_ROWS)
    Xtr, Xte, ytr, yte = train_test_split(
        ds.X, ds.y, train_size=rows, test_size=test, random_state=seed, stratify=ds.y
    )
    return ds, Xtr, Xte, ytr, yte


@contextlib.contextmanager
def blas_env(threads: int) -> Iterator[None]:
    """Set the BLAS/OpenMP thread variables for subprocesses started inside the block."""
    saved = {k: os.environ.get(k) for k in BLAS_ENV}
    os.environ.update({k: str(threads) for k in BLAS_ENV})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _timed_fits(fit, repeats: int) -> tuple[float, object]:
    """Best of ``repeats`` fits (no warm-up: the first includes the cached calibration)."""
    fitted: list = []
    seconds = best_time(lambda: fitted.append(fit()), repeats=repeats, warmup=0)
    return seconds, fitted[-1]


def bench_fit(
    rows: int = FIT_ROWS,
    epsilon: float = 1.0,
    delta: float = DELTA,
    *,
    threads: int | None = None,
    repeats: int = 1,
    quick: bool = False,
    env_dir: Path | None = None,
) -> list[BenchResult]:
    """Seconds per fit of objpert against scikit-learn (lbfgs) and diffprivlib.

    Two rows, ``ratio = objpert / baseline`` (reported only: no threshold). Test accuracies are
    in the notes. ``quick`` uses QUICK_ROWS rows. The diffprivlib row is reported as
    skipped, with the reason, when its environment cannot be built (e.g. offline).
    ``threads`` (None: every available core) caps BLAS for all three.
    """
    from sklearn.linear_model import LogisticRegression

    from objpert.apps._bench.runner import resolve_threads
    from objpert.apps._external.diffprivlib_env import ExternalPeerError, run_diffprivlib
    from objpert.estimators import PrivateLogisticRegression
    from objpert.exceptions import TestingSeedWarning

    rows = QUICK_ROWS if quick else rows
    threads = resolve_threads(threads)
    ds, Xtr, Xte, ytr, yte = flights_split(rows)
    where = f"{rows:,} x {ds.X.shape[1]} rows, {threads} BLAS thread(s)"

    def private():
        model = PrivateLogisticRegression(
            epsilon=epsilon, delta=delta, data_norm=ds.data_norm, classes=[0, 1], random_state=0
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TestingSeedWarning)  # a measurement, not a release
            return model.fit(Xtr, ytr)

    def nonprivate():
        return LogisticRegression(solver="lbfgs", max_iter=1000).fit(Xtr, ytr)

    with threadpool_limits(limits=threads):
        t_op, op = _timed_fits(private, repeats)
        t_sk, sk = _timed_fits(nonprivate, repeats)
    acc_op, acc_sk = op.score(Xte, yte), sk.score(Xte, yte)
    ours = f"accuracy: objpert {acc_op:.4f} (eps {epsilon:g}, delta {delta:g}, N={op.n_iter_[0]})"
    results = [
        BenchResult(
            f"fit vs scikit-learn ({ds.name})",
            t_op,
            "sklearn LogisticRegression(lbfgs)",
            t_sk,
            t_op / t_sk,
            note=f"{ours}, sklearn {acc_sk:.4f} (non-private); {where}",
        )
    ]
    try:
        with blas_env(threads):
            out = run_diffprivlib(
                Xtr,
                ytr,
                Xte,
                yte,
                epsilons=[epsilon],
                seeds=repeats,
                data_norm=ds.data_norm,
                env_dir=env_dir,
            )
    except (ExternalPeerError, OSError) as err:
        reason = " ".join(str(err).split())
        results.append(
            BenchResult(
                f"fit vs diffprivlib ({ds.name})",
                t_op,
                "diffprivlib LogisticRegression",
                math.nan,
                math.nan,
                note=f"skipped: {reason}",
            )
        )
        return results
    t_dp = min(r["seconds"] for r in out["rows"])
    acc_dp = float(np.mean([r["accuracy"] for r in out["rows"]]))
    results.append(
        BenchResult(
            f"fit vs diffprivlib ({ds.name})",
            t_op,
            "diffprivlib LogisticRegression",
            t_dp,
            t_op / t_dp,
            note=f"{ours}, diffprivlib {out['versions']['diffprivlib']} {acc_dp:.4f} "
            f"(pure eps {epsilon:g}); {where}",
        )
    )
    return results
