"""The joint calibration of K one-vs-rest releases for a shape seen for the first time.

Usage: python benchmarks/joint_calibration.py [--rounds R] [--json FILE]

Times ``objpert.estimators._planning.calibration_for(10, "pld", ...)`` (what
``PrivateLogisticRegression(multi_class="ovr").fit`` calls for 10 classes:
:func:`objpert.certify._multiclass.joint_plan` over the tight calibration) and, for
scale, the binary plan ``plan_for(...)`` at the same target, every calibration cache
cleared before each call (:func:`objpert.apps._bench.common.clear_calibration_caches`), in
interleaved rounds after one untimed round (dp-accounting imported, numba warm), as the
machine is and under one competing CPU-bound process
(:func:`objpert.apps._bench.threads.competing_load`). Shapes: digits (1797 x 64 plus an
intercept column) and 20,000 x 50 plus an intercept, epsilon = 1, delta = 1e-6, rows of
norm <= 1 and an intercept scaling of 1 (zeta = sqrt(2)), the estimators' defaults
otherwise. ``calls`` is the number of plans the joint search calibrated. Wall and this
process's CPU time (``time.process_time``; on a machine shared with other work the CPU
time is the steadier figure) are both reported.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
import warnings

from objpert.apps._bench.common import clear_calibration_caches
from objpert.apps._bench.threads import competing_load
from objpert.estimators import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER
from objpert.estimators._planning import calibration_for, plan_for

SHAPES = {"digits": (1797, 65), "synthetic": (20_000, 51)}
K, EPSILON, DELTA = 10, 1.0, 1e-6


def _args(n: int, d: int) -> tuple:
    return (
        "logistic", None, "tight", n, d, math.sqrt(2.0), EPSILON, DELTA,
        DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER, None,
    )  # fmt: skip


def _time(fn) -> tuple[float, float, int]:
    """(wall seconds, this process's CPU seconds, plans calibrated) of fn from empty caches."""
    clear_calibration_caches()
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu, plan_for.cache_info().misses


def _spread(times: list[float]) -> list[float]:
    return [statistics.median(times), min(times), max(times)]


def measure(rounds: int) -> dict:
    out: dict = {}
    for name, (n, d) in SHAPES.items():
        args = _args(n, d)
        joint, joint_cpu, binary, binary_cpu, calls = [], [], [], [], []
        for r in range(rounds + 1):  # round 0: untimed
            t_joint, c_joint, c = _time(lambda args=args: calibration_for(K, "pld", *args))
            t_bin, c_bin, _ = _time(lambda args=args: plan_for(*args))
            if r:
                joint.append(t_joint)
                joint_cpu.append(c_joint)
                binary.append(t_bin)
                binary_cpu.append(c_bin)
                calls.append(c)
        cal = calibration_for(K, "pld", *args)
        out[name] = {
            "n": n, "d": d, "k": K,
            "joint_seconds": _spread(joint), "joint_cpu_seconds": _spread(joint_cpu),
            "binary_seconds": _spread(binary), "binary_cpu_seconds": _spread(binary_cpu),
            "calls": calls, "sigma": cal.plan.sigma, "epsilon_i": cal.plan.epsilon,
            "iterations": cal.plan.iterations,
        }  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    result: dict = {"rounds": args.rounds, "load_average_before": os.getloadavg()}
    result["quiet"] = measure(args.rounds)
    with competing_load(1):
        result["under load"] = measure(args.rounds)
    result["load_average_after"] = os.getloadavg()
    for cond in ("quiet", "under load"):
        for name, row in result[cond].items():
            j, b = row["joint_seconds"], row["binary_seconds"]
            jc, bc = row["joint_cpu_seconds"], row["binary_cpu_seconds"]
            print(
                f"{cond:10s} {name:9s} K={K}: joint {j[0]:.3f} s [{j[1]:.3f}-{j[2]:.3f}] "
                f"(CPU {jc[0]:.3f} s [{jc[1]:.3f}-{jc[2]:.3f}], {row['calls']} plans); "
                f"binary plan {b[0]:.3f} s [{b[1]:.3f}-{b[2]:.3f}] (CPU {bc[0]:.3f} s); "
                f"sigma {row['sigma']:.4g}, epsilon_i {row['epsilon_i']:.4g}, "
                f"N {row['iterations']}"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
