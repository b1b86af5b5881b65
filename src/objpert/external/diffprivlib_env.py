"""Deprecated: moved to :mod:`objpert.apps.external.diffprivlib_env`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.external import diffprivlib_env as _moved
from objpert.apps.external.diffprivlib_env import *  # noqa: F403
from objpert.apps.external.diffprivlib_env import __all__  # noqa: F401

warnings.warn(
    "objpert.external.diffprivlib_env is deprecated; "
    "import objpert.apps.external.diffprivlib_env instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
