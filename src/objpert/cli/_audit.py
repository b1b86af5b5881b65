"""``objpert audit``: attack a mechanism on a neighbouring pair and, for the Watkins & Arora
release, measure the exact pairwise privacy profile, against the certificate.

    objpert audit --mechanism {watkins_arora,lop,lop_clip,amp,output_perturbation,noisy_gd,qop}
                  --pair {canonical,worst,random:SEED} [--epsilon E --delta D --draws B
                  --samples K --max-rows-per-unit K --seed S] [--plot FILE.png] [--json]

``--mechanism`` takes the names of :mod:`objpert.mechanisms._registry`. The attack
(Jagielski et al. 2020; Nasr et al. 2021) gives a lower bound on epsilon at the certified
delta with Clopper-Pearson (1934) intervals; see :mod:`objpert.audit._attacks` and
:mod:`objpert.audit._tables`. Errors are one line on stderr with exit code 2 (the caller,
:func:`objpert.cli.main`, prints :class:`~objpert.exceptions.ObjpertError`).
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from objpert.audit._attacks import parse_pair
from objpert.audit._tables import (
    DEFAULT_DELTA,
    DEFAULT_DRAWS,
    DEFAULT_EPSILON,
    DEFAULT_SAMPLES,
    AuditReport,
    plot_audit,
    run_audit,
)
from objpert.cli._common import DRAWS_COST, MAX_DRAWS, MAX_SAMPLES, SAMPLES_COST, count
from objpert.cli._output import console, emit, new_table
from objpert.cli._outputs_check import Output
from objpert.exceptions import ParameterError
from objpert.mechanisms import _registry as registry

__all__ = ["add_parser", "cmd_audit", "report_tables"]


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
    if args.rows < 1:
        raise ParameterError(f"--max-rows-per-unit must be a positive integer; got {args.rows}")
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
        rows=args.rows,
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
    p.add_argument("--mechanism", required=True, choices=registry.names())
    p.add_argument(
        "--pair",
        default="canonical",
        help="canonical (default), worst (W&A worst-pair search: minutes) or random:SEED",
    )
    p.add_argument("--epsilon", type=float, default=DEFAULT_EPSILON, help="target epsilon")
    p.add_argument("--delta", type=float, default=DEFAULT_DELTA, help="target delta")
    p.add_argument(
        "--draws",
        type=count("--draws", MAX_DRAWS, DRAWS_COST),
        default=DEFAULT_DRAWS,
        help=f"releases per dataset for the attack (default: %(default)s; at most {MAX_DRAWS:,})",
    )
    p.add_argument(
        "--samples",
        type=count("--samples", MAX_SAMPLES, SAMPLES_COST),
        default=DEFAULT_SAMPLES,
        help="noise samples per direction for the exact W&A profile (default: %(default)s; at "
        f"most {MAX_SAMPLES:,})",
    )
    p.add_argument(
        "--max-rows-per-unit",
        dest="rows",
        type=int,
        default=1,
        metavar="K",
        help="audit the guarantee for one person of up to K rows: the pair's differing row "
        "becomes the person's K rows (default: %(default)s, one row)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed everything (default: OS entropy)")
    p.add_argument("--plot", default=None, metavar="FILE.png")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_audit, outputs=(Output("plot", plot=True),))
    return p


# ---------------------------------------------------------------- tables


def _num(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


def report_tables(report: AuditReport) -> list[Any]:
    """The tables of a report (rich, or plain text without rich): the certificate against
    the attack, and the exact pairwise profile (W&A) with its looseness certified /
    measured."""
    a = report.attack
    pct = f"{100 * a.confidence:g}%"
    t = new_table(
        title=f"Audit of {report.mechanism} on the {report.pair.name} pair "
        f"(n = {report.pair.n}, d = {report.pair.d}): attack with {a.draws} releases per dataset",
        header_style="bold",
    )
    t.add_column("quantity")
    t.add_column("value", justify="right")
    rows = {
        "certified epsilon": _num(a.epsilon_certified),
        "certified delta": _num(a.delta),
        f"attack: epsilon lower bound ({pct})": _num(a.epsilon_lower),
        "attack: statistic": a.statistic,
        "attack: false positives (held out)": f"{a.false_positives} / {a.negatives}",
        "attack: false negatives (held out)": f"{a.false_negatives} / {a.positives}",
        "attack: FPR, FNR upper bounds": f"{_num(a.fpr_upper)}, {_num(a.fnr_upper)}",
        "flagged (lower bound > certified)": "[bold red]YES[/]" if a.flagged else "no",
    }
    for k, v in rows.items():
        t.add_row(k, v)
    tables = [t]
    p = report.profile
    if p is not None:
        pt = new_table(
            title=f"Exact pairwise profile (eq. 6), {p.samples} samples per direction, "
            f"{pct} simultaneous bounds",
            header_style="bold",
        )
        for col in ("epsilon", "certified delta", "pair delta", "lower", "upper", "looseness"):
            pt.add_column(col, justify="right")
        for i, eps in enumerate(p.epsilons):
            pt.add_row(
                _num(eps),
                _num(p.certified[i]),
                _num(p.measured[i]),
                _num(max(p.lower[i], p.lower_reverse[i])),
                _num(max(p.upper[i], p.upper_reverse[i])),
                _num(p.looseness[i]),
            )
        tables.append(pt)
    j = report.jacobian
    if j is not None:
        jt = new_table(
            title=f"Jacobian of z -> w_N on S (Theorems A.12/A.13), {j.samples} points in "
            f"the ball ||z|| <= {_num(j.radius)}",
            header_style="bold",
        )
        jt.add_column("quantity")
        jt.add_column("value", justify="right")
        jt.add_row("alpha-bar (eq. 47)", _num(j.alpha_bar))
        jt.add_row("min sigma_min(J_N)  (>= alpha-bar)", _num(j.min_sigma_min))
        jt.add_row("max lambda_max(sym J_N)  (<= -alpha-bar)", _num(j.max_sym_eigenvalue))
        jt.add_row("eq. (5) vs finite differences", _num(j.fd_max_error))
        jt.add_row("violations", "; ".join(j.violations) or "none")
        tables.append(jt)
    return tables
