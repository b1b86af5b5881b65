"""The progress bar of the iterative releases (one shared helper).

A bar shows on a terminal for long runs (``verbose=None``) or when asked
(``verbose=True``), through ``rich`` when it is installed (the ``cli`` extra); without
rich, nothing is shown. The bar never changes what is computed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

__all__ = ["LONG_RUN", "show_progress", "step_progress"]

#: Iterations from which a run counts as long (a bar shows on a terminal by default).
LONG_RUN = 2000


def show_progress(verbose: bool | None, iterations: int) -> bool:
    """Whether to show a bar: ``verbose`` if given, else for long runs on a terminal."""
    if verbose is None:
        return iterations >= LONG_RUN and sys.stderr.isatty()
    return bool(verbose)


@contextlib.contextmanager
def step_progress(description: str, total: int, verbose: bool | None) -> Iterator[Callable]:
    """A context giving ``tick(k)``, to call after step k (0-based) of ``total``; the bar
    is redrawn about 200 times per run."""
    if not show_progress(verbose, total):
        yield lambda k: None
        return
    try:
        from rich.progress import Progress
    except ImportError:
        yield lambda k: None
        return
    every = max(1, total // 200)
    with Progress(transient=True) as bar:
        task = bar.add_task(description, total=total)

        def tick(k: int) -> None:
            if (k + 1) % every == 0:
                bar.update(task, completed=k + 1)

        yield tick
