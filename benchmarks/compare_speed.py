"""The comparison's two speed-ups, measured: the seeds of a Watkins & Arora cell one after
the other against one batched descent (``objpert.apps._compare.fit_seeds``), and a small
comparison on 1 against 2 worker processes (``compare.run(workers=...)``), on the machine
as it is and under competing CPU-bound processes this benchmark starts itself.

Usage: python benchmarks/compare_speed.py [--rounds 2] [--data health_insurance]
       [--epsilon 3] [--seeds 10] [--run-seeds 4]

Medians with min/max over interleaved rounds in one process (one round runs every setting
once, in turn); every release runs with BLAS on one thread (threadpoolctl, as the
comparison does); the plans are computed before the timing. The batched releases are
checked against the seed-by-seed ones (1e-12) and the rows of both worker counts against
each other before anything is timed. docs/compare/README.md has the figures measured.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from objpert._data import prepare
from objpert.apps import _compare as compare
from objpert.apps._bench.common import round_times
from objpert.apps._bench.threads import competing_load, spread
from objpert.apps._demo import split
from objpert.apps.datasets import load
from objpert.mechanisms import _registry as registry

DELTA = 1e-6
#: The small comparison timed on 1 and 2 workers: every registered mechanism and the
#: non-private fit (diffprivlib runs in its own environment, outside this process's BLAS).
RUN_METHODS = (*registry.names(), "nonprivate")


def settings(data: str, eps: float, seeds: int, run_seeds: int) -> dict:
    """The timed calls by name, after checking that each pair gives the same results."""
    ds = load(data)
    Xtr, _, ytr, _ = split(ds)
    P = prepare(Xtr, ytr, data_norm=ds.data_norm)
    for name in registry.names():  # the plans, once, before any timing (cached)
        compare.mechanism_plan(name, P.n, P.d, P.zeta, eps, DELTA)
    fit = compare.FITTERS["watkins_arora"]
    seed_list = [compare.seed_of(s) for s in range(seeds)]

    def one_by_one() -> list:
        return [fit(P, eps, DELTA, s) for s in seed_list]

    def batched() -> list:
        return compare.fit_seeds("watkins_arora", P, eps, DELTA, seed_list)[0]

    gap = max(
        np.max(np.abs(a.weights - b.weights)) for a, b in zip(one_by_one(), batched(), strict=True)
    )
    assert gap <= 1e-12, f"batched releases differ by {gap}"

    def run(workers: int):
        return lambda: compare.run([data], [eps], DELTA, run_seeds, RUN_METHODS, workers=workers)

    rows = [run(w)()[0] for w in (1, 2)]
    assert [r.accuracies for r in rows[0]] == [r.accuracies for r in rows[1]]
    return {
        f"{seeds} Watkins & Arora releases, seed by seed": one_by_one,
        f"{seeds} Watkins & Arora releases, one batched descent": batched,
        f"compare ({len(RUN_METHODS)} methods, {run_seeds} seeds), 1 worker": run(1),
        f"compare ({len(RUN_METHODS)} methods, {run_seeds} seeds), 2 workers": run(2),
    }


def measure(data: str, eps: float, seeds: int, run_seeds: int, rounds: int) -> list[dict]:
    fns = settings(data, eps, seeds, run_seeds)
    out = []
    for loaded in (False, True):
        if loaded:
            with competing_load() as count:
                times = round_times(*fns.values(), repeats=rounds, warmup=0)
        else:
            count, times = 0, round_times(*fns.values(), repeats=rounds, warmup=0)
        for name, ts in zip(fns, times, strict=True):
            lo, mid, hi = spread(ts)
            out.append({"setting": name, "competing_processes": count, "load_average":
                        os.getloadavg()[0], "median_s": mid, "min_s": lo, "max_s": hi})  # fmt: skip
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--data", default="health_insurance")
    p.add_argument("--epsilon", type=float, default=3.0)
    p.add_argument("--seeds", type=int, default=10, help="releases of the batched cell")
    p.add_argument("--run-seeds", type=int, default=4, help="seeds of the timed comparison")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    rows = measure(args.data, args.epsilon, args.seeds, args.run_seeds, args.rounds)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{args.data}, epsilon {args.epsilon:g}, {args.rounds} rounds, {os.cpu_count()} CPUs")
    print("| setting | competing processes | load average | median s | min s | max s |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['competing_processes']} | {r['load_average']:.1f} | "
              f"{r['median_s']:.2f} | {r['min_s']:.2f} | {r['max_s']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
