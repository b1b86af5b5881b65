"""The iteration budget: test accuracy, noise and fit time at max_iter from 2,500 to
40,000 on the datasets objpert ships (docs/pipeline.md has the figures measured).

Usage: python benchmarks/iteration_budget.py [--rounds R] [--epsilon E] [--datasets ...]
       [--json out.json]

Each dataset (:mod:`objpert.apps.datasets`: features scaled by public ranges, its public
row-norm bound as data_norm) is split 70/30 (stratified, fixed seed); for each budget a
PrivateLogisticRegression (delta = 1e-6, declared classes, mu="auto") is fitted in R
interleaved rounds in one process (budget after budget, round after round; testing seeds).
Reported: the plan (sigma, mu, N, whether N = max_iter), what doubling the budget
would take off the calibration's bound and whether ``fit`` warns
(:func:`objpert.certify._budget.ceiling`), the test accuracy (median,
min, max), the fit time (median, min, max of the rounds after the first, BLAS on one thread
with threadpoolctl around the timed work) and, for the smallest and largest budget, one
fit under a competing CPU-bound process started here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from objpert.apps._bench.common import timed_fit
from objpert.apps._bench.threads import competing_load
from objpert.apps.datasets import load
from objpert.certify._budget import ceiling
from objpert.estimators import PrivateLogisticRegression

DELTA = 1e-6
BUDGETS = (2500, 5000, 10000, 20000, 40000)
DATASETS = ("breast_cancer", "health_insurance", "tv16")


def _fit(budget, epsilon, seed, data, norm):
    Xtr, Xte, ytr, yte = data
    est = PrivateLogisticRegression(
        epsilon=epsilon, delta=DELTA, data_norm=norm, classes=[0, 1],
        max_iter=budget, random_state=seed,
    )  # fmt: skip
    return timed_fit(est, Xtr, ytr, Xte, yte)


def _spread(values: list[float]) -> list[float]:
    return [statistics.median(values), min(values), max(values)]


def run(rounds: int, epsilon: float, datasets: tuple[str, ...], out=None) -> list[dict]:
    """The rows of every dataset; each dataset's table printed to ``out`` when done."""
    rows = []
    for name in datasets:
        done = len(rows)
        ds = load(name)
        data = train_test_split(ds.X, ds.y, test_size=0.3, stratify=ds.y, random_state=0)
        base = LogisticRegression(max_iter=5000).fit(data[0], data[2]).score(data[1], data[3])
        acc = {b: [] for b in BUDGETS}
        secs = {b: [] for b in BUDGETS}
        last = {}
        for r in range(rounds):  # interleaved: every budget once per round
            for b in BUDGETS:
                est, a, s = _fit(b, epsilon, 100 * r + 1, data, ds.data_norm)
                acc[b].append(a)
                if r > 0 or rounds == 1:
                    secs[b].append(s)
                last[b] = est
        with competing_load(1):  # one CPU-bound process started here
            loaded = {
                b: _fit(b, epsilon, 7, data, ds.data_norm)[2] for b in (BUDGETS[0], BUDGETS[-1])
            }
        for b in BUDGETS:
            plan = last[b].plan_
            report = ceiling(plan, b)
            rows.append({
                "dataset": name, "n_train": len(data[2]), "d": ds.X.shape[1],
                "max_iter": b, "iterations": plan.iterations,
                "at_ceiling": report.at_ceiling, "sigma": plan.sigma, "mu": plan.mu,
                "bound_gain_of_double_budget": report.bound_now - report.bound_with_double_budget,
                "warns": report.notable,
                "accuracy": _spread(acc[b]), "fit_seconds": _spread(secs[b]),
                "fit_seconds_under_load": loaded.get(b), "non_private": base,
                "epsilon": epsilon, "delta": DELTA, "rounds": rounds,
            })  # fmt: skip
        if out is not None:
            print(markdown(rows[done:]), file=out, flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    out = [
        "| dataset | max_iter | N | sigma | mu | 2x budget lowers the bound by | "
        "fit warns | test accuracy median [min, max] | fit s median [min, max] | "
        "s under load | non-private |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        a, s = r["accuracy"], r["fit_seconds"]
        load_s = "" if r["fit_seconds_under_load"] is None else f"{r['fit_seconds_under_load']:.2f}"
        out.append(
            f"| {r['dataset']} | {r['max_iter']} | {r['iterations']} | {r['sigma']:.3g} | "
            f"{r['mu']:.3g} | {r['bound_gain_of_double_budget']:.3f} | "
            f"{'yes' if r['warns'] else 'no'} | "
            f"{a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}] | {s[0]:.2f} [{s[1]:.2f}, {s[2]:.2f}] | "
            f"{load_s} | {r['non_private']:.3f} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = run(args.rounds, args.epsilon, tuple(args.datasets), out=sys.stdout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
