"""The fitted Spark ML Models of the private GLMs: ``transform`` and persistence.

A Model holds its release as Params (:class:`~objpert.spark._params.ReleaseParams`:
weights, intercepts, label set, width, certificate), so Spark ML's ``write``/``load``
(``DefaultParamsWritable``/``DefaultParamsReadable``) save and load it, alone or inside a
``PipelineModel``. Predictions are the scikit-learn estimator's
(:meth:`_PrivateModel.predictor`: a fitted :class:`objpert.PrivateLogisticRegression` or
:class:`objpert.PrivateRobustRegression` holding the released weights).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from pyspark.ml import Model
from pyspark.ml.param.shared import HasProbabilityCol, HasRawPredictionCol

from objpert._jsonable import to_json_value
from objpert.accounting._accountant import release_from_dict
from objpert.accounting._certificate import ReleaseCertificate
from objpert.estimators._base import PrivateGLM
from objpert.estimators._logistic import PrivateLogisticRegression
from objpert.estimators._robust import PrivateRobustRegression
from objpert.exceptions import ParameterError
from objpert.spark._engine import quiet_pyspark
from objpert.spark._params import (
    CLASSES,
    COMPOSITION,
    SCALE,
    Persistent,
    PrivateParams,
    ReleaseParams,
)

__all__ = ["PrivateLogisticRegressionSparkModel", "PrivateRobustRegressionSparkModel"]


class _PrivateModel(Model, PrivateParams, ReleaseParams, Persistent):
    """A fitted private GLM. ``estimator_``: the fitted scikit-learn estimator of a
    ``gradient_descent`` fit (None otherwise, and after loading); ``certificate``: the
    release's certificate; ``plan``: the plan of this fit (None after loading; for a
    release per privacy unit, the one-row plan)."""

    def __init__(self, estimator: PrivateGLM | None = None):
        super().__init__()
        self.estimator_ = estimator
        self.plan = None
        self._predictor: PrivateGLM | None = None

    def set_release(
        self,
        coef: np.ndarray,
        intercept: np.ndarray,
        certificate: ReleaseCertificate,
        mechanism: str,
        classes: np.ndarray | None = None,
    ) -> None:
        """Store the release as Params: ``coef`` (K, d), ``intercept`` (K,)."""
        self._set(
            weights=np.atleast_2d(coef).tolist(),
            intercepts=np.atleast_1d(intercept).astype(float).tolist(),
            numFeaturesIn=int(np.atleast_2d(coef).shape[1]),
            certificateJson=json.dumps(to_json_value(certificate.to_dict())),
            mechanismUsed=mechanism,
        )
        if classes is not None:
            self._set(labelSet=np.asarray(classes).tolist())
        self._predictor = None

    @property
    def certificate(self) -> ReleaseCertificate:
        """The release's certificate."""
        return release_from_dict(json.loads(self.getOrDefault(self.certificateJson)))

    def export(self, path: Any, key: bytes | str | None = None) -> Any:
        """Write the release as objpert's signed model file
        (:func:`objpert.persistence.save`: signed under ``key`` or ``OBJPERT_MODEL_KEY``;
        loaded and verified by :func:`objpert.persistence.load`, its plan re-derived on
        loading): the fitted scikit-learn estimator of a ``mechanism="gradient_descent"``
        fit, or the AMP release (the default mechanism) with its plan. A model loaded
        from a Spark ML save (whose plan is not kept) is refused with a ParameterError."""
        from objpert.persistence import save

        if self.estimator_ is not None:
            return save(self.estimator_, path, key)
        if self.plan is None or self.getOrDefault(self.mechanismUsed) != "amp":
            raise ParameterError(
                "objpert's model file holds a release fitted in this process; this model was "
                "loaded from a Spark ML save (its plan is not kept): export before saving"
            )
        return save(self._amp_estimator(), path, key)

    def _amp_estimator(self) -> PrivateGLM:
        """The scikit-learn estimator of this fit's Params holding the AMP release: its
        weights, plan and certificate; its iteration count the plan's public budget
        ``max_iter`` (the passes the fit made are a statistic of the rows: not saved)."""
        est = self._estimator(**self.sklearn_params())
        coef = np.asarray(self.getOrDefault(self.weights), dtype=np.float64)
        est._set_release_attributes(coef, np.asarray(self.getOrDefault(self.intercepts)))
        est.n_features_in_ = coef.shape[1]
        source = self.feature_source()
        if not isinstance(source, str):
            est.feature_names_in_ = np.asarray(source, dtype=object)
        if self.isDefined(self.labelSet) and self.getOrDefault(self.labelSet) is not None:
            est.classes_ = np.asarray(self.getOrDefault(self.labelSet))
            est.multi_class_ = "ovr"
        est.plan_ = self.plan
        est.certificate_ = self.certificate
        est.n_iter_ = np.array([self.plan.max_iter], dtype=np.int64)
        est.seeded_ = est.random_state is not None
        return est

    @property
    def numFeatures(self) -> int:
        return int(self.getOrDefault(self.numFeaturesIn))

    def predictor(self) -> PrivateGLM:
        """A fitted scikit-learn estimator holding the released weights (predictions)."""
        if self._predictor is None:
            est = self._estimator()
            coef = np.asarray(self.getOrDefault(self.weights), dtype=np.float64)
            est._set_release_attributes(coef, np.asarray(self.getOrDefault(self.intercepts)))
            est.n_features_in_ = coef.shape[1]
            if self.isDefined(self.labelSet) and self.getOrDefault(self.labelSet) is not None:
                est.classes_ = np.asarray(self.getOrDefault(self.labelSet))
                est.multi_class_ = "ovr"
            est.certificate_ = self.certificate
            self._predictor = est
        return self._predictor

    def _transform(self, dataset: Any) -> Any:
        with quiet_pyspark():
            return self._predictions(dataset)

    def _predictions(self, dataset: Any) -> Any:
        raise NotImplementedError

    def _features(self, dataset: Any) -> Any:
        from pyspark.ml.functions import vector_to_array
        from pyspark.sql import functions as sf

        source = self.feature_source()
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
    otherwise), ``probabilityCol`` (a Vector, ``predict_proba``) and ``predictionCol``
    (the predicted label: a double for numeric labels, a string for string labels). Set a
    column name to "" to leave that column out."""

    _estimator = PrivateLogisticRegression
    _own = ("classes", "composition")

    classes = CLASSES
    composition = COMPOSITION

    @property
    def numClasses(self) -> int:
        return len(self.getOrDefault(self.labelSet))

    @property
    def coefficientMatrix(self) -> np.ndarray:
        return np.asarray(self.getOrDefault(self.weights), dtype=np.float64)

    @property
    def interceptVector(self) -> np.ndarray:
        return np.asarray(self.getOrDefault(self.intercepts), dtype=np.float64)

    def _predictions(self, dataset: Any) -> Any:
        import pandas as pd
        from pyspark.ml.functions import array_to_vector
        from pyspark.sql import functions as sf
        from pyspark.sql.functions import pandas_udf

        est = self.predictor()
        d = est.n_features_in_
        numeric = est.classes_.dtype.kind in "biuf"
        schema = f"raw array<double>, prob array<double>, pred {'double' if numeric else 'string'}"

        def predict(features):
            X = _rows(features, d)
            scores = est.decision_function(X) if len(X) else np.empty((0, 1))
            raw = np.column_stack([-scores, scores]) if scores.ndim == 1 else scores
            prob = est.predict_proba(X) if len(X) else np.empty((0, raw.shape[1]))
            pred = est.predict(X) if len(X) else np.empty(0)
            pred = pred.astype(np.float64) if numeric else pred.astype(str)
            return pd.DataFrame({"raw": list(raw), "prob": list(prob), "pred": pred})

        predict.__annotations__ = {"features": pd.Series, "return": pd.DataFrame}
        tmp = f"__objpert_{self.uid}"
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


class PrivateRobustRegressionSparkModel(_PrivateModel):
    """Fitted by :class:`PrivateRobustRegressionSpark`; ``transform`` adds
    ``predictionCol``."""

    _estimator = PrivateRobustRegression
    _own = ("scale",)

    scale = SCALE

    @property
    def coefficients(self) -> np.ndarray:
        return np.asarray(self.getOrDefault(self.weights), dtype=np.float64)[0]

    @property
    def intercept(self) -> float:
        return float(self.getOrDefault(self.intercepts)[0])

    def _predictions(self, dataset: Any) -> Any:
        import pandas as pd
        from pyspark.sql.functions import pandas_udf

        est = self.predictor()
        d = est.n_features_in_

        def predict(features):
            X = _rows(features, d)
            return pd.Series(est.predict(X) if len(X) else np.empty(0))

        predict.__annotations__ = {"features": pd.Series, "return": pd.Series}
        col = self.getPredictionCol()
        if not col:
            return dataset
        return dataset.withColumn(col, pandas_udf(predict, "double")(self._features(dataset)))
