"""One local Spark session for the Spark tests (the test modules skip themselves without
pyspark, pyarrow or Java)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    """local[2,4]: two task slots, a failed task retried up to 3 times (the fault tests)."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2,4]")
        .appName("objpert-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
