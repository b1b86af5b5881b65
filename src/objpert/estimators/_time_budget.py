"""``max_seconds``: a time budget turned into an iteration budget before calibration.

The budget is the most steps the seconds buy at the speed of one gradient step on this
machine, timed for the public shape (n, d) and the number of releases on synthetic data
(:func:`~objpert._engines.timing.seconds_per_step`, on the fit's engine and dtype; for
``engine="auto"`` and ``"shaped"`` on the default engine), never on the private rows; the plan
is then calibrated with ``max_iter`` cut to it, and the estimator records the cut
in ``max_iter_used_``. Calibration and the data checks are not counted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from objpert._engines.timing import iteration_budget, seconds_per_step
from objpert._validation import check_positive
from objpert.exceptions import ParameterError

__all__ = ["check_max_seconds", "check_time_budget", "time_budget"]


def check_max_seconds(value: Any) -> float | None:
    """``max_seconds`` validated: None (no budget) or a number > 0."""
    return None if value is None else check_positive("max_seconds", value)


def time_budget(p: Any, prepared: Any, releases: int, loss: str) -> Any:
    """The fit settings ``p`` with max_iter cut to the steps ``p.max_seconds`` buys
    for ``releases`` releases run together on data of ``prepared``'s public shape; ``p``
    itself without a budget. Refused for Dask data (a cluster step is not timed here)."""
    if p.max_seconds is None:
        return p
    if not (isinstance(prepared.X, np.ndarray) or hasattr(prepared.X, "tocsr")):
        raise ParameterError("max_seconds is timed on this machine: not for Dask input")
    per_step = seconds_per_step(
        prepared.n,
        prepared.d,
        loss,
        draws=releases,
        n_jobs=p.n_jobs,
        engine=p.engine,
        dtype=p.dtype,
    )  # the engine the fit runs ("auto", "shaped": the default one, see timing)
    return replace(p, max_iter=iteration_budget(p.max_seconds, per_step, p.max_iter))


def check_time_budget(p: Any, plan: Any) -> None:
    """Refuse a plan of more steps than the time budget buys (Corollary 4.13 fixes N)."""
    if p.max_seconds is not None and plan.iterations > p.max_iter:
        raise ParameterError(
            f"max_seconds={p.max_seconds:g} buys {p.max_iter} steps on this machine, "
            f"but the plan needs {plan.iterations} (calibration={p.calibration!r} fixes N)"
        )
