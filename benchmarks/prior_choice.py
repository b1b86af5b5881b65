"""Two data-driven ways to use a public prior, against the prior alone and the private fit
alone: can a private choice keep the fit at least as accurate as both?

Usage: python benchmarks/prior_choice.py [--releases R] [--tables NAME ...]
       [--epsilons E ...] [--share F] [--json benchmarks/prior_choice.json]
       python benchmarks/prior_choice.py --table benchmarks/prior_choice.json

The binary tables, split, public 5% and prior of benchmarks/prior_suite.py. At each
epsilon (delta = 1e-6, declared classes, the table's public data_norm), R releases (seeds
0..R-1, paired by seed) of:

- ``private``: the default fit without a prior, the whole epsilon (prior_suite's
  ``private``);
- ``choose``: the default fit without a prior at (1 - F) epsilon, then the exponential
  mechanism (McSherry & Talwar 2007; ``objpert.mechanisms._exponential``) at F epsilon
  picks one of the mixes lambda w + (1 - lambda) w_pub, lambda in {0, 1/4, 1/2, 3/4, 1},
  by the number of private rows each classifies correctly (sensitivity 1 under
  replace-one). The mixes are post-processing of the released fit and the public prior,
  so the pair is (epsilon, delta)-DP by basic composition;
- ``choose centred``: the same from the default fit with the prior (ridge centred at it);
- ``adaptive W``: Laplace noise at F epsilon / 2 each on the gradient norm
  ||grad L_S(w_pub)|| (sensitivity 2 L1 zeta / n) and the Hessian trace
  tr H = (1/n) sum_i l''(<x_i, w_pub>) ||x_i||^2 (sensitivity L2 zeta^2 / n) at the prior,
  L1 = 1 and L2 = 1/4 for the logistic loss; G = (the norm's value less one Laplace scale,
  at least 0)^2 and H = the trace's value plus one scale. The fit with the prior at
  (1 - F) epsilon then takes the largest W of min(3, (1 - F) epsilon) 2^j (j = 0..8) whose
  plan's ridge is at least sigma^2 H / G, the ridge that minimises the quadratic model of
  docs/priors.md ("Why W should grow with epsilon"), and min(3, (1 - F) epsilon) when none
  is. The pair is (epsilon, delta)-DP by basic composition.

Each cell reports the prior alone's accuracy, each method's mean and, for the three
data-driven methods, their paired difference from ``private`` and their difference from
the prior alone, each +- its standard error; a cell misses when either is below minus its
standard error (the test of benchmarks/prior_suite.py).
"""

from __future__ import annotations

import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from accuracy_suite import DELTA, SPLIT_SEED, finish
from prior_suite import (
    BINARY,
    _accuracy,
    _miss,
    differences,
    public_split,
    suite_arguments,
)
from public_prior import _releases, _summary, prepared_with_prior

from objpert.estimators._planning import DEFAULT_MAX_ITER, plan_for
from objpert.exceptions import TestingSeedWarning
from objpert.mechanisms._exponential import exponential_mechanism

MIXES = (0.0, 0.25, 0.5, 0.75, 1.0)
SHARE = 0.1
DOUBLINGS = 9
METHODS = ("choose", "choose centred", "adaptive W")


def _mixed(coef, intercept, prior, X, y, epsilon, seed):
    """Test-ready (coef, intercept) of the mix the exponential mechanism picks."""
    w_pub = np.append(prior[0].ravel(), prior[1])
    w = np.append(coef, intercept)
    mixes = [lam * w + (1.0 - lam) * w_pub for lam in MIXES]
    correct = [float(np.sum((X @ m[:-1] + m[-1] > 0).astype(int) == y)) for m in mixes]
    chosen = mixes[exponential_mechanism(correct, epsilon, 1.0, rng=seed)]
    return chosen[:-1], chosen[-1]


def _statistics(X, y, norm, prior):
    """The prepared rows' (gradient norm, Hessian trace) of the logistic loss at the prior,
    zeta and the prepared shape (internal coordinates, intercept column included)."""
    prepared, w0 = prepared_with_prior(X, y, norm, prior)
    M, s = prepared.X, prepared.y
    q = 1.0 / (1.0 + np.exp(s * (M @ w0)))  # -l'(margin)
    gradient = float(np.linalg.norm(M.T @ (s * q)) / len(s))
    trace = float(np.mean(q * (1.0 - q) * np.sum(M * M, axis=1)))
    return gradient, trace, float(prepared.zeta), M.shape


def _adaptive_norms(stats, epsilon, share, releases):
    """Each release's W (``adaptive W``): the Laplace statistics at share * epsilon, then
    the largest W of the doubling grid whose plan's ridge is at least sigma^2 H / G."""
    gradient, trace, zeta, (n, d) = stats
    fit_eps = (1.0 - share) * epsilon
    floor = min(3.0, fit_eps)
    grid = [floor * 2.0**j for j in range(DOUBLINGS)]
    plans = [plan_for("logistic", None, "tight", n, d, zeta, fit_eps, DELTA, w,
                      DEFAULT_MAX_ITER, None) for w in grid]  # fmt: skip
    b_g = 2.0 * zeta / (n * share * epsilon / 2.0)
    b_h = 0.25 * zeta**2 / (n * share * epsilon / 2.0)
    norms = []
    for r in range(releases):
        rng = np.random.default_rng(10_000 + r)
        G = max(0.0, gradient + rng.laplace(0.0, b_g) - b_g) ** 2
        H = trace + rng.laplace(0.0, b_h) + b_h
        fits = [w for w, p in zip(grid, plans, strict=True) if G > 0 and p.mu * G >= p.sigma**2 * H]
        norms.append(max(fits, default=floor))
    return norms


def run_table(name, epsilons, releases, share):
    X_priv, y_priv, Xte, yte, classes, norm, prior, prior_acc, info = public_split(name)
    if len(classes) != 2:
        raise SystemExit(f"{name} has {len(classes)} classes; the choice suite is binary")
    stats = _statistics(X_priv, y_priv, norm, prior)
    rows = []
    for eps in epsilons:
        start = time.perf_counter()
        row = {**info, "epsilon": eps, "prior_alone": prior_acc, "methods": {}}
        coef, intercept, _ = _releases(X_priv, y_priv, norm, eps, None, "auto", releases)
        accs = [_accuracy(coef[r], intercept[r], Xte, yte) for r in range(releases)]
        row["methods"]["private"] = _summary(accs)
        fit_eps = (1.0 - share) * eps
        for label, p in (("choose", None), ("choose centred", prior)):
            coef, intercept, _ = _releases(X_priv, y_priv, norm, fit_eps, p, "auto", releases)
            accs = []
            for r in range(releases):
                c, b = _mixed(coef[r], intercept[r], prior, X_priv, y_priv, share * eps, r)
                accs.append(_accuracy(c, b, Xte, yte))
            row["methods"][label] = _summary(accs)
        norms = _adaptive_norms(stats, eps, share, releases)
        accs = [0.0] * releases
        for w in sorted(set(norms)):
            coef, intercept, _ = _releases(X_priv, y_priv, norm, fit_eps, prior, w, releases)
            for r in range(releases):
                if norms[r] == w:
                    accs[r] = _accuracy(coef[r], intercept[r], Xte, yte)
        row["methods"]["adaptive W"] = {**_summary(accs), "norms": norms}
        rows.append(closed(row, METHODS, start))
    return rows


def closed(row, methods, start):
    """A cell's row with each method's differences from the prior alone and from the
    private fit (paired), its seconds since ``start``; printed."""
    for label in methods:
        m = row["methods"][label]
        alone, private = differences(m, row["methods"]["private"], row["prior_alone"])
        m["minus_private"], m["minus_prior_alone"] = private, alone
    row["seconds"] = time.perf_counter() - start
    print(markdown_row(row, methods), flush=True)
    return row


def markdown_row(r, methods=METHODS) -> str:
    """One cell's row: the prior alone, the private fit and each method's mean with its
    differences from the prior alone and the private fit ((miss) when one is below minus
    its standard error)."""
    m = r["methods"]
    cells = [f"{r['table']} ({r['n_private']}, {r['d']})", f"{r['epsilon']:g}",
             f"{r['prior_alone']:.4f}", f"{m['private']['mean']:.4f}"]  # fmt: skip
    for label in methods:
        a, b = m[label]["minus_prior_alone"], m[label]["minus_private"]
        flag = " (miss)" if _miss(a) or _miss(b) else ""
        cells.append(f"{m[label]['mean']:.4f} ({a['mean']:+.4f}, {b['mean']:+.4f}){flag}")
    return "| " + " | ".join(cells) + " |"


def method_table(out, methods) -> str:
    """Every cell's row, then each method's count of cells that miss."""
    head = "| table (private rows, d) | eps | prior alone | private | " + " | ".join(methods)
    lines = [head + " |", "|" + "---|" * (4 + len(methods))]
    lines += [markdown_row(r, methods) for r in out["rows"]]
    lines.append("")
    for label in methods:
        diffs = [(r["methods"][label]["minus_prior_alone"], r["methods"][label]["minus_private"])
                 for r in out["rows"]]  # fmt: skip
        either = sum(_miss(a) or _miss(b) for a, b in diffs)
        lines.append(f"{label}: {either} of {len(diffs)} cells miss "
                     f"({sum(_miss(a) for a, _ in diffs)} below the prior alone, "
                     f"{sum(_miss(b) for _, b in diffs)} below the private fit)")  # fmt: skip
    return "\n".join(lines)


def binary_benchmark(argv, doc, script, methods, run, add_arguments=None, meta=None):
    """The command line of a binary prior benchmark: --table prints a JSON file's table;
    otherwise ``run(name, args)`` gives each table's rows, written with ``meta(args)``
    to --json and printed."""
    parser = suite_arguments(doc, BINARY)
    if add_arguments is not None:
        add_arguments(parser)
    parser.add_argument("--table", default=None, help="print the table of this JSON file")
    args = parser.parse_args(argv)
    if args.table:
        print(method_table(json.loads(Path(args.table).read_text()), methods))
        return 0
    warnings.filterwarnings("ignore", category=TestingSeedWarning)
    start = time.perf_counter()
    rows = [r for name in args.tables for r in run(name, args)]
    out = {"python": platform.python_version(), "delta": DELTA, "split_seed": SPLIT_SEED,
           "releases": args.releases, **({} if meta is None else meta(args)),
           "command": f"python benchmarks/{script} " + " ".join(argv or sys.argv[1:]),
           "seconds": time.perf_counter() - start, "rows": rows}  # fmt: skip
    return finish(out, args.json, lambda o: method_table(o, methods))


def main(argv=None):
    return binary_benchmark(
        argv, __doc__, "prior_choice.py", METHODS,
        lambda name, a: run_table(name, a.epsilons, a.releases, a.share),
        lambda parser: parser.add_argument("--share", type=float, default=SHARE),
        lambda a: {"share": a.share, "mixes": list(MIXES)},
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
