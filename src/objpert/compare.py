"""Deprecated: moved to :mod:`objpert.apps.compare`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps import compare as _moved
from objpert.apps.compare import *  # noqa: F403
from objpert.apps.compare import __all__  # noqa: F401

warnings.warn(
    "objpert.compare is deprecated; import objpert.apps.compare instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
