"""``objpert reproduce`` (the papers' printed numbers beside the computed ones; ``qop``:
Figures 1 and 2 of Cortild & Cartis) and ``objpert tables`` (the certificates of
Example 4.8 and the calibration table)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._search import min_iterations
from objpert.cli._common import (
    MAX_POINTS,
    MAX_RUNS,
    POINTS_COST,
    RUNS_COST,
    CliError,
    certificate_payload,
    count,
    plan_payload,
)
from objpert.cli._output import console, emit, fmt, new_table, status, table_type
from objpert.cli._outputs_check import refuse_unwritable_folder

__all__ = ["add_parser", "cmd_reproduce", "cmd_tables"]


def cmd_reproduce(args: argparse.Namespace) -> int:
    if args.paper == "qop":
        return _reproduce_qop(args)
    from objpert.apps import _reproduce as reproduce

    entries = reproduce.all_entries()
    rows = reproduce.mu_comparison()
    payload = {
        "entries": [e.to_dict() for e in entries],
        "mu_comparison": [r.__dict__ for r in rows],
    }
    table = new_table("Watkins & Arora (2026): printed against computed")
    for col in ("section", "quantity", "printed", "computed", "agrees"):
        table.add_column(col, justify="right" if col in ("printed", "computed") else "left")
    for e in entries:
        mark = "yes" if e.matches else "[bold red]NO[/] " + e.note
        table.add_row(e.section, e.quantity, e.printed, fmt(e.computed), mark)
    mu_table = new_table("Section C.4 across mu: n=1e6, d=1e4, sigma/G=5, u=6, target (1, 1e-7)")
    for col in ("mu", "kappa", "Thm 4.1 threshold (7)", "first N, Thm 4.1", "first N, Thm C.13"):
        mu_table.add_column(col, justify="right")
    for r in rows:
        mu_table.add_row(
            fmt(r.mu),
            fmt(r.kappa),
            str(r.threshold_theorem41),
            str(r.first_theorem41),
            str(r.first_c13),
        )
    emit(args, payload, [table, mu_table])
    return 0


def cmd_tables(args: argparse.Namespace) -> int:
    from objpert.apps import _reproduce as reproduce
    from objpert.apps._calibration_tables import calibration_markdown, calibration_table

    pc = reproduce.example_constants()
    sigma = reproduce.SIGMA_OVER_G * pc.G
    certs = [
        theorem41.certify(pc, sigma, reproduce.U, reproduce.N_RUN, 1.0),
        theorem_c13.certify(pc, sigma, reproduce.N_RUN, 1.0, u=reproduce.U),
        min_iterations(pc, sigma, *reproduce.TARGET, u=reproduce.U),
        theorem_c13.certify_limit(pc, sigma, 1.0),
    ]
    cert_table = new_table(
        "Example 4.8 (logistic, n=1e6, d=1e4, mu=0.01, sigma=1e-5, u=6): "
        "certificates at epsilon = 1"
    )
    for col in ("form", "N", "delta", "truncation", "divergence", "certified"):
        cert_table.add_column(col, justify="right")
    for c in certs:
        cert_table.add_row(
            c.form,
            str(c.iterations or "inf"),
            fmt(c.delta),
            fmt(c.truncation_mass),
            fmt(c.divergence_term),
            str(c.certified),
        )
    with status("calibrating (Corollary 4.13 against tight) ..."):
        rows = reproduce.calibration_comparison()
    payload = {
        "certificates": [certificate_payload(c) for c in certs],
        "calibration": [
            {
                "n": r.n,
                "epsilon": r.epsilon,
                "tight": plan_payload(r.tight),
                "corollary413": plan_payload(r.corollary) if r.corollary else None,
            }
            for r in rows
        ],
    }
    if args.markdown:
        print(calibration_markdown(rows))
        return 0
    emit(args, payload, [cert_table, calibration_table(rows, table_type())])
    return 0


def _reproduce_qop(args: argparse.Namespace) -> int:
    from objpert.apps import _reproduce_qop as reproduce_qop

    if args.runs < 2:  # checked before the minutes of Figure 1, not after
        raise CliError(f"--runs must be an integer >= 2; got {args.runs}")
    if args.points < 2:
        raise CliError(f"--points must be an integer >= 2; got {args.points}")
    if not args.out:
        raise CliError("--out must name a folder for the figures and tables")
    refuse_unwritable_folder(args.out, "--out", reproduce_qop.QOP_FILES)  # before the work
    deltas = reproduce_qop.figure1_deltas(args.points)
    with status("reproducing Cortild & Cartis, Figures 1 and 2 ..."):
        result = reproduce_qop.run(args.out, runs=args.runs, deltas=deltas)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
        return 0
    fig2 = result["figure2"]
    table = new_table(
        "QOP (Cortild & Cartis 2026), Figure 2: spread of the empirical risk "
        "across box radii (authors: LOP 3.8e4, LOP-Clip 45, QOP 0.073)"
    )
    for col in ("method", "spread (avg std)", "risk range over kappa"):
        table.add_column(col, justify="right")
    for method, value in fig2["spread"].items():
        lo, hi = fig2["risk_range"][method]
        table.add_row(str(method), fmt(value), f"{fmt(lo)} .. {fmt(hi)}")
    out = console()
    out.print(table)
    out.print(fig2["reference"]["statement"])
    for name in ("figure1", "figure2"):
        out.print(f"{name}: {result[name]['png']}, {result[name]['table']}")
    out.print(f"summary: {result['summary']}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``reproduce`` and ``tables`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
        "reproduce", help="print the paper's numbers beside the computed ones"
    )
    p.add_argument(
        "paper",
        nargs="?",
        choices=("watkins-arora", "qop"),
        default="watkins-arora",
        help="watkins-arora (default) or qop (Cortild & Cartis: Figures 1 and 2)",
    )
    p.add_argument(
        "--out",
        default="objpert-qop",
        metavar="DIR",
        help="where `reproduce qop` writes its PNG and CSV files",
    )
    p.add_argument(
        "--runs",
        type=count("--runs", MAX_RUNS, RUNS_COST),
        default=10,
        help=f"runs per box radius (qop; at most {MAX_RUNS:,})",
    )
    p.add_argument(
        "--points",
        type=count("--points", MAX_POINTS, POINTS_COST),
        default=25,
        help="values of delta per curve of Figure 1, log-spaced in [1e-5, 1e-2] (qop; at most "
        f"{MAX_POINTS:,})",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reproduce)

    t = subparsers.add_parser(
        "tables", help="certificates of Example 4.8 and the calibration table"
    )
    t.add_argument("--json", action="store_true")
    t.add_argument(
        "--markdown", action="store_true", help="print the calibration table of docs/results.md"
    )
    t.set_defaults(func=cmd_tables)
    return p
