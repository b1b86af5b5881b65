"""``objpert train``: train a private model on a CSV or Parquet file, refuse to write it
unless it is certified at the target, and sign the model file."""

from __future__ import annotations

import argparse
import math
import warnings
from typing import Any

from objpert.certify.calibration import METHODS
from objpert.cli.common import KEY_ENV, CliError, read_key, read_table, split_target, warn_lines
from objpert.cli.output import console, emit, kv_table

__all__ = ["DATA_STATISTICS_NOTE", "add_parser", "check_writable", "cmd_train", "parse_classes"]

DATA_STATISTICS_NOTE = (
    "statistics of the private training data: not covered by the certificate; do not publish"
)


def check_writable(out: str) -> None:
    """Refuse an --out that cannot be written, before any training."""
    from pathlib import Path

    path = Path(out)
    parent = path.parent
    if not parent.is_dir():
        raise CliError(
            f"--out {out}: the directory {str(parent)!r} does not exist; nothing was trained"
        )
    if path.is_dir():
        raise CliError(f"--out {out} is a directory, not a file name; nothing was trained")
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise CliError(
            f"--out {out} cannot be written ({exc.strerror or exc}); nothing was trained"
        ) from None
    if not existed:
        path.unlink(missing_ok=True)


def parse_classes(text: str) -> list[int] | list[str]:
    """--classes: comma-separated labels; integers when all are integral, else strings."""
    items = [s.strip() for s in text.split(",")]
    if len(items) < 2 or not all(items):
        raise CliError(f"--classes must list at least two comma-separated labels; got {text!r}")
    try:
        numbers = [float(s) for s in items]
    except ValueError:
        return items
    if all(math.isfinite(v) and v.is_integer() for v in numbers):
        return [
            int(s) if s.lstrip("+-").isdigit() else int(v)
            for s, v in zip(items, numbers, strict=True)
        ]
    return items


def _env_key_set() -> bool:
    from objpert.persistence import signing_key

    return signing_key(None) is not None


def cmd_train(args: argparse.Namespace) -> int:
    from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression
    from objpert.persistence import save

    key = read_key(args.key_file)
    if args.out:
        check_writable(args.out)
    alpha: float | str = args.alpha
    if alpha != "auto":
        try:
            alpha = float(alpha)
        except ValueError:
            raise CliError(f"--alpha must be a positive number or 'auto'; got {alpha!r}") from None
    extra: dict[str, Any] = {}
    if args.classes is not None:
        if args.loss != "logistic":
            raise CliError("--classes applies to --loss logistic only")
        extra["classes"] = parse_classes(args.classes)
    df = read_table(args.data)
    X, y = split_target(df, args.target, args.data)
    if args.classes is not None and all(isinstance(c, str) for c in extra["classes"]):
        y = y.to_numpy(dtype=str)  # text labels (object dtype in pandas): declared strings
    cls = PrivateLogisticRegression if args.loss == "logistic" else PrivateRobustRegression
    model = cls(
        epsilon=args.epsilon,
        delta=args.delta,
        data_norm=args.data_norm,
        fit_intercept=not args.no_intercept,
        clip=not args.no_clip,
        alpha=alpha,
        calibration=args.calibration,
        max_iterations=args.max_iterations,
        random_state=args.seed,
        **extra,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    warn_lines(caught)
    cert = model.certificate_
    certified = bool(cert.certified and cert.epsilon <= args.epsilon and cert.delta <= args.delta)
    if not certified:
        raise CliError(
            f"the fitted model is not certified at the target (epsilon={args.epsilon:g}, "
            f"delta={args.delta:g}): its certificate gives certified={cert.certified}, "
            f"epsilon={cert.epsilon:g}, delta={cert.delta:.3g}; nothing was written"
        )
    plans = model.plan_ if isinstance(model.plan_, list) else [model.plan_]
    payload: dict[str, Any] = {
        "epsilon": cert.epsilon,
        "delta": cert.delta,
        "certified": certified,
        "n": len(y),
        "n_features": int(model.n_features_in_),
        "iterations": [p.iterations for p in plans],
        "sigma": [p.sigma for p in plans],
        "mu": [p.mu for p in plans],
        "releases": len(plans),
        "not_public": list(getattr(cert, "not_public", ())),
        "seeded": bool(getattr(model, "seeded_", args.seed is not None)),
        "certificate": cert.to_dict(),
    }
    metric = "training_accuracy" if args.loss == "logistic" else "training_r2"
    statistics = {metric: float(model.score(X, y)), "rows_clipped": int(model.n_clipped_)}
    if args.out:
        save(model, args.out, key=key)
        payload["model"] = args.out
        payload["signed"] = key is not None or _env_key_set()
    # statistics of the private rows: the terminal only (stderr), labelled, unless asked for
    console(stderr=True).print(
        kv_table(
            "Private data statistics: NOT covered by the certificate (do not publish)",
            {f"{k} (not covered by the certificate)": v for k, v in statistics.items()},
        )
    )
    if args.include_data_statistics:
        payload["data_statistics"] = {"note": DATA_STATISTICS_NOTE, **statistics}
    flat = {
        k: v
        for k, v in payload.items()
        if k not in ("certificate", "data_statistics", "not_public")
    }
    flat["not public (not covered)"] = ", ".join(payload["not_public"]) or "none"
    emit(args, payload, [kv_table(f"Private {args.loss} model on {args.data}", flat)])
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``train`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser("train", help="train a private model on a CSV or Parquet file")
    p.add_argument("--data", required=True, metavar="FILE.(csv|parquet)")
    p.add_argument("--target", required=True, metavar="COLUMN")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--loss", choices=("logistic", "robust"), default="logistic")
    p.add_argument(
        "--data-norm",
        type=float,
        default=1.0,
        help="public bound on the feature-row norms; larger rows are clipped",
    )
    p.add_argument("--no-clip", action="store_true", help="refuse rows above --data-norm")
    p.add_argument("--alpha", default="auto", help="ridge coefficient mu, or 'auto'")
    p.add_argument("--calibration", choices=METHODS, default="tight")
    p.add_argument("--max-iterations", type=int, default=5000)
    p.add_argument("--no-intercept", action="store_true")
    p.add_argument(
        "--classes",
        default=None,
        metavar="A,B,...",
        help="the public label set, comma-separated (integers when all are integral, else "
        "strings); without it the labels are read from the data, which the certificate "
        "does not cover",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="MODEL.json",
        help="write the model here (checked writable before training)",
    )
    p.add_argument(
        "--key-file",
        default=None,
        metavar="FILE",
        help="sign the model file with HMAC-SHA-256 under the raw bytes of FILE (one "
        f"trailing newline stripped); default: the value of {KEY_ENV}, if set",
    )
    p.add_argument("--seed", type=int, default=None, help="reproducible noise (testing only)")
    p.add_argument(
        "--include-data-statistics",
        action="store_true",
        help="also put the statistics of the private training data (training accuracy or "
        "R^2, rows clipped) in the --json output; they are not covered by the certificate "
        "(do not publish them) and are never written to the model file. Without this flag "
        "they are printed to stderr only",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_train)
    return p
