"""``objpert predict``: predict with a saved model file (its signature checked when a key
is given or set)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from objpert._files import write_atomically
from objpert.cli._common import (
    CliError,
    add_max_bytes_arg,
    one_line,
    read_key,
    read_model,
    read_table,
    split_target,
    warn,
)
from objpert.cli._output import console, kv_table
from objpert.cli._outputs_check import Output
from objpert.cli._text_columns import category_text

__all__ = ["add_parser", "cmd_predict", "load_model"]


def load_model(
    path: str, key: bytes | None, later: list[str] | None = None, max_bytes: int | None = None
):
    """Read and check a model file (refusing one larger than ``max_bytes``, None: the
    library's limit, unread); an unverified one is reported as a one-line warning
    (appended to ``later`` when given, for the caller to print once it has succeeded)."""
    loaded = read_model(path, key, max_bytes)
    if not loaded.verified:
        message = f"{path}: {loaded.warning}"
        if later is None:
            warn(message)
        else:
            later.append(message)
    return loaded.model


def _quoted(values: list[Any], most: int) -> str:
    """The first ``most`` of ``values`` (read from a file) for an error line: each a short,
    escaped prefix of its repr, and how many there are in all."""
    shown = ", ".join(one_line(repr(v), 40) for v in values[:most])
    return f"[{shown}{', ...' if len(values) > most else ''}] ({len(values)} in all)"


def _labels_for(model: Any, y: Any, args: argparse.Namespace) -> Any:
    """The --target column as the model's label type (text labels of a model with text
    classes); labels that are not the model's classes are refused, naming both."""
    import numpy as np

    classes = getattr(model, "classes_", None)
    if classes is None:  # a regression model: numbers
        if y.dtype.kind not in "biuf":
            raise CliError(
                f"column {args.target!r} of {args.data} is not numeric: a regression model "
                "scores numeric targets only"
            )
        return y
    if classes.dtype.kind in "OUS":
        y = y.astype(str)
    values = y.to_numpy()
    try:
        unknown = sorted(
            {v.item() if hasattr(v, "item") else v for v in values} - set(classes.tolist()), key=str
        )
    except TypeError:
        unknown = ["?"]
    if unknown:
        raise CliError(
            f"column {args.target!r} of {args.data} holds labels {_quoted(unknown, 5)} that "
            f"are not the model's classes {_quoted(classes.tolist(), 10)}: encode them as the "
            "model was trained (or drop --target to predict only)"
        )
    return np.asarray(values)


def cmd_predict(args: argparse.Namespace) -> int:
    later: list[str] = []
    model = load_model(args.model, read_key(args.key_file), later, args.max_bytes)
    df = read_table(args.data)
    y = None
    if args.target is not None:
        df, y = split_target(df, args.target, args.data)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        missing = [c for c in names if c not in df.columns]
        if missing:
            raise CliError(f"{args.data} lacks the model's feature columns {_quoted(missing, 5)}")
        df = df[list(names)]
    if hasattr(model, "steps"):  # a pipeline file: declared text categories read as text
        from objpert.persistence._pipeline_file import text_columns

        df = category_text(df, text_columns(model), args.data)
    pred = model.predict(df)
    payload: dict[str, Any] = {"n": len(pred)}
    if y is not None:
        payload["score"] = float(model.score(df, _labels_for(model, y, args)))
    if args.out:
        import pandas as pd

        write_atomically(args.out, pd.DataFrame({"prediction": pred}).to_csv(index=False))
        payload["predictions_file"] = args.out
    elif not args.json:
        for p in pred:
            print(p)
    if args.json:
        payload["predictions"] = [p.item() if hasattr(p, "item") else p for p in pred]
        print(json.dumps(payload))
    elif args.out or y is not None:
        console(stderr=True).print(kv_table("prediction", payload))
    for line in later:
        warn(line)
    note = one_class_note(model, pred)
    if note:
        warn(note)
    return 0


#: A class taking at least this share of the predictions is worth a note.
ONE_CLASS_SHARE = 0.95


def one_class_note(model: Any, pred: Any) -> str:
    """A note when one class takes almost every prediction (a statistic of the rows given
    to predict, never of the training rows): the private model may be too noisy to
    separate the classes at its epsilon. "" otherwise (or for a regression model)."""
    import numpy as np

    if getattr(model, "classes_", None) is None or len(pred) < 20:
        return ""
    values, counts = np.unique(np.asarray(pred), return_counts=True)
    share = counts.max() / len(pred)
    if share < ONE_CLASS_SHARE:
        return ""
    label = values[counts.argmax()]
    return (
        f"{100 * share:.1f}% of these {len(pred)} predictions are {label!r}: at this epsilon "
        "the private model may barely separate the classes (a larger epsilon or n, fewer "
        "features, or a prior from public data can help; see the user guide)"
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``predict`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser("predict", help="predict with a saved model")
    p.add_argument("--model", required=True, metavar="MODEL.json")
    p.add_argument("--data", required=True, metavar="FILE.(csv|parquet)")
    p.add_argument("--target", default=None, help="a label column to drop and score against")
    p.add_argument("--out", default=None, metavar="PREDICTIONS.csv")
    p.add_argument("--key-file", default=None, metavar="FILE", help="verify the model's signature")
    add_max_bytes_arg(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict, outputs=(Output("out", ("model", "data", "key_file")),))
    return p
