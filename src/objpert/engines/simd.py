"""Deprecated alias of :mod:`objpert.engines.compiled.simd` (use that module)."""

from __future__ import annotations

import warnings

from objpert.engines.compiled.simd import accumulate_block, logistic_block, margins_block

__all__ = ["accumulate_block", "logistic_block", "margins_block"]

warnings.warn(
    "objpert.engines.simd is deprecated; use objpert.engines.compiled (compiled.simd)",
    DeprecationWarning,
    stacklevel=2,
)
