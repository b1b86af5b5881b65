"""``objpert demo``: private logistic regression on real data, against non-private."""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from objpert.cli._common import (
    CliError,
    add_sweep_args,
    names,
    positive_count,
    sweep_epsilons,
    thread_limit,
    warn_lines,
)
from objpert.cli._output import console, new_table, progress
from objpert.cli._outputs_check import Output

__all__ = ["add_parser", "cmd_demo"]

_COLUMNS = (
    "dataset",
    "n_train",
    "epsilon",
    "test accuracy",
    "non-private",
    "gap",
    "majority",
    "N",
    "sigma",
    "mu",
    "s/fit",
)


def cmd_demo(args: argparse.Namespace) -> int:
    from objpert.apps import _demo as demo

    datasets = names(args.datasets, "--datasets")
    eps = sweep_epsilons(args.epsilons)
    seeds = positive_count(args.seeds, "--seeds")
    if args.seed is not None and args.seed < 0:
        raise CliError(f"--seed must be a non-negative integer; got {args.seed}")
    total = len(datasets) * len(eps) * seeds
    with (
        warnings.catch_warnings(record=True) as caught,
        progress("private fits", total, disable=args.json) as advance,
        thread_limit(args.threads),
    ):
        warnings.simplefilter("default")
        rows = demo.run(datasets, eps, seeds, args.delta, args.seed, progress=advance)
    unique = {str(w.message): w for w in caught}  # each notice once, after the progress bar
    warn_lines(unique.values())
    path = demo.plot(rows, args.plot) if args.plot else None
    if args.json:
        print(json.dumps({"rows": [r.to_dict() for r in rows], "plot": path}, indent=2))
        return 0
    if args.markdown:
        print(demo.markdown(rows))
        return 0
    table = new_table(
        f"Private logistic regression (Watkins & Arora release), delta = "
        f"{args.delta:g}, {args.seeds} releases per epsilon"
    )
    for col in _COLUMNS:
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            r.dataset,
            str(r.n_train),
            f"{r.epsilon:g}",
            f"{r.accuracy_mean:.4f} +- {r.accuracy_std:.4f}",
            f"{r.nonprivate_accuracy:.4f}",
            f"{100 * r.gap:.2f} pts",
            f"{r.majority_rate:.4f}",
            str(r.iterations),
            f"{r.sigma:.3g}",
            f"{r.mu:.3g}",
            f"{r.seconds:.2f}",
        )
    out = console()
    out.print(table)
    if path:
        out.print(f"accuracy against epsilon: {path}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``demo`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
        "demo", help="private logistic regression on real data, against non-private"
    )
    p.add_argument(
        "--datasets",
        default="tv16,breast_cancer",
        help="comma-separated: tv16, breast_cancer (default: %(default)s)",
    )
    add_sweep_args(p)
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="reproducible noise (testing only; default: OS entropy)",
    )
    p.add_argument(
        "--plot",
        default="objpert-demo.png",
        metavar="FILE.png",
        help="accuracy against epsilon (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.set_defaults(func=cmd_demo, outputs=(Output("plot", plot=True),))
    return p
