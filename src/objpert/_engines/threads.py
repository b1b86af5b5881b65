"""How many threads a gradient sweep gets: from its size and from what the machine gives.

A sweep is split into a fixed number of row parts (:func:`parts_for`), independent of the
thread count, and the parts' partial sums are added in part order: the thread count
changes the speed, never the result. :func:`choose_threads` picks the count once per
engine and batch width (it stays the same for every step of a release):

- ``n_jobs=1``: one thread, the caller's; ``n_jobs=-1``: every core this process may run
  on; ``n_jobs=k > 1``: k threads;
- ``n_jobs=None`` (automatic): one thread below :data:`THREAD_MIN_WORK` multiply-adds per
  step (waking a sleeping thread costs ~0.1-0.5 ms on a virtual machine, more than such
  a step saves), otherwise the cores not already busy (:func:`usable_cores`).

The threads are the engines' own pool (:mod:`objpert._engines.blocked`), which sleeps
between steps: nothing spins against a competing process.
"""

from __future__ import annotations

import contextlib
import os
import time

from objpert._validation import check_int
from objpert.exceptions import ParameterError

__all__ = [
    "PARTS",
    "THREAD_MIN_WORK",
    "available_cores",
    "check_n_jobs",
    "choose_threads",
    "parts_for",
    "usable_cores",
]

#: Automatic thread counts use one thread below this much work per step (multiply-adds,
#: a loss derivative counted as 16): ~4-8 ms of one core, where a second thread's wake-up
#: and the cores' shared memory bus leave little to gain.
THREAD_MIN_WORK = 1 << 24

#: Row parts of a sweep (their partial sums are added in order): at least this many, and
#: at least one per core, so any thread count up to the cores gives the same result.
PARTS = 8


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _runnable_others() -> int | None:
    """Runnable tasks other than this one right now (Linux /proc/loadavg), or None."""
    try:
        with open("/proc/loadavg") as f:
            running = int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0, running - 1)


def usable_cores(samples: int = 5, spacing: float = 0.0005) -> int:
    """The cores not busy with other work: the available cores less the other runnable
    tasks (the least of ``samples`` readings of /proc/loadavg ``spacing`` s apart) and
    less the 1-minute load average beyond one (this process's own share), at least 1.
    A machine-wide reading: another tenant's busy process counts, however it is pinned."""
    cores = available_cores()
    readings = []
    for k in range(samples):
        if k:
            time.sleep(spacing)
        r = _runnable_others()
        if r is not None:
            readings.append(r)
    busy = min(readings) if readings else 0
    with contextlib.suppress(OSError):  # no load average: the readings alone
        busy = max(busy, round(os.getloadavg()[0]) - 1)
    return max(1, min(cores, cores - busy))


def check_n_jobs(n_jobs: object) -> int | None:
    """``n_jobs`` validated: None (automatic), -1 (every core) or an int >= 1."""
    if n_jobs is None:
        return None
    if isinstance(n_jobs, int) and not isinstance(n_jobs, bool) and n_jobs == -1:
        return -1
    try:
        return check_int("n_jobs", n_jobs, 1)
    except ParameterError:
        raise ParameterError(
            f"n_jobs must be None (automatic), -1 (every core) or an int >= 1; got {n_jobs!r}"
        ) from None


def choose_threads(work: int, n_jobs: int | None) -> int:
    """Threads for a sweep of ``work`` multiply-adds under ``n_jobs`` (see the module)."""
    cores = available_cores()
    if n_jobs == -1:
        return cores
    if n_jobs is not None:
        return n_jobs
    if work < THREAD_MIN_WORK or cores == 1:
        return 1
    return usable_cores()


def parts_for(threads: int) -> int:
    """Row parts of a sweep of at most ``threads`` threads: the most of :data:`PARTS`, the
    cores and ``threads``."""
    return max(PARTS, available_cores(), int(threads))
