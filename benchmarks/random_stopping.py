"""Random stopping against split selection: held-out accuracy of PrivateGridSearch.

Usage: python benchmarks/random_stopping.py [--rounds R] [--rows N] [--max-iter M]
       [--grid comparator_norm|mu|mu_large] [--score-fraction F] [--datasets ...]
       [--epsilons ...] [--json benchmarks/random_stopping.json]
       python benchmarks/random_stopping.py --table benchmarks/random_stopping.json

Each dataset (:mod:`objpert.apps.datasets`: public scaling, its public row-norm bound as
data_norm) is subsampled to at most N rows (a fixed, data-independent seed), then in each
round split 70/30 (stratified, the round's seed). On the training part,
``PrivateGridSearch`` chooses the ridge of a PrivateLogisticRegression (delta = 1e-6,
declared classes) over a 4-point grid, once with ``method="split"``
(each candidate on a fifth of the rows) and once with ``method="random_stopping"`` (every
run on all the rows, default law (logarithmic, ``--law``), runs_mean = 16 and
score_fraction = 0.1), both at the same total
(epsilon, delta). Reported: the test accuracy of the chosen model, mean and standard error
over the rounds, or, if the search could not be certified in some round (a grid point
whose mu cannot meet its budget on its rows within max_iter: UnreachableTargetError),
the number of such rounds.

Three grids (``--grid``): ``comparator_norm`` (default) sets W in {1, 3, 10, 30} with
mu="auto", which chooses the ridge mu for W from public constants (every grid point is
then certifiable); ``mu`` sets the ridge itself, mu in {0.1, 0.3, 1, 3} (a small mu
needs many steps: use --max-iter 3000), ``mu_large`` in {0.3, 1, 3, 10}.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from objpert.apps.datasets import load
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import UnreachableTargetError
from objpert.model_selection import PrivateGridSearch
from objpert.model_selection._random_stopping import LAWS

DELTA = 1e-6
GRIDS = {
    "mu": {"mu": [0.1, 0.3, 1.0, 3.0]},
    "mu_large": {"mu": [0.3, 1.0, 3.0, 10.0]},
    "comparator_norm": {"comparator_norm": [1.0, 3.0, 10.0, 30.0]},
}
DATASETS = ("tv16", "breast_cancer", "health_insurance", "flights")
EPSILONS = (0.1, 0.3, 1.0, 3.0)
METHODS = ("split", "random_stopping")


def _subsample(X, y, rows):
    if len(X) <= rows:
        return X, y
    keep = np.sort(np.random.default_rng(12345).choice(len(X), rows, replace=False))
    return X[keep], y[keep]


def _search(method, grid, epsilon, norm, max_iter, seed, fraction, law):
    # The candidates' noise comes from OS entropy (random_state=None): split's candidates
    # would otherwise all share the estimator's seed, hence one noise vector, and lose the
    # independent draws it selects among. Random stopping seeds each run from the search's
    # seed. So split's cells vary between runs of this script by about their standard error.
    base = PrivateLogisticRegression(
        epsilon=epsilon, delta=DELTA, data_norm=norm, classes=[0, 1], max_iter=max_iter
    )
    extra = {"score_fraction": fraction, "law": law} if method == "random_stopping" else {}
    return PrivateGridSearch(
        estimator=base, param_grid=grid, method=method, random_state=seed, **extra
    )


def _summary(values):
    if not values:
        return None, None
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0
    return mean, se


def table(path):
    """The markdown table of a JSON written by this script (the docs' tables)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    cells = {}
    for r in data["results"]:
        if r["accuracy_mean"] is None:
            cell = f"unreachable ({r['rounds_unreachable']}/{data['rounds']})"
        else:
            cell = f"{r['accuracy_mean']:.3f} +- {r['accuracy_se']:.3f}"
        cells[(r["dataset"], r["n_train"], r["epsilon"], r["method"])] = cell
    eps = sorted({k[2] for k in cells})
    head = "| table (train rows) | method | " + " | ".join(f"eps = {e:g}" for e in eps) + " |"
    lines = [head, "|" + " --- |" * (2 + len(eps))]
    for name, n in dict.fromkeys((k[0], k[1]) for k in cells):
        for method in METHODS:
            row = [cells.get((name, n, e, method), "") for e in eps]
            lines.append(f"| {name} ({n}) | {method} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--rows", type=int, default=4000)
    ap.add_argument("--max-iter", type=int, default=1000)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    ap.add_argument("--grid", choices=sorted(GRIDS), default="comparator_norm")
    ap.add_argument("--score-fraction", type=float, default=None)
    ap.add_argument("--law", choices=LAWS, default=None, help="the run count's law")
    ap.add_argument("--json", default=None)
    ap.add_argument("--table", metavar="JSON", help="print the table of a JSON and exit")
    args = ap.parse_args(argv)
    if args.table:
        print(table(args.table))
        return None
    warnings.simplefilter("ignore")  # testing seeds (every search here is seeded)
    rows = []
    start = time.perf_counter()
    for name in args.datasets:
        ds = load(name)
        X, y = _subsample(ds.X, ds.y, args.rows)
        for eps in args.epsilons:
            acc = {m: [] for m in METHODS}
            failed = dict.fromkeys(METHODS, 0)
            for r in range(args.rounds):
                Xtr, Xte, ytr, yte = train_test_split(
                    X, y, test_size=0.3, stratify=y, random_state=r
                )
                for method in METHODS:  # interleaved: both methods in every round
                    seed = 1000 * r + 7
                    grid = GRIDS[args.grid]
                    gs = _search(
                        method, grid, eps, ds.data_norm, args.max_iter, seed,
                        args.score_fraction, args.law,
                    )  # fmt: skip
                    try:
                        gs.fit(Xtr, ytr)
                    except UnreachableTargetError:
                        failed[method] += 1
                        continue
                    acc[method].append(float(gs.score(Xte, yte)))
            for method in METHODS:  # a cell with any uncertified round reports no mean:
                # random stopping fails only in rounds that draw an unreachable grid point,
                # so the certified rounds alone would be a biased sample
                mean, se = _summary(acc[method]) if not failed[method] else (None, None)
                rows.append(
                    {
                        "dataset": name,
                        "n_train": len(X) - math.ceil(0.3 * len(X)),  # as sklearn splits
                        "epsilon": eps,
                        "method": method,
                        "accuracy_mean": mean,
                        "accuracy_se": se,
                        "rounds_certified": len(acc[method]),
                        "rounds_unreachable": failed[method],
                    }
                )
                cell = (
                    f"unreachable in {failed[method]} of {args.rounds} rounds"
                    if mean is None
                    else f"{mean:.3f} +- {se:.3f}"
                )
                print(f"{name:17s} eps={eps:<4g} {method:16s} {cell}", flush=True)
    out = {
        "command": "python benchmarks/random_stopping.py " + " ".join(argv or sys.argv[1:]),
        "delta": DELTA,
        "grid": GRIDS[args.grid],
        "rounds": args.rounds,
        "rows": args.rows,
        "max_iter": args.max_iter,
        "score_fraction": args.score_fraction,
        "law": args.law or LAWS[0],
        "seconds": round(time.perf_counter() - start, 1),
        "results": rows,
    }
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
            fh.write("\n")
    return out


if __name__ == "__main__":
    main()
