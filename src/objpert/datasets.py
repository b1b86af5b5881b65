"""Deprecated: moved to :mod:`objpert.apps.datasets`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps import datasets as _moved
from objpert.apps.datasets import *  # noqa: F403
from objpert.apps.datasets import __all__  # noqa: F401

warnings.warn(
    "objpert.datasets is deprecated; import objpert.apps.datasets instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
