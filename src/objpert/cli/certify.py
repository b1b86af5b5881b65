"""``objpert certify``: (epsilon, delta) of the Watkins & Arora release for given public
constants, by Theorem 4.1, Theorem C.13 or its limit form; or the first N that certifies a
target."""

from __future__ import annotations

import argparse
import math
from typing import Any

from objpert.certify import theorem41, theorem_c13
from objpert.certify.certificate import FORMS
from objpert.certify.constants import problem
from objpert.certify.search import MAX_ITERATIONS, min_iterations
from objpert.certify.truncation import TRUNCATIONS
from objpert.cli.common import CliError, add_problem_args, certificate_payload, loss_params
from objpert.cli.output import emit, kv_table

__all__ = ["add_parser", "cmd_certify"]


def cmd_certify(args: argparse.Namespace) -> int:
    pc = problem(
        args.loss,
        n=args.n,
        d=args.d,
        zeta=args.zeta,
        mu=args.mu,
        eta=args.eta,
        **loss_params(args),
    )
    form, sigma, u = args.form, args.sigma, args.u
    if args.min_iterations:
        if form == "limit":
            raise CliError("--min-iterations needs --form theorem41 or c13")
        if args.target_delta is None or args.epsilon is None:
            raise CliError("--min-iterations needs --epsilon and --target-delta")
        cert = min_iterations(
            pc,
            sigma,
            args.epsilon,
            args.target_delta,
            u=u,
            form=form,
            truncation=args.truncation,
            n_max=args.max_iterations,
        )
    else:
        if form != "limit" and args.iterations is None:
            raise CliError("--iterations is required (or use --min-iterations)")
        epsilon = args.epsilon
        if epsilon is None:
            if args.target_delta is None:
                raise CliError("give --epsilon, or --target-delta to compute epsilon")
            epsilon = _epsilon_for(pc, args, args.target_delta)
            if not math.isfinite(epsilon):
                raise CliError(
                    f"no epsilon reaches delta = {args.target_delta:g} "
                    f"with the {form} form at these constants"
                )
        if form == "theorem41":
            cert = theorem41.certify(pc, sigma, u, args.iterations, epsilon, args.truncation)
        elif form == "c13":
            cert = theorem_c13.certify(
                pc, sigma, args.iterations, epsilon, u=u, truncation=args.truncation
            )
        else:
            cert = theorem_c13.certify_limit(pc, sigma, epsilon)
    payload = certificate_payload(cert)
    if args.target_delta is not None:
        payload["target_delta"] = args.target_delta
        payload["certified"] = bool(cert.certified and cert.delta <= args.target_delta)
    if args.plot:
        from objpert.apps.plots import plot_privacy_profiles

        payload["plot"] = plot_privacy_profiles(
            pc,
            sigma,
            u,
            cert.iterations or args.iterations or 1000,
            args.plot,
            epsilon=cert.epsilon,
            truncation=args.truncation,
        )
    title = f"Certificate ({form}) for {pc.loss}, n={pc.n}, d={pc.d}"
    emit(args, payload, [kv_table(title, payload)])
    return 0


def _epsilon_for(pc, args, target: float) -> float:
    if args.form == "theorem41":
        return float(
            theorem41.epsilon_for_delta(
                pc, args.sigma, args.u, args.iterations, target, args.truncation
            )
        )
    if args.form == "c13":
        r, r_outer = theorem_c13.paper_radii(pc, args.sigma, args.u)
        return float(
            theorem_c13.epsilon_for_delta(
                pc, args.sigma, r, r_outer, args.iterations, target, args.truncation
            )
        )
    return theorem_c13.limit_s(pc, args.sigma) + theorem41.slack_for_divergence(
        pc, args.sigma, target
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``certify`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser("certify", help="certify (epsilon, delta) for given public constants")
    add_problem_args(p)
    p.add_argument("--sigma", type=float, required=True, help="noise scale of z")
    p.add_argument("--u", type=float, default=6.0, help="truncation parameter u >= 0")
    p.add_argument("--iterations", type=int, default=None, help="number of GD steps N")
    p.add_argument("--epsilon", type=float, default=None)
    p.add_argument("--form", choices=FORMS, default="theorem41")
    p.add_argument("--truncation", choices=TRUNCATIONS, default="paper")
    p.add_argument("--target-delta", type=float, default=None)
    p.add_argument(
        "--min-iterations",
        action="store_true",
        help="find the first N certifying (--epsilon, --target-delta)",
    )
    p.add_argument("--max-iterations", type=int, default=MAX_ITERATIONS)
    p.add_argument("--plot", default=None, metavar="FILE.png")
    p.set_defaults(func=cmd_certify)
    return p
