"""Deprecated: moved to :mod:`objpert.apps.reproduce`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps import reproduce as _moved
from objpert.apps.reproduce import *  # noqa: F403
from objpert.apps.reproduce import __all__  # noqa: F401

warnings.warn(
    "objpert.reproduce is deprecated; import objpert.apps.reproduce instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
