"""A public prior on the accuracy suite's tables: does the fit with a prior keep at least
the accuracy of the prior alone and of the private fit alone?

Usage: python benchmarks/prior_suite.py [--releases R] [--tables NAME ...]
       [--epsilons E ...] [--prior-norms W ...] [--max-iter N] [--multi-class ovr]
       [--json benchmarks/prior_suite.json]
       python benchmarks/prior_suite.py --table benchmarks/prior_suite.json [more.json ...]

Each table of benchmarks/accuracy_suite.py (its loader, preprocessing and 80/20
stratified split, seed 2026; by default the binary ones) has its training part split once
more, stratified with the same seed: a *public* 5% (at least two rows of each class) and
the *private* rest (as benchmarks/public_prior.py). The prior is scikit-learn's
LogisticRegression (C = 1) fitted non-privately on the public part, one-vs-rest (one
binary model per class, one row each) on a multiclass table. At each epsilon (delta = 1e-6, declared
classes, the table's public data_norm), R releases (seeds 0..R-1; binary: one batched
descent per setting, release 0 checked against the estimator's fit; multiclass: one
estimator fit per seed) of:

- ``private``: PrivateLogisticRegression on the private part, no prior, all defaults
  (multiclass: the multinomial release);
- ``prior``: the same with ``prior=`` the public model and every other setting at its
  default (``comparator_norm="auto"``: with a prior, W = min(3, epsilon) of each release;
  multiclass: the multinomial release centred at the prior's K rows);
- ``prior W=w``: with ``comparator_norm=w`` instead, one per ``--prior-norms`` value
  (default none; 3 is the comparator norm without a prior).

``--max-iter N``: every fit at step budget N instead of the estimators' 5,000.
``--multi-class ovr``: the multiclass fits with a prior one-vs-rest (one release per
class, each at W = min(3, its own epsilon)) instead of the default multinomial release.

Each cell reports the prior alone's accuracy (one fixed model), each method's mean, and
for ``prior`` its difference from the prior alone +- the standard error of its mean and
its paired (same seed) difference from ``private`` +- that difference's standard error.
A cell *misses* when one of these differences is below minus its standard error.
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
from accuracy_suite import (
    DELTA,
    SPLIT_SEED,
    TABLES,
    finish,
    load_table,
    merged,
    paired,
    previous_run,
)
from public_prior import _releases, _summary
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier

from objpert.estimators import PrivateLogisticRegression
from objpert.estimators._planning import (
    DEFAULT_MAX_ITER,
    comparator_norm_for,
    release_comparator_norm,
)
from objpert.exceptions import TestingSeedWarning

EPSILONS = (0.1, 0.3, 1.0, 3.0)
PUBLIC_FRACTION = 0.05
BINARY = tuple(name for name, (_, _, note) in TABLES.items() if note.startswith("binary"))


def _accuracy(coef, intercept, X, y):
    return float(np.mean((X @ coef + intercept > 0).astype(int) == y))


def _multiclass_releases(
    X, y, norm, epsilon, classes, prior, comparator_norm, releases, max_iter, multi_class
):
    """R fits of one multiclass setting (seeds 0..R-1, one estimator fit each): their
    fitted models and the plan of the first fit's first release."""
    models = [
        PrivateLogisticRegression(
            epsilon=epsilon, delta=DELTA, data_norm=norm, classes=classes, max_iter=max_iter,
            comparator_norm=comparator_norm, prior=prior, random_state=seed,
            multi_class=multi_class,
        ).fit(X, y)
        for seed in range(releases)
    ]  # fmt: skip
    plan = models[0].plan_
    return models, (plan[0] if isinstance(plan, list) else plan)


def _public_prior(X_pub, y_pub, classes):
    """scikit-learn's LogisticRegression (C = 1) on the public rows: one binary model, or
    one-vs-rest with one binary model per class (the rows of a one-vs-rest prior)."""
    if len(classes) == 2:
        return LogisticRegression(C=1.0, max_iter=5000).fit(X_pub, y_pub)
    return OneVsRestClassifier(LogisticRegression(C=1.0, max_iter=5000)).fit(X_pub, y_pub)


def public_parts(name):
    """public_split's parts with the public rows themselves: (X_priv, y_priv, X_pub,
    y_pub, X_test, y_test, classes, data_norm, prior, prior's test accuracy, facts)."""
    Xtr, Xte, ytr, yte, classes, norm, n_source = load_table(name)
    public_rows = max(math.ceil(PUBLIC_FRACTION * len(ytr)), 2 * len(classes))
    X_priv, X_pub, y_priv, y_pub = train_test_split(
        Xtr, ytr, test_size=public_rows, random_state=SPLIT_SEED, stratify=ytr
    )
    public = _public_prior(X_pub, y_pub, classes)
    if len(classes) == 2:
        prior = (public.coef_, public.intercept_)
    else:
        parts = public.estimators_
        prior = (np.vstack([e.coef_ for e in parts]), np.concatenate([e.intercept_ for e in parts]))
    info = {"table": name, "n_source": n_source, "n_public": len(y_pub),
            "n_private": len(y_priv), "n_test": len(yte), "d": int(Xtr.shape[1]),
            "prior_norm": float(np.linalg.norm(np.append(*prior)))}  # fmt: skip
    accuracy = float(public.score(Xte, yte))
    return X_priv, y_priv, X_pub, y_pub, Xte, yte, classes, norm, prior, accuracy, info


def public_split(name):
    """A suite table split into its private training rows, its test rows and a public 5%
    of the training rows (at least two of each class), with the public prior fitted on
    those: (X_priv, y_priv, X_test, y_test, classes, data_norm, prior, prior's test
    accuracy, the table's row of facts)."""
    X_priv, y_priv, _, _, *rest = public_parts(name)
    return (X_priv, y_priv, *rest)


def run_table(name, epsilons, releases, prior_norms, max_iter=DEFAULT_MAX_ITER, multi_class="auto"):
    X_priv, y_priv, Xte, yte, classes, norm, prior, prior_acc, info = public_split(name)
    settings = [("private", None, "auto"), ("prior", prior, "auto")]
    settings += [(f"prior W={w:g}", prior, w) for w in prior_norms]
    rows = []
    for eps in epsilons:
        row = {**info, "epsilon": eps, "prior_alone": prior_acc, "methods": {}}
        for label, p, w in settings:
            start = time.perf_counter()
            if len(classes) == 2:
                coef, intercept, plan = _releases(
                    X_priv, y_priv, norm, eps, p, w, releases, max_iter
                )
                accs = [_accuracy(coef[r], intercept[r], Xte, yte) for r in range(releases)]
            else:
                models, plan = _multiclass_releases(
                    X_priv, y_priv, norm, eps, classes, p, w, releases, max_iter,
                    "auto" if p is None else multi_class,
                )  # fmt: skip
                accs = [float(m.score(Xte, yte)) for m in models]
            # a multinomial plan keeps no W: the estimator's (the rule with a prior)
            declared = comparator_norm_for(w, p is not None)
            comparator = getattr(plan, "comparator_norm", release_comparator_norm(declared, eps))
            row["methods"][label] = {
                **_summary(accs), "comparator_norm": comparator,
                "mu": plan.mu, "sigma": plan.sigma, "iterations": plan.iterations,
                "seconds": time.perf_counter() - start,
            }  # fmt: skip
        m = row["methods"]
        alone, private = differences(m["prior"], m["private"], prior_acc)
        row["prior_minus_private"], row["prior_minus_prior_alone"] = private, alone
        rows.append(row)
        print(line(row), flush=True)
    return rows


def differences(method, private, prior_acc):
    """A method's difference from the prior alone (+- its mean's standard error) and its
    paired difference from the private fit alone (+- that difference's standard error)."""
    diff, se = paired(method["values"], private["values"])
    alone = {"mean": method["mean"] - prior_acc, "se": method["se"]}
    return alone, {"mean": diff, "se": se}


def _miss(d):
    """A difference more than one standard error below zero."""
    return d["mean"] < -d["se"] - 1e-12


def line(row) -> str:
    m = row["methods"]
    a, b = row["prior_minus_prior_alone"], row["prior_minus_private"]
    flag = " MISS" if _miss(a) or _miss(b) else ""
    others = " ".join(f"[{k} {v['mean']:.4f}]" for k, v in m.items() if k.startswith("prior W"))
    return (f"{row['table']:16s} eps={row['epsilon']:<4g} prior alone {row['prior_alone']:.4f} "
            f"private {m['private']['mean']:.4f} prior {m['prior']['mean']:.4f} "
            f"(W {m['prior']['comparator_norm']:.3g}, mu {m['prior']['mu']:.3g}; "
            f"{a['mean']:+.4f} +- {a['se']:.4f} vs alone, {b['mean']:+.4f} +- {b['se']:.4f} "
            f"vs private) {others}{flag}")  # fmt: skip


def markdown(out) -> str:
    """One row per (table, epsilon), then the cells that miss; a column per declared W
    (``--prior-norms``) when the rows have them, each mean followed by * when it misses."""
    norms = sorted({k for r in out["rows"] for k in r["methods"] if k.startswith("prior W=")},
                   key=lambda k: float(k.split("=")[1]))  # fmt: skip
    head = ("| table (public / private rows, d) | eps | prior alone | private | "
            "with the prior (W) | minus prior alone | minus private (paired) |")  # fmt: skip
    head += "".join(f" {k.removeprefix('prior ')} |" for k in norms)
    lines = [head, "|" + "---|" * (7 + len(norms))]
    misses = []
    for r in out["rows"]:
        m, a, b = r["methods"], r["prior_minus_prior_alone"], r["prior_minus_private"]
        cells = (
            f"| {r['table']} ({r['n_public']} / {r['n_private']}, {r['d']}) | {r['epsilon']:g} | "
            f"{r['prior_alone']:.4f} | {m['private']['mean']:.4f} | "
            f"{m['prior']['mean']:.4f} ({m['prior']['comparator_norm']:.3g}) | "
            f"{a['mean']:+.4f} +- {a['se']:.4f} | {b['mean']:+.4f} +- {b['se']:.4f} |"
        )
        for k in norms:
            if k not in m:
                cells += " - |"
                continue
            alone, private = differences(m[k], m["private"], r["prior_alone"])
            cells += f" {m[k]['mean']:.4f}{'*' if _miss(alone) or _miss(private) else ''} |"
        lines.append(cells)
        for what, d in (("the prior alone", a), ("the private fit", b)):
            if _miss(d):
                misses.append(f"{r['table']} eps {r['epsilon']:g} below {what} "
                              f"({d['mean']:+.4f} +- {d['se']:.4f})")  # fmt: skip
    lines.append("")
    lines.append(f"cells more than one standard error below the prior alone or the private "
                 f"fit alone: {len(misses)} of {len(out['rows'])}"
                 f"{': ' if misses else ''}{'; '.join(misses)}")  # fmt: skip
    return "\n".join(lines)


def suite_arguments(doc, tables):
    """The arguments every prior benchmark takes: --releases, --tables (of ``tables``),
    --epsilons and --json."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--releases", type=int, default=10)
    parser.add_argument("--tables", nargs="+", default=list(BINARY), choices=list(tables))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--json", default=None)
    return parser


def main(argv=None):
    parser = suite_arguments(__doc__, TABLES)
    parser.add_argument("--prior-norms", nargs="*", type=float, default=[])
    parser.add_argument("--max-iter", type=int, default=DEFAULT_MAX_ITER)
    parser.add_argument("--multi-class", default="auto", choices=["auto", "ovr"])
    parser.add_argument(
        "--table", nargs="+", default=None, help="print the table of these JSON files, in turn"
    )
    args = parser.parse_args(argv)
    if args.table:
        files = [json.loads(Path(f).read_text()) for f in args.table]
        print(markdown({"rows": [r for f in files for r in f["rows"]]}))
        return 0
    warnings.filterwarnings("ignore", category=TestingSeedWarning)
    meta = {"releases": args.releases, "public_fraction": PUBLIC_FRACTION,
            "prior_norms": args.prior_norms}  # fmt: skip
    if args.max_iter != DEFAULT_MAX_ITER:
        meta["max_iter"] = args.max_iter
    if args.multi_class != "auto":
        meta["multi_class"] = args.multi_class
    old = previous_run(args.json, meta)
    start = time.perf_counter()
    rows = [r for name in args.tables for r in run_table(
        name, args.epsilons, args.releases, args.prior_norms, args.max_iter,
        args.multi_class)]  # fmt: skip
    this = {"command": "python benchmarks/prior_suite.py " + " ".join(argv or sys.argv[1:]),
            "tables": args.tables, "seconds": time.perf_counter() - start}  # fmt: skip
    out = {"python": platform.python_version(), "delta": DELTA, **meta,
           "split_seed": SPLIT_SEED}  # fmt: skip
    return finish(merged(out, old, this, rows), args.json, markdown)


if __name__ == "__main__":
    sys.exit(main())
