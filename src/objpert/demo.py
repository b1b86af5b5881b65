"""Deprecated: moved to :mod:`objpert.apps.demo`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps import demo as _moved
from objpert.apps.demo import *  # noqa: F403
from objpert.apps.demo import __all__  # noqa: F401

warnings.warn(
    "objpert.demo is deprecated; import objpert.apps.demo instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
