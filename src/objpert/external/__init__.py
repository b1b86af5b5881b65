"""Deprecated: moved to :mod:`objpert.apps.external`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports the new
package; the old paths of its submodules (``.diffprivlib_env``, ``.diffprivlib_runner``)
still import, each warning too.
"""

import warnings

from objpert.apps.external import *  # noqa: F403
from objpert.apps.external import __all__  # noqa: F401

warnings.warn(
    "objpert.external is deprecated; import objpert.apps.external instead",
    DeprecationWarning,
    stacklevel=2,
)
