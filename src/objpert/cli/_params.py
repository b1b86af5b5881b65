"""Command-line flags generated from the estimators' parameters.

Every parameter of ``get_params()`` becomes a flag (``max_iter`` -> ``--max-iter``)
whose help is the first sentence of its numpydoc description and whose default is the
estimator's own: a parameter added to an estimator gets its flag without any change here.
A flag's values are read by the parameter's documented type: ``None``, ``"auto"``, booleans
(``--clip/--no-clip``), integers, floats, ``{"a", "b"}`` choices, and a few parameters with
their own syntax (:data:`SPECIAL`).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from objpert.cli._common import (
    MAX_THREADS,
    MAX_TRAIN_ITERATIONS,
    THREADS_COST,
    TRAIN_ITERATIONS_COST,
    check_at_most,
    one_line,
)
from objpert.exceptions import CliError

__all__ = [
    "COUNT_LIMITS",
    "ParamDoc",
    "add_estimator_args",
    "estimator_kwargs",
    "flag_for",
    "parameter_docs",
    "parse_feature_bounds",
    "value_reader",
]

_HEADING = re.compile(r"^\s*Parameters\s*\n\s*-{3,}\s*\n", re.M)
_SECTION_END = re.compile(r"\n\s*\n\s*[A-Z][A-Za-z ]+\n\s*-{3,}\s*\n")
_ENTRY = re.compile(r"^(?P<indent> *)(?P<names>\w+(?:, *\w+)*)(?: *: *(?P<type>.*))?$")
_SEE_OTHER = re.compile(r"^As in ", re.I)


@dataclass(frozen=True)
class ParamDoc:
    """One numpydoc entry: the parameter's documented type and its description."""

    name: str
    type: str
    description: str

    @property
    def summary(self) -> str:
        """The description without reST markup; its first sentence when it is long."""
        text = re.sub(r":\w+:`~?([^`]*)`", r"\1", self.description).replace("``", "")
        if len(text) > 200:
            text = re.split(r"(?<=[.)])\s+(?=[A-Z(\"])", text, maxsplit=1)[0]
        return text.rstrip(".")


def parameter_docs(cls: type) -> dict[str, ParamDoc]:
    """The numpydoc "Parameters" entries of ``cls`` (entries saying "As in ..." skipped)."""
    doc = inspect.getdoc(cls) or ""
    head = _HEADING.search(doc)
    if head is None:
        return {}
    body = doc[head.end() :]
    end = _SECTION_END.search(body)
    lines = (body[: end.start()] if end else body).splitlines()
    base = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    out: dict[str, ParamDoc] = {}
    names: list[str] = []
    kind, text = "", []

    def flush() -> None:
        description = " ".join(text).strip()
        if names and not _SEE_OTHER.match(description):
            for name in names:
                out[name] = ParamDoc(name, kind, description)

    for line in lines:
        match = _ENTRY.match(line)
        if match and len(match["indent"]) == base and line.strip():
            flush()
            names = [s.strip() for s in match["names"].split(",")]
            kind, text = (match["type"] or "").strip(), []
        elif line.strip():
            text.append(line.strip())
    flush()
    return out


_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


def value_reader(name: str, default: Any, kind: str) -> Callable[[str], Any]:
    """The reader of a flag's text by the parameter's documented type ``kind`` and default:
    ``none``, ``auto``, booleans, integers, floats, else the text itself."""
    lowered = kind.lower()
    allow_none = default is None or "none" in lowered
    allow_auto = "auto" in lowered or default == "auto"
    allow_bool = "bool" in lowered
    integer = lowered.startswith("int") or (
        isinstance(default, int) and not isinstance(default, bool) and "float" not in lowered
    )
    real = "float" in lowered or isinstance(default, float)
    flag = flag_for(name)

    def read(text: str) -> Any:
        t = text.strip().lower()
        if allow_none and t == "none":
            return None
        if allow_auto and t == "auto":
            return "auto"
        if allow_bool and t in _TRUE + _FALSE:
            return t in _TRUE
        if integer or real:
            try:
                value = int(t) if integer and re.fullmatch(r"[+-]?\d+", t) else float(t)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"{flag} takes {kind or 'a number'}; got {text!r}"
                ) from None
            if isinstance(value, float) and not math.isfinite(value):
                raise argparse.ArgumentTypeError(f"{flag} must be finite; got {text!r}")
            if integer and not real and isinstance(value, float):
                raise argparse.ArgumentTypeError(f"{flag} takes an integer; got {text!r}")
            return value
        if allow_bool or allow_auto:  # a closed set of words, and no number
            raise argparse.ArgumentTypeError(f"{flag} takes {kind}; got {text!r}")
        return text

    read.__name__ = kind or "value"  # argparse names the type in its messages
    return read


def parse_feature_bounds(text: str) -> list[tuple[float, float]] | dict[str, tuple[float, float]]:
    """``--feature-bounds``: ``"lo:hi,lo:hi,..."`` (one pair per feature column),
    ``"name=lo:hi,..."`` (by column name: a dict) or a file: JSON (a list of [lo, hi]
    pairs) or CSV/text (one ``lo,hi`` or ``lo:hi`` line per feature; a header line is
    skipped)."""
    from pathlib import Path

    items = [p.strip() for p in text.split(",") if p.strip()]
    if items and all("=" in p for p in items):  # by name
        named = {}
        for item in items:
            name, _, pair = item.rpartition("=")
            if not name or name in named:
                raise argparse.ArgumentTypeError(
                    f"--feature-bounds: {one_line(repr(item), 80)} needs one column name=lo:hi "
                    "per column, each once"
                )
            named[name] = parse_feature_bounds(pair)[0]
        return named

    path = Path(text)
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # a name too long for a path, a NUL byte
        is_file = False
    if ":" not in text or is_file:
        try:
            body = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError, ValueError) as err:  # ValueError: a NUL in the name
            raise argparse.ArgumentTypeError(
                f"--feature-bounds: {text!r} is neither 'lo:hi,lo:hi,...' nor a readable "
                f"file ({err})"
            ) from None
        if text.lower().endswith(".json"):
            try:
                pairs = [tuple(p) for p in json.loads(body)]
            except (ValueError, TypeError) as err:
                raise argparse.ArgumentTypeError(f"--feature-bounds {text}: {err}") from None
        else:
            rows = [r.replace(":", ",").split(",") for r in body.splitlines() if r.strip()]
            if rows and not _numbers(rows[0]):
                rows = rows[1:]  # a header
            pairs = [tuple(r) for r in rows]
    else:
        pairs = [tuple(p.split(":")) for p in text.split(",") if p.strip()]
    out = []
    for pair in pairs:
        values = _numbers(list(pair))
        if values is None or len(values) != 2 or not values[0] < values[1]:
            raise argparse.ArgumentTypeError(
                "--feature-bounds: each feature needs finite numbers lo < hi; got "
                f"{one_line(repr(pair), 80)}"
            )
        out.append((values[0], values[1]))
    if not out:
        raise argparse.ArgumentTypeError(f"--feature-bounds lists no bound; got {text!r}")
    return out


def _numbers(items: Sequence[Any]) -> list[float] | None:
    try:
        values = [float(str(v).strip()) for v in items]
    except ValueError:
        return None
    return values if all(math.isfinite(v) for v in values) else None


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(
            f"--seed takes a non-negative integer; got {one_line(repr(text), 40)}"
        )
    return seed


_seed.__name__ = "INT"

#: Parameters with their own flag name, reader or help: name -> (flag, reader, help). One
#: flag per parameter: the command line has no second name for a quantity.
SPECIAL: dict[str, tuple[str, Callable[[str], Any] | None, str | None]] = {
    "random_state": (
        "--seed",
        _seed,
        "an integer seed makes the noise reproducible by anyone who knows it: for tests "
        "only (default: OS entropy)",
    ),
    "n_jobs": ("--n-jobs", int, None),
    "feature_bounds": ("--feature-bounds", parse_feature_bounds, None),
}


def flag_for(name: str) -> str:
    """The one flag of the estimator parameter ``name`` (``max_iter`` -> ``--max-iter``)."""
    special = SPECIAL.get(name)
    return special[0] if special else "--" + name.replace("_", "-")


#: Count parameters refused above a limit while the arguments are read (before any work):
#: name -> (limit, what the count costs).
COUNT_LIMITS: dict[str, tuple[int, str]] = {
    "max_iter": (MAX_TRAIN_ITERATIONS, TRAIN_ITERATIONS_COST),
    "n_jobs": (MAX_THREADS, THREADS_COST),
}


def _bounded(read: Callable[[str], Any], flag: str, limit: int, cost: str) -> Callable[[str], Any]:
    """``read``, its integer results above ``limit`` refused (a usage error naming
    ``cost``)."""

    def bounded(text: str) -> Any:
        value = read(text)
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                check_at_most(value, flag, limit, cost)
            except CliError as err:
                raise argparse.ArgumentTypeError(str(err)) from None
        return value

    bounded.__name__ = getattr(read, "__name__", "value")
    return bounded


def _as_argument_reader(fn: Callable[[str], Any]) -> Callable[[str], Any]:
    """``fn`` whose one-line errors argparse prints as they are (not "invalid value")."""

    def read(text: str) -> Any:
        try:
            return fn(text)
        except (CliError, ValueError) as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    read.__name__ = getattr(fn, "__name__", "value")
    return read


def _choices(kind: str) -> list[str] | None:
    match = re.match(r"\{([^}]*)\}", kind)
    if not match:
        return None
    return [c.strip().strip("'\"") for c in match[1].split(",") if c.strip()]


def add_estimator_args(
    p: argparse.ArgumentParser,
    classes: dict[str, type],
    skip: Sequence[str] = (),
    required: Sequence[str] = (),
    readers: dict[str, Callable[[str], Any]] | None = None,
) -> list[str]:
    """A flag for every parameter of the estimators ``classes`` (their label -> class,
    e.g. ``{"logistic": PrivateLogisticRegression}``) but ``skip``; returns the names.

    Flags default to "not given" (the estimator's default, shown in the help, applies);
    a parameter of only some classes says so in its help. ``readers`` overrides how a
    parameter's text is read."""
    readers = readers or {}
    docs: dict[str, ParamDoc] = {}
    defaults: dict[str, Any] = {}
    owners: dict[str, list[str]] = {}
    for label, cls in classes.items():
        for name, doc in parameter_docs(cls).items():
            docs.setdefault(name, doc)
        for name, value in cls().get_params(deep=False).items():
            defaults.setdefault(name, value)
            owners.setdefault(name, []).append(label)
    added = []
    for name in sorted(defaults, key=lambda n: (n not in required, n)):
        if name in skip:
            continue
        doc = docs.get(name, ParamDoc(name, "", ""))
        _, reader, help_text = SPECIAL.get(name, (None, None, None))
        flag = flag_for(name)
        help_text = (help_text or doc.summary or name.replace("_", " ")).replace("%", "%%")
        if len(owners[name]) < len(classes):
            help_text += f" (--loss {'/'.join(owners[name])} only)"
        default = defaults[name]
        kwargs: dict[str, Any] = {"dest": "param_" + name, "default": argparse.SUPPRESS}
        if name in required:
            kwargs["required"] = True
        elif "(default" not in help_text:
            help_text += f" (default: {default!r})" if default is not None else " (default: None)"
        choices = _choices(doc.type)
        if name in readers:
            kwargs["type"] = _as_argument_reader(readers[name])
        elif isinstance(default, bool) and not reader:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif choices and not reader:
            kwargs["choices"] = choices
        else:
            kwargs["type"] = reader or value_reader(name, default, doc.type)
        if name in COUNT_LIMITS and "type" in kwargs:
            kwargs["type"] = _bounded(kwargs["type"], flag, *COUNT_LIMITS[name])
            help_text += f" (at most {COUNT_LIMITS[name][0]:,})"
        if "action" not in kwargs:
            kwargs["metavar"] = "INT" if name == "random_state" else _metavar(doc.type, choices)
        p.add_argument(flag, help=help_text, **kwargs)
        added.append(name)
    return added


def _metavar(kind: str, choices: list[str] | None) -> str:
    """``'"auto" or float > 0'`` -> ``auto|FLOAT``; choices as ``{a,b}``."""
    if choices:
        return "{" + ",".join(choices) + "}"
    words = []
    kind = re.sub(r",?\s*default\s*=.*$", "", re.sub(r"\([^)]*\)", "", kind))
    for part in re.split(r"\s+or\s+|,\s*", kind.strip()):
        word = re.split(r"[ (]", part.strip(), maxsplit=1)[0]
        if word.startswith('"'):
            words.append(word.strip('"'))
        elif word and word.lower() != "none":
            words.append(word.upper())
    return "|".join(dict.fromkeys(words)) or "VALUE"


def estimator_kwargs(args: argparse.Namespace, cls: type, label: str) -> dict[str, Any]:
    """The parameters given on the command line for ``cls`` (named ``label`` in messages);
    a flag that ``cls`` does not take is a usage error."""
    params = set(cls().get_params(deep=False))
    given = {k: v for k, v in vars(args).items() if k.startswith("param_")}
    out = {}
    for key, value in given.items():
        name = key[len("param_") :]
        if name not in params:
            raise CliError(f"{flag_for(name)} does not apply to --loss {label}")
        out[name] = value
    return out
