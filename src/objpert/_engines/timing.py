"""A time budget as an iteration budget, from the speed of this machine on the public shape.

:func:`seconds_per_step` times a few steps of eq. (4) on synthetic data of the public
shape (n, d): seeded Gaussian rows scaled to norm <= 1 and random labels, never the
private data's values, so the budget it gives is a function of public constants and of
the machine. For large n the rows timed are capped (:data:`TIMED_ROWS`, about
:data:`TIMED_BYTES` of synthetic matrix) and the time scaled by n over the rows timed (a
step is linear in n; the thread count is chosen for the full work). :func:`iteration_budget`
turns seconds into the most steps they buy.

The step timed is that of the engine the fit runs (``engine``, ``dtype``: the array-API
engine, float32, a GPU), except for ``engine="auto"`` and ``"shaped"``
(:func:`timed_engine`): how fast those run, and whether they shape at all, depends on the
private rows (their duplicates, their indicator columns and the patterns of these), so a
budget timed on them would make N, which the model and its certificate publish, a
function of the private data. Their budget is timed on the default engine instead, which
they fall back to when shaping does not pay and which the shaped layouts are taken only
to beat (:data:`~objpert._engines.shaped.SHAPING_PAYS`): the time bought is then an upper
bound, and a shaped fit may finish well within it.
"""

from __future__ import annotations

import math
import time

import numpy as np

from objpert._engines.blocked import single_threaded_blas
from objpert._engines.factory import check_engine
from objpert._engines.glm import GLMObjective
from objpert._engines.threads import choose_threads
from objpert._losses import Loss, get_loss
from objpert.exceptions import ParameterError

__all__ = [
    "MAX_TIMED_MEMORY",
    "MAX_TIMED_STEPS",
    "TIMED_BYTES",
    "TIMED_ROWS",
    "iteration_budget",
    "seconds_per_step",
    "timed_engine",
]

#: At most this many rows are timed (the time is then scaled to n rows).
TIMED_ROWS = 100_000
#: ... and at most about this many bytes of synthetic matrix.
TIMED_BYTES = 64 << 20
#: The most steps timed, and the most bytes of synthetic matrix, weights and products.
MAX_TIMED_STEPS = 1000
MAX_TIMED_MEMORY = 1 << 30


def timed_engine(engine: str = "default", dtype: str = "float64") -> tuple[str, str]:
    """(engine, dtype) whose step a time budget for a fit on ``engine`` in ``dtype`` times:
    the same, but the default engine for ``"auto"`` and ``"shaped"`` (see the module)."""
    engine, dtype = check_engine(engine, dtype, device=False)
    return ("default", dtype) if engine in ("auto", "shaped") else (engine, dtype)


def seconds_per_step(
    n: int,
    d: int,
    loss: str | Loss = "logistic",
    *,
    draws: int = 1,
    n_jobs: int | None = None,
    steps: int = 5,
    engine: str = "default",
    dtype: str = "float64",
) -> float:
    """Seconds of one gradient step of eq. (4) at ``draws`` points for n x d data, on this
    machine now: the least of ``steps`` timed steps after one untimed step (which builds
    the engine's buffers), on synthetic rows (see the module), with the threads
    :func:`~objpert._engines.threads.choose_threads` gives the full problem, on the engine
    :func:`timed_engine` names for ``engine`` and ``dtype`` (an engine running the whole
    descent on its device, a GPU, is timed one step per call, its transfers included)."""
    kind, dtype = timed_engine(engine, dtype)
    n, d, draws, steps = int(n), int(d), int(draws), int(steps)
    if steps > MAX_TIMED_STEPS:  # a compute limit, not an argument check
        raise ParameterError(f"steps must be at most {MAX_TIMED_STEPS}; got {steps}")
    loss = loss if isinstance(loss, Loss) else get_loss(loss)
    rows = max(1, min(n, TIMED_ROWS, TIMED_BYTES // (8 * d)))
    need = 8 * (rows * d + (rows + d) * draws)  # X, W and X @ W
    if need > MAX_TIMED_MEMORY:
        raise ParameterError(
            f"timing a step at d = {d} with {draws} draws would need {need / 2**30:.3g} GiB "
            f"of synthetic data, more than the {MAX_TIMED_MEMORY / 2**30:g} GiB allowed"
        )
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, d))
    X /= np.maximum(np.linalg.norm(X, axis=1), 1.0)[:, None]
    y = np.where(rng.random(rows) < 0.5, -1.0, 1.0)
    threads = choose_threads(n * draws * (2 * d + 16), n_jobs)
    objective = GLMObjective(X, y, loss, 1e-3, n_jobs=threads, engine=kind, dtype=dtype)
    w = np.zeros((d, draws)) if draws > 1 else np.zeros(d)
    z = rng.standard_normal(w.shape) * 1e-3
    descend = getattr(objective.engine, "descend", None)
    best = math.inf
    with single_threaded_blas():
        for k in range(steps + 1):
            start = time.perf_counter()
            if descend is not None:
                w = descend(z, 0.5, 1, objective.loss, objective.mu, objective.y)
            else:
                g = objective.gradient(w)
                g += z
                w -= 0.5 * g
            if k:
                best = min(best, time.perf_counter() - start)
    return best * n / rows


def iteration_budget(seconds: float, seconds_per_step: float, max_iter: int) -> int:
    """The most gradient steps ``seconds`` buys at ``seconds_per_step`` each (at least
    1), and at most ``max_iter``."""
    steps = seconds / seconds_per_step  # +inf when the quotient overflows
    return max_iter if steps >= max_iter else max(1, math.floor(steps))
