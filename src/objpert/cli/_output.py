"""What the ``objpert`` command prints: JSON for scripts, tables for people.

Tables, spinners and progress bars use rich when it is installed (the ``cli`` extra).
Without it, tables print as aligned plain text (rich's markup such as ``[bold red]`` is
dropped) and spinners and progress bars are skipped: the command's output is otherwise
the same. Every subcommand prints through :func:`emit`, :func:`console` and
:func:`kv_table`, so the choice is made here once.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = [
    "PIPE_WIDTH",
    "RICH",
    "PlainConsole",
    "PlainTable",
    "console",
    "emit",
    "fmt",
    "kv_table",
    "new_table",
    "progress",
    "status",
    "strip_markup",
    "table_type",
]


def _rich_installed() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


#: Whether rich is installed; read at every call (a test may switch it off).
RICH: bool = _rich_installed()

#: Width of the tables when stdout is not a terminal (a pipe or a file).
PIPE_WIDTH = 160

_MARKUP = re.compile(
    r"\[/?(?:(?:bold|dim|italic|underline|reverse|not|red|green|yellow|blue|magenta|cyan"
    r"|white|black)\s*)*\]"
)


def strip_markup(text: str) -> str:
    """``text`` without rich's style tags (``[bold red]NO[/]`` -> ``NO``)."""
    return _MARKUP.sub("", text)


def fmt(value: Any) -> str:
    """A number as the tables print it: 10 significant digits in [1e-4, 1e6), else
    scientific with 7; anything else as ``str``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value):
            return str(value)
        return f"{value:.10g}" if 1e-4 <= abs(value) < 1e6 else f"{value:.6e}"
    return str(value)


class PlainTable:
    """The part of ``rich.table.Table`` the command uses, printed as aligned plain text:
    the title, the header, a rule, the rows (a rule after a row added with
    ``end_section=True``) and the caption."""

    def __init__(
        self,
        *headers: str,
        title: str | None = None,
        caption: str | None = None,
        show_header: bool = True,
        **_style: Any,
    ) -> None:
        self.title = title
        self.caption = caption
        self.show_header = show_header
        self.columns: list[str] = []
        self.justify: list[str] = []
        self.rows: list[list[str]] = []
        self.sections: set[int] = set()  # rows followed by a rule
        for h in headers:
            self.add_column(h)

    def add_column(self, header: str = "", *, justify: str = "left", **_style: Any) -> None:
        self.columns.append(str(header))
        self.justify.append(justify)

    def add_row(self, *cells: Any, end_section: bool = False, **_style: Any) -> None:
        row = [" ".join(strip_markup("" if c is None else str(c)).split()) for c in cells]
        self.rows.append(row + [""] * (len(self.columns) - len(row)))
        if end_section:
            self.sections.add(len(self.rows) - 1)

    def render(self) -> str:
        """The table as lines of text (no trailing newline)."""
        header = [strip_markup(c) for c in self.columns]
        widths = [len(h) if self.show_header else 0 for h in header]
        for row in self.rows:
            widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]

        def line(cells: Sequence[str]) -> str:
            out = [
                c.rjust(w) if j == "right" else c.center(w) if j == "center" else c.ljust(w)
                for c, w, j in zip(cells, widths, self.justify, strict=False)
            ]
            return "  ".join(out).rstrip()

        rule = "  ".join("-" * w for w in widths)
        lines = [strip_markup(self.title)] if self.title else []
        if self.show_header:
            lines += [line(header), rule]
        for k, row in enumerate(self.rows):
            lines.append(line(row))
            if k in self.sections and k != len(self.rows) - 1:
                lines.append(rule)
        if self.caption:
            lines.append(strip_markup(self.caption))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.render()


class PlainConsole:
    """The part of ``rich.console.Console`` the command uses, without rich: ``print``
    writes tables as aligned text and strings without markup; ``status`` shows nothing."""

    def __init__(self, stderr: bool = False, file: TextIO | None = None, **_style: Any) -> None:
        self._file = file
        self._stderr = stderr

    @property
    def file(self) -> TextIO:
        if self._file is not None:
            return self._file
        return sys.stderr if self._stderr else sys.stdout

    def print(self, *objects: Any, **_style: Any) -> None:
        parts = [str(o) if isinstance(o, PlainTable) else strip_markup(str(o)) for o in objects]
        print(*parts, file=self.file)

    @contextmanager
    def status(self, message: str, **_style: Any) -> Iterator[PlainConsole]:
        yield self

    def update(self, *args: Any, **kwargs: Any) -> None:
        """What a spinner's ``update`` does here: nothing."""


def table_type() -> type:
    """``rich.table.Table`` when rich is installed, else :class:`PlainTable` (the same
    calls: ``Table(title=...)``, ``add_column(header, justify=...)``, ``add_row(*cells)``)."""
    if RICH:
        from rich.table import Table

        return Table
    return PlainTable


def new_table(title: str | None = None, **options: Any) -> Any:
    """A table of :func:`table_type`."""
    return table_type()(title=title, **options)


def kv_table(title: str, rows: dict[str, Any]) -> Any:
    """A two-column table (quantity, value) of the scalar entries of ``rows``."""
    table = new_table(title, show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    for k, v in rows.items():
        if isinstance(v, dict | list | tuple):
            continue
        table.add_row(k, fmt(v))
    return table


def console(stderr: bool = False, width: int | None = None) -> Any:
    """A console on stdout (or stderr); when it is not a terminal, tables are laid out
    ``width`` characters wide (default :data:`PIPE_WIDTH`)."""
    if not RICH:
        return PlainConsole(stderr=stderr)
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=width or PIPE_WIDTH)


def emit(args: argparse.Namespace, payload: dict, tables: Sequence[Any]) -> None:
    """``payload`` as JSON with ``--json``, else the tables on stdout."""
    if args.json:
        print(json.dumps(payload, indent=2))
        return
    out = console()
    for t in tables:
        out.print(t)


@contextmanager
def status(message: str) -> Iterator[Any]:
    """A spinner on stderr while the block runs (nothing without rich); the object yielded
    has ``update(message)``."""
    if not RICH:
        yield PlainConsole(stderr=True)
        return
    from rich.console import Console

    with Console(stderr=True).status(message) as spinner:
        yield spinner


@contextmanager
def progress(description: str, total: int, disable: bool = False) -> Iterator[Callable[..., None]]:
    """A transient progress bar on stderr (only on a terminal, never without rich or when
    ``disable``); yields ``advance(k=1)``."""
    if not RICH or disable or not sys.stderr.isatty():
        yield lambda k=1: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda k=1: bar.advance(task, k)
