"""Private tuning of a Spark stage on all the rows: random stopping.

:class:`PrivateRandomStoppingSpark` is :class:`objpert.model_selection.PrivateGridSearch`
with ``method="random_stopping"`` for a private Spark estimator and a list of ParamMaps
(``ParamGridBuilder().build()``): the estimator's ``epsilon`` and ``delta`` are the budget
of the whole search; a hidden number K of runs is drawn (law ``law``, mean ``runsMean``),
each run fits a uniformly drawn ParamMap on ALL the rows at the per-run budget and scores
its model on the same rows (correct predictions, or clipped squared errors on integer
levels: one DataFrame pass) with exact discrete Laplace noise; the run with the highest
noisy score is kept. The runs, the budget and the certificate are the in-memory search's
(:mod:`objpert.model_selection._stopping_runs`,
:mod:`objpert.model_selection._random_stopping`): one
:class:`~objpert.model_selection.RandomStoppingCertificate` covers the choice and the
chosen model. Neither K nor the other runs' models or scores are kept.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from objpert._randomness import make_rng
from objpert._validation import check_int, check_positive
from objpert.exceptions import ParameterError, TestingSeedWarning
from objpert.model_selection._candidates import same_structure
from objpert.model_selection._random_stopping import LAWS
from objpert.model_selection._search import (
    MAX_RUNS_MEAN,
    RUNS_PER_CANDIDATE,
    SCORE_FRACTION,
)
from objpert.model_selection._stopping_runs import (
    SCORE_LEVELS,
    integer_utility,
    run_budget,
    stop_randomly,
)
from objpert.spark._engine import quiet_pyspark

__all__ = ["PrivateRandomStoppingSpark"]

#: Params that the search sets on each run itself (refused in the ParamMaps).
_RUN_SET = ("epsilon", "delta", "seed")


class PrivateRandomStoppingSpark:
    """Random stopping over ``estimatorParamMaps`` of a private Spark ``estimator``
    (:class:`~objpert.spark.PrivateLogisticRegressionSpark` or
    :class:`~objpert.spark.PrivateRobustRegressionSpark`), every run on all the rows
    (the module docstring).

    ``runsMean``: the mean number of runs (public; default 4 per ParamMap, at most
    ``MAX_RUNS_MEAN``); ``law``: "logarithmic" (default) or "geometric";
    ``scoreFraction``: each run's share of epsilon spent on its score (default 0.1);
    ``scoreBound``: regression only, squared errors clipped at ``scoreBound**2``;
    ``seed``: for tests only (None: OS entropy).

    After :meth:`fit`: ``bestModel`` (the chosen run's Spark model; its own
    ``certificate`` is its release's), ``bestIndex`` (its ParamMap), ``certificate``
    (the search's, covering the choice and the chosen model: what releasing the chosen
    model cost). :meth:`transform` is the chosen model's.
    """

    def __init__(
        self,
        *,
        estimator: Any,
        estimatorParamMaps: list[dict],
        runsMean: int | None = None,
        law: str | None = None,
        scoreFraction: float | None = None,
        scoreBound: float = 1.0,
        seed: Any = None,
    ):
        self.estimator = estimator
        self.estimatorParamMaps = list(estimatorParamMaps)
        self.runsMean, self.law, self.scoreFraction = runsMean, law, scoreFraction
        self.scoreBound, self.seed = scoreBound, seed

    def _checked(self) -> tuple[int, str, float, float]:
        from objpert.spark._estimators import _PrivateEstimator

        if not isinstance(self.estimator, _PrivateEstimator):
            raise ParameterError(
                "estimator must be a private Spark estimator (PrivateLogisticRegressionSpark "
                f"or PrivateRobustRegressionSpark); got {type(self.estimator).__name__}"
            )
        maps = self.estimatorParamMaps
        if not maps or not all(isinstance(m, dict) for m in maps):
            raise ParameterError("estimatorParamMaps must be a non-empty list of ParamMaps")
        for m in maps:
            fixed = sorted(p.name for p in m if p.name in _RUN_SET)
            if fixed:
                raise ParameterError(
                    f"random stopping sets {', '.join(fixed)} of each run itself (the "
                    "estimator's epsilon and delta are the budget of the whole search): "
                    "remove them from estimatorParamMaps"
                )
        runs = [self.estimator.copy(m) for m in maps]  # the label set and row bound alike
        same_structure([r._estimator(**r.sklearn_params()) for r in runs],
                       [{p.name: v for p, v in m.items()} for m in maps])  # fmt: skip
        per_unit = any(p.name in ("privacyUnitCol", "maxRowsPerUnit") for m in maps for p in m)
        if self.estimator.unit_column() is not None or per_unit:
            raise ParameterError(
                "PrivateRandomStoppingSpark searches at the level of one row; a privacy "
                "unit (privacyUnitCol, maxRowsPerUnit; on the estimator or in a ParamMap) is "
                "not supported here"
            )
        runs_mean = RUNS_PER_CANDIDATE * len(maps) if self.runsMean is None else self.runsMean
        if isinstance(runs_mean, bool) or not isinstance(runs_mean, int):
            raise ParameterError(f"runsMean must be an integer; got {runs_mean!r}")
        runs_mean = check_int("runsMean", runs_mean, 1)
        if runs_mean > MAX_RUNS_MEAN:
            raise ParameterError(
                f"runsMean = {runs_mean} > {MAX_RUNS_MEAN}: each run is a fit on all the rows"
            )
        law = LAWS[0] if self.law is None else self.law
        if law not in LAWS:
            raise ParameterError(f"law must be one of {LAWS}; got {law!r}")
        fraction = SCORE_FRACTION if self.scoreFraction is None else self.scoreFraction
        fraction = check_positive("scoreFraction", fraction)
        return runs_mean, law, fraction, check_positive("scoreBound", self.scoreBound)

    def fit(self, dataset: Any) -> PrivateRandomStoppingSpark:
        """Run the search on the DataFrame's rows; returns self."""
        from objpert.spark._estimators import PrivateLogisticRegressionSpark

        runs_mean, law, fraction, bound = self._checked()
        est = self.estimator
        settings = est._estimator(**est.sklearn_params())._fit_settings()
        budget = run_budget(settings.epsilon, settings.delta, runs_mean, law, fraction)
        classify = isinstance(est, PrivateLogisticRegressionSpark)
        maps = self.estimatorParamMaps
        generator, seeded = make_rng(self.seed)

        def fit(index: int, seed: int | None) -> tuple[Any, Any, bytes]:
            extra = {**maps[index], est.epsilon: budget.model_epsilon,
                     est.delta: budget.candidate_delta}  # fmt: skip
            run = est.copy(extra)
            run.clear(run.seed)
            if seed is not None:
                run.set(run.seed, seed)
            model = run.fit(dataset)
            released = np.ascontiguousarray(model.getOrDefault(model.weights), dtype=np.float64)
            intercepts = np.ascontiguousarray(model.getOrDefault(model.intercepts))
            return model, model.certificate, released.tobytes() + intercepts.tobytes()

        def utility(model: Any) -> int:
            return _spark_utility(model, dataset, classify, bound)

        with warnings.catch_warnings():  # the runs' seeds come from the search's (warned)
            warnings.simplefilter("ignore", TestingSeedWarning)
            sensitivity = 1 if classify else SCORE_LEVELS
            index, chosen = stop_randomly(
                budget, len(maps), generator, seeded, fit, utility, sensitivity
            )
        plans = chosen.plan if isinstance(chosen.plan, list) else [chosen.plan]
        self.certificate = budget.certificate(len(maps), plans[0].n, chosen.certificate)
        self.bestIndex, self.bestModel = index, chosen
        return self

    def transform(self, dataset: Any) -> Any:
        """The chosen model's predictions."""
        return self.bestModel.transform(dataset)


def _spark_utility(model: Any, dataset: Any, classify: bool, bound: float) -> int:
    """:func:`objpert.model_selection._stopping_runs.integer_utility` of the model's
    predictions of the rows' labels, summed over the DataFrame's batches (one pass)."""
    import pandas as pd
    from pyspark.sql import functions as sf

    pred, label = model.getPredictionCol(), model.getLabelCol()

    def scores(batches):
        for batch in batches:
            value = integer_utility(batch["p"], batch["y"], classify, bound)
            yield pd.DataFrame({"u": np.array([value], dtype=np.int64)})

    with quiet_pyspark():
        rows = model.transform(dataset).select(sf.col(pred).alias("p"), sf.col(label).alias("y"))
        total = rows.mapInPandas(scores, "u long").agg(sf.sum("u")).collect()[0][0]
    return int(total or 0)
