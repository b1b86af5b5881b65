"""pyspark.ml Estimators and Models for objpert's private GLMs (Watkins & Arora 2026).

:class:`PrivateLogisticRegressionSpark` and :class:`PrivateRobustRegressionSpark` take a
DataFrame (a Vector column ``featuresCol``, or numeric columns ``inputCols``, and
``labelCol``) and return a Model whose ``transform`` adds predictions. The release is the
scikit-learn estimator's own (:class:`objpert.PrivateLogisticRegression`,
:class:`objpert.PrivateRobustRegression`): the same parameter checks, plan, certificate,
noise drawn once on the driver and exactly N steps; only the gradient steps run on the
executors (:class:`~objpert.spark.SparkEngine`). ``model.estimator_`` is that
fitted estimator, with every fitted attribute (``objpert.save`` and ``objpert.load``
work on it; its ``certificate_`` is the release's).
"""

# ruff: noqa: N815 (Spark ML names its Params in camelCase: featuresCol, maxIter, ...)

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pyspark import keyword_only
from pyspark.ml import Estimator, Model
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import (
    HasFeaturesCol,
    HasLabelCol,
    HasPredictionCol,
    HasProbabilityCol,
    HasRawPredictionCol,
)

from objpert.estimators._base import LABEL_SET, PrivateGLM, warn_label_set
from objpert.estimators._logistic import PrivateLogisticRegression
from objpert.estimators._robust import PrivateRobustRegression
from objpert.exceptions import DataError, ParameterError
from objpert.spark._engine import prepare_spark
from objpert.spark._executor import LabelTarget

__all__ = [
    "PrivateLogisticRegressionSpark",
    "PrivateLogisticRegressionSparkModel",
    "PrivateRobustRegressionSpark",
    "PrivateRobustRegressionSparkModel",
    "to_sklearn_params",
]


def _auto_or_float(value: Any) -> Any:
    if isinstance(value, str):
        if value != "auto":
            raise TypeError(f"mu must be 'auto' or a number > 0; got {value!r}")
        return value
    return TypeConverters.toFloat(value)


def _param(name: str, doc: str, converter: Any) -> Param:
    return Param(Params._dummy(), name, doc, typeConverter=converter)


#: Spark Param name -> the scikit-learn estimator's parameter.
SKLEARN_NAMES: dict[str, str] = {
    "epsilon": "epsilon",
    "delta": "delta",
    "dataNorm": "data_norm",
    "fitIntercept": "fit_intercept",
    "interceptScaling": "intercept_scaling",
    "clip": "clip",
    "calibration": "calibration",
    "mu": "mu",
    "comparatorNorm": "comparator_norm",
    "maxIter": "max_iter",
    "seed": "random_state",
    "stepTimeout": "step_timeout",
    "classes": "classes",
    "composition": "composition",
    "scale": "scale",
}


class _PrivateParams(HasFeaturesCol, HasLabelCol, HasPredictionCol):
    """The Params both private GLMs share (defaults: the scikit-learn estimators')."""

    inputCols = _param(
        "inputCols",
        "numeric feature columns, read instead of featuresCol when set",
        TypeConverters.toListString,
    )
    epsilon = _param("epsilon", "target epsilon of the fit (> 0)", TypeConverters.toFloat)
    delta = _param("delta", "target delta of the fit, in (0, 1)", TypeConverters.toFloat)
    dataNorm = _param(
        "dataNorm",
        "public bound on each feature row's Euclidean norm (Assumption 1); required",
        TypeConverters.toFloat,
    )
    fitIntercept = _param("fitIntercept", "append an intercept column", TypeConverters.toBoolean)
    interceptScaling = _param(
        "interceptScaling",
        "value c of the intercept column (None: dataNorm)",
        TypeConverters.toFloat,
    )
    clip = _param(
        "clip", "scale rows above dataNorm down (True) or refuse them", TypeConverters.toBoolean
    )
    calibration = _param("calibration", "'tight' or 'corollary413'", TypeConverters.toString)
    mu = _param("mu", "ridge mu: 'auto' or a number > 0", _auto_or_float)
    comparatorNorm = _param(
        "comparatorNorm", "W, the comparator norm of mu='auto'", TypeConverters.toFloat
    )
    maxIter = _param(
        "maxIter", "most gradient steps the calibration may plan", TypeConverters.toInt
    )
    seed = _param(
        "seed",
        "testing seed of the noise (None: OS entropy; a seed is not private)",
        TypeConverters.toInt,
    )
    stepTimeout = _param(
        "stepTimeout", "seconds a gradient step may wait for the executors", TypeConverters.toFloat
    )

    _estimator: ClassVar[type[PrivateGLM]] = PrivateGLM
    _own: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any):
        super().__init__(*args)
        defaults = self._estimator().get_params()
        self._setDefault(
            **{
                name: defaults[SKLEARN_NAMES[name]]
                for name in (*_COMMON, *self._own)
                if name not in ("seed",)
            }
        )

    def sklearn_params(self) -> dict[str, Any]:
        """The scikit-learn estimator's parameters from these Params (see
        :func:`to_sklearn_params`)."""
        values = {name: self.getOrDefault(name) for name in (*_COMMON, *self._own)
                  if self.isDefined(name)}  # fmt: skip
        return to_sklearn_params(values)

    def _feature_source(self) -> str | list[str]:
        if self.isDefined(self.inputCols) and self.getOrDefault(self.inputCols):
            return list(self.getOrDefault(self.inputCols))
        return self.getFeaturesCol()


_COMMON = (
    "epsilon", "delta", "dataNorm", "fitIntercept", "interceptScaling", "clip", "calibration",
    "mu", "comparatorNorm", "maxIter", "seed", "stepTimeout",
)  # fmt: skip


def to_sklearn_params(values: dict[str, Any]) -> dict[str, Any]:
    """Spark Params (by name) as the scikit-learn estimator's keyword arguments: ``seed``
    is ``random_state``, ``dataNorm`` is ``data_norm``, ...; ``verbose=False`` (no
    progress bar on a cluster's driver). An unknown name is a ParameterError."""
    unknown = sorted(set(values) - set(SKLEARN_NAMES))
    if unknown:
        raise ParameterError(f"unknown Params {unknown}; known: {sorted(SKLEARN_NAMES)}")
    out = {SKLEARN_NAMES[k]: v for k, v in values.items()}
    if isinstance(out.get("classes"), tuple):
        out["classes"] = list(out["classes"])
    return {**out, "verbose": False}


def _fit_on_spark(params: _PrivateParams, dataset: Any, estimator: PrivateGLM) -> PrivateGLM:
    """The scikit-learn estimator's release on the DataFrame's rows: its settings, plan,
    calibration and release code, the gradient steps on a SparkEngine (closed after)."""
    p = estimator._fit_settings()
    if p.data_norm is None:
        raise ParameterError(
            "a fit on Spark needs a declared dataNorm (a bound on every feature row's norm "
            "from public knowledge): scale the features to public bounds and set dataNorm"
        )
    classify = isinstance(estimator, PrivateLogisticRegression)
    source = params._feature_source()
    prepared = prepare_spark(
        dataset,
        source,
        params.getLabelCol(),
        data_norm=p.data_norm,
        labels="classes" if classify else "real",
        fit_intercept=p.fit_intercept,
        intercept_scaling=p.intercept_scaling,
        clip=p.clip,
        classes=p.classes if classify else None,
        timeout=estimator.step_timeout,
        _fault=getattr(params, "_fault", None),
    )
    engine = prepared.X
    try:
        not_public: tuple[str, ...] = ()
        if classify:
            classes = prepared.classes
            assert classes is not None
            if p.classes is None:
                warn_label_set(classes)
                not_public = (LABEL_SET,)
                if len(classes) < 2:
                    raise DataError(
                        f"the training labels hold only one class ({classes.tolist()!r}); a "
                        "classifier needs at least two: declare the label set with classes"
                    )
            ks = [1] if len(classes) == 2 else range(len(classes))
            targets = [LabelTarget("ovr", k) for k in ks]
        else:
            classes, targets = None, [LabelTarget("real")]
        estimator.n_features_in_ = engine.d - (1 if p.fit_intercept else 0)
        if not isinstance(source, str):
            estimator.feature_names_in_ = np.asarray(source, dtype=object)
        clipped, seconds = estimator._release(
            prepared, targets, p, not_public, classes if classify else None
        )
        if classify:
            estimator.classes_ = classes
            if "multi_class" in estimator.get_params():  # K > 2 on a cluster: one-vs-rest
                estimator.multi_class_ = "ovr"
        estimator._finish_fit(p, clipped, seconds)
    finally:
        engine.close()
    return estimator


class _PrivateEstimator(Estimator, _PrivateParams):
    def _fit(self, dataset: Any) -> Any:
        estimator = self._estimator(**self.sklearn_params())
        fitted = _fit_on_spark(self, dataset, estimator)
        model = self._model(fitted)
        self._copyValues(model)
        return model

    def _model(self, fitted: PrivateGLM) -> Any:
        raise NotImplementedError


class _PrivateModel(Model, _PrivateParams):
    """A fitted private GLM: ``estimator_`` is the scikit-learn estimator released."""

    def __init__(self, estimator: PrivateGLM | None = None):
        super().__init__()
        self.estimator_ = estimator

    @property
    def certificate(self) -> Any:
        """The release's certificate (``estimator_.certificate_``)."""
        return self.estimator_.certificate_

    @property
    def numFeatures(self) -> int:
        return int(self.estimator_.n_features_in_)

    def _features(self, dataset: Any) -> Any:
        from pyspark.ml.functions import vector_to_array
        from pyspark.sql import functions as sf

        source = self._feature_source()
        if isinstance(source, str):
            t = dataset.schema[source].dataType
            if t.typeName() == "array":
                return sf.col(source).cast("array<double>")
            return vector_to_array(sf.col(source), "float64")
        return sf.array(*[sf.col(c).cast("double") for c in source])


def _rows(series: Any, d: int) -> np.ndarray:
    if len(series) == 0:
        return np.empty((0, d))
    return np.vstack(series.to_numpy()).astype(np.float64, copy=False)


class PrivateLogisticRegressionSparkModel(_PrivateModel, HasProbabilityCol, HasRawPredictionCol):
    """Fitted by :class:`PrivateLogisticRegressionSpark`. ``transform`` adds
    ``rawPredictionCol`` (the margins as a Vector: (-m, m) for two classes, one per class
    otherwise), ``probabilityCol`` (a Vector, ``estimator_.predict_proba``) and
    ``predictionCol`` (the predicted label: a double for numeric labels, a string for
    string labels). Set a column name to "" to leave that column out."""

    _estimator = PrivateLogisticRegression
    _own = ("classes", "composition")

    classes = _param("classes", "the public label set", TypeConverters.toList)
    composition = _param("composition", "how one-vs-rest releases compose", TypeConverters.toString)

    @property
    def numClasses(self) -> int:
        return len(self.estimator_.classes_)

    @property
    def coefficientMatrix(self) -> np.ndarray:
        return np.atleast_2d(self.estimator_.coef_)

    @property
    def interceptVector(self) -> np.ndarray:
        return np.atleast_1d(self.estimator_.intercept_)

    def _transform(self, dataset: Any) -> Any:
        import pandas as pd
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as sf
        from pyspark.sql.functions import pandas_udf

        est = self.estimator_
        d = est.n_features_in_
        numeric = est.classes_.dtype.kind in "biuf"
        label_type = "double" if numeric else "string"
        schema = f"raw array<double>, prob array<double>, pred {label_type}"

        def predict(features):
            X = _rows(features, d)
            scores = est.decision_function(X) if len(X) else np.empty((0, 1))
            raw = np.column_stack([-scores, scores]) if scores.ndim == 1 else scores
            prob = est.predict_proba(X) if len(X) else np.empty((0, raw.shape[1]))
            pred = est.predict(X) if len(X) else np.empty(0)
            pred = pred.astype(np.float64) if numeric else pred.astype(str)
            return pd.DataFrame({"raw": list(raw), "prob": list(prob), "pred": pred})

        predict.__annotations__ = {"features": pd.Series, "return": pd.DataFrame}
        tmp = f"__objpert_{id(self)}"
        out = dataset.withColumn(tmp, pandas_udf(predict, schema)(self._features(dataset)))
        for col, field, vector in (
            (self.getRawPredictionCol(), "raw", True),
            (self.getProbabilityCol(), "prob", True),
            (self.getPredictionCol(), "pred", False),
        ):
            if col:
                value = sf.col(f"{tmp}.{field}")
                out = out.withColumn(col, array_to_vector(value) if vector else value)
        return out.drop(tmp)


class PrivateLogisticRegressionSpark(_PrivateEstimator, HasProbabilityCol, HasRawPredictionCol):
    """Differentially private logistic regression on a Spark DataFrame (Watkins & Arora
    2026): the release of :class:`objpert.PrivateLogisticRegression` (binary, or
    one-vs-rest over ``classes``) with its gradient steps on the executors.

    Params (defaults as the scikit-learn estimator's): ``featuresCol`` (a Vector or an
    array of numbers) or ``inputCols`` (numeric columns), ``labelCol``, ``predictionCol``,
    ``probabilityCol``, ``rawPredictionCol``; ``epsilon``, ``delta``, ``dataNorm``
    (required: public), ``fitIntercept``, ``interceptScaling``, ``clip``,
    ``calibration``, ``mu``, ``comparatorNorm``, ``maxIter``, ``classes`` (the public
    label set; None reads it from the labels: PrivacyLeakWarning, ``"label set"`` in the
    certificate's ``not_public``), ``composition``, ``seed`` (testing only) and
    ``stepTimeout``. The number of rows n is counted in the first pass over the data
    (public, as everywhere in objpert; docs/spark.md)."""

    _estimator = PrivateLogisticRegression
    _own = ("classes", "composition")

    classes = PrivateLogisticRegressionSparkModel.classes
    composition = PrivateLogisticRegressionSparkModel.composition

    @keyword_only
    def __init__(
        self,
        *,
        featuresCol="features",
        labelCol="label",
        predictionCol="prediction",
        probabilityCol="probability",
        rawPredictionCol="rawPrediction",
        inputCols=None,
        epsilon=None,
        delta=None,
        dataNorm=None,
        fitIntercept=None,
        interceptScaling=None,
        clip=None,
        calibration=None,
        mu=None,
        comparatorNorm=None,
        maxIter=None,
        classes=None,
        composition=None,
        seed=None,
        stepTimeout=None,
    ):
        super().__init__()
        self._set(**_given(self._input_kwargs))

    @keyword_only
    def setParams(self, **kwargs: Any) -> PrivateLogisticRegressionSpark:
        """Set Params by keyword."""
        return self._set(**_given(self._input_kwargs))

    def _model(self, fitted: PrivateGLM) -> PrivateLogisticRegressionSparkModel:
        return PrivateLogisticRegressionSparkModel(fitted)


class PrivateRobustRegressionSparkModel(_PrivateModel):
    """Fitted by :class:`PrivateRobustRegressionSpark`; ``transform`` adds
    ``predictionCol`` (``estimator_.predict``)."""

    _estimator = PrivateRobustRegression
    _own = ("scale",)

    scale = _param(
        "scale", "residual scale c of the pseudo-Huber loss (> 0)", TypeConverters.toFloat
    )

    @property
    def coefficients(self) -> np.ndarray:
        return np.asarray(self.estimator_.coef_)

    @property
    def intercept(self) -> float:
        return float(self.estimator_.intercept_)

    def _transform(self, dataset: Any) -> Any:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        est = self.estimator_
        d = est.n_features_in_

        def predict(features):
            X = _rows(features, d)
            return pd.Series(est.predict(X) if len(X) else np.empty(0))

        predict.__annotations__ = {"features": pd.Series, "return": pd.Series}
        col = self.getPredictionCol()
        if not col:
            return dataset
        return dataset.withColumn(col, pandas_udf(predict, "double")(self._features(dataset)))


class PrivateRobustRegressionSpark(_PrivateEstimator):
    """Differentially private robust regression (pseudo-Huber loss) on a Spark DataFrame:
    the release of :class:`objpert.PrivateRobustRegression` with its gradient steps on the
    executors. Params as :class:`PrivateLogisticRegressionSpark` (no classes), plus
    ``scale``."""

    _estimator = PrivateRobustRegression
    _own = ("scale",)

    scale = PrivateRobustRegressionSparkModel.scale

    @keyword_only
    def __init__(
        self,
        *,
        featuresCol="features",
        labelCol="label",
        predictionCol="prediction",
        inputCols=None,
        epsilon=None,
        delta=None,
        dataNorm=None,
        fitIntercept=None,
        interceptScaling=None,
        clip=None,
        calibration=None,
        mu=None,
        comparatorNorm=None,
        maxIter=None,
        scale=None,
        seed=None,
        stepTimeout=None,
    ):
        super().__init__()
        self._set(**_given(self._input_kwargs))

    @keyword_only
    def setParams(self, **kwargs: Any) -> PrivateRobustRegressionSpark:
        """Set Params by keyword."""
        return self._set(**_given(self._input_kwargs))

    def _model(self, fitted: PrivateGLM) -> PrivateRobustRegressionSparkModel:
        return PrivateRobustRegressionSparkModel(fitted)


def _given(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments given, without those left at None (their defaults)."""
    return {k: v for k, v in kwargs.items() if v is not None}
