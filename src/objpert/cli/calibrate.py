"""``objpert calibrate``: choose sigma, mu, eta, N and u for a target (epsilon, delta)."""

from __future__ import annotations

import argparse
from typing import Any

from objpert.certify.calibration import METHODS, calibrate
from objpert.cli.common import add_problem_args, loss_params, plan_payload
from objpert.cli.output import emit, kv_table

__all__ = ["add_parser", "cmd_calibrate"]


def cmd_calibrate(args: argparse.Namespace) -> int:
    kwargs = dict(
        n=args.n,
        d=args.d,
        zeta=args.zeta,
        epsilon=args.epsilon,
        delta=args.delta,
        comparator_norm=args.radius,
        delta_sample=args.delta_sample,
        **loss_params(args),
    )
    if args.method == "tight":
        kwargs["max_iterations"] = args.max_iterations
    plan = calibrate(args.loss, method=args.method, **kwargs)
    payload = plan_payload(plan)
    emit(args, payload, [kv_table(f"Plan ({plan.method})", payload)])
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``calibrate`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser("calibrate", help="choose sigma, mu, eta, N, u for a target budget")
    add_problem_args(p, mu=False)
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--radius", type=float, default=1.0, help="comparator norm bound W")
    p.add_argument("--delta-sample", type=float, default=0.01, help="delta_S of Theorem 4.7")
    p.add_argument("--method", choices=METHODS, default="tight")
    p.add_argument("--max-iterations", type=int, default=100_000)
    p.set_defaults(func=cmd_calibrate)
    return p
