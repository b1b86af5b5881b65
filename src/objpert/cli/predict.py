"""``objpert predict``: predict with a saved model file (its signature checked when a key
is given or set)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from objpert.cli.common import CliError, read_key, read_table, split_target
from objpert.cli.output import console, kv_table

__all__ = ["add_parser", "cmd_predict", "load_model"]


def load_model(path: str, key: bytes | None):
    """Read and check a model file; an unverified one is reported as a one-line warning."""
    from objpert.persistence import read

    loaded = read(path, key)
    if not loaded.verified:
        print(f"objpert: warning: {path}: {loaded.warning}", file=sys.stderr)
    return loaded.model


def cmd_predict(args: argparse.Namespace) -> int:
    model = load_model(args.model, read_key(args.key_file))
    df = read_table(args.data)
    y = None
    if args.target is not None:
        df, y = split_target(df, args.target, args.data)
    names = getattr(model, "feature_names_in_", None)
    if names is not None:
        missing = [c for c in names if c not in df.columns]
        if missing:
            raise CliError(f"{args.data} lacks the model's feature columns {missing[:5]}")
        df = df[list(names)]
    pred = model.predict(df)
    payload: dict[str, Any] = {"n": len(pred)}
    if y is not None:
        payload["score"] = float(model.score(df, y))
    if args.out:
        import pandas as pd

        pd.DataFrame({"prediction": pred}).to_csv(args.out, index=False)
        payload["predictions_file"] = args.out
    elif not args.json:
        for p in pred:
            print(p)
    if args.json:
        payload["predictions"] = [p.item() if hasattr(p, "item") else p for p in pred]
        print(json.dumps(payload))
    elif args.out or y is not None:
        console(stderr=True).print(kv_table("prediction", payload))
    return 0


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``predict`` on the ``objpert`` subcommand parsers."""
    p = subparsers.add_parser("predict", help="predict with a saved model")
    p.add_argument("--model", required=True, metavar="MODEL.json")
    p.add_argument("--data", required=True, metavar="FILE.(csv|parquet)")
    p.add_argument("--target", default=None, help="a label column to drop and score against")
    p.add_argument("--out", default=None, metavar="PREDICTIONS.csv")
    p.add_argument("--key-file", default=None, metavar="FILE", help="verify the model's signature")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)
    return p
