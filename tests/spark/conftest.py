"""The Spark sessions of the Spark tests: a classic local session and a Spark Connect one
(``remote("local[2]")``, from pyspark's ``connect`` extra), one after the other in the
same JVM (a process holds one kind at a time). The test modules skip themselves without
pyspark, pyarrow or Java; the Connect tests skip, with the reason, when its server cannot
start."""

from __future__ import annotations

import os
import sys
import warnings

import pytest

KINDS = ("classic", "connect")


def _start(kind: str):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyspark's notices about the pandas version
        if kind == "classic":
            session = (
                SparkSession.builder.master("local[2,4]")  # a failed task is tried 4 times
                .appName("objpert-tests")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate()
            )
            session.sparkContext.setLogLevel("ERROR")
            return session
        session = SparkSession.builder.remote("local[2]").getOrCreate()
        import pyspark.ml.connect  # noqa: F401  (its import-time notice, once per process)

        return session


@pytest.fixture(scope="module", params=KINDS)
def spark(request):
    """A classic session, then a Spark Connect session (the tests using it run once on
    each)."""
    try:
        session = _start(request.param)
    except Exception as exc:  # pragma: no cover - depends on the machine
        if request.param == "connect":
            pytest.skip(f"the Spark Connect server did not start: {exc}")
        raise
    yield session
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.stop()


@pytest.fixture
def cross_validate():
    """A function running pyspark's CrossValidator (2 folds, epsilon in [1.0], the binary
    evaluator, seed 1) over a private stage on a DataFrame: (the best model, the messages
    of the PrivacyLeakWarnings it raised)."""
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    from objpert.exceptions import PrivacyLeakWarning

    def run(est, frame):
        grid = ParamGridBuilder().addGrid(est.epsilon, [1.0]).build()
        cv = CrossValidator(
            estimator=est, estimatorParamMaps=grid, numFolds=2, parallelism=1,
            evaluator=BinaryClassificationEvaluator(), seed=1,
        )  # fmt: skip
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            best = cv.fit(frame).bestModel
        return best, [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)]

    return run
