"""End to end on flights: PrivateLogisticRegression.fit against scikit-learn's lbfgs.

Usage: python benchmarks/flights_fit.py [--quick] [--rounds R] [--warmup W] [--with-default]
       [--json FILE]

Times ``PrivateLogisticRegression(epsilon=1, delta=1e-6).fit`` (its default
``engine="auto"``) and ``sklearn.linear_model.LogisticRegression(solver="lbfgs").fit`` on
the same 300,000 training rows of :func:`objpert.apps.datasets.load_flights` (the public
seeded split of :func:`objpert.apps._bench.fit.flights_split`), BLAS pinned to one thread
for both by threadpoolctl around the timed work. Each private fit starts with the
estimators' calibration caches cleared, so its time includes the calibration (and the
shaping of the engine). ``--with-default`` also times ``engine="default"``.

Rounds are interleaved in one process (every round times every fit once, after an untimed
warm-up round): medians with min and max, quiet and under one competing CPU-bound process
started here (:func:`objpert.apps._bench.threads.competing_load`); ``--warmup 0`` times the
first round too (numba then loads its cached kernels inside it). ``ratio`` is objpert's
median over scikit-learn's; its range is over the rounds' own ratios. Wall times and this
process's CPU times (``time.process_time``: on a machine shared with other work, the CPU
time of a long fit is less sensitive to the other tenants than its wall time) are both
reported.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

from threadpoolctl import threadpool_limits

from objpert.apps._bench.common import SETTLE_SECONDS, clear_calibration_caches
from objpert.apps._bench.fit import DELTA, FIT_ROWS, flights_split
from objpert.apps._bench.threads import competing_load, spread
from objpert.estimators import PrivateLogisticRegression

QUICK_ROWS = 30_000


def fits(rows: int, with_default: bool) -> tuple[dict, dict]:
    """({name: fit function}, {name: the last fitted model}) on ``rows`` training rows."""
    from sklearn.linear_model import LogisticRegression

    ds, Xtr, _, ytr, _ = flights_split(rows)
    fitted: dict = {}

    def private(engine: str):
        def fit():
            clear_calibration_caches()  # the calibration is part of every timed fit
            model = PrivateLogisticRegression(
                epsilon=1.0, delta=DELTA, data_norm=ds.data_norm, classes=[0, 1],
                random_state=0, engine=engine, verbose=False,
            )  # fmt: skip
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the seed and iteration-budget notices
                fitted[engine] = model.fit(Xtr, ytr)

        return fit

    def sklearn():
        fitted["sklearn"] = LogisticRegression(solver="lbfgs", max_iter=1000).fit(Xtr, ytr)

    out = {"objpert (auto)": private("auto"), "sklearn lbfgs": sklearn}
    if with_default:
        out["objpert (default)"] = private("default")
    return out, fitted


def measure(named: dict, rounds: int, warmup: int) -> tuple[dict, dict]:
    """({name: per-round wall seconds}, {name: per-round CPU seconds of this process}),
    BLAS on one thread, rounds interleaved (each call 0.25 s after the previous one)."""
    wall: dict = {k: [] for k in named}
    cpu: dict = {k: [] for k in named}
    with threadpool_limits(limits=1):
        for _ in range(warmup):
            for fn in named.values():
                fn()
        for _ in range(rounds):
            for name, fn in named.items():
                time.sleep(SETTLE_SECONDS)
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                cpu[name].append(time.process_time() - c0)
                wall[name].append(time.perf_counter() - w0)
    return wall, cpu


def summary(times: dict) -> dict:
    """Median, min, max of every fit and the ratios against scikit-learn."""
    base = times["sklearn lbfgs"]
    out = {}
    for name, t in times.items():
        lo, mid, hi = spread(t)
        row = {"median": mid, "min": lo, "max": hi}
        if name != "sklearn lbfgs":
            per_round = [a / b for a, b in zip(t, base, strict=True)]
            row["ratio"] = mid / statistics.median(base)
            row["ratio_min"], row["ratio_max"] = min(per_round), max(per_round)
        out[name] = row
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS:,} rows, 2 rounds")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    ap.add_argument("--with-default", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    rows, rounds = (QUICK_ROWS, 2) if args.quick else (FIT_ROWS, args.rounds)
    named, fitted = fits(rows, args.with_default)
    result = {"rows": rows, "rounds": rounds, "warmup": args.warmup}
    wall, cpu = measure(named, rounds, args.warmup)
    result["quiet"], result["quiet, CPU time"] = summary(wall), summary(cpu)
    with competing_load(1):
        wall, cpu = measure(named, rounds, args.warmup)
    result["under load"], result["under load, CPU time"] = summary(wall), summary(cpu)
    result["iterations"] = int(fitted["auto"].n_iter_[0])
    for cond in ("quiet", "quiet, CPU time", "under load", "under load, CPU time"):
        for name, row in result[cond].items():
            ratio = (
                f"  ratio {row['ratio']:.2f} [{row['ratio_min']:.2f}-{row['ratio_max']:.2f}]"
                if "ratio" in row else ""
            )  # fmt: skip
            print(f"{cond:20s} {name:18s} {row['median']:.3f} s "
                  f"[{row['min']:.3f}-{row['max']:.3f}]{ratio}")  # fmt: skip
    print(f"{rows:,} rows, N = {result['iterations']} steps, {rounds} rounds, BLAS on 1 thread")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
