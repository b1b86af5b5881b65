"""``objpert train``: train a private model on a CSV or Parquet file, refuse to write it
unless it is certified at the target, and sign the model file."""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import replace
from typing import Any

from objpert._validation import check_open_unit, check_positive
from objpert.cli._common import (
    KEY_ENV,
    CliError,
    budget_warnings,
    missing_values,
    one_line,
    read_key,
    read_table,
    split_target,
    thread_limit,
    warn,
    warn_lines,
)
from objpert.cli._output import console, emit, kv_table
from objpert.cli._outputs_check import Output
from objpert.cli._text_columns import category_text

__all__ = [
    "LIBRARY_ONLY",
    "add_parser",
    "check_labels_for_loss",
    "cmd_train",
    "parse_classes",
]


#: Estimator parameters with no flag: Python objects (a ledger, a Dask client, a prior: a
#: fitted model whose weights are for the features in the caller's own coordinates, not
#: for the columns as train encodes them) and cluster settings.
LIBRARY_ONLY = ("accountant", "client", "prior", "step_timeout")


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


def _estimators() -> dict[str, type]:
    """The estimator of each --loss."""
    from objpert.estimators import PrivateLogisticRegression, PrivateRobustRegression

    return {"logistic": PrivateLogisticRegression, "robust": PrivateRobustRegression}


def check_labels_for_loss(y, loss: str, target: str, path: str, classes: Any) -> None:
    """A logistic model needs class labels: a column of non-integral numbers is refused
    (the regression loss takes it), unless a label set of strings was declared."""
    import numpy as np

    if loss != "logistic" or y.dtype.kind != "f":
        return
    if classes is not None and all(isinstance(c, str) for c in classes):
        return
    values = y.to_numpy(dtype=float)
    fractional = values[values != np.round(values)]
    if fractional.size:
        raise CliError(
            f"column {target!r} of {path} holds non-integer numbers (e.g. {fractional[0]:g}): "
            "--loss logistic needs class labels; for a numeric target use --loss robust"
        )


def parse_categories(
    items: list[str] | None, columns: Any, path: str, target: str | None = None
) -> dict[str, list[str]]:
    """--categories COLUMN=a,b,c (repeatable): each declared column's public categories
    (compared as text); the target's labels are declared by --classes instead."""
    out: dict[str, list[str]] = {}
    for item in items or ():
        column, _, text = item.partition("=")
        values = [v.strip() for v in text.split(",")]
        if not column or not text or not all(values) or len(set(values)) != len(values):
            raise CliError(
                f"--categories {one_line(repr(item), 80)}: give COLUMN=a,b,c (each category "
                "once, none empty)"
            )
        if column == target:
            raise CliError(
                f"--categories declares {column!r}, the target: declare its labels with "
                f"--classes {text}"
            )
        if column not in columns:
            raise CliError(f"--categories: {path} has no column {column!r}")
        if column in out:
            raise CliError(f"--categories declares column {column!r} twice")
        out[column] = values
    return out


def _refuse_undeclared_text(X: Any, categories: dict) -> None:
    """Text columns need their public categories declared (``--categories``)."""
    from pandas.api.types import is_numeric_dtype

    text = [c for c in X.columns if c not in categories and not is_numeric_dtype(X[c])]
    if text:
        raise CliError(
            f"the columns {text[:5]} hold text: declare their public categories "
            f"(--categories {text[0]}=a,b,c) or drop them"
        )


def _column_pipeline(estimator: Any, X: Any, categories: dict, bounds: Any, path: str):
    """The pipeline of declared columns: numeric columns scaled by their bounds (by name or
    in order), declared categorical columns one-hot encoded, then the estimator (which takes
    the row-norm bound they declare)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from objpert.preprocessing import BoundedOneHotEncoder, BoundedScaler

    numeric = [c for c in X.columns if c not in categories]
    if isinstance(bounds, dict):
        unknown = [c for c in bounds if c not in X.columns or c in categories]
        missing = [c for c in numeric if c not in bounds]
        if unknown:
            raise CliError(
                f"--feature-bounds names {unknown} that are not numeric columns of {path}"
            )
    elif bounds is not None:
        if len(bounds) != len(numeric):
            raise CliError(
                f"--feature-bounds gives {len(bounds)} pairs for the {len(numeric)} numeric "
                f"columns {numeric[:5]}: give one per numeric column, or name them (col=lo:hi)"
            )
        bounds = dict(zip(numeric, bounds, strict=True))
        missing = []
    else:
        missing = numeric
    if missing:
        raise CliError(
            f"the numeric columns {missing[:5]} need public bounds: --feature-bounds "
            f"{missing[0]}=lo:hi,..."
        )
    parts = []
    if numeric:
        parts.append(("numbers", BoundedScaler(bounds=[bounds[c] for c in numeric]), numeric))
    if categories:
        parts.append(
            (
                "categories",
                BoundedOneHotEncoder(categories=list(categories.values())),
                list(categories),
            )
        )
    return Pipeline([("columns", ColumnTransformer(parts)), ("model", estimator)])


def _privacy_unit(X: Any, args: argparse.Namespace) -> tuple[Any, Any]:
    """(the unit ids, the feature columns without them) for ``--privacy-unit COLUMN``;
    (None, X) without it. CliError for a column the file does not have."""
    column = args.privacy_unit
    if column is None:
        if getattr(args, "param_max_rows_per_unit", None) is not None:
            raise CliError(
                "--max-rows-per-unit needs --privacy-unit COLUMN (the column of each row's "
                "person id)"
            )
        return None, X
    if column not in X.columns:
        raise CliError(
            f"--privacy-unit {column!r}: {args.data} has no such feature column (columns: "
            f"{', '.join(map(str, X.columns[:12]))}{' ...' if len(X.columns) > 12 else ''})"
        )
    return X[column].rename(column), X.drop(columns=[column])


def _unit_metadata(model: Any, ids: Any) -> dict[str, Any]:
    """The fit's ``privacy_unit`` metadata, for the estimator or the pipeline's last step."""
    if ids is None:
        return {}
    if hasattr(model, "steps"):
        return {f"{model.steps[-1][0]}__privacy_unit": ids}
    return {"privacy_unit": ids}


def cmd_train(args: argparse.Namespace) -> int:
    from objpert.cli._params import estimator_kwargs
    from objpert.estimators import fit_statistics
    from objpert.estimators._base import ROWS_LEFT_OUT
    from objpert.persistence import save

    key = read_key(args.key_file)
    cls = _estimators()[args.loss]
    kwargs = estimator_kwargs(args, cls, args.loss)
    check_positive("--epsilon", kwargs["epsilon"])
    check_open_unit("--delta", kwargs["delta"])
    df = read_table(args.data)
    X, y = split_target(df, args.target, args.data)
    ids, X = _privacy_unit(X, args)
    X, dropped = missing_values(X, args.data, args.missing)
    if dropped:
        y = y.loc[X.index]
        ids = None if ids is None else ids.loc[X.index]
        warn(
            f"--missing drop: {dropped} row(s) with missing values were left out (a statistic "
            "of the private rows: do not publish it); n, the number of rows trained on, is "
            "treated as public and now depends on which rows were complete"
        )
    if len(y) < 2:
        raise CliError(
            f"{args.data} has {len(y)} data row: training needs at least 2 rows (and a "
            "useful private model many more)"
        )
    classes = kwargs.get("classes")
    check_labels_for_loss(y, args.loss, args.target, args.data, classes)
    if classes is not None and all(isinstance(c, str) for c in classes):
        y = y.to_numpy(dtype=str)  # text labels (object dtype in pandas): declared strings
    threads = kwargs.get("n_jobs")  # --n-jobs K
    cap = threads if isinstance(threads, int) and threads >= 1 else None  # -1: every core
    categories = parse_categories(args.categories, X.columns, args.data, args.target)
    bounds = kwargs.get("feature_bounds")
    _refuse_undeclared_text(X, categories)
    if categories or isinstance(bounds, dict):  # declared columns: a pipeline file
        kwargs.pop("feature_bounds", None)
        model = _column_pipeline(cls(**kwargs), X, categories, bounds, args.data)
        X = category_text(X, categories, args.data)  # categories are compared as text
    else:
        model = cls(**kwargs)
    for line in budget_warnings(kwargs["epsilon"], kwargs["delta"], len(y)):
        warn(line)
    with warnings.catch_warnings(record=True) as caught, thread_limit(cap):
        warnings.simplefilter("always")
        with fit_statistics() as fits:  # for the terminal only: the model keeps none
            model.fit(X, y, **_unit_metadata(model, ids))
    warn_lines(caught)
    estimator = model[-1] if hasattr(model, "steps") else model
    epsilon, delta = kwargs["epsilon"], kwargs["delta"]
    if dropped:  # the rows trained on depend on the data: recorded, not covered
        estimator.certificate_ = replace(
            estimator.certificate_, not_public=(*estimator.certificate_.not_public, ROWS_LEFT_OUT)
        )
    cert = estimator.certificate_
    certified = bool(cert.certified and cert.epsilon <= epsilon and cert.delta <= delta)
    if not certified:
        raise CliError(
            f"the fitted model is not certified at the target (epsilon={epsilon:g}, "
            f"delta={delta:g}): its certificate gives certified={cert.certified}, "
            f"epsilon={cert.epsilon:g}, delta={cert.delta:.3g}; nothing was written"
        )
    plans = estimator.plan_ if isinstance(estimator.plan_, list) else [estimator.plan_]
    payload: dict[str, Any] = {
        "epsilon": cert.epsilon,
        "delta": cert.delta,
        "certified": certified,
        "privacy_unit": cert.to_dict().get("privacy_unit", "one row"),
        "n": len(y) if kwargs.get("max_rows_per_unit") is None else plans[0].n,
        "n_features": int(estimator.n_features_in_),
        "iterations": [p.iterations for p in plans],
        "sigma": [p.sigma for p in plans],
        "mu": [p.mu for p in plans],
        "releases": len(plans),
        "not_public": list(getattr(cert, "not_public", ())),
        "seeded": bool(estimator.seeded_),
        "certificate": cert.to_dict(),
    }
    metric = "training_accuracy" if args.loss == "logistic" else "training_r2"
    statistics = {metric: float(model.score(X, y)), "rows_clipped": fits[-1].n_clipped}
    if args.out:
        save(model, args.out, key=key)
        payload["model"] = args.out
        payload["signed"] = key is not None or _env_key_set()
        if not payload["signed"]:
            warn(
                f"{args.out} is unsigned: anyone can change it without detection; give "
                "--key-file FILE (or set OBJPERT_MODEL_KEY) to sign it"
            )
    # statistics of the private rows: the terminal only (stderr), labelled; never in --json
    console(stderr=True).print(
        kv_table(
            "Private data statistics: NOT covered by the certificate (do not publish)",
            {f"{k} (not covered by the certificate)": v for k, v in statistics.items()},
        )
    )
    flat = {k: v for k, v in payload.items() if k not in ("certificate", "not_public")}
    for key in ("iterations", "sigma", "mu"):  # one value per release: shown once if equal
        values = sorted(set(payload[key]))
        flat[key] = values[0] if len(values) == 1 else ", ".join(f"{v:.4g}" for v in values)
    flat["not public (not covered)"] = ", ".join(payload["not_public"]) or "none"
    emit(args, payload, [kv_table(f"Private {args.loss} model on {args.data}", flat)])
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``train`` on the ``objpert`` subcommand parsers: the file arguments, and
    one flag per estimator parameter (generated from the estimators' parameters)."""
    from objpert.cli._params import add_estimator_args

    p = subparsers.add_parser(
        "train",
        help="train a private model on a CSV or Parquet file",
        description="Train a differentially private model on a CSV or Parquet file with a "
        "header (one row per record). Every estimator parameter is a flag; see docs/guide.md.",
    )
    p.add_argument("--data", required=True, metavar="FILE.(csv|parquet)", help="the data")
    p.add_argument("--target", required=True, metavar="COLUMN", help="the label column")
    p.add_argument(
        "--loss",
        choices=tuple(_estimators()),
        default="logistic",
        help="logistic: classification (PrivateLogisticRegression); robust: regression with "
        "the pseudo-Huber loss (PrivateRobustRegression) (default: 'logistic')",
    )
    add_estimator_args(
        p,
        _estimators(),
        skip=LIBRARY_ONLY,
        required=("epsilon", "delta"),
        readers={"classes": parse_classes},
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
    p.add_argument(
        "--categories",
        action="append",
        default=None,
        metavar="COLUMN=a,b,c",
        help="a text column's public categories (repeatable); with it the model file is a "
        "pipeline: declared categorical columns one-hot encoded, the others scaled by "
        "--feature-bounds (by name: col=lo:hi,...), the row-norm bound declared by them",
    )
    p.add_argument(
        "--missing",
        choices=("refuse", "drop"),
        default="refuse",
        help="missing feature values (empty cells): refuse them, naming the columns (the "
        "default), or drop the incomplete rows (their count is shown, not covered) "
        "(default: 'refuse')",
    )
    p.add_argument(
        "--privacy-unit",
        default=None,
        metavar="COLUMN",
        help="the column of each row's person id (not a feature): with --max-rows-per-unit "
        "K the model is certified for one person of up to K rows (docs/privacy-unit.md)",
    )
    p.add_argument("--json", action="store_true", help="print JSON for scripts")
    p.set_defaults(func=cmd_train, outputs=(Output("out", ("data", "key_file")),))
    return p
