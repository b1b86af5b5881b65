"""``objpert certify``: (epsilon, delta) of the Watkins & Arora release for given public
constants, by Theorem 4.1, Theorem C.13 or its limit form; the first N that certifies a
target; or the certificate of a saved model, re-derived from its plans exactly as they were
calibrated (``--model``)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from objpert._validation import check_positive
from objpert.accounting._certificate import FORMS
from objpert.accounting._pipeline import any_seeded, file_certificate
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.certify._constants import problem
from objpert.certify._search import MAX_ITERATIONS, min_iterations
from objpert.certify._truncation import TRUNCATIONS
from objpert.cli._common import (
    CERTIFY_ITERATIONS_COST,
    DELTA,
    MAX_CERTIFY_ITERATIONS,
    MAX_SEARCH_ITERATIONS,
    SEARCH_ITERATIONS_COST,
    CliError,
    add_max_bytes_arg,
    add_problem_args,
    certificate_payload,
    count,
    final_estimator,
    loss_params,
    read_key,
)
from objpert.cli._output import console, emit, kv_table
from objpert.cli._outputs_check import Output
from objpert.cli._verify import with_pipeline

__all__ = ["ULPS", "add_parser", "certify_model", "cmd_certify", "target_reasons"]

#: A delta within this many ulps above a target is reported as over it by rounding of the
#: constants typed on the command line (the comparison itself stays exact).
ULPS = 4


def target_reasons(delta: float, target: float) -> list[str]:
    """Why ``delta`` misses ``target`` (empty when delta <= target): exact comparison."""
    if delta <= target:
        return []
    reason = f"delta = {delta!r} is above the target delta {target!r}"
    gap, step = 0, target
    while step < delta and gap <= ULPS:
        step, gap = math.nextafter(step, math.inf), gap + 1
    if step >= delta and gap <= ULPS:
        reason += (
            f" by {gap} ulp(s), a rounding of the constants given here; certify a saved "
            "model exactly as it was calibrated with certify --model MODEL.json"
        )
    return [reason]


def _print_reasons(args: argparse.Namespace, reasons: list[str]) -> None:
    if not args.json:
        out = console()
        for r in reasons:
            out.print(f"not certified: {r}")


def certify_model(args: argparse.Namespace) -> int:
    """Certify a saved model: every plan re-derived (:func:`rederive_plan`, the form and
    truncation it was calibrated with) and composed as the model was; the model's release
    compared exactly with its own target (epsilon, delta), and what the file released (a
    search's or a pipeline's total, when more than the model) with the caller's
    ``--epsilon``/``--delta``."""
    if args.plot:
        raise CliError(
            "--plot draws the profiles of public constants; with --model use `objpert report "
            "MODEL.json`, whose privacy profile is the model's"
        )
    from objpert.accounting._composition import ComposedCertificate
    from objpert.accounting._unit import UnitCertificate, group_certificate
    from objpert.certify._calibration import rederive_plan
    from objpert.certify._plan import WatkinsAroraPlan
    from objpert.cli._predict import load_model
    from objpert.estimators._unit import unit_certificate

    loaded = load_model(args.model, read_key(args.key_file), max_bytes=args.max_bytes)
    model = final_estimator(loaded)
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    certs = [  # a peer plan's certificate is recomputed from its public fields
        plan.recertify() if plan.mechanism in ("multinomial", "amp") else rederive_plan(plan)
        for plan in plans
    ]
    search = model.certificate_ if hasattr(model, "release_certificate_") else None
    stored = model.release_certificate_ if search is not None else model.certificate_
    unit = stored if isinstance(stored, UnitCertificate) else None
    if unit is not None:  # a guarantee per person: the release's, then the unit's
        stored = unit.release if unit.route == "direct" else plans[0].certificate
    if isinstance(stored, ComposedCertificate):  # recomposed as stored, from re-derived ones
        data = {**stored.to_dict(), "certificates": [c.to_dict() for c in certs]}
        total = type(stored).from_dict(data)
    else:
        total = certs[0]
    params = model.get_params(deep=False)
    if unit is not None and unit.route == "group" and not isinstance(plans[0], WatkinsAroraPlan):
        # a multinomial or AMP release planned for one row: group privacy at the model's
        # epsilon of the re-derived one-row certificate
        total = group_certificate(certs[0], unit.rows, float(params["epsilon"]), unit=unit.unit)
    elif unit is not None:  # recomputed from the re-derived plans, both routes
        total = unit_certificate(total, plans, unit.rows, unit.unit)
    caller = (  # a target of the caller's, for what the file released
        None if args.epsilon is None else check_positive("--epsilon", args.epsilon),
        None if args.delta is None else float(args.delta),
    )
    own = (float(params["epsilon"]), float(params["delta"]))  # the model's own release's
    headed = search is not None or file_certificate(loaded) is not None  # by more than it
    if headed:  # the caller's target is for the headline; the release keeps its own
        target_eps, target_delta = caller
    else:
        target_eps = own[0] if caller[0] is None else caller[0]
        target_delta = own[1] if caller[1] is None else caller[1]
    reasons = [r for c in certs for r in c.reasons]
    reasons += _above(total.epsilon, total.delta, *(own if headed else (target_eps, target_delta)))
    payload = {
        "model": args.model,
        "certified": bool(total.certified) and not reasons,
        "epsilon": total.epsilon,
        "delta": total.delta,
        "target_epsilon": target_eps,
        "target_delta": target_delta,
        "releases": len(certs),
        "form": certs[0].form,
        "truncation": certs[0].truncation,
        "iterations": certs[0].iterations,
        "sigma": certs[0].sigma,
        "composition": getattr(total, "method", "single"),
        "privacy_unit": total.to_dict().get("privacy_unit", "one row"),
        "reasons": reasons,
        "not_public": list(stored.not_public),
        "certificates": [certificate_payload(c) for c in certs],
    }
    if search is not None:  # chosen by a private search: its guarantee is what was spent
        payload["release_epsilon"], payload["release_delta"] = total.epsilon, total.delta
        payload["epsilon"], payload["delta"] = search.epsilon, search.delta
        payload["composition"] = search.method
        payload["certified"] = payload["certified"] and bool(search.certified)
    payload = with_pipeline(payload, loaded)
    if headed:  # the headline is what the file released: the caller's target is for it
        payload["release_target_epsilon"], payload["release_target_delta"] = own
        headline = _above(payload["epsilon"], payload["delta"], target_eps, target_delta)
        reasons += headline
        payload["certified"] = payload["certified"] and not headline
    payload["seeded"] = bool(getattr(model, "seeded_", False)) or any_seeded(loaded)
    emit(args, payload, [kv_table(f"Certificate of {args.model} (re-derived)", payload)])
    _print_reasons(args, reasons)
    if payload["seeded"] and not args.json:
        console().print(
            "testing seed: the noise is reproducible by anyone who knows the seed; "
            "this model is not private (do not publish it)"
        )
    return 0


def _above(
    eps: float, delta: float, target_eps: float | None, target_delta: float | None
) -> list[str]:
    """Why (eps, delta) misses the target; a part of the target that is None is not
    compared."""
    out = []
    if target_eps is not None and eps > target_eps:
        out.append(f"epsilon = {eps!r} is above the target {target_eps!r}")
    return out + ([] if target_delta is None else target_reasons(delta, target_delta))


def cmd_certify(args: argparse.Namespace) -> int:
    if args.model is not None:
        return certify_model(args)
    missing = [f for f in ("n", "d", "mu", "sigma") if getattr(args, f) is None]
    if missing:
        flags = ", ".join("--" + f for f in missing)
        raise CliError(
            f"the public constants {flags} are required (or certify a saved model with "
            "--model MODEL.json)"
        )
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
        if args.delta is None or args.epsilon is None:
            raise CliError("--min-iterations needs --epsilon and --delta")
        cert = min_iterations(
            pc,
            sigma,
            args.epsilon,
            args.delta,
            u=u,
            form=form,
            truncation=args.truncation,
            n_max=args.max_iter,
        )
    else:
        if form != "limit" and args.iterations is None:
            raise CliError("--iterations is required (or use --min-iterations)")
        epsilon = args.epsilon
        if epsilon is None:
            if args.delta is None:
                raise CliError("give --epsilon, or --delta to compute epsilon")
            epsilon = _epsilon_for(pc, args, args.delta)
            if not math.isfinite(epsilon):
                raise CliError(
                    f"no epsilon reaches delta = {args.delta:g} "
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
    reasons = list(cert.reasons)
    if args.delta is not None:
        payload["target_delta"] = args.delta
        if cert.certified:
            reasons += target_reasons(cert.delta, args.delta)
        payload["certified"] = bool(cert.certified) and not reasons
        payload["reasons"] = reasons
    if args.plot:
        from objpert.apps._plots import plot_privacy_profiles

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
    _print_reasons(args, reasons)
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
    return theorem_c13.limit_epsilon_for_delta(pc, args.sigma, target)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``certify`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser("certify", help="certify (epsilon, delta) for given public constants")
    p.add_argument(
        "--model",
        default=None,
        metavar="MODEL.json",
        help="certify a saved model: its plans re-derived with the form and truncation they "
        "were calibrated with, against the model's own target (the other constants are then "
        "read from the file)",
    )
    p.add_argument(
        "--key-file", default=None, metavar="FILE", help="verify the --model file's signature"
    )
    add_max_bytes_arg(p)
    add_problem_args(p, required=False)
    p.add_argument("--sigma", type=float, default=None, help="noise scale of z")
    p.add_argument(
        "--u", type=float, default=6.0, help="truncation parameter u >= 0 (default: 6.0)"
    )
    p.add_argument(
        "--iterations",
        type=count("--iterations", MAX_CERTIFY_ITERATIONS, CERTIFY_ITERATIONS_COST),
        default=None,
        help="number of GD steps N (at most 2^53)",
    )
    p.add_argument(
        "--epsilon", type=float, default=None, help="epsilon to certify (or give --delta)"
    )
    p.add_argument(
        "--form",
        choices=FORMS,
        default="theorem41",
        help="theorem41 (Theorem 4.1), c13 (Theorem C.13, what train calibrates with) or "
        "limit (its N -> infinity form) (default: 'theorem41')",
    )
    p.add_argument(
        "--truncation",
        choices=TRUNCATIONS,
        default="paper",
        help="the truncation bound of the noise (default: 'paper')",
    )
    p.add_argument(
        "--delta",
        type=DELTA,
        default=None,
        help="the target delta: certified only if delta <= this (exact comparison); without "
        "--epsilon, the epsilon that reaches it is computed; with --model, default: the "
        "model's own delta",
    )
    p.add_argument(
        "--min-iterations",
        action="store_true",
        help="find the first N certifying (--epsilon, --delta)",
    )
    p.add_argument(
        "--max-iter",
        type=count("--max-iter", MAX_SEARCH_ITERATIONS, SEARCH_ITERATIONS_COST),
        default=MAX_ITERATIONS,
        help=f"the largest N --min-iterations tries (default: {MAX_ITERATIONS})",
    )
    p.add_argument(
        "--plot", default=None, metavar="FILE.png", help="plot the privacy profiles here"
    )
    p.set_defaults(func=cmd_certify, outputs=(Output("plot", plot=True),))
    return p
