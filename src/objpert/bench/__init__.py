"""Deprecated: moved to :mod:`objpert.apps.bench`.

Kept for one release: importing it warns (DeprecationWarning) and re-exports the new
package; the old paths of its submodules (``.common``, ``.dask_engine``, ``.engine``,
``.fit``, ``.runner``) still import, each warning too.
"""

import warnings

from objpert.apps.bench import *  # noqa: F403
from objpert.apps.bench import __all__  # noqa: F401

warnings.warn(
    "objpert.bench is deprecated; import objpert.apps.bench instead",
    DeprecationWarning,
    stacklevel=2,
)
