"""Deprecated: moved to :mod:`objpert.apps.bench.dask_engine`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.bench import dask_engine as _moved
from objpert.apps.bench.dask_engine import *  # noqa: F403
from objpert.apps.bench.dask_engine import __all__ as _moved_all

FIXED_OVERHEAD_BAR_S = _moved.FIXED_OVERHEAD_THRESHOLD_S  # the threshold's former name

__all__ = [*_moved_all, "FIXED_OVERHEAD_BAR_S"]

warnings.warn(
    "objpert.bench.dask_engine is deprecated; import objpert.apps.bench.dask_engine instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
