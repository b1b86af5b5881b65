"""The tight calibration's speed: the bisection deciding five levels per vectorised
evaluation against the plain step-by-step bisection (one level per evaluation).

Usage: python benchmarks/calibration_speed.py [--rounds R] [--json out.json]

Both give the same plan bit for bit (checked here on every call, and by
tests/certify/test_calibration.py); only the number of evaluations of the Theorem C.13
test differs. For each setting, R interleaved rounds in one process (plain, tree, plain,
tree, ...), BLAS on one thread (threadpoolctl); median, min and max seconds of one
``tight`` call, as the machine is and under competing CPU-bound processes this benchmark
starts itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

from threadpoolctl import threadpool_limits

from objpert.apps.bench.threads import competing_load, spread
from objpert.certify import calibration
from objpert.certify.calibration import tight

SETTINGS = {  # name: keyword arguments of tight()
    "binary, n 10k, d 20, eps 1, N <= 5000": dict(
        n=10_000, d=20, zeta=1.0, epsilon=1.0, delta=1e-6, max_iterations=5000
    ),
    "n 100k, d 100, eps 0.1, N <= 100k": dict(n=100_000, d=100, zeta=1.0, epsilon=0.1, delta=1e-6),
}


def _time(levels: int, kwargs: dict) -> tuple[float, object]:
    calibration._LEVELS = levels
    with threadpool_limits(1):
        start = time.perf_counter()
        plan = tight("logistic", **kwargs)
        return time.perf_counter() - start, plan


def run(rounds: int) -> list[dict]:
    out = []
    default = calibration._LEVELS
    try:
        for load in (False, True):
            for name, kwargs in SETTINGS.items():
                times: dict[int, list[float]] = {1: [], default: []}
                with competing_load() if load else contextlib.nullcontext(0) as count:
                    for _ in range(rounds):
                        plans = {}
                        for levels in times:
                            seconds, plans[levels] = _time(levels, kwargs)
                            times[levels].append(seconds)
                        if plans[1].to_json() != plans[default].to_json():
                            raise SystemExit(f"{name}: the plans differ")
                plain, tree = spread(times[1]), spread(times[default])
                out.append(
                    {"setting": name, "competing_processes": count,
                     "load_average": os.getloadavg()[0], "plain_s": plain, "tree_s": tree,
                     "speedup_median": plain[1] / tree[1]}
                )  # fmt: skip
    finally:
        calibration._LEVELS = default
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = run(args.rounds)
    print("| setting | competing processes | load average | plain s median [min, max] "
          "| tree s median [min, max] | speed-up (medians) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        p, t = r["plain_s"], r["tree_s"]
        print(f"| {r['setting']} | {r['competing_processes']} | {r['load_average']:.1f} | "
              f"{p[1]:.2f} [{p[0]:.2f}, {p[2]:.2f}] | {t[1]:.2f} [{t[0]:.2f}, {t[2]:.2f}] | "
              f"{r['speedup_median']:.2f}x |")  # fmt: skip
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
