"""Deprecated alias of :mod:`objpert.engines.compiled` (use that module).

Reading or setting a public name here (``kernels.ENABLED = False``) reads or sets it in
:mod:`objpert.engines.compiled`.
"""

from __future__ import annotations

import sys
import types
import warnings
from typing import Any

from objpert.engines import compiled as _compiled

#: the public names, all read from and written to objpert.engines.compiled
_NAMES = (
    "ENABLED",
    "TILE_DOUBLES",
    "Kernel",
    "available",
    "batched_kernel",
    "derivative_kernel",
    "exp",
    "fused_kernel",
    "parallel_kernel",
    "warm",
)
__all__ = list(_NAMES)

warnings.warn(
    "objpert.engines.kernels is deprecated; use objpert.engines.compiled",
    DeprecationWarning,
    stacklevel=2,
)


class _Alias(types.ModuleType):
    """A module whose public names are those of :mod:`objpert.engines.compiled`."""

    def __getattr__(self, name: str) -> Any:
        if name in _NAMES:
            return getattr(_compiled, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _NAMES:
            setattr(_compiled, name, value)
        else:
            super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *_NAMES})


sys.modules[__name__].__class__ = _Alias
