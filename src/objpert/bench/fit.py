"""Deprecated: moved to :mod:`objpert.apps.bench.fit`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.bench import fit as _moved
from objpert.apps.bench.fit import *  # noqa: F403
from objpert.apps.bench.fit import __all__  # noqa: F401

warnings.warn(
    "objpert.bench.fit is deprecated; import objpert.apps.bench.fit instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
