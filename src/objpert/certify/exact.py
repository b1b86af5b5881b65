"""Deprecated: renamed :mod:`objpert.certify.theorem_c13` (Theorem C.13 of Watkins & Arora
2026; "exact" also names a truncation and, formerly, a Gaussian calibration).

Kept for one release: importing it warns (DeprecationWarning) and re-exports everything
the new module defines. ``from objpert.certify import exact`` gives the new module itself,
without a warning.
"""

import warnings

from objpert.certify import theorem_c13 as _moved
from objpert.certify.theorem_c13 import *  # noqa: F403
from objpert.certify.theorem_c13 import __all__  # noqa: F401

warnings.warn(
    "objpert.certify.exact is deprecated; import objpert.certify.theorem_c13 instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The renamed module's other names (its private helpers included)."""
    return getattr(_moved, name)
