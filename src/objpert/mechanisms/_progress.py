"""The progress bar of the iterative releases, shared by every mechanism that runs steps.

``verbose="auto"`` (the estimators' default; ``None`` means the same) shows a bar on
stderr when stderr is a terminal, the code is not running in a notebook, and the run is
long: at least :data:`LONG_WORK` multiply-adds of feature sweeps (about 2 s on one core) or,
when that is unknown, :data:`LONG_RUN` steps. ``verbose=True`` always shows it (notebooks
and pipes included), ``False`` never. The bar is drawn by ``rich`` when it is installed (the
``cli`` extra); without rich, nothing is shown. The bar never changes what is computed, and
it shows the step count only (public: fixed by the plan).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from objpert.exceptions import ParameterError

__all__ = [
    "LONG_RUN",
    "LONG_WORK",
    "VERBOSE",
    "check_verbose",
    "in_notebook",
    "show_progress",
    "spinner",
    "step_progress",
    "sweep_work",
]

#: Iterations from which a run of unknown size counts as long.
LONG_RUN = 2000

#: Multiply-adds (steps x draws x stored entries of X) from which a run counts as long:
#: two sweeps of X per step at ~2e9 multiply-adds per second on one core is ~2 s.
LONG_WORK = 2 * 10**9

#: The accepted values of ``verbose``.
VERBOSE = ("auto", True, False, None)


def check_verbose(verbose: Any) -> bool | str:
    """``verbose`` as True, False or "auto" (None is "auto"); anything else is a
    :class:`~objpert.exceptions.ParameterError`."""
    if verbose is None or (isinstance(verbose, str) and verbose == "auto"):
        return "auto"
    if verbose is True or verbose is False or type(verbose).__name__ == "bool_":
        return bool(verbose)
    raise ParameterError(f"verbose must be 'auto', True or False; got {verbose!r}")


def in_notebook() -> bool:
    """Whether the code runs in a Jupyter kernel (an IPython ZMQ shell)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def sweep_work(X: Any, iterations: int, draws: int = 1) -> int | None:
    """Multiply-adds of a run: iterations x draws x the stored entries of X (its nonzeros
    when sparse); None when X has no shape."""
    nnz = getattr(X, "nnz", None)
    shape = getattr(X, "shape", None)
    if nnz is None and (shape is None or len(shape) != 2):
        return None
    entries = int(nnz) if nnz is not None else int(shape[0]) * int(shape[1])
    return int(iterations) * int(draws) * entries


def show_progress(verbose: Any, iterations: int, work: int | None = None) -> bool:
    """Whether to show a bar: ``verbose`` if True or False; for "auto" (or None), on a
    terminal outside notebooks for a long run (``work`` multiply-adds if known, else the
    ``iterations``)."""
    verbose = check_verbose(verbose)
    if verbose != "auto":
        return bool(verbose)
    long = work >= LONG_WORK if work is not None else iterations >= LONG_RUN
    return long and sys.stderr.isatty() and not in_notebook()


@contextlib.contextmanager
def step_progress(
    description: str, total: int, verbose: Any, work: int | None = None
) -> Iterator[Callable]:
    """A context giving ``tick(k)``, to call after step k (0-based) of ``total``; the bar
    (on stderr) is redrawn about 200 times per run."""
    if not show_progress(verbose, total, work):
        yield lambda k: None
        return
    try:
        from rich.console import Console
        from rich.progress import Progress
    except ImportError:
        yield lambda k: None
        return
    every = max(1, total // 200)
    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)

        def tick(k: int) -> None:
            if (k + 1) % every == 0:
                bar.update(task, completed=k + 1)

        yield tick


@contextlib.contextmanager
def spinner(description: str, show: bool) -> Iterator[None]:
    """A transient spinner with the elapsed time on stderr (when ``show`` and rich is
    installed), for work whose length must not be shown (a hidden run count)."""
    if not show:
        yield
        return
    try:
        from rich.console import Console
    except ImportError:
        yield
        return
    with Console(stderr=True).status(description):
        yield
