"""``objpert compare``: the registered mechanisms and the baselines side by side on real
data. ``--methods`` takes the registry's names and the baselines ``nonprivate`` and
``diffprivlib``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from objpert._files import write_atomically
from objpert._jsonable import to_json_value
from objpert.cli._common import (
    MAX_WORKERS,
    WORKERS_COST,
    CliError,
    add_sweep_args,
    count,
    names,
    positive_count,
    sweep_epsilons,
    thread_limit,
)
from objpert.cli._output import progress
from objpert.cli._outputs_check import Output
from objpert.mechanisms import _registry as registry

#: What ``--out`` (a folder) receives.
COMPARE_FILES = ("compare.json", "compare.md", "compare.png")

__all__ = ["add_parser", "cmd_compare", "parse_methods"]


def parse_methods(text: str | None) -> tuple[str, ...]:
    """``--methods``: None -> every method; else comma-separated registry names and
    baselines."""
    from objpert.apps import _compare as compare

    if text is None:
        return compare.DEFAULT_METHODS
    methods = tuple(m.strip() for m in text.split(",") if m.strip())
    choices = ", ".join(compare.DEFAULT_METHODS)
    if not methods:
        raise CliError(f"--methods lists no method; choose from {choices}")
    unknown = [m for m in methods if m not in compare.DEFAULT_METHODS]
    if unknown:
        raise CliError(f"unknown methods {unknown}; choose from {choices}")
    return tuple(dict.fromkeys(methods))


def cmd_compare(args: argparse.Namespace) -> int:
    from objpert.apps import _compare as compare

    if args.quick:  # a stated smaller setting: fewer datasets and epsilons
        q = compare.QUICK
        args.datasets, args.seeds = ",".join(q["datasets"]), q["seeds"]
        args.epsilons = ",".join(f"{e:g}" for e in q["epsilons"])
    datasets = names(args.datasets, "--datasets")
    eps = sweep_epsilons(args.epsilons)
    seeds = positive_count(args.seeds, "--seeds")
    methods = parse_methods(args.methods)
    workers = None if args.workers is None else positive_count(args.workers, "--workers")
    total = len(datasets) * len(eps) * seeds * len(methods)
    with progress("comparison", total, disable=args.json) as advance, thread_limit(args.threads):
        rows, meta = compare.run(
            datasets, eps, args.delta, seeds, methods, progress=advance, workers=workers
        )
    command = "objpert " + " ".join(sys.argv[1:])
    payload = {"rows": [r.to_dict() for r in rows], "meta": meta, "command": command}
    text = compare.report(rows, meta, command)
    if args.quick:
        quick = (
            f"Quick setting (--quick): {args.datasets}, epsilons {args.epsilons}, {seeds} seeds."
        )
        text = quick + "\n\n" + text
    if args.out:
        out = Path(args.out)
        json_file, md_file, png_file = (out / name for name in COMPARE_FILES)
        write_atomically(json_file, _json(payload))
        write_atomically(md_file, text)
        payload["plot"] = compare.plot(rows, str(png_file))
    if args.json:
        print(_json(payload))
    else:
        print(text, end="")
    return 0


def _json(payload: dict) -> str:
    """JSON without NaN or Infinity (neither is JSON): null stands for them."""
    return json.dumps(to_json_value(payload), indent=2, allow_nan=False)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``compare`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
        "compare", help="the private training methods side by side on real data"
    )
    p.add_argument(
        "--datasets",
        default="tv16,health_insurance",
        help="comma-separated datasets: tv16, health_insurance, breast_cancer "
        "(default: %(default)s)",
    )
    add_sweep_args(p)
    p.add_argument(
        "--methods",
        default=None,
        help="comma-separated registered mechanisms ("
        + ", ".join(registry.names())
        + ") and baselines (nonprivate, diffprivlib, theta_ref); default: all",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the quick setting: health_insurance, epsilons 0.3,3, 10 seeds "
        "(replaces --datasets, --epsilons and --seeds)",
    )
    p.add_argument(
        "--workers",
        type=count("--workers", MAX_WORKERS, WORKERS_COST),
        default=None,
        help="worker processes for the cells (default: one per core it may use; 1: this process "
        "only); the results do not depend on it",
    )
    p.add_argument("--out", default=None, metavar="DIR", help="write table, JSON and PNG here")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_compare, outputs=(Output("out", files=COMPARE_FILES),))
    return p
