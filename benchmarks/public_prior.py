"""A public prior against no prior: held-out accuracy of PrivateLogisticRegression.

Usage: python benchmarks/public_prior.py [--releases R] [--datasets ...] [--epsilons ...]
       [--public-fraction F] [--prior-norms W ...] [--max-rows M]
       [--json benchmarks/public_prior.json]
       python benchmarks/public_prior.py --table benchmarks/public_prior.json

Each dataset (:mod:`objpert.apps.datasets`: public scaling, its public row-norm bound as
data_norm; tv16, breast_cancer, health_insurance, flights) is split once with a fixed
seed: 20% held out for testing, then a *public* part (``--public-fraction`` of the rest,
default 5%) and the *private* rest. A table of more than ``--max-rows`` rows (default
40000: flights' 327346 alone) is first cut to a stratified random subset of that many
rows (the same fixed seed), to keep the run's time down. The prior is
scikit-learn's LogisticRegression (C = 1) fitted non-privately on the public part. At
each epsilon (delta = 1e-6, declared classes, mu="auto", max_iter=5000) the script
reports the test accuracy, mean and standard error over R releases (seeds 0..R-1), of:

- ``prior``: the public model alone (no release);
- ``private``: PrivateLogisticRegression on the private part, no prior (comparator_norm 3,
  the default);
- ``private+prior W``: the same with ``prior=`` the public model and comparator_norm W,
  the norm of the comparator's distance from the prior (one row per ``--prior-norms`` W).

The R releases of one setting are one batched descent
(:func:`objpert.mechanisms._perturbed_gd.release_batch`, the estimator's plan and its
prior in the mechanism's coordinates); release 0 is checked against
``PrivateLogisticRegression(random_state=0).fit`` to 1e-9. With ``--json`` naming an
existing file, the datasets run replace that file's rows of the same datasets and the
other rows are kept (each run's command, datasets and seconds are listed in ``runs``).
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
from objpert.apps.datasets import load
from objpert.estimators import PrivateLogisticRegression
from objpert.estimators._prior import check_public_prior, prior_weights
from objpert.exceptions import TestingSeedWarning
from objpert.mechanisms._perturbed_gd import release_batch

DELTA = 1e-6
DATASETS = ("breast_cancer", "health_insurance", "tv16", "flights")
EPSILONS = (0.1, 0.3, 1.0, 3.0)
PRIOR_NORMS = (0.1, 0.25, 0.5, 3.0)
SPLIT_SEED = 2026
MAX_ROWS = 40000


def _split(X, y, public_fraction):
    X_rest, X_test, y_rest, y_test = train_test_split(
        X, y, test_size=0.2, random_state=SPLIT_SEED, stratify=y
    )
    X_priv, X_pub, y_priv, y_pub = train_test_split(
        X_rest, y_rest, test_size=public_fraction, random_state=SPLIT_SEED, stratify=y_rest
    )
    return X_pub, y_pub, X_priv, y_priv, X_test, y_test


def _accuracy(coef, intercept, X, y):
    return float(np.mean((X @ coef + intercept > 0).astype(int) == y))


def prepared_with_prior(X, y, norm, prior):
    """The binary rows as the mechanism sees them (labels -1/+1, the table's data_norm)
    and the prior in its coordinates (d,), intercept column included (None without one)."""
    prepared = prepare(X, np.where(y == 1, 1.0, -1.0), labels="real", data_norm=norm)
    if prior is None:
        return prepared, None
    w0 = prior_weights(
        check_public_prior(prior), feature_bounds=None, fit_intercept=True,
        intercept_scaling=prepared.intercept_scaling,
    )[0]  # fmt: skip
    return prepared, w0


def _releases(X, y, norm, epsilon, prior, comparator_norm, releases, max_iter=5000):
    """R releases of one setting at step budget max_iter: (test-ready coef (R, p),
    intercept (R,)) and the plan."""
    kw = dict(epsilon=epsilon, delta=DELTA, data_norm=norm, classes=[0, 1], max_iter=max_iter)
    model = PrivateLogisticRegression(
        **kw, comparator_norm=comparator_norm, prior=prior, random_state=0
    ).fit(X, y)
    prepared, w0 = prepared_with_prior(X, y, norm, prior)
    c = prepared.intercept_scaling
    batch = release_batch(prepared.X, prepared.y, model.plan_, releases, rng=0, prior=w0)
    W = batch.weights
    coef, intercept = W[:, :-1], W[:, -1] * c
    gap = max(
        np.abs(coef[0] - model.coef_[0]).max(), abs(intercept[0] - model.intercept_[0])
    )  # fmt: skip
    if not gap <= 1e-9 * (1.0 + np.abs(W).max() * max(1.0, c)):
        raise AssertionError(f"the batched release 0 differs from the estimator's by {gap:g}")
    return coef, intercept, model.plan_


def _summary(values):
    values = np.asarray(values, dtype=float)
    se = float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0
    return {"mean": float(values.mean()), "se": se, "values": values.tolist()}


def run(datasets, epsilons, releases, public_fraction, prior_norms, max_rows=MAX_ROWS):
    rows = []
    for name in datasets:
        ds = load(name)
        X, y = ds.X, ds.y
        if len(y) > max_rows:  # a stratified random subset, the split's fixed seed
            X, _, y, _ = train_test_split(
                X, y, train_size=max_rows, random_state=SPLIT_SEED, stratify=y
            )
        X_pub, y_pub, X_priv, y_priv, X_test, y_test = _split(X, y, public_fraction)
        public = LogisticRegression(C=1.0, max_iter=5000).fit(X_pub, y_pub)
        prior = (public.coef_, public.intercept_)
        prior_acc = _accuracy(public.coef_[0], public.intercept_[0], X_test, y_test)
        info = {
            "dataset": name,
            "n_rows": len(ds.y),
            "n_public": len(y_pub),
            "n_private": len(y_priv),
            "n_test": len(y_test),
            "d": int(ds.X.shape[1]),
            "prior_norm": float(np.linalg.norm(np.append(public.coef_, public.intercept_))),
        }
        for epsilon in epsilons:
            settings = [("private", None, 3.0)] + [
                (f"private+prior W={w:g}", prior, w) for w in prior_norms
            ]
            row = {**info, "epsilon": epsilon, "prior": prior_acc, "methods": {}}
            for label, p, w in settings:
                start = time.perf_counter()
                coef, intercept, plan = _releases(
                    X_priv, y_priv, ds.data_norm, epsilon, p, w, releases
                )
                accs = [_accuracy(coef[r], intercept[r], X_test, y_test) for r in range(releases)]
                row["methods"][label] = {
                    **_summary(accs),
                    "comparator_norm": w,
                    "mu": plan.mu,
                    "sigma": plan.sigma,
                    "iterations": plan.iterations,
                    "seconds": time.perf_counter() - start,
                }
                m = row["methods"][label]
                print(
                    f"{name:17s} eps={epsilon:<4g} {label:22s} {m['mean']:.4f} +- {m['se']:.4f}"
                    f"  (prior {prior_acc:.4f}; mu {plan.mu:.3g}, N {plan.iterations}, "
                    f"{m['seconds']:.1f} s)",
                    flush=True,
                )
            rows.append(row)
    return rows


def table(out):
    """The results as a markdown table: one row per (dataset, epsilon), test accuracy
    mean +- standard error over the releases."""
    rows = out["rows"]
    labels = list(rows[0]["methods"])
    head = ["dataset (public / private rows)", "epsilon", "prior alone", *labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [f"{r['dataset']} ({r['n_public']} / {r['n_private']})", f"{r['epsilon']:g}",
                 f"{r['prior']:.4f}"]  # fmt: skip
        cells += [f"{r['methods'][k]['mean']:.4f} +- {r['methods'][k]['se']:.4f}" for k in labels]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--public-fraction", type=float, default=0.05)
    parser.add_argument("--prior-norms", nargs="+", type=float, default=list(PRIOR_NORMS))
    parser.add_argument("--max-rows", type=int, default=MAX_ROWS)
    parser.add_argument("--json", default=None)
    parser.add_argument("--table", default=None, help="print the table of this JSON file")
    args = parser.parse_args(argv)
    if args.table:
        with open(args.table) as fh:
            print(table(json.load(fh)))
        return
    warnings.filterwarnings("ignore", category=TestingSeedWarning)  # a benchmark
    start = time.perf_counter()
    rows = run(args.datasets, args.epsilons, args.releases, args.public_fraction,
               args.prior_norms, args.max_rows)  # fmt: skip
    command = "python benchmarks/public_prior.py " + " ".join(argv or sys.argv[1:])
    this = {"command": command, "datasets": args.datasets,
            "seconds": time.perf_counter() - start}  # fmt: skip
    out = {
        "python": platform.python_version(),
        "delta": DELTA,
        "releases": args.releases,
        "public_fraction": args.public_fraction,
        "split_seed": SPLIT_SEED,
        "max_rows": args.max_rows,
        "runs": [this],
        "rows": rows,
    }
    if args.json and Path(args.json).exists():  # keep the other datasets' rows
        old = json.loads(Path(args.json).read_text())
        for key in ("delta", "releases", "public_fraction", "split_seed"):
            if old[key] != out[key]:
                raise SystemExit(f"{args.json} has {key}={old[key]!r}, this run {out[key]!r}")
        runs = old.get("runs") or [
            {k: old[k] for k in ("command", "seconds")}
            | {"datasets": list(dict.fromkeys(r["dataset"] for r in old["rows"]))}
        ]
        out["runs"] = [*runs, this]
        rows = [r for r in old["rows"] if r["dataset"] not in args.datasets] + rows
        order = list(dict.fromkeys([*DATASETS, *(r["dataset"] for r in rows)]))
        out["rows"] = sorted(rows, key=lambda r: order.index(r["dataset"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
            fh.write("\n")
    print(table(out))


if __name__ == "__main__":
    main()
