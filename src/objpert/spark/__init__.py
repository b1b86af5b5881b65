"""objpert on Spark: pyspark.ml Estimators and Models for the private GLMs (docs/spark.md).

:class:`PrivateLogisticRegressionSpark` and :class:`PrivateRobustRegressionSpark` fit a
Spark DataFrame with the release of :class:`objpert.PrivateLogisticRegression` and
:class:`objpert.PrivateRobustRegression` (Watkins & Arora 2026): plan, certificate and
noise on the driver, each gradient step one round trip to the tasks serving the checked
rows as numpy blocks (:class:`~objpert.spark.SparkEngine`). Needs the ``spark``
extra (``pip install 'objpert[spark]'``) and Java.
"""

from objpert.spark._engine import SparkEngine, prepare_spark
from objpert.spark._estimators import (
    PrivateLogisticRegressionSpark,
    PrivateLogisticRegressionSparkModel,
    PrivateRobustRegressionSpark,
    PrivateRobustRegressionSparkModel,
    to_sklearn_params,
)
from objpert.spark._executor import LabelTarget

__all__ = [
    "LabelTarget",
    "PrivateLogisticRegressionSpark",
    "PrivateLogisticRegressionSparkModel",
    "PrivateRobustRegressionSpark",
    "PrivateRobustRegressionSparkModel",
    "SparkEngine",
    "prepare_spark",
    "to_sklearn_params",
]
