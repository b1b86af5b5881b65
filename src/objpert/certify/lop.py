"""Deprecated: moved to :mod:`objpert.certify.peers.kifer`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports the
constants of Gaussian linear objective perturbation (Kifer, Smith & Thakurta 2012,
Theorem 2) from their new module.
"""

import warnings

from objpert.certify.peers import kifer as _moved
from objpert.certify.peers.kifer import *  # noqa: F403
from objpert.certify.peers.kifer import __all__  # noqa: F401

warnings.warn(
    "objpert.certify.lop is deprecated; import objpert.certify.peers.kifer "
    "(or objpert.certify.peers) instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str):
    """The moved module's other names."""
    return getattr(_moved, name)
