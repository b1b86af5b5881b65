"""Where the tight calibration stops: the knee of its bound on the shapes of the datasets
objpert ships, at the estimators' defaults.

Usage: python benchmarks/knee_table.py [--json out.json]

For each dataset (its public row-norm bound as data_norm, an intercept column, a 75/25
split's training rows, as ``objpert demo`` fits) and epsilon: the plan of
``PrivateLogisticRegression(epsilon, delta=1e-6, mu="auto")`` with max_iter = 5,000
(:func:`objpert.certify._calibration.tight`, empirical objective, W = 3), its knee
(:func:`objpert.certify._knee.knee`): the budget N_k it calibrates at, the bound
B*(max_iter) and what doubling max_iter would take off it, whether the budget binds
(the gain exceeds the knee tolerance times the doubled budget's bound) and whether
``fit`` would warn (the gain exceeds ``NOTABLE_GAIN``). Public constants only: no data
are read but the row counts.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from objpert.certify._budget import NOTABLE_GAIN, ceiling
from objpert.certify._calibration import tight
from objpert.certify._knee import KNEE_TOLERANCE, knee
from objpert.estimators._planning import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER

DELTA = 1e-6
EPSILONS = (0.1, 0.3, 1.0, 3.0)
#: name: (rows, features, data_norm) of the datasets objpert ships (objpert.apps.datasets)
SHAPES = {
    "breast_cancer": (569, 30, math.sqrt(30)),
    "health_insurance": (22272, 21, math.sqrt(11)),
    "tv16": (37591, 25, math.sqrt(18)),
    "flights": (327346, 41, math.sqrt(7)),
}


def rows() -> list[dict]:
    out = []
    for name, (rows_, features, norm) in SHAPES.items():
        n = rows_ - math.ceil(0.25 * rows_)  # the training rows of a 75/25 split
        public = dict(
            n=n, d=features + 1, zeta=math.hypot(norm, norm), delta=DELTA,
            comparator_norm=DEFAULT_COMPARATOR_NORM, objective="empirical",
            max_iter=DEFAULT_MAX_ITER,
        )  # fmt: skip
        for eps in EPSILONS:
            plan = tight("logistic", epsilon=eps, **public)
            found = knee("logistic", epsilon=eps, **public)
            report = ceiling(plan, DEFAULT_MAX_ITER)
            out.append(
                {"dataset": name, "n_train": n, "d": features + 1, "epsilon": eps,
                 "max_iter": DEFAULT_MAX_ITER, "knee_budget": found.budget,
                 "iterations": plan.iterations, "mu": plan.mu, "sigma": plan.sigma,
                 "bound_at_max": found.bound_at_max, "gain_of_doubling": found.gain_at_max,
                 "binds": found.binds, "warns": report.notable,
                 "knee_tolerance": KNEE_TOLERANCE, "notable_gain": NOTABLE_GAIN}
            )  # fmt: skip
    return out


def markdown(table: list[dict]) -> str:
    lines = [
        "| dataset | n_train | epsilon | knee budget | plan N | mu | sigma | B*(5,000) | "
        "2x budget lowers B* by | binds | fit warns |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        lines.append(
            f"| {r['dataset']} | {r['n_train']} | {r['epsilon']:g} | {r['knee_budget']} | "
            f"{r['iterations']} | {r['mu']:.3g} | {r['sigma']:.3g} | {r['bound_at_max']:.3g} | "
            f"{r['gain_of_doubling']:.3f} | {'yes' if r['binds'] else 'no'} | "
            f"{'yes' if r['warns'] else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    table = rows()
    print(markdown(table))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(table, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
