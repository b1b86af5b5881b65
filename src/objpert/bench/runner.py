"""Deprecated: moved to :mod:`objpert.apps.bench.runner`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.bench import runner as _moved
from objpert.apps.bench.runner import *  # noqa: F403
from objpert.apps.bench.runner import __all__ as _moved_all
from objpert.cli.bench import add_parser as register  # the command moved to objpert.cli.bench
from objpert.cli.bench import cmd_bench

__all__ = [*_moved_all, "cmd_bench", "register"]

warnings.warn(
    "objpert.bench.runner is deprecated; import objpert.apps.bench.runner instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
