"""Pieces the subcommands share: the parser that reports a usage error in one line, the
public-constant arguments, payloads of plans and certificates, reading data files and
signing keys, and warnings printed as one line each."""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Callable, Iterable
from typing import NoReturn, TypeVar

from objpert.certify.calibration import Plan
from objpert.certify.certificate import Certificate
from objpert.exceptions import CliError
from objpert.losses import LOSSES

__all__ = [
    "KEY_ENV",
    "CliError",
    "Parser",
    "add_problem_args",
    "certificate_payload",
    "floats",
    "loss_params",
    "names",
    "plan_payload",
    "positive_count",
    "read_key",
    "read_table",
    "split_target",
    "translate",
    "warn_lines",
]

KEY_ENV = "OBJPERT_MODEL_KEY"  # objpert.persistence.KEY_ENV (not imported: it loads sklearn)

T = TypeVar("T")


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors raise :class:`CliError` (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:
        raise CliError(message)


def add_problem_args(p: argparse.ArgumentParser, mu: bool = True) -> None:
    """The public constants of a problem: loss, n, d, zeta (and mu, eta)."""
    p.add_argument("--loss", default="logistic", help=f"one of {', '.join(LOSSES)}")
    p.add_argument("--scale", type=float, default=None, help="pseudo-Huber scale c (robust)")
    p.add_argument("--n", type=float, required=True, help="number of rows (public)")
    p.add_argument("--d", type=float, required=True, help="number of features")
    p.add_argument("--zeta", type=float, default=1.0, help="row-norm bound (Assumption 1)")
    if mu:
        p.add_argument("--mu", type=float, required=True, help="ridge regularisation")
        p.add_argument("--eta", type=float, default=None, help="step size (default 1/L)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def loss_params(args: argparse.Namespace) -> dict:
    return {} if args.scale is None else {"scale": args.scale}


def certificate_payload(cert: Certificate) -> dict:
    out = cert.to_dict()
    out.pop("constants", None)
    return out


def plan_payload(plan: Plan) -> dict:
    out = plan.to_dict()
    out["certificate"].pop("constants", None)
    return out


def floats(text: str, flag: str) -> list[float]:
    """``"0.1,1,3"`` -> [0.1, 1.0, 3.0]; anything else (no number, NaN, infinity, a number
    <= 0) is a usage error naming ``flag``."""
    try:
        values = [float(e) for e in text.split(",") if e.strip()]
    except ValueError:
        raise CliError(f"{flag} must be comma-separated numbers; got {text!r}") from None
    if not values:
        raise CliError(f"{flag} lists no number; got {text!r}")
    if not all(math.isfinite(v) and v > 0 for v in values):
        raise CliError(f"{flag} must be comma-separated positive finite numbers; got {text!r}")
    return values


def names(text: str, flag: str) -> list[str]:
    """``"a,b"`` -> ["a", "b"]; a list of no name is a usage error naming ``flag``."""
    out = [s.strip() for s in text.split(",") if s.strip()]
    if not out:
        raise CliError(f"{flag} lists no name; got {text!r}")
    return out


def positive_count(value: int, flag: str) -> int:
    """A count argument that must be >= 1 (argparse has made it an int)."""
    if value < 1:
        raise CliError(f"{flag} must be a positive integer; got {value}")
    return value


def read_table(path: str):
    """A CSV (optionally gzipped) or Parquet file as a pandas DataFrame."""
    import pandas as pd

    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(".pq"):
        try:
            return pd.read_parquet(path)
        except ImportError as err:
            raise CliError(f"reading Parquet needs pyarrow: {err}") from None
        except OSError:
            raise
        except Exception as err:  # pyarrow's errors on a damaged file
            raise CliError(f"cannot read {path} as Parquet: {' '.join(str(err).split())}") from None
    if lower.endswith(".csv") or lower.endswith(".csv.gz"):
        try:
            return pd.read_csv(path)
        except OSError:
            raise
        except (ValueError, UnicodeError, EOFError) as err:  # empty, unparsable, bad gzip
            raise CliError(f"cannot read {path} as CSV: {' '.join(str(err).split())}") from None
    raise CliError(f"--data must be a .csv or .parquet file; got {path!r}")


def split_target(df, target: str, path: str):
    """(features, the ``target`` column) of a DataFrame read from ``path``."""
    if target not in df.columns:
        cols = ", ".join(map(str, list(df.columns)[:10]))
        raise CliError(f"column {target!r} is not in {path} (columns: {cols})")
    return df.drop(columns=[target]), df[target]


def warn_lines(caught: Iterable[warnings.WarningMessage]) -> None:
    """Each caught warning as one line on stderr."""
    for w in caught:
        print(f"objpert: warning: {' '.join(str(w.message).split())}", file=sys.stderr)


def translate(fn: Callable[[str], T], name: str) -> T:
    """``fn(name)``; a DeprecationWarning it raises (a former name) is printed as one line
    on stderr and raised again for the caller."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        out = fn(name)
    warn_lines(caught)
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=3)
    return out


def read_key(path: str | None) -> bytes | None:
    """The raw bytes of ``--key-file`` (one trailing newline stripped); None without it
    (then ``OBJPERT_MODEL_KEY`` is used, when set)."""
    if path is None:
        return None
    from pathlib import Path

    key = Path(path).read_bytes()
    if key.endswith(b"\r\n"):
        key = key[:-2]
    elif key.endswith(b"\n"):
        key = key[:-1]
    if not key:
        raise CliError(f"--key-file {path} is empty")
    return key
