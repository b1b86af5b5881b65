"""Deprecated: moved to :mod:`objpert.apps.bench.common`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.bench import common as _moved
from objpert.apps.bench.common import *  # noqa: F403
from objpert.apps.bench.common import __all__  # noqa: F401

warnings.warn(
    "objpert.bench.common is deprecated; import objpert.apps.bench.common instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
