"""The runs of a random-stopping search, whatever trains and scores them.

:class:`~objpert.model_selection.PrivateGridSearch` (in memory) and
:class:`objpert.spark.PrivateRandomStoppingSpark` (on a Spark DataFrame) run the same
procedure (:mod:`objpert.model_selection._random_stopping`): the per-run budget from the
search's (:func:`run_budget`), a hidden run count K, and K runs that each draw a grid point
uniformly, release a model on all the rows at the run budget and release its integer score
with exact discrete Laplace noise (Canonne, Kamath & Steinke 2020, Algorithm 2); the run
with the highest noisy score is output (:func:`stop_randomly`). They differ only in how a
run is trained and scored, which the caller passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from objpert.accounting._composition import basic, budget_text
from objpert.exceptions import DataError, PrivacyError
from objpert.mechanisms._discrete_noise import discrete_laplace
from objpert.model_selection import _random_stopping as rs

__all__ = ["SCORE_LEVELS", "RunBudget", "integer_utility", "run_budget", "stop_randomly"]

#: Regression scores: each clipped squared error is floored onto this many integer levels
#: of [0, score_bound**2] (an integer sum, so the discrete Laplace noise is exact).
SCORE_LEVELS = 1024


@dataclass(frozen=True)
class RunBudget:
    """The public budget of a random-stopping search and of each of its runs."""

    runs_mean: int
    law: str
    candidate_epsilon: float  # one run: model and score by basic composition
    candidate_delta: float
    model_epsilon: float
    score_epsilon: float

    def certificate(self, n_candidates: int, n_rows: int, chosen: Any) -> Any:
        """The search's :class:`~objpert.model_selection.RandomStoppingCertificate`."""
        return rs.search_certificate(
            self.candidate_epsilon, self.candidate_delta, self.model_epsilon,
            self.score_epsilon, self.runs_mean, n_candidates, n_rows, chosen, self.law,
        )  # fmt: skip


def run_budget(
    epsilon: float, delta: float, runs_mean: int, law: str, score_fraction: float
) -> RunBudget:
    """Each run's (epsilon_c, delta_c) meeting the search's (epsilon, delta)
    (:func:`~objpert.model_selection.random_stopping_budget`), split into the model's and
    the score's epsilon (:func:`~objpert.model_selection._random_stopping.candidate_budget`)."""
    eps_c, delta_c = rs.random_stopping_budget(epsilon, delta, runs_mean, law)
    model_eps, score_eps = rs.candidate_budget(eps_c, score_fraction)
    candidate_eps, _ = basic([model_eps, score_eps], [0.0, 0.0])
    return RunBudget(runs_mean, law, candidate_eps, delta_c, model_eps, score_eps)


def integer_utility(pred: Any, y: Any, classify: bool, bound: float) -> int:
    """An integer score of predictions ``pred`` of the rows' labels ``y``, changed by at
    most its sensitivity when one row is replaced: the count of correct predictions (1),
    or minus the clipped squared errors floored onto SCORE_LEVELS levels of [0, bound**2]
    (SCORE_LEVELS)."""
    pred, y = np.asarray(pred), np.asarray(y)
    if pred.shape != y.shape:  # broadcast, one row would change up to n terms
        raise DataError(f"predictions of shape {pred.shape} cannot score labels of {y.shape}")
    if classify:
        return int(np.sum(pred == y))
    clip = bound * bound
    err = np.minimum((pred.astype(float) - y.astype(float)) ** 2, clip)
    levels = np.floor(err / clip * SCORE_LEVELS).astype(np.int64)
    return -int(np.sum(np.minimum(levels, SCORE_LEVELS)))


#: A run: (grid index, seed or None) -> (model, its certificate, its released numbers).
Fit = Callable[[int, "int | None"], tuple[Any, Any, bytes]]


def stop_randomly(
    budget: RunBudget,
    n_candidates: int,
    generator: np.random.Generator,
    seeded: bool,
    fit: Fit,
    utility: Callable[[Any], int],
    sensitivity: int,
) -> tuple[int, Any]:
    """The runs of the search (the module docstring): K drawn from the budget's law, then
    per run a uniform grid index, a seed for the run (only when the search is seeded), the
    run's release by ``fit`` (refused unless certified within the run budget: nothing is
    released then) and its score ``utility(model)`` plus discrete Laplace noise of scale
    ``sensitivity`` / score epsilon. Returns (index, model) of the run with the highest
    noisy score; K and the scores are not returned."""
    count = rs.draw_runs(budget.runs_mean, generator, budget.law)
    scale = Fraction(sensitivity) / Fraction(budget.score_epsilon)  # exact: a float
    best: tuple[tuple[int, float, bytes], int, Any] | None = None
    for _ in range(count):
        index = int(generator.integers(n_candidates))
        seed = int(generator.integers(2**63)) if seeded else None
        model, cert, released = fit(index, seed)
        if (
            not cert.certified
            or cert.epsilon > budget.model_epsilon
            or cert.delta > budget.candidate_delta
        ):
            raise PrivacyError(
                f"a run's certificate {budget_text(cert.epsilon, cert.delta)} "
                f"(certified={cert.certified}) exceeds the per-run budget "
                f"{budget_text(budget.model_epsilon, budget.candidate_delta)}: nothing is "
                "released"
            )
        noisy = utility(model) + discrete_laplace(generator, scale)
        # a total order on the runs' outputs (Liu & Talwar's condition): the noisy score,
        # then an independent uniform, then the released coefficients
        key = (noisy, float(generator.random()), released)
        if best is None or key > best[0]:
            best = (key, index, model)
        del noisy
    assert best is not None  # K >= 1
    return best[1], best[2]
