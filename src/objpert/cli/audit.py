"""``objpert audit``: attack a mechanism on a neighbouring pair and, for the Watkins & Arora
release, measure the exact pairwise privacy profile, against the certificate.

    objpert audit --mechanism {watkins_arora,lop,lop_clip,amp,output_perturbation,noisy_gd,qop}
                  --pair {canonical,worst,random:SEED} [--epsilon E --delta D --draws B
                  --samples K --seed S] [--plot FILE.png] [--json]

``--mechanism`` takes the names of :mod:`objpert.mechanisms.registry`; a former name (``wa``,
``lop-clip``, ``output``, ``noisy-gd``) is translated with a deprecation warning. The attack
(Jagielski et al. 2020; Nasr et al. 2021) gives a lower bound on epsilon at the certified
delta with Clopper-Pearson (1934) intervals; see :mod:`objpert.audit.attacks` and
:mod:`objpert.audit.report`. Errors are one line on stderr with exit code 2 (the caller,
:func:`objpert.cli.main`, prints :class:`~objpert.errors.ObjpertError`).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from objpert.audit.attacks import parse_pair
from objpert.audit.report import (
    DEFAULT_DELTA,
    DEFAULT_DRAWS,
    DEFAULT_EPSILON,
    DEFAULT_SAMPLES,
    plot_audit,
    report_tables,
    run_audit,
)
from objpert.cli.common import translate
from objpert.cli.output import console, emit
from objpert.errors import ParameterError
from objpert.mechanisms import registry

__all__ = ["add_parser", "cmd_audit", "mechanism_name"]


def mechanism_name(value: str) -> str:
    """``--mechanism``: a registry name as given; a former name translated (it warns).
    Anything else is left for argparse's choices to refuse."""
    if value in registry.ALIASES:
        return translate(lambda name: registry.get(name).name, value)
    return value


def _check(args: argparse.Namespace) -> None:
    """Refuse bad arguments before any work, one reason each."""
    parse_pair(args.pair)
    if not (math.isfinite(args.epsilon) and args.epsilon > 0):
        raise ParameterError(f"--epsilon must be a positive number; got {args.epsilon!r}")
    if not 0.0 < args.delta < 1.0:
        raise ParameterError(f"--delta must lie in (0, 1); got {args.delta!r}")
    if args.draws < 4:
        raise ParameterError(f"--draws must be at least 4 (releases per dataset); got {args.draws}")
    if args.samples <= 0:
        raise ParameterError(f"--samples must be positive; got {args.samples}")
    if args.seed is not None and args.seed < 0:
        raise ParameterError(f"--seed must be a non-negative integer; got {args.seed}")


def cmd_audit(args: argparse.Namespace) -> int:
    _check(args)
    report = run_audit(
        args.mechanism,
        args.pair,
        epsilon=args.epsilon,
        delta=args.delta,
        draws=args.draws,
        samples=max(args.samples, 2),
        rng=args.seed,
    )
    payload: dict[str, Any] = report.to_dict()
    if args.plot:
        payload["plot"] = plot_audit(report, args.plot)
    emit(args, payload, report_tables(report))
    if args.plot and not args.json:
        console().print(f"figure: {payload['plot']}")
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``audit`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser(
        "audit",
        help="attack a mechanism on a neighbouring pair: a lower bound on epsilon vs certified",
    )
    p.add_argument("--mechanism", required=True, type=mechanism_name, choices=registry.names())
    p.add_argument(
        "--pair",
        default="canonical",
        help="canonical (default), worst (W&A worst-pair search: minutes) or random:SEED",
    )
    p.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON, help="target epsilon")
    p.add_argument("--delta", type=float, default=DEFAULT_DELTA, help="target delta")
    p.add_argument(
        "--draws", type=int, default=DEFAULT_DRAWS, help="releases per dataset for the attack"
    )
    p.add_argument(
        "--samples",
        type=int,
        default=DEFAULT_SAMPLES,
        help="noise samples per direction for the exact W&A profile",
    )
    p.add_argument("--seed", type=int, default=None, help="seed everything (default: OS entropy)")
    p.add_argument("--plot", default=None, metavar="FILE.png")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_audit)
    return p
