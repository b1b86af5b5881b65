"""Shared fixtures of the test suite."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """The engine's compiled kernels, compiled (or loaded from numba's disk cache) once
    before the first test, so that no single test pays the compile; ``None`` without
    numba."""
    from objpert.engines import compiled

    return compiled.warm()
