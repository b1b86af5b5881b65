"""objpert on Spark: pyspark.ml Estimators and Models for the private GLMs (docs/spark.md).

:class:`PrivateLogisticRegressionSpark` and :class:`PrivateRobustRegressionSpark` fit a
Spark DataFrame by DataFrame queries only (``mapInArrow`` and a driver-side sum per pass
over a cached frame), on a classic session or on Spark Connect. The default release is
AMP (objective perturbation at the exact minimiser, with output noise covering the
solver's tolerance) solved by distributed Newton in a few passes; the finite-iterate
release of :class:`objpert.PrivateLogisticRegression` (Watkins & Arora 2026) is
``mechanism="gradient_descent"``, one pass per step. :class:`PrivateRandomStoppingSpark`
tunes a private stage on all the rows under one certificate (random stopping). The
Models save and load with Spark ML's ``write``/``load``, alone or in a ``PipelineModel``.
Needs the ``spark`` extra (``pip install 'objpert[spark]'``) and Java.
"""

from objpert.spark._engine import SparkEngine, prepare_spark
from objpert.spark._estimators import (
    PrivateLogisticRegressionSpark,
    PrivateRobustRegressionSpark,
)
from objpert.spark._models import (
    PrivateLogisticRegressionSparkModel,
    PrivateRobustRegressionSparkModel,
)
from objpert.spark._params import to_sklearn_params
from objpert.spark._stopping import PrivateRandomStoppingSpark
from objpert.spark._tasks import LabelTarget

__all__ = [
    "LabelTarget",
    "PrivateLogisticRegressionSpark",
    "PrivateLogisticRegressionSparkModel",
    "PrivateRandomStoppingSpark",
    "PrivateRobustRegressionSpark",
    "PrivateRobustRegressionSparkModel",
    "SparkEngine",
    "prepare_spark",
    "to_sklearn_params",
]
