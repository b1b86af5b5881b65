"""The finite-iterate Watkins & Arora release against the exact minimiser (LOP) at its
tightest certificate, at the comparison's constants.

For each target epsilon (delta = 1e-6) on the comparison's quick dataset
(health_insurance, its public split and data_norm): the noise sigma / G of the Watkins &
Arora plan, of LOP certified by the exact-minimiser privacy profile (Redberg, Koskela &
Wang 2023; the planners' default) and by Kifer et al.'s closed form (same ridge mu, the
Watkins & Arora plan's); then ``--seeds`` releases of each, interleaved round by round in
one process with BLAS pinned to one thread (threadpoolctl), reporting test accuracy
(mean +- standard error), iterations and wall time per release (median, min, max), and
the same timings again while a competing CPU load this script starts runs beside it.

    python benchmarks/exact_lop.py [--seeds 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from objpert._data import prepare
from objpert.apps._compare.methods import mechanism_plan
from objpert.apps._demo import split
from objpert.apps.datasets import load
from objpert.certify._neighbours import replace_one_sensitivity
from objpert.exceptions import TestingSeedWarning
from objpert.mechanisms import _registry as registry

DELTA = 1e-6
EPSILONS = (1.0, 0.1)
DATASET = "health_insurance"


def _burn(stop) -> None:  # the competing load: a busy loop until told to stop
    x = 0
    while not stop.is_set():
        x = (x * 1103515245 + 12345) % 2147483648


def plans(n: int, d: int, zeta: float, eps: float) -> dict:
    """The three plans at one target: Watkins & Arora, LOP (tightest: the profile here),
    LOP with Kifer's closed form at the same mu."""
    wa = mechanism_plan("watkins_arora", n, d, zeta, eps, DELTA)
    lop = mechanism_plan("lop", n, d, zeta, eps, DELTA)
    kifer = registry.get("lop").plan(
        loss="logistic", n=n, d=d, zeta=zeta, epsilon=eps, delta=DELTA, mu=wa.mu,
        accountant="kifer",
    )  # fmt: skip
    return {"watkins_arora": wa, "lop (profile)": lop, "lop (kifer)": kifer}


def measure(P, Pte, the_plans: dict, seeds: int, load_procs: int) -> dict:
    """Interleaved rounds: in round s every method releases once with seed s."""
    out = {k: {"acc": [], "sec": [], "iters": []} for k in the_plans}
    stop = multiprocessing.Event()
    procs = [multiprocessing.Process(target=_burn, args=(stop,)) for _ in range(load_procs)]
    for p in procs:
        p.start()
    try:
        with warnings.catch_warnings(), threadpool_limits(limits=1, user_api="blas"):
            warnings.simplefilter("ignore", TestingSeedWarning)  # seeded on purpose
            for s in range(seeds):
                for name, plan in the_plans.items():
                    mech = registry.get(name.split(" ")[0])
                    t0 = time.perf_counter()
                    rel = mech.release(P.X, P.y, plan, np.random.default_rng(1000 * s + 17))
                    out[name]["sec"].append(time.perf_counter() - t0)
                    w = rel.weights
                    out[name]["acc"].append(float(np.mean(np.sign(Pte.X @ w) == Pte.y)))
                    out[name]["iters"].append(int(rel.iterations or 0))
    finally:
        stop.set()
        for p in procs:
            p.join()
    return out


def summary(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    ds = load(DATASET)
    Xtr, Xte, ytr, yte = split(ds)
    P = prepare(Xtr, ytr, data_norm=ds.data_norm)
    Pte = prepare(Xte, yte, data_norm=ds.data_norm)
    G = replace_one_sensitivity(1.0 * P.zeta) / P.n  # logistic L1 = 1, mean form
    rows = []
    for eps in EPSILONS:
        the_plans = plans(P.n, P.d, P.zeta, eps)
        quiet = measure(P, Pte, the_plans, args.seeds, 0)
        loaded = measure(P, Pte, the_plans, max(3, args.seeds // 4), 1)
        for name, plan in the_plans.items():
            acc = np.asarray(quiet[name]["acc"])
            accountant = getattr(plan, "calibration", "")
            rows.append({
                "epsilon": eps, "method": name, "sigma_over_G": plan.sigma / G, "mu": plan.mu,
                "accountant": accountant, "delta_certified": plan.certificate.delta,
                "accuracy_mean": float(acc.mean()),
                "accuracy_se": float(acc.std(ddof=1) / np.sqrt(len(acc))),
                "iterations_median": statistics.median(quiet[name]["iters"]),
                "seconds": summary(quiet[name]["sec"]),
                "seconds_under_load": summary(loaded[name]["sec"]),
            })  # fmt: skip
    print(f"{DATASET}: n = {P.n}, d = {P.d}, zeta = {P.zeta:.4g}, delta = {DELTA:g}, "
          f"{args.seeds} releases each (BLAS 1 thread)")  # fmt: skip
    print("| epsilon | method | sigma/G | test accuracy | iterations | s/release median "
          "(min..max) | under load |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        m, lo, hi = r["seconds"]
        ml, lol, hil = r["seconds_under_load"]
        print(
            f"| {r['epsilon']:g} | {r['method']} | {r['sigma_over_G']:.3f} | "
            f"{r['accuracy_mean']:.4f} +- {r['accuracy_se']:.4f} | {r['iterations_median']:g} | "
            f"{m:.4f} ({lo:.4f}..{hi:.4f}) | {ml:.4f} ({lol:.4f}..{hil:.4f}) |"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"dataset": DATASET, "n": P.n, "d": P.d, "zeta": P.zeta, "rows": rows}, fh,
                      indent=2)  # fmt: skip


if __name__ == "__main__":
    main()
