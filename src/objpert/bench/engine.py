"""Deprecated: moved to :mod:`objpert.apps.bench.engine`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports
everything the new module defines.
"""

import warnings

from objpert.apps.bench import engine as _moved
from objpert.apps.bench.engine import *  # noqa: F403
from objpert.apps.bench.engine import __all__ as _moved_all

# the thresholds' former names
BATCHED_BAR = _moved.BATCHED_THRESHOLD
DENSE_OVER_STREAM_BAR = _moved.DENSE_OVER_STREAM_THRESHOLD
SPARSE_BAR = _moved.SPARSE_THRESHOLD
TWO_PASS_SPEEDUP_BAR = _moved.TWO_PASS_SPEEDUP_THRESHOLD

__all__ = [
    *_moved_all,
    "BATCHED_BAR",
    "DENSE_OVER_STREAM_BAR",
    "SPARSE_BAR",
    "TWO_PASS_SPEEDUP_BAR",
]

warnings.warn(
    "objpert.bench.engine is deprecated; import objpert.apps.bench.engine instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names (its private helpers included)."""
    return getattr(_moved, name)
