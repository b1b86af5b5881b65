"""Shared fixtures of the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _compile_shared(locks: Path) -> None:
    """Compile the engine's kernels into numba's disk cache, sharing the work with the other
    test workers: each starts at its own place in the list and compiles a kernel under a
    file lock, so a kernel another worker has compiled is loaded from the cache instead of
    compiled twice (on a fresh checkout every worker would otherwise compile them all)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: each worker compiles its own
        return
    if worker is None:  # one process: warm() compiles them
        return
    from objpert._engines import compiled
    from objpert._engines.compiled import build

    kernels = build.kernel_set(compiled.BACKEND) if compiled.ENABLED else None
    if kernels is None or kernels.backend != "numba":
        return
    work = list(build._signatures(kernels, parallel=False))
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    start = len(work) * int(worker.removeprefix("gw")) // max(count, 1)
    for step in range(len(work)):
        index = (start + step) % len(work)
        dispatcher, signature = work[index]
        with open(locks / f"kernel-{index}.lock", "w") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            dispatcher.compile(signature)


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels(tmp_path_factory):
    """The engine's compiled kernels, compiled (or loaded from numba's disk cache) once
    before the first test, so that no single test pays the compile; ``None`` without
    numba. The two parallel kernels, which the engines do not call, compile in the few
    tests that use them."""
    from objpert._engines import compiled

    _compile_shared(tmp_path_factory.getbasetemp().parent)
    return compiled.warm(parallel=False)


@pytest.fixture(autouse=True)
def _mpmath_precision():
    """Every test starts with mpmath at 50 significant digits and leaves it as it found it:
    a reference computed in mpmath never depends on which tests ran before it in the same
    worker (several set ``mpmath.mp.dps`` for themselves)."""
    import mpmath

    saved = mpmath.mp.dps
    mpmath.mp.dps = 50
    yield
    mpmath.mp.dps = saved
