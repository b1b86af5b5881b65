"""Deprecated: moved to :mod:`objpert.apps.external.diffprivlib_runner`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.external import diffprivlib_runner as _moved
from objpert.apps.external.diffprivlib_runner import *  # noqa: F403
from objpert.apps.external.diffprivlib_runner import __all__  # noqa: F401

warnings.warn(
    "objpert.external.diffprivlib_runner is deprecated; "
    "import objpert.apps.external.diffprivlib_runner instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
