"""``objpert report``: a privacy report of a model, pipeline or ledger file for a privacy
officer (HTML or Markdown; docs/report.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from objpert._files import write_atomically
from objpert.cli._common import KEY_ENV, CliError, add_max_bytes_arg, read_key, read_model
from objpert.cli._outputs_check import Output

__all__ = ["add_parser", "cmd_report"]


def _format(args: argparse.Namespace) -> str:
    if args.format is not None:
        return args.format
    if args.out is not None and args.out.lower().endswith((".md", ".markdown")):
        return "md"
    return "html"


def cmd_report(args: argparse.Namespace) -> int:
    from objpert.apps._privacy_report import build_ledger_report, build_report, render

    fmt = _format(args)
    import datetime

    loaded = read_model(args.model, read_key(args.key_file), args.max_bytes, ledgers=True)
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    from objpert.accounting._accountant import PrivacyAccountant

    ledger = isinstance(loaded.model, PrivacyAccountant)
    build = build_ledger_report if ledger else build_report
    report = build(
        args.model, loaded, title=args.title, purpose=args.purpose, curator=args.curator,
        date=date,
    )  # fmt: skip
    text = render(report, fmt)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        write_atomically(args.out, text)  # an old report stays whole on a failure
    except OSError as err:
        raise CliError(f"cannot write {args.out}: {err.strerror or err}") from None
    print(f"objpert: wrote {args.out} ({fmt}; signature: {loaded.status})", file=sys.stderr)
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``report`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
        "report",
        help="a privacy report of a model file: what was released, its certificate, the "
        "privacy profile and the attacker's bound (HTML or Markdown)",
    )
    p.add_argument(
        "model",
        metavar="MODEL.json",
        help="an estimator's, a pipeline's or an accountant's ledger file",
    )
    p.add_argument("--title", default=None, help="the report's title (default: the file)")
    p.add_argument(
        "--purpose", default=None, help="what the model is for, in a sentence, for the reader"
    )
    p.add_argument(
        "--curator", default=None, help="who holds the training data and released the model"
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="write the report to FILE (default: standard output)",
    )
    p.add_argument(
        "--format",
        choices=("html", "md"),
        default=None,
        help="html (one self-contained page) or md (Markdown); default: md when --out "
        "ends in .md, else html",
    )
    key_help = f"verify the model's signature with the key in FILE (default: ${KEY_ENV})"
    p.add_argument("--key-file", default=None, metavar="FILE", help=key_help)
    add_max_bytes_arg(p)
    p.set_defaults(func=cmd_report, outputs=(Output("out", ("model", "key_file")),))
    return p
