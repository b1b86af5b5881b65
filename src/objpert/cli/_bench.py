"""``objpert bench``: run the benchmarks of :mod:`objpert.apps._bench`, print one table,
write JSON and markdown.

A missed threshold is printed, never an error: the exit status is 0, 1 if a benchmark
raised (its row says why; the others still run), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from objpert.apps._bench.runner import (
    BENCHMARKS,
    markdown,
    metadata,
    parse_selection,
    resolve_threads,
    run_benchmarks,
    table,
    write_results,
)
from objpert.cli._common import MAX_THREADS, THREADS_COST, count
from objpert.cli._output import console, status, table_type
from objpert.cli._outputs_check import Output

__all__ = ["add_parser", "cmd_bench"]


def cmd_bench(args: argparse.Namespace) -> int:
    selection = parse_selection(args.only)
    threads = resolve_threads(args.threads)
    with status("benchmarks ...") as s:
        results = run_benchmarks(
            selection,
            quick=args.quick,
            threads=threads,
            progress=lambda name: s.update(f"benchmark: {name} ..."),
        )
    command = ["objpert bench", *(["--only", args.only] if args.only else [])]
    command += [*(["--quick"] if args.quick else []), "--threads", str(threads)]
    meta = {**metadata(args.quick, threads), "command": " ".join(command)}
    write_results(results, meta, args.json_file, args.markdown_file)
    if args.markdown:
        print(markdown(results))
    else:
        size = "quick sizes" if args.quick else "full sizes"
        title = f"objpert bench ({size}, {threads} thread(s))"
        console(width=200).print(table(results, title, table_type()))
    failed = [r.name for r in results if r.passed is False]
    if failed:
        print(f"{len(failed)} threshold(s) not met: {', '.join(failed)}")
    broken = [r.name for r in results if r.note.startswith("error")]
    if broken:
        print(f"objpert: error: benchmark(s) raised: {', '.join(broken)}", file=sys.stderr)
        return 1
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bench`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
        "bench", help="benchmarks: speed against baselines, with pass/fail thresholds"
    )
    p.add_argument("--only", default=None, help=f"comma-separated: {','.join(BENCHMARKS)}")
    p.add_argument("--quick", action="store_true", help="small sizes (CI and tests)")
    p.add_argument(
        "--threads",
        type=count("--threads", MAX_THREADS, THREADS_COST),
        default=None,
        help="the threads of the whole run: each side of every comparison runs on this many "
        f"cores (default: all available; at most {MAX_THREADS:,})",
    )
    p.add_argument(
        "--json-file", default=None, metavar="FILE", help="also write the results here as JSON"
    )
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    p.add_argument("--markdown-file", default=None, metavar="FILE", help="write it here")
    p.set_defaults(func=cmd_bench, outputs=(Output("json_file"), Output("markdown_file")))
    return p
