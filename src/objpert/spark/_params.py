"""The Params of objpert's Spark ML stages (Spark ML's camelCase names).

Each Param that the scikit-learn estimators also have maps onto their parameter
(:data:`SKLEARN_NAMES`, :func:`to_sklearn_params`), with their defaults; the others are
Spark's own: the columns, ``featureBounds``, ``mechanism`` and ``maxPasses``. A fitted
Model also carries its release as Params (:class:`ReleaseParams`), so that Spark ML's
``write``/``load`` (``DefaultParamsWritable``) save it with the stage.
"""

# ruff: noqa: N815 (Spark ML names its Params in camelCase: featuresCol, maxIter, ...)

from __future__ import annotations

import math
from typing import Any, ClassVar

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasFeaturesCol, HasLabelCol, HasPredictionCol
from pyspark.ml.util import (
    DefaultParamsReadable,
    DefaultParamsReader,
    DefaultParamsWritable,
    DefaultParamsWriter,
)

from objpert.estimators._base import PrivateGLM
from objpert.exceptions import ParameterError
from objpert.preprocessing._bounded import check_bounds
from objpert.spark._engine import quiet_pyspark

__all__ = [
    "CLASSES",
    "COMPOSITION",
    "MECHANISMS",
    "SCALE",
    "SKLEARN_NAMES",
    "Persistent",
    "PrivateParams",
    "ReleaseParams",
    "param",
    "to_sklearn_params",
]

#: The releases a Spark fit can run: "amp" (default: the exact-minimiser objective
#: perturbation solved by distributed Newton, a few passes) and "gradient_descent" (the
#: finite-iterate release of Watkins & Arora 2026: one pass per gradient step).
MECHANISMS = ("amp", "gradient_descent")

#: Default most passes over the data of the Newton release (the checking pass included).
DEFAULT_MAX_PASSES = 40

#: Default gradient-norm tolerance of the Newton release, relative to L1 zeta: Newton
#: reaches it in a step or two past 1e-9, and the output noise that covers it is 100
#: times smaller than at AMP's default 1e-9.
DEFAULT_TOL = 1e-11


def _auto_or_float(value: Any) -> Any:
    if isinstance(value, str):
        if value != "auto":
            raise TypeError(f"mu must be 'auto' or a number > 0; got {value!r}")
        return value
    return TypeConverters.toFloat(value)


def _pairs(value: Any) -> list[list[float]]:
    return [[float(lo), float(hi)] for lo, hi in TypeConverters.toList(value)]


def param(name: str, doc: str, converter: Any = TypeConverters.identity) -> Param:
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
    "classes": "classes",
    "composition": "composition",
    "scale": "scale",
    "maxRowsPerUnit": "max_rows_per_unit",
}


class PrivateParams(HasFeaturesCol, HasLabelCol, HasPredictionCol):
    """The Params both private GLMs share (defaults: the scikit-learn estimators')."""

    inputCols = param(
        "inputCols",
        "numeric feature columns, read instead of featuresCol when set",
        TypeConverters.toListString,
    )
    featureBounds = param(
        "featureBounds",
        "declared (lo, hi) of each inputCols column: values clipped to them, dataNorm "
        "derived from them",
        _pairs,
    )
    epsilon = param("epsilon", "target epsilon of the fit (> 0)", TypeConverters.toFloat)
    delta = param("delta", "target delta of the fit, in (0, 1)", TypeConverters.toFloat)
    dataNorm = param(
        "dataNorm",
        "public bound on each feature row's Euclidean norm (Assumption 1); required "
        "unless featureBounds are set",
        TypeConverters.toFloat,
    )
    fitIntercept = param("fitIntercept", "append an intercept column", TypeConverters.toBoolean)
    interceptScaling = param(
        "interceptScaling", "value c of the intercept column (None: dataNorm)",
        TypeConverters.toFloat,
    )  # fmt: skip
    clip = param(
        "clip", "scale rows above dataNorm down (True) or refuse them", TypeConverters.toBoolean
    )
    mechanism = param(
        "mechanism",
        "'amp' (Newton, a few passes) or 'gradient_descent' (one pass per step)",
        TypeConverters.toString,
    )
    maxPasses = param(
        "maxPasses", "most passes over the data of the Newton release", TypeConverters.toInt
    )
    tol = param(
        "tol",
        "the Newton release's gradient-norm tolerance, relative to the per-row gradient "
        "bound L1 zeta (the output noise covers it)",
        TypeConverters.toFloat,
    )
    calibration = param(
        "calibration", "'tight' or 'corollary413' (gradient_descent)", TypeConverters.toString
    )
    mu = param("mu", "ridge mu: 'auto' or a number > 0", _auto_or_float)
    comparatorNorm = param(
        "comparatorNorm",
        "W, the comparator norm of mu='auto': 'auto' or a number > 0 (gradient_descent)",
        _auto_or_float,
    )  # fmt: skip
    maxIter = param(
        "maxIter", "most gradient steps the calibration may plan (gradient_descent)",
        TypeConverters.toInt,
    )  # fmt: skip
    privacyUnitCol = param(
        "privacyUnitCol",
        "column of privacy unit ids (a person): with maxRowsPerUnit, the fit is certified "
        "for one unit of up to maxRowsPerUnit rows",
        TypeConverters.toString,
    )
    maxRowsPerUnit = param(
        "maxRowsPerUnit",
        "k, the most rows of one privacy unit (public): at most k kept per unit, n = units x k",
        TypeConverters.toInt,
    )
    seed = param(
        "seed", "testing seed of the noise (None: OS entropy; a seed is not private)",
        TypeConverters.toInt,
    )  # fmt: skip

    _estimator: ClassVar[type[PrivateGLM]] = PrivateGLM
    _own: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *args: Any):
        super().__init__(*args)
        defaults = self._estimator().get_params()
        self._setDefault(
            **{name: defaults[SKLEARN_NAMES[name]] for name in (*COMMON, *self._own)
               if name != "seed"},
            mechanism="amp", maxPasses=DEFAULT_MAX_PASSES, tol=DEFAULT_TOL,
        )  # fmt: skip

    def sklearn_params(self) -> dict[str, Any]:
        """The scikit-learn estimator's parameters from these Params (see
        :func:`to_sklearn_params`); ``data_norm`` derived from ``featureBounds`` when
        they are set and ``dataNorm`` is not."""
        values = {name: self.getOrDefault(name) for name in (*COMMON, *self._own)
                  if self.isDefined(name)}  # fmt: skip
        bounds = self.bounds()
        if bounds is not None and values.get("dataNorm") is None:
            values["dataNorm"] = bounds_norm(bounds)
        return to_sklearn_params(values)

    def unit_column(self) -> str | None:
        """``privacyUnitCol`` (None when not set)."""
        if self.isDefined(self.privacyUnitCol) and self.getOrDefault(self.privacyUnitCol):
            return str(self.getOrDefault(self.privacyUnitCol))
        return None

    def feature_source(self) -> str | list[str]:
        if self.isDefined(self.inputCols) and self.getOrDefault(self.inputCols):
            return list(self.getOrDefault(self.inputCols))
        return self.getFeaturesCol()

    def bounds(self) -> list[tuple[float, float]] | None:
        """The declared featureBounds, checked against inputCols (None: not set)."""
        if not self.isDefined(self.featureBounds) or self.getOrDefault(self.featureBounds) is None:
            return None
        source = self.feature_source()
        if isinstance(source, str):
            raise ParameterError("featureBounds need inputCols: one (lo, hi) per column")
        pairs = check_bounds(self.getOrDefault(self.featureBounds), "featureBounds")
        if len(pairs) != len(source):
            raise ParameterError(
                f"featureBounds has {len(pairs)} pairs for {len(source)} inputCols: give one "
                "(lo, hi) per column"
            )
        return [(float(lo), float(hi)) for lo, hi in pairs]


def bounds_norm(bounds: list[tuple[float, float]]) -> float:
    """The row-norm bound of rows whose column j lies in [lo_j, hi_j]: the norm of the
    vector of max(|lo_j|, |hi_j|) (Assumption 1's zeta before the intercept column)."""
    return math.sqrt(math.fsum(max(abs(lo), abs(hi)) ** 2 for lo, hi in bounds))


COMMON = (
    "epsilon", "delta", "dataNorm", "fitIntercept", "interceptScaling", "clip", "calibration",
    "mu", "comparatorNorm", "maxIter", "seed", "maxRowsPerUnit",
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


CLASSES = param("classes", "the public label set", TypeConverters.toList)
COMPOSITION = param("composition", "how one-vs-rest releases compose", TypeConverters.toString)
SCALE = param("scale", "residual scale c of the pseudo-Huber loss (> 0)", TypeConverters.toFloat)


class QuietWriter(DefaultParamsWriter):
    """Spark ML's writer of Params-only stages, without pyspark's notice about the
    installed pandas version (raised by its Connect code paths)."""

    def saveImpl(self, path: str) -> None:
        with quiet_pyspark():
            super().saveImpl(path)


class QuietReader(DefaultParamsReader):
    """Spark ML's reader of Params-only stages (see :class:`QuietWriter`)."""

    def load(self, path: str) -> Any:
        with quiet_pyspark():
            return super().load(path)


class Persistent(DefaultParamsWritable, DefaultParamsReadable):
    """``write()``/``save()``, ``read()``/``load()`` the Spark ML way (Params as JSON)."""

    def write(self) -> QuietWriter:
        return QuietWriter(self)

    @classmethod
    def read(cls) -> QuietReader:
        return QuietReader(cls)


class ReleaseParams(Params):
    """A fitted Model's release as Params (saved by Spark ML's ``write``): the weights
    (one row per release), the intercepts, the label set, the number of features and the
    certificate (JSON). Nothing else about the rows is kept."""

    weights = param("weights", "released coefficients, one row per release")
    intercepts = param("intercepts", "released intercepts, one per release")
    labelSet = param("labelSet", "the model's label set (classifier)")
    numFeaturesIn = param("numFeaturesIn", "width of the feature vectors", TypeConverters.toInt)
    certificateJson = param("certificateJson", "the release's certificate (JSON)")
    mechanismUsed = param("mechanismUsed", "the release's mechanism", TypeConverters.toString)
