"""Deprecated: moved to :mod:`objpert.apps.report`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps import report as _moved
from objpert.apps.report import *  # noqa: F403
from objpert.apps.report import __all__  # noqa: F401

warnings.warn(
    "objpert.report is deprecated; import objpert.apps.report instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
