"""Deprecated: moved to :mod:`objpert.apps.plots`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps import plots as _moved
from objpert.apps.plots import *  # noqa: F403
from objpert.apps.plots import __all__  # noqa: F401

warnings.warn(
    "objpert.plots is deprecated; import objpert.apps.plots instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
