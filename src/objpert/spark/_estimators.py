"""pyspark.ml Estimators for objpert's private GLMs (docs/spark.md).

:class:`PrivateLogisticRegressionSpark` and :class:`PrivateRobustRegressionSpark` take a
DataFrame (a Vector column ``featuresCol``, or numeric columns ``inputCols``, and
``labelCol``) and return a Model whose ``transform`` adds predictions. Every pass over
the rows is a DataFrame query on a cached frame (:mod:`objpert.spark._engine`), so they
run on a classic session and on Spark Connect alike. The release (``mechanism``):

* ``"amp"`` (default): the registry's AMP, the exact-minimiser objective perturbation
  with the tightest accountant and output noise covering the solver's residual, solved by
  distributed Newton in a few passes (:mod:`objpert.spark._newton`); binary labels or
  regression;
* ``"gradient_descent"``: the scikit-learn estimator's own release
  (:class:`objpert.PrivateLogisticRegression`, :class:`objpert.PrivateRobustRegression`,
  Watkins & Arora 2026): its checks, plan, certificate and noise, exactly N gradient
  steps, one pass each; ``model.estimator_`` is that fitted estimator.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
from pyspark import keyword_only
from pyspark.ml import Estimator
from pyspark.ml.param.shared import HasProbabilityCol, HasRawPredictionCol

from objpert._losses import get_loss
from objpert.accounting._group import crude_row_target
from objpert.estimators._base import LABEL_SET, PrivateGLM, warn_label_set
from objpert.estimators._bounds import FitStatistics, record_fit_statistics
from objpert.estimators._logistic import PrivateLogisticRegression
from objpert.estimators._robust import PrivateRobustRegression
from objpert.estimators._unit import group_unit_certificate, unit_key
from objpert.exceptions import DataError, ParameterError
from objpert.mechanisms._registry import plan as plan_release
from objpert.spark._engine import prepare_spark, quiet_pyspark
from objpert.spark._models import (
    PrivateLogisticRegressionSparkModel,
    PrivateRobustRegressionSparkModel,
    _PrivateModel,
)
from objpert.spark._newton import newton_release
from objpert.spark._params import (
    CLASSES,
    COMPOSITION,
    MECHANISMS,
    SCALE,
    Persistent,
    PrivateParams,
)
from objpert.spark._tasks import LabelTarget
from objpert.spark._tuning import find_search, warn_search
from objpert.spark._unit import bound_units, check_unit_params, search_unit_record

__all__ = ["PrivateLogisticRegressionSpark", "PrivateRobustRegressionSpark"]


def _prepare(params: PrivateParams, dataset: Any, p: Any, classify: bool, first=None) -> Any:
    """The checked rows (a SparkEngine in ``X``), n = m k for a unit-level fit
    (``p.units`` m: the units' missing rows are zero rows, :meth:`SparkEngine.pad_to`)."""
    if p.data_norm is None:
        raise ParameterError(
            "a fit on Spark needs a declared dataNorm (a bound on every feature row's norm "
            "from public knowledge), or featureBounds with inputCols: scale the features to "
            "public bounds and set them"
        )
    prepared = prepare_spark(
        dataset, params.feature_source(), params.getLabelCol(), data_norm=p.data_norm,
        labels="classes" if classify else "real", fit_intercept=p.fit_intercept,
        intercept_scaling=p.intercept_scaling, clip=p.clip,
        classes=p.classes if classify else None, bounds=params.bounds(), first=first,
        _fault=getattr(params, "_fault", None),
    )  # fmt: skip
    if p.units is not None:
        prepared.X.pad_to(p.units * p.rows_per_unit)
    return prepared


def _units(params: PrivateParams, dataset: Any, p: Any) -> tuple[Any, Any]:
    """The rows a unit-level fit keeps (``privacyUnitCol``, ``maxRowsPerUnit``:
    :func:`objpert.spark._unit.bound_units`) and the settings with its public number of
    units; the dataset and settings unchanged without a privacy unit."""
    column = params.unit_column()
    if column is None:
        return dataset, p
    k = est_k(params)
    seed = params.getOrDefault(params.seed) if params.isDefined(params.seed) else None
    key = unit_key(seed)  # a testing seed keeps the same rows (None: fresh OS bits)
    units = bound_units(
        dataset, column, k, key=None if key is None else int.from_bytes(key[:8], "big") >> 1
    )
    if k is None:  # a row-level fit: repeated ids flagged
        return units.frame, p
    return units.frame, replace(p, units=units.units, unit_name=units.name)


def est_k(params: PrivateParams) -> int | None:
    """``maxRowsPerUnit``, checked (None when not set)."""
    return check_unit_params(params.unit_column(), params.getOrDefault(params.maxRowsPerUnit))


def _label_set(prepared: Any, p: Any) -> tuple[np.ndarray, tuple[str, ...]]:
    classes = prepared.classes
    if p.classes is not None:
        return classes, ()
    warn_label_set(classes)
    if len(classes) < 2:
        raise DataError(
            f"the training labels hold only one class ({classes.tolist()!r}); a classifier "
            "needs at least two: declare the label set with classes"
        )
    return classes, (LABEL_SET,)


def _fit_amp(params: PrivateParams, dataset: Any, est: PrivateGLM, model: _PrivateModel,
             tuned: tuple[str, ...]) -> None:  # fmt: skip
    """The Newton release of AMP on the DataFrame's rows, stored on ``model``."""
    p = est._fit_settings()
    classify = isinstance(est, PrivateLogisticRegression)
    if classify and p.classes is not None and len(p.classes) > 2:
        raise ParameterError(
            f"mechanism='amp' releases one weight vector: two classes; got {len(p.classes)} "
            "classes: use mechanism='gradient_descent' (one-vs-rest)"
        )
    loss = get_loss("logistic") if classify else get_loss("robust", scale=p.scale)
    target = LabelTarget("ovr", 1) if classify else LabelTarget("real")
    dataset, p = _units(params, dataset, p)
    # per unit: the one-row release at the classical one-row target, grouped (below)
    eps_1, delta_1 = p.epsilon, p.delta
    if p.units is not None:
        eps_1, delta_1 = crude_row_target(p.epsilon, p.delta, p.rows_per_unit)
    prepared = _prepare(params, dataset, p, classify, (loss, target))
    engine = prepared.X
    try:
        not_public: tuple[str, ...] = ()
        classes = None
        if classify:
            classes, not_public = _label_set(prepared, p)
            if len(classes) > 2:
                raise ParameterError(
                    f"mechanism='amp' releases one weight vector: two classes; the labels "
                    f"hold {len(classes)}: use mechanism='gradient_descent' (one-vs-rest)"
                )
        passes = params.getOrDefault(params.maxPasses)
        plan = plan_release(
            "amp", loss=loss.name, n=engine.n, d=engine.d, zeta=prepared.zeta,
            epsilon=eps_1, delta=delta_1, mu=p.mu, max_iter=passes,
            gamma=params.getOrDefault(params.tol) * float(loss.L1) * prepared.zeta,
            **({} if classify else {"loss_params": {"scale": p.scale}}),
        )  # fmt: skip
        start = time.perf_counter()
        w, cert, _ = newton_release(engine, target, plan, est.random_state, passes)
        seconds = time.perf_counter() - start  # statistics of the rows: never stored
        record_fit_statistics(FitStatistics(prepared.n_clipped, seconds, engine.passes))
    finally:
        engine.close()
    c = prepared.intercept_scaling
    coef, intercept = (w[:-1], w[-1] * c) if p.fit_intercept else (w, 0.0)
    cert = replace(cert, not_public=(*not_public, *tuned))
    if p.units is not None:  # the unit's guarantee: group privacy at the unit's epsilon
        cert = group_unit_certificate(cert, p)
    model.set_release(coef, np.array([intercept]), cert, "amp", classes)
    model.plan = plan


def _fit_descent(params: PrivateParams, dataset: Any, est: PrivateGLM, model: _PrivateModel,
                 tuned: tuple[str, ...]) -> None:  # fmt: skip
    """The scikit-learn estimator's release (its plan, calibration and release code), each
    gradient step one DataFrame pass; stored on ``model`` (``estimator_`` is ``est``)."""
    p = est._fit_settings()
    classify = isinstance(est, PrivateLogisticRegression)
    dataset, p = _units(params, dataset, p)
    prepared = _prepare(params, dataset, p, classify)
    engine = prepared.X
    source = params.feature_source()
    try:
        not_public: tuple[str, ...] = ()
        classes = None
        if classify:
            classes, not_public = _label_set(prepared, p)
            ks = [1] if len(classes) == 2 else range(len(classes))
            targets = [LabelTarget("ovr", k) for k in ks]
        else:
            targets = [LabelTarget("real")]
        est.n_features_in_ = engine.d - (1 if p.fit_intercept else 0)
        if not isinstance(source, str):
            est.feature_names_in_ = np.asarray(source, dtype=object)
        clipped, seconds = est._release(prepared, targets, p, (*not_public, *tuned), classes)
        if classify:
            est.classes_ = classes
            if "multi_class" in est.get_params():  # K > 2 on a cluster: one-vs-rest
                est.multi_class_ = "ovr"
        est._finish_fit(p, clipped, seconds, engine.passes)
    finally:
        engine.close()
    model.estimator_ = est
    model.plan = est.plan_
    model.set_release(est.coef_, est.intercept_, est.certificate_, "gradient_descent", classes)


#: The label column Spark ML's OneVsRest gives each binary fit of its classifier.
ONE_VS_REST_LABEL = "mc2b$"


class _PrivateEstimator(Estimator, PrivateParams, Persistent):
    _search_record: tuple[str, ...] = ()

    def _fit(self, dataset: Any) -> Any:
        mechanism = self.getOrDefault(self.mechanism)
        if mechanism not in MECHANISMS:
            raise ParameterError(f"mechanism must be one of {MECHANISMS}; got {mechanism!r}")
        if self.getLabelCol().startswith(ONE_VS_REST_LABEL):
            raise ParameterError(
                "Spark's OneVsRest fits this private estimator once per class on the same "
                "private rows, and nothing composes those releases: declare classes=[...] "
                "here instead (its one-vs-rest releases share one certificate)"
            )
        found = find_search()
        tuned = self._search_record
        if found is not None:  # the selected setting's refit
            warn_search(*found)
            tuned = (found[1].record, *self._unit_record(found))
        est_k(self)  # ParameterError before any row is read
        est = self._estimator(**self.sklearn_params())
        model = self._model()
        with quiet_pyspark():
            fit = _fit_amp if mechanism == "amp" else _fit_descent
            fit(self, dataset, est, model, tuned)
        self._copyValues(model)
        return model

    def fitMultiple(self, dataset: Any, paramMaps: Any) -> Any:
        """Spark ML's fits of several settings (what ``CrossValidator`` and
        ``TrainValidationSplit`` call): each fitted model records the search in its
        certificate's ``not_public``, and the search warns once."""
        marked = self.copy()
        found = find_search()
        if found is not None:
            warn_search(*found)
            marked._search_record = (found[1].record, *self._unit_record(found))
        else:
            marked._search_record = (f"model selection over {len(paramMaps)} settings",)
        return Estimator.fitMultiple(marked, dataset, paramMaps)

    def _unit_record(self, found: tuple[Any, Any]) -> tuple[str, ...]:
        """A search over a stage with a privacy unit splits rows, not persons: recorded."""
        return search_unit_record(self.unit_column(), found[0], found[1].name)

    def _model(self) -> _PrivateModel:
        raise NotImplementedError


class PrivateLogisticRegressionSpark(_PrivateEstimator, HasProbabilityCol, HasRawPredictionCol):
    """Differentially private logistic regression on a Spark DataFrame.

    Params (defaults as the scikit-learn estimator's): ``featuresCol`` (a Vector or an
    array of numbers) or ``inputCols`` (numeric columns, with optional ``featureBounds``),
    ``labelCol``, ``predictionCol``, ``probabilityCol``, ``rawPredictionCol``;
    ``epsilon``, ``delta``, ``dataNorm`` (required unless ``featureBounds``: public),
    ``fitIntercept``, ``interceptScaling``, ``clip``, ``mechanism`` ("amp" or
    "gradient_descent"), ``maxPasses`` (amp), ``calibration``, ``mu``, ``comparatorNorm``,
    ``tol`` (amp), ``maxIter`` (gradient_descent), ``classes`` (the public label set),
    ``composition`` (one-vs-rest), ``seed`` (testing only), ``privacyUnitCol`` and
    ``maxRowsPerUnit`` (a guarantee per person of up to k rows: :mod:`objpert.spark._unit`).
    See docs/spark.md.
    """

    classes = CLASSES
    composition = COMPOSITION
    _estimator = PrivateLogisticRegression
    _own = ("classes", "composition")

    @keyword_only
    def __init__(
        self, *, featuresCol="features", labelCol="label", predictionCol="prediction",
        probabilityCol="probability", rawPredictionCol="rawPrediction", inputCols=None,
        featureBounds=None, epsilon=None, delta=None, dataNorm=None, fitIntercept=None,
        interceptScaling=None, clip=None, mechanism=None, maxPasses=None, calibration=None,
        mu=None, comparatorNorm=None, maxIter=None, classes=None, composition=None, seed=None,
        tol=None, privacyUnitCol=None, maxRowsPerUnit=None,
    ):  # fmt: skip
        super().__init__()
        self._set(**_given(self._input_kwargs))

    @keyword_only
    def setParams(self, **kwargs: Any) -> PrivateLogisticRegressionSpark:
        """Set Params by keyword."""
        return self._set(**_given(self._input_kwargs))

    def _model(self) -> PrivateLogisticRegressionSparkModel:
        return PrivateLogisticRegressionSparkModel()


class PrivateRobustRegressionSpark(_PrivateEstimator):
    """Differentially private robust regression (pseudo-Huber loss) on a Spark DataFrame.
    Params as :class:`PrivateLogisticRegressionSpark` (no classes), plus ``scale``."""

    scale = SCALE
    _estimator = PrivateRobustRegression
    _own = ("scale",)

    @keyword_only
    def __init__(
        self, *, featuresCol="features", labelCol="label", predictionCol="prediction",
        inputCols=None, featureBounds=None, epsilon=None, delta=None, dataNorm=None,
        fitIntercept=None, interceptScaling=None, clip=None, mechanism=None, maxPasses=None,
        calibration=None, mu=None, comparatorNorm=None, maxIter=None, scale=None, seed=None,
        tol=None, privacyUnitCol=None, maxRowsPerUnit=None,
    ):  # fmt: skip
        super().__init__()
        self._set(**_given(self._input_kwargs))

    @keyword_only
    def setParams(self, **kwargs: Any) -> PrivateRobustRegressionSpark:
        """Set Params by keyword."""
        return self._set(**_given(self._input_kwargs))

    def _model(self) -> PrivateRobustRegressionSparkModel:
        return PrivateRobustRegressionSparkModel()


def _given(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments given, without those left at None (their defaults)."""
    return {k: v for k, v in kwargs.items() if v is not None}
