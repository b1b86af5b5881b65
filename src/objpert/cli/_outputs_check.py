"""Where a subcommand writes, checked before it does any work: each subcommand declares
its output flags (:class:`Output`, in its parser's ``outputs`` default) and
:func:`refuse_unwritable` checks them all once the arguments are read."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from objpert.exceptions import CliError

__all__ = ["Output", "check_output", "refuse_unwritable", "refuse_unwritable_folder"]


@dataclass(frozen=True)
class Output:
    """An output flag of a subcommand: the argument ``dest`` (flag ``--dest``), the
    ``inputs`` (dests of input files it must not be), ``plot`` (a matplotlib format), and
    ``files``: for a folder flag, the files written into it."""

    dest: str
    inputs: tuple[str, ...] = ()
    plot: bool = False
    files: tuple[str, ...] = ()


def refuse_unwritable(args: argparse.Namespace, argv: Sequence[str] = ()) -> None:
    """Every output of the subcommand checked (:func:`check_output`); a folder flag is
    created first. Besides the inputs each output names, any existing file named more
    than once on the command line ``argv`` (as an output and as something else, e.g. a
    bounds file) is an input it must not overwrite."""
    named = [t for token in argv for t in (token, token.partition("=")[2]) if t]
    for out in getattr(args, "outputs", ()):
        path = getattr(args, out.dest, None)
        if not path:
            continue
        flag = "--" + out.dest.replace("_", "-")
        if out.files:
            refuse_unwritable_folder(path, flag, out.files)
            continue
        sources = [getattr(args, i, None) for i in out.inputs]
        if Path(path).is_file():  # the same file named twice: once as the output
            same = [t for t in named if _is_file(t) and os.path.samefile(t, path)]
            sources += same[1:]
        _refuse([path], flag, sources, out.plot)


def refuse_unwritable_folder(path: str, flag: str, files: Iterable[str]) -> None:
    """A folder output ``flag`` of the ``files`` written into it: the folder created (with
    its parents), then each file checked (:func:`check_output`; a PNG as a plot)."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"{flag} {path} cannot be a folder ({exc.strerror or exc})") from None
    _refuse([str(Path(path) / name) for name in files], flag, (), False)


def _refuse(targets: list[str], flag: str, sources: Iterable[str | None], plot: bool) -> None:
    for target in targets:
        check_output(target, flag, inputs=sources, plot=plot or target.endswith(".png"))


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long for a path, a NUL byte
        return False


def check_output(
    path: str, flag: str, *, inputs: Iterable[str | None] = (), plot: bool = False
) -> None:
    """Refuse, before any work, an output path that cannot take the file (``flag`` names
    it): a missing or unwritable directory, a directory, something other than a regular
    file (a device or a FIFO would be replaced or block), one of the command's ``inputs``
    (it would be overwritten), or with ``plot`` a format matplotlib cannot write."""
    out = Path(path)
    parent = out.parent
    if not parent.is_dir():
        raise CliError(f"{flag} {path}: the directory {str(parent)!r} does not exist")
    if out.is_dir():
        raise CliError(f"{flag} {path} is a directory, not a file name")
    if out.exists() and not out.is_file():
        raise CliError(f"{flag} {path} is not a regular file (a device, a FIFO or a socket)")
    for source in inputs:
        same = source is not None and out.exists() and Path(source).exists()
        if same and os.path.samefile(out, source):
            raise CliError(f"{flag} {path} is an input of this command ({source})")
    if plot:
        from matplotlib.figure import Figure

        formats = Figure().canvas.get_supported_filetypes()
        suffix = out.suffix.lstrip(".").lower()
        if suffix not in formats:
            raise CliError(
                f"{flag} {path}: give a file name ending in one of "
                f"{', '.join('.' + f for f in sorted(formats))}"
            )
    try:  # the file is written as a temporary one in its directory, then renamed
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise CliError(f"{flag} {path} cannot be written ({exc.strerror or exc})") from None
