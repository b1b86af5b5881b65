"""The fit ``objpert train --n-jobs K`` runs, for K = 1, 2 and the default (automatic), on
an idle machine and under a competing CPU-bound process this benchmark starts itself.

Usage: python benchmarks/cli_train_threads.py [--rounds 5] [--n 100000] [--d 20] [--steps 5000]

Medians with min/max over interleaved rounds in one process (one round fits every
setting once, in turn); BLAS, OpenMP and Numba threads are capped at K around each
timed fit as ``--n-jobs`` does (threadpoolctl; the default leaves them as they are).
docs/guide.md has the figures measured.
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np

from objpert.apps._bench.common import round_times
from objpert.apps._bench.threads import competing_load, spread
from objpert.cli._common import thread_limit
from objpert.estimators import PrivateLogisticRegression

SETTINGS = (1, 2, None)  # --n-jobs K; None: the library's choice


def fitter(X: np.ndarray, y: np.ndarray, threads: int | None, steps: int):
    def fit() -> PrivateLogisticRegression:
        model = PrivateLogisticRegression(
            epsilon=1.0,
            delta=1e-6,
            data_norm=1.0,
            classes=[0, 1],
            max_iter=steps,
            mu=0.05,  # a fixed public mu: every setting runs the same N steps
            n_jobs=threads,
            random_state=0,
            verbose=False,
        )
        with thread_limit(threads):
            return model.fit(X, y)

    return fit


def measure(n: int, d: int, steps: int, rounds: int) -> tuple[int, list[dict]]:
    """(the plan's N, one row per setting and load: median, min and max seconds)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = (X @ rng.standard_normal(d) > 0).astype(int)
    fns = [fitter(X, y, k, steps) for k in SETTINGS]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the testing-seed warning of every fit
        iterations = int(fns[0]().n_iter_[0])
        for load in (False, True):
            if load:
                with competing_load() as count:
                    times = round_times(*fns, repeats=rounds)
            else:
                count, times = 0, round_times(*fns, repeats=rounds)
            for k, ts in zip(SETTINGS, times, strict=True):
                lo, mid, hi = spread(ts)
                rows.append(
                    {"threads": k, "competing_processes": count, "median_s": mid,
                     "min_s": lo, "max_s": hi}
                )  # fmt: skip
    return iterations, rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--d", type=int, default=20)
    p.add_argument("--steps", type=int, default=5000, help="max_iter")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    iterations, rows = measure(args.n, args.d, args.steps, args.rounds)
    if args.json:
        print(json.dumps({"iterations": iterations, "rows": rows}, indent=2))
        return
    print(f"fit of {args.n} x {args.d}, N = {iterations} steps, {args.rounds} rounds")
    print("| --n-jobs | competing processes | median s | min s | max s |")
    print("|---|---|---|---|---|")
    for r in rows:
        k = "default" if r["threads"] is None else r["threads"]
        print(f"| {k} | {r['competing_processes']} | {r['median_s']:.3f} | "
              f"{r['min_s']:.3f} | {r['max_s']:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main()
