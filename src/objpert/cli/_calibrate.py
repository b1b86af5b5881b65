"""``objpert calibrate``: choose sigma, mu, eta, N and u for a target (epsilon, delta).

By default the plan is the one ``objpert train`` and the estimators calibrate for the same
public constants (:func:`objpert.estimators._planning.calibration_for`: the tight calibration of the
empirical objective, comparators of norm <= 3, at most 5000 steps); ``--objective
population``, ``--calibration corollary413`` and the other flags choose other plans. The
flags that are estimator parameters carry the names ``objpert train`` gives them
(``--mu``, ``--calibration``, ``--comparator-norm``, ``--max-iter``, ``--composition``).
"""

from __future__ import annotations

import argparse
from typing import Any

from objpert.certify._calibration import CALIBRATIONS, OBJECTIVES, calibrate
from objpert.certify._multiclass import COMPOSITIONS
from objpert.cli._common import (
    MAX_PLAN_ITERATIONS,
    MAX_RELEASES,
    PLAN_ITERATIONS_COST,
    RELEASES_COST,
    CliError,
    add_problem_args,
    count,
    loss_params,
    plan_payload,
    positive_count,
)
from objpert.cli._output import emit, kv_table

__all__ = ["DEFAULT_DELTA_SAMPLE", "add_parser", "cmd_calibrate"]

DEFAULT_DELTA_SAMPLE = 0.01  # delta_S of Theorem 4.7, as in the estimators' plans


def _mu(text: str) -> float | None:
    if text == "auto":
        return None
    try:
        return float(text)
    except ValueError:
        raise CliError(f"--mu must be a positive number or 'auto'; got {text!r}") from None


def cmd_calibrate(args: argparse.Namespace) -> int:
    from objpert.accounting import PublicConstants, Target
    from objpert.estimators._planning import calibration_for

    Target.checked(args.epsilon, args.delta)  # the door: the target and the constants,
    PublicConstants.checked(args.loss, args.n, args.d, args.zeta)  # before any planning
    mu = _mu(args.mu)
    releases = positive_count(args.releases, "--releases")
    if args.objective == "empirical" and args.delta_sample == DEFAULT_DELTA_SAMPLE:
        cal = calibration_for(  # what the estimators call: the same cache, the same plan
            releases, args.composition, args.loss, args.scale, args.calibration, args.n,
            args.d, args.zeta, args.epsilon, args.delta, args.comparator_norm, args.max_iter, mu,
        )  # fmt: skip
        plan, method = cal.plan, cal.method
    else:
        if releases > 1:
            raise CliError("--releases > 1 takes the estimators' objective and delta_S only")
        kwargs: dict[str, Any] = dict(
            n=args.n,
            d=args.d,
            zeta=args.zeta,
            epsilon=args.epsilon,
            delta=args.delta,
            comparator_norm=args.comparator_norm,
            delta_sample=args.delta_sample,
            **loss_params(args),
        )
        if args.calibration == "tight":
            kwargs.update(max_iter=args.max_iter, objective=args.objective, mu=mu)
        elif mu is not None:
            raise CliError("--calibration corollary413 chooses mu itself: leave --mu auto")
        plan, method = calibrate(args.loss, calibration=args.calibration, **kwargs), "single"
    payload = plan_payload(plan)
    if releases > 1:
        payload["releases"] = releases
        payload["composition"] = method
    emit(
        args, payload, [kv_table(f"Plan ({plan.calibration}, {plan.objective} objective)", payload)]
    )
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``calibrate`` on the ``objpert`` subcommand parsers."""
    from objpert.estimators._planning import DEFAULT_COMPARATOR_NORM, DEFAULT_MAX_ITER

    p = subparsers.add_parser(
        "calibrate",
        help="choose sigma, mu, eta, N, u for a target budget",
        description="The plan of a release for public constants; by default the one "
        "'objpert train' calibrates (for a model with an intercept, --d counts the intercept "
        "column and --zeta is sqrt(data_norm^2 + c^2)).",
    )
    add_problem_args(p, mu=False)
    p.add_argument("--epsilon", type=float, required=True, help="target epsilon (whole fit)")
    p.add_argument("--delta", type=float, required=True, help="target delta (whole fit)")
    p.add_argument(
        "--comparator-norm",
        type=float,
        default=DEFAULT_COMPARATOR_NORM,
        help="W, the norm of the comparators the plan is tuned against "
        f"(default: {DEFAULT_COMPARATOR_NORM}, as the estimators)",
    )
    p.add_argument(
        "--mu",
        default="auto",
        help="the ridge mu, or 'auto' to choose it with sigma and N (default: 'auto')",
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="empirical",
        help="the bound the tight calibration minimises: empirical (as the estimators) or "
        "population (Theorem 4.7) (default: 'empirical')",
    )
    p.add_argument(
        "--delta-sample",
        type=float,
        default=DEFAULT_DELTA_SAMPLE,
        help=f"delta_S of Theorem 4.7 (default: {DEFAULT_DELTA_SAMPLE})",
    )
    p.add_argument(
        "--calibration",
        choices=CALIBRATIONS,
        default="tight",
        help="tight (Theorem C.13, numerical) or corollary413 (Corollary 4.13 as stated) "
        "(default: 'tight')",
    )
    p.add_argument(
        "--max-iter",
        type=count("--max-iter", MAX_PLAN_ITERATIONS, PLAN_ITERATIONS_COST),
        default=DEFAULT_MAX_ITER,
        help=f"the most gradient steps the plan may take (default: {DEFAULT_MAX_ITER})",
    )
    p.add_argument(
        "--releases",
        type=count("--releases", MAX_RELEASES, RELEASES_COST),
        default=1,
        help="K releases sharing the budget (a K-class model): the plan of each of them, "
        "as the estimators calibrate it (default: 1)",
    )
    p.add_argument(
        "--composition",
        choices=COMPOSITIONS,
        default="auto",
        help="how K > 1 releases share the budget, as the classifier's composition "
        "parameter (default: 'auto')",
    )
    p.set_defaults(func=cmd_calibrate)
    return p
