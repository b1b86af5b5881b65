"""Pieces the subcommands share: the parser that reports a usage error in one line, the
public-constant arguments, payloads of plans and certificates, reading data files and
signing keys, and warnings printed as one line each."""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TypeVar

from objpert._losses import LOSSES
from objpert._validation import check_open_unit
from objpert.accounting._certificate import ReleaseCertificate
from objpert.certify._plan import WatkinsAroraPlan
from objpert.exceptions import CliError

__all__ = [
    "CERTIFY_ITERATIONS_COST",
    "DRAWS_COST",
    "EPSILONS_COST",
    "KEY_ENV",
    "LARGE_EPSILON",
    "MAX_CERTIFY_ITERATIONS",
    "MAX_DRAWS",
    "MAX_EPSILONS",
    "MAX_PLAN_ITERATIONS",
    "MAX_POINTS",
    "MAX_RELEASES",
    "MAX_RUNS",
    "MAX_SAMPLES",
    "MAX_SEARCH_ITERATIONS",
    "MAX_SEEDS",
    "MAX_THREADS",
    "MAX_TRAIN_ITERATIONS",
    "MAX_WORKERS",
    "MODEL_MAX_BYTES",
    "PLAN_ITERATIONS_COST",
    "POINTS_COST",
    "RELEASES_COST",
    "RUNS_COST",
    "SAMPLES_COST",
    "SEARCH_ITERATIONS_COST",
    "SEEDS_COST",
    "THREADS_COST",
    "THREADS_HELP",
    "TRAIN_ITERATIONS_COST",
    "WORKERS_COST",
    "CliError",
    "Parser",
    "add_max_bytes_arg",
    "add_problem_args",
    "add_sweep_args",
    "budget_warnings",
    "byte_count",
    "certificate_payload",
    "check_at_most",
    "cli_words",
    "count",
    "floats",
    "loss_params",
    "missing_values",
    "names",
    "one_line",
    "plan_payload",
    "positive_count",
    "read_key",
    "read_model",
    "read_table",
    "split_target",
    "sweep_epsilons",
    "thread_limit",
    "warn",
    "warn_lines",
]

KEY_ENV = "OBJPERT_MODEL_KEY"  # objpert.persistence.KEY_ENV (not imported: it loads sklearn)

T = TypeVar("T")


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors raise :class:`CliError` (one line, exit 2).
    A flag is read only as written: no abbreviation of it is a second name (``--max`` is
    not ``--max-iter``)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise CliError(message)


def add_problem_args(p: argparse.ArgumentParser, mu: bool = True, required: bool = True) -> None:
    """The public constants of a problem: loss, n, d, zeta (and mu, eta); ``required=False``
    leaves n, d and mu optional (the subcommand checks them)."""
    p.add_argument(
        "--loss", default="logistic", choices=LOSSES,
        help=f"one of {', '.join(LOSSES)} (default: 'logistic')",
    )  # fmt: skip
    p.add_argument(
        "--scale", type=float, default=None, help="pseudo-Huber scale c (robust; default: 1.0)"
    )
    p.add_argument("--n", type=float, required=required, help="number of rows (public)")
    p.add_argument("--d", type=float, required=required, help="number of features")
    p.add_argument(
        "--zeta", type=float, default=1.0, help="row-norm bound (Assumption 1; default: 1.0)"
    )
    if mu:
        p.add_argument("--mu", type=float, required=required, help="ridge regularisation")
        p.add_argument("--eta", type=float, default=None, help="step size (default: 1/L)")
    p.add_argument("--json", action="store_true", help="print JSON for scripts")


def checked_number(flag: str, rule: Callable[[str, float], float]) -> Callable[[str], float]:
    """The argparse ``type`` of the number ``flag``, checked by ``rule`` (one of
    :mod:`objpert._validation`'s checks) while the arguments are read: a usage error."""

    def read(text: str) -> float:
        value = float(text)  # ValueError: argparse's "invalid float value: 'x'"
        try:
            return rule(flag, value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    read.__name__ = "float"
    return read


#: A target delta: a number in (0, 1).
DELTA = checked_number("--delta", check_open_unit)


def add_sweep_args(p: argparse.ArgumentParser) -> None:
    """The flags of a sweep over epsilon with repeated releases (demo, compare)."""
    p.add_argument(
        "--epsilons", default="0.1,0.3,1,3", help="comma-separated (default: %(default)s)"
    )
    p.add_argument("--delta", type=DELTA, default=1e-6, help="(default: %(default)s)")
    p.add_argument(
        "--seeds",
        type=count("--seeds", MAX_SEEDS, SEEDS_COST),
        default=10,
        help=f"releases per epsilon (default: %(default)s; at most {MAX_SEEDS:,})",
    )
    p.add_argument(
        "--threads",
        type=count("--threads", MAX_THREADS, THREADS_COST),
        default=None,
        help=THREADS_HELP,
    )


def loss_params(args: argparse.Namespace) -> dict:
    return {} if args.scale is None else {"scale": args.scale}


def certificate_payload(cert: ReleaseCertificate) -> dict:
    out = cert.to_dict()
    out.pop("constants", None)
    return out


def plan_payload(plan: WatkinsAroraPlan) -> dict:
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
    return list(dict.fromkeys(out))  # a name listed twice runs once


# ---------------------------------------------------------------- upper bounds of counts
# Each count flag is refused above its limit before any work, in one line saying what the
# count costs (measured on this project's 2-core machine; docs/command-line.md lists them).

#: ``audit --draws``: releases per dataset of the attack.
MAX_DRAWS = 1_000_000
DRAWS_COST = (
    "about 0.3 ms and 3 KB per draw for watkins_arora, the slowest mechanism: 5 minutes and "
    "3 GB per million draws on 2 cores"
)
#: ``audit --samples``: noise samples per direction of the exact W&A profile.
MAX_SAMPLES = 100_000
SAMPLES_COST = "about 2 ms and 5 KB per sample: 3.5 minutes and 0.5 GB per 100,000 on 2 cores"
#: ``demo --seeds``, ``compare --seeds``: releases per epsilon (of each dataset and method).
MAX_SEEDS = 1_000
SEEDS_COST = (
    "about 20 s per seed for demo's default datasets and epsilons and 30 s for compare's, "
    "on 2 cores: 1,000 seeds take 6 to 8 hours"
)
#: ``demo --epsilons``, ``compare --epsilons``: the values of epsilon swept.
MAX_EPSILONS = 100
EPSILONS_COST = (
    "each value is one release per seed, dataset and method: about 5 s per value and seed "
    "for demo's default datasets on 2 cores"
)
#: ``reproduce qop --runs``: runs per box radius.
MAX_RUNS = 1_000
RUNS_COST = "about 0.7 s per run on 2 cores: 1,000 runs take 12 minutes"
#: ``reproduce qop --points``: values of delta per curve of Figure 1.
MAX_POINTS = 1_000
POINTS_COST = "about 0.5 s per point on 2 cores: 1,000 points take 8 minutes"
#: ``train --n-jobs`` (the threads of the fit) and ``--threads`` (demo, compare, bench: the
#: threads of the whole command).
MAX_THREADS = 1_024
THREADS_COST = "a thread each: threads beyond the cores only compete for them"
#: ``compare --workers``: worker processes.
MAX_WORKERS = 256
WORKERS_COST = "a process each, about 200 MB of memory each"
#: ``certify --iterations``: N of the certificate.
MAX_CERTIFY_ITERATIONS = 2**53
CERTIFY_ITERATIONS_COST = (
    "the certificate costs the same at any N (2 s at N = 1,500 and at 10^12); beyond 2^53 "
    "N is not exact in floating point"
)
#: ``certify --max-iter``: the largest N of the search for the least N.
MAX_SEARCH_ITERATIONS = 10**9
SEARCH_ITERATIONS_COST = "the search takes about 3 s up to it (a bisection over N)"
#: ``calibrate --max-iter``: the most gradient steps a plan may take.
MAX_PLAN_ITERATIONS = 10**9
PLAN_ITERATIONS_COST = (
    "calibrating takes about 3 s at any value; a fit then runs the plan's N steps, one pass "
    "over the data each"
)
#: ``calibrate --releases``: K releases sharing the budget.
MAX_RELEASES = 100_000
RELEASES_COST = "calibrating takes about 2 s at K = 10,000; a model of K classes is K fits"
#: ``train --max-iter``: the most gradient steps of each release.
MAX_TRAIN_ITERATIONS = 1_000_000
TRAIN_ITERATIONS_COST = (
    "each step is one pass over the data, about 1 ns per row x feature on 2 cores: 9 ms a "
    "step at 100,000 rows x 100 features, where a million steps take 2.5 hours"
)


def check_at_most(value: int, flag: str, limit: int, cost: str) -> int:
    """``value`` of the count ``flag``, refused (CliError, one line) above ``limit``, with
    what the count costs."""
    if value > limit:
        raise CliError(f"{flag} {value} is above the limit {limit:,} ({cost})")
    return value


def count(flag: str, limit: int, cost: str) -> Callable[[str], int]:
    """The argparse ``type`` of the count ``flag``: an integer, refused above ``limit`` (a
    usage error naming ``cost``) while the arguments are read, before any work. Lower
    bounds are the subcommand's."""

    def read(text: str) -> int:
        digits = text.strip().lstrip("+")
        if len(digits) > 40:  # never echoed whole, never parsed (Python's digit limit)
            shown = f"{digits[:20]!r}... ({len(text)} characters)"
            if digits.isdigit():
                raise argparse.ArgumentTypeError(
                    f"{flag} {shown} is above the limit {limit:,} ({cost})"
                )
            raise argparse.ArgumentTypeError(f"invalid int value: {shown}")
        value = int(text)  # ValueError: argparse's "invalid int value: 'x'"
        try:
            return check_at_most(value, flag, limit, cost)
        except CliError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    read.__name__ = "int"
    return read


def sweep_epsilons(text: str) -> list[float]:
    """``--epsilons`` of demo and compare: positive finite numbers, at most
    :data:`MAX_EPSILONS` of them (checked before any work)."""
    eps = list(dict.fromkeys(floats(text, "--epsilons")))  # a value listed twice runs once
    if len(eps) > MAX_EPSILONS:
        raise CliError(
            f"--epsilons lists {len(eps):,} values, above the limit {MAX_EPSILONS} "
            f"({EPSILONS_COST})"
        )
    return eps


def positive_count(value: int, flag: str) -> int:
    """A count argument that must be >= 1 (argparse has made it an int)."""
    if value < 1:
        raise CliError(f"{flag} must be a positive integer; got {value}")
    return value


def read_table(path: str):
    """A CSV (optionally gzipped) or Parquet file as a pandas DataFrame with at least one
    data row; an empty, undecodable or header-only file is a one-line error saying what to
    do."""
    import pandas as pd

    lower = path.lower()
    if lower.endswith(".parquet") or lower.endswith(".pq"):
        try:
            df = pd.read_parquet(path)
        except ImportError as err:
            raise CliError(f"reading Parquet needs pyarrow: {err}") from None
        except OSError:
            raise
        except Exception as err:  # pyarrow's errors on a damaged file
            raise CliError(f"cannot read {path} as Parquet: {one_line(str(err), 300)}") from None
    elif lower.endswith(".csv") or lower.endswith(".csv.gz"):
        df = _read_csv(pd, path)
    else:
        raise CliError(f"--data must be a .csv or .parquet file; got {path!r}")
    if len(df) == 0:
        raise CliError(f"{path} has a header but no data rows: give a file with one row per record")
    return df


def _read_csv(pd, path: str):
    try:  # only an empty cell is missing: "n/a", "NA" and "null" are values (a category)
        df = pd.read_csv(path, keep_default_na=False, na_values=[""])
        header = pd.read_csv(path, nrows=1, header=None, keep_default_na=False).iloc[0]
        twice = sorted({str(c) for c in header if list(header).count(c) > 1})
        if twice:  # pandas would rename the second one (a.1) and train on it silently
            raise CliError(f"{path} names the column(s) {twice} twice: give each column once")
        return df
    except (OSError, CliError):
        raise
    except pd.errors.EmptyDataError:
        raise CliError(
            f"{path} is empty: give a CSV with a header line (the column names) and one "
            "line per row"
        ) from None
    except UnicodeError as err:
        raise CliError(
            f"{path} is not UTF-8 text ({one_line(str(err), 300)}): save it as UTF-8 CSV"
        ) from None
    except (ValueError, EOFError) as err:  # unparsable, bad gzip
        raise CliError(f"cannot read {path} as CSV: {one_line(str(err), 300)}") from None


def missing_values(X, path: str, policy: str):
    """Feature columns with missing values under ``policy``: "refuse" (one line naming the
    columns, the first row of each and what to do) or "drop" (the complete rows, and how
    many were dropped: a statistic of the private rows, for the terminal only)."""
    missing = X.isna()
    counts = missing.sum()
    if not counts.any():
        return X, 0
    if policy == "drop":
        keep = ~missing.any(axis=1).to_numpy()
        return X[keep], int((~keep).sum())
    first = {c: int(missing[c].to_numpy().argmax()) + 1 for c in counts.index}
    where = [
        f"{one_line(str(c), 40)!r} ({int(n)}, first at data row {first[c]})"
        for c, n in counts.items()
        if n
    ]
    raise CliError(
        f"{path} has missing values in columns {', '.join(where[:5])}: impute them from public "
        "knowledge, or give --missing drop to train on the complete rows"
    )


def split_target(df, target: str, path: str):
    """(features, the ``target`` column) of a DataFrame read from ``path``; a target with
    missing values is refused (which rows, and what to do)."""
    if target not in df.columns:
        cols = ", ".join(one_line(repr(str(c)), 62) for c in list(df.columns)[:10])
        more = f", ... ({len(df.columns)} columns)" if len(df.columns) > 10 else ""
        raise CliError(f"column {one_line(target, 60)!r} is not in {path} (columns: {cols}{more})")
    y = df[target]
    missing = y.isna().to_numpy()
    if missing.any():
        rows = ", ".join(str(i + 1) for i in missing.nonzero()[0][:5])
        more = ", ..." if missing.sum() > 5 else ""
        raise CliError(
            f"column {target!r} of {path} has {int(missing.sum())} missing value(s) (data "
            f"row {rows}{more}): drop or fill those rows first"
        )
    return df.drop(columns=[target]), y


#: ``--threads`` of demo and compare: the threads of the whole run (not one fit's
#: ``n_jobs``, which is ``train --n-jobs``).
THREADS_HELP = (
    "the threads of the whole run: at most this many BLAS, OpenMP and Numba threads "
    "(default: the library's choice; see docs/guide.md on busy machines; at most "
    f"{MAX_THREADS:,})"
)

#: Epsilon above which a guarantee says little (e^20 ~ 5e8): legal, but warned.
LARGE_EPSILON = 20.0


def budget_warnings(epsilon: float, delta: float, n: int) -> list[str]:
    """Warnings for a legal but suspicious budget: delta >= 1/n (a release of one whole
    row at random meets it: Dwork & Roth 2014, Section 2.3) and epsilon > 20."""
    out = []
    if delta >= 1.0 / n:
        out.append(
            f"delta = {delta:g} is not below 1/n = {1.0 / n:.3g}: such a delta allows "
            "publishing a row outright; choose delta well below 1/n (e.g. 1/n^2 or 1e-6)"
        )
    if epsilon > LARGE_EPSILON:
        out.append(
            f"epsilon = {epsilon:g} is above {LARGE_EPSILON:g}: the guarantee (a factor "
            "e^epsilon on every probability) then says almost nothing; typical values are "
            "0.1 to 10"
        )
    return out


#: The library's words for a setting, and the command line's (messages are shared).
CLI_WORDS = (
    (re.compile(r"classes=\[\.\.\.\]"), "--classes a,b,..."),
    (re.compile(r"feature_bounds=\[\(lo, hi\), \.\.\.\]"), "--feature-bounds lo:hi,..."),
    (re.compile(r"save\(\.\.\., key=\.\.\.\)"), "--key-file FILE"),
    (re.compile(r"\bmax_iter=(\d+)"), r"--max-iter \1"),
    (re.compile(r"\bset max_iter\b"), "set --max-iter"),
    (re.compile(r"\b([a-z][a-z_]*)='auto'"), lambda m: f"--{m[1].replace('_', '-')} auto"),
    (re.compile(r"\bdeclare data_norm\b"), "declare --data-norm"),
    (re.compile(r"\bdata_norm=None\b"), "no --data-norm"),
    (re.compile(r"\bclasses=None\b"), "no --classes"),
    (
        re.compile(r"a bounded preprocessing step \(objpert\.preprocessing\)"),
        "--categories COLUMN=a,b,... with --feature-bounds by name",
    ),
    (re.compile(r"\bpass clip=True to scale them down to data_norm"), "leave out --no-clip"),
    (re.compile(r"\ba larger public data_norm\b"), "a larger public --data-norm"),
    (
        re.compile(r"\bThe '(\w+)' parameter of \w+ must be"),
        lambda m: f"--{m[1].replace('_', '-')} must be",
    ),
    (re.compile(r"\buse method='tight'"), "use --calibration tight"),
    (re.compile(r"\bn_max must be"), "--max-iter must be"),
    (
        re.compile(r"add them to categories or set handle_unknown='ignore' \(all-zero block\)"),
        "add them to train's --categories COLUMN=a,b,... and train again",
    ),
)


def cli_words(message: str) -> str:
    """``message`` with the library's names of settings replaced by their flags."""
    for pattern, flag in CLI_WORDS:
        message = pattern.sub(flag, message)
    return message


def warn(message: str) -> None:
    """One warning line on stderr (settings named by their flags)."""
    print(f"objpert: warning: {cli_words(' '.join(message.split()))}", file=sys.stderr)


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[None]:
    """At most ``threads`` BLAS/OpenMP threads (threadpoolctl) and Numba threads inside;
    None leaves them as they are. Numba's thread pool is capped only when it has been
    started (the engines sweep on their own threads): asking numba for its thread count
    would start it."""
    if threads is None:
        yield
        return
    positive_count(threads, "--threads")
    from threadpoolctl import threadpool_limits

    numba = sys.modules.get("numba")
    if numba is not None and not _numba_pool_started():
        numba = None
    before = numba.get_num_threads() if numba is not None else None
    if numba is not None:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with threadpool_limits(limits=threads):
            yield
    finally:
        if numba is not None and before is not None:
            numba.set_num_threads(before)


def _numba_pool_started() -> bool:
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return bool(getattr(parallel, "_is_initialized", True)) if parallel is not None else False


def warn_lines(caught: Iterable[warnings.WarningMessage]) -> None:
    """Each caught warning as one line on stderr."""
    for w in caught:
        warn(str(w.message))


#: objpert.persistence.MAX_BYTES (not imported: it loads scikit-learn).
MODEL_MAX_BYTES = 64 * 1024 * 1024
_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "kb": 1000, "mb": 1000**2}
_UNITS.update({"gb": 1000**3, "kib": 1024, "mib": 1024**2, "gib": 1024**3})


def byte_count(text: str) -> int:
    """``--max-bytes``: a positive number of bytes, optionally with a unit (``200MB``,
    ``1GiB``, ``65536``)."""
    t = text.strip().lower().replace("_", "")
    number = t.rstrip("kmgib")
    unit = t[len(number) :]
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"--max-bytes takes a number of bytes (e.g. 65536, 200MB, 1GiB); got {text[:40]!r}"
        ) from None
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(f"--max-bytes must be at least 1 byte; got {text[:40]!r}")
    return int(value)


def add_max_bytes_arg(p: argparse.ArgumentParser) -> None:
    """``--max-bytes``: the largest model file read (the library's ``max_bytes=``)."""
    p.add_argument(
        "--max-bytes",
        type=byte_count,
        default=MODEL_MAX_BYTES,
        metavar="BYTES",
        help="refuse a model file larger than this, unread (default: 64MiB; a saved model "
        "takes about 25 bytes per weight: 54 KB for 10 classes of 100 features)",
    )


def final_estimator(model: Any) -> Any:
    """The private estimator of a loaded model: the model, or a pipeline's last step."""
    return model[-1] if hasattr(model, "steps") else model


def read_model(
    path: str,
    key: bytes | None,
    max_bytes: int | None = None,
    *,
    ledgers: bool = False,
):
    """:func:`objpert.persistence.read` of a model file (an estimator's or a pipeline's),
    refusing one larger than ``max_bytes`` (None: the library's limit) before it is read,
    and a ledger file unless ``ledgers``."""
    from objpert.persistence import read

    loaded = read(path, key, max_bytes=MODEL_MAX_BYTES if max_bytes is None else max_bytes)
    from objpert.accounting._accountant import PrivacyAccountant

    if isinstance(loaded.model, PrivacyAccountant) and not ledgers:
        raise CliError(
            f"{path} is a privacy ledger (an accountant's file), not a model: objpert report "
            "reads it"
        )
    return loaded


def one_line(text: str, limit: int = 2000) -> str:
    """``text`` as one line for stderr: whitespace runs made one space, characters that
    are not printable escaped, at most ``limit`` characters (a message quoting a file's
    content)."""
    head = " ".join(text[: 4 * limit].split())
    head = "".join(c if c.isprintable() else repr(c)[1:-1] for c in head)
    if len(head) > limit or len(text) > 4 * limit:
        return f"{head[:limit]}... ({len(text)} characters)"
    return head


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
