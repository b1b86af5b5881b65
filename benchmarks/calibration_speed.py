"""The tight calibration's speed: one ``tight`` call for a fresh shape (its caches cleared).

Usage: python benchmarks/calibration_speed.py [--rounds R] [--json out.json]

For each setting, R interleaved rounds in one process (setting after setting, round after
round), BLAS on one thread (threadpoolctl), the calibration's cache cleared before every
call: median, min and max of the wall seconds and of this process's CPU seconds of one
``tight`` call, and the number of smallest-sigma searches it ran (one per (mu, N)
evaluated), as the machine is and under competing CPU-bound processes this benchmark
starts itself. The plan of every call is recertified (Theorem C.13 recomputed from the
loss) and must equal the first round's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time

from threadpoolctl import threadpool_limits

from objpert.apps._bench.threads import competing_load, spread
from objpert.certify import _calibration as calibration
from objpert.certify import _knee as knee
from objpert.certify import _sigma_search as sigma_search
from objpert.certify._calibration import tight

SETTINGS = {  # name: keyword arguments of tight()
    # the estimators' binary fit: empirical objective, W = 3, an intercept column
    "binary estimator, n 10k, d 20 + 1, eps 1, N <= 5000": dict(
        n=10_000, d=21, zeta=math.sqrt(2), epsilon=1.0, delta=1e-6, comparator_norm=3.0,
        objective="empirical", max_iter=5000,
    ),
    "tv16 demo, n 28,193, d 26, eps 1, N <= 5000": dict(
        n=28_193, d=26, zeta=6.0, epsilon=1.0, delta=1e-6, comparator_norm=3.0,
        objective="empirical", max_iter=5000,
    ),
    "population bound, n 10k, d 20, eps 1, N <= 5000": dict(
        n=10_000, d=20, zeta=1.0, epsilon=1.0, delta=1e-6, max_iter=5000
    ),
}  # fmt: skip


def _time(kwargs: dict) -> tuple[float, float, int, object]:
    knee._knee_cached.cache_clear()
    searches = 0
    plain = calibration._best_sigma

    def counted(*args):
        nonlocal searches
        searches += 1
        return plain(*args)

    users = (calibration, knee, sigma_search)  # the modules that search sigma
    for module in users:
        module._best_sigma = counted
    try:
        with threadpool_limits(1):
            wall, cpu = time.perf_counter(), time.process_time()
            plan = tight("logistic", **kwargs)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        for module in users:
            module._best_sigma = plain
    return wall, cpu, searches, plan


def run(rounds: int) -> list[dict]:
    out = []
    for load in (False, True):
        wall = {name: [] for name in SETTINGS}
        cpu = {name: [] for name in SETTINGS}
        searches, first = {}, {}
        with competing_load() if load else contextlib.nullcontext(0) as count:
            for _ in range(rounds):
                for name, kwargs in SETTINGS.items():
                    w, c, s, plan = _time(kwargs)
                    cert = plan.recertify()
                    if not (cert.certified and cert.delta <= plan.delta):
                        raise SystemExit(f"{name}: the plan does not certify")
                    if first.setdefault(name, plan.to_json()) != plan.to_json():
                        raise SystemExit(f"{name}: the plans of two rounds differ")
                    wall[name].append(w)
                    cpu[name].append(c)
                    searches[name] = s
            load_average = os.getloadavg()[0]
        for name in SETTINGS:
            plan = json.loads(first[name])
            out.append(
                {"setting": name, "competing_processes": count, "load_average": load_average,
                 "wall_s": spread(wall[name]), "cpu_s": spread(cpu[name]),
                 "sigma_searches": searches[name], "iterations": plan["iterations"],
                 "mu": plan["mu"], "sigma": plan["sigma"]}
            )  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = run(args.rounds)
    print("| setting | competing processes | load average | wall s median [min, max] "
          "| CPU s median [min, max] | sigma searches | plan N |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        w, c = r["wall_s"], r["cpu_s"]
        print(f"| {r['setting']} | {r['competing_processes']} | {r['load_average']:.1f} | "
              f"{w[1]:.2f} [{w[0]:.2f}, {w[2]:.2f}] | {c[1]:.2f} [{c[0]:.2f}, {c[2]:.2f}] | "
              f"{r['sigma_searches']} | {r['iterations']} |")  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
