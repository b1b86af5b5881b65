"""objpert.spark: the release on a Spark DataFrame is the scikit-learn estimator's.

Each fit is compared with the in-memory estimator on the same rows (in the DataFrame's
order) and the same testing seed: the weights agree to 1e-9 relative, the certificates
exactly. A task failing mid-fit (an exception, or its Python worker ending) is retried
by Spark and the release is unchanged bit for bit.
"""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java (no java on PATH, no JAVA_HOME)", allow_module_level=True)

import objpert
from objpert.exceptions import DataError, ParameterError, PrivacyLeakWarning
from objpert.spark import (
    PrivateLogisticRegressionSpark,
    PrivateRobustRegressionSpark,
    to_sklearn_params,
)

N, D, STEPS = 1200, 4, 40
COLS = [f"c{j}" for j in range(D)]


@pytest.fixture(scope="module")
def frame(spark):
    """(DataFrame in 3 partitions, cached; X and y in the DataFrame's row order). Some rows
    have norm above 1 (clipped at data_norm=1); labels 0/1/2 and a real target."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(4)
    X = rng.normal(size=(N, D)) * 0.7
    label = np.where(X[:, 0] > 0.3, 2.0, np.where(X[:, 1] > 0, 1.0, 0.0))
    target = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.1 * rng.normal(size=N)
    rows = [
        (Vectors.dense(x), float(c), float(t), float(c > 0), *map(float, x))
        for x, c, t in zip(X, label, target, strict=True)
    ]
    df = spark.createDataFrame(rows, ["features", "label3", "target", "label", *COLS])
    df = df.repartition(3).cache()
    local = df.toPandas()  # the order the engine reads (blocks in partition order)
    return df, local[COLS].to_numpy(), local


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # testing seeds
        return fn(*args, **kwargs)


PARAMS = dict(dataNorm=1.0, maxIter=STEPS, seed=11, epsilon=2.0)


@pytest.fixture(scope="module")
def binary(frame):
    df, _, _ = frame
    est = PrivateLogisticRegressionSpark(classes=[0.0, 1.0], **PARAMS)
    return _quiet(est.fit, df)


def _reference(cls, X, y, **params):
    return _quiet(cls(**params).fit, X, y)


def test_logistic_equals_the_in_memory_release(frame, binary, tmp_path):
    df, X, local = frame
    ref = _reference(
        objpert.PrivateLogisticRegression, X, local["label"].to_numpy(),
        data_norm=1.0, max_iter=STEPS, random_state=11, epsilon=2.0, classes=[0.0, 1.0],
    )  # fmt: skip
    est = binary.estimator_
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-9)
    np.testing.assert_allclose(est.intercept_, ref.intercept_, rtol=1e-9)
    assert est.certificate_.to_dict() == ref.certificate_.to_dict()
    assert est.n_iter_.tolist() == ref.n_iter_.tolist() == [est.plan_.iterations]
    assert est.classes_.tolist() == [0.0, 1.0] and est.n_features_in_ == D
    assert binary.certificate is est.certificate_ and binary.numClasses == 2

    out = binary.transform(df).toPandas()
    Xo = np.vstack(out["features"].map(lambda v: v.toArray()).to_numpy())
    np.testing.assert_allclose(np.vstack(out["probability"].map(lambda v: v.toArray())),
                               est.predict_proba(Xo), rtol=1e-12)  # fmt: skip
    margins = est.decision_function(Xo)
    np.testing.assert_allclose(np.vstack(out["rawPrediction"].map(lambda v: v.toArray())),
                               np.column_stack([-margins, margins]), rtol=1e-12)  # fmt: skip
    assert out["prediction"].tolist() == est.predict(Xo).tolist()

    path = objpert.save(est, tmp_path / "model.objpert")
    loaded = objpert.load(path)
    np.testing.assert_array_equal(loaded.coef_, est.coef_)
    assert loaded.certificate_.to_dict() == est.certificate_.to_dict()


def test_robust_on_numeric_columns_equals_the_in_memory_release(frame):
    df, X, local = frame
    est = PrivateRobustRegressionSpark(inputCols=COLS, labelCol="target", scale=2.0, **PARAMS)
    model = _quiet(est.fit, df)
    ref = _reference(
        objpert.PrivateRobustRegression, X, local["target"].to_numpy(),
        data_norm=1.0, max_iter=STEPS, random_state=11, epsilon=2.0, scale=2.0,
    )  # fmt: skip
    np.testing.assert_allclose(model.estimator_.coef_, ref.coef_, rtol=1e-9)
    assert model.estimator_.intercept_ == pytest.approx(ref.intercept_, rel=1e-9)
    assert model.estimator_.certificate_.to_dict() == ref.certificate_.to_dict()
    assert model.estimator_.feature_names_in_.tolist() == COLS
    pred = model.transform(df).select("prediction").toPandas()["prediction"].to_numpy()
    np.testing.assert_allclose(pred, ref.predict(X), rtol=1e-9)


def test_label_set_read_from_the_rows_is_flagged(frame):
    """classes=None: PrivacyLeakWarning and "label set" not public, as in memory; the
    one-vs-rest releases equal the in-memory ones."""
    df, X, local = frame
    est = PrivateLogisticRegressionSpark(labelCol="label3", composition="split", **PARAMS)
    with pytest.warns(PrivacyLeakWarning, match="label set"):
        model = est.fit(df)
    ovr = (
        {"multi_class": "ovr"}
        if "multi_class" in objpert.PrivateLogisticRegression().get_params()
        else {}
    )
    ref = _reference(
        objpert.PrivateLogisticRegression, X, local["label3"].to_numpy(),
        data_norm=1.0, max_iter=STEPS, random_state=11, epsilon=2.0, composition="split",
        **ovr,
    )  # fmt: skip
    assert "label set" in model.estimator_.certificate_.not_public
    assert model.estimator_.classes_.tolist() == [0.0, 1.0, 2.0]
    np.testing.assert_allclose(model.estimator_.coef_, ref.coef_, rtol=1e-9)
    assert model.estimator_.certificate_.to_dict() == ref.certificate_.to_dict()


@pytest.mark.parametrize("how", ["exit"])
def test_a_task_failing_mid_fit_leaves_the_release_unchanged(frame, binary, tmp_path, how):
    """A serving task fails at step 5 (an exception, or its Python worker ends): Spark
    retries it, the retry reads its block again and answers step 5 again."""
    df, _, _ = frame
    flag = tmp_path / "fail-once"
    flag.write_text("")
    est = PrivateLogisticRegressionSpark(classes=[0.0, 1.0], **PARAMS)
    est._fault = (str(flag), 5, how)
    model = _quiet(est.fit, df)
    assert not flag.exists()  # the fault happened
    np.testing.assert_array_equal(model.estimator_.coef_, binary.estimator_.coef_)
    np.testing.assert_array_equal(model.estimator_.intercept_, binary.estimator_.intercept_)


def test_the_contract_is_checked_on_the_executors(frame, spark):
    df, _, _ = frame
    strict = PrivateLogisticRegressionSpark(classes=[0.0, 1.0], clip=False, **PARAMS)
    with pytest.raises(DataError, match=r"rows have norm above data_norm = 1"):
        strict.fit(df)
    narrow = PrivateLogisticRegressionSpark(labelCol="label3", classes=[0.0, 1.0], **PARAMS)
    with pytest.raises(DataError, match=r"2\.0"):
        narrow.fit(df)
    bad = spark.createDataFrame([([1.0, float("nan")], 1.0), ([0.0, 0.5], 0.0)], ["f", "label"])
    with pytest.raises(DataError, match="non-finite"):
        PrivateLogisticRegressionSpark(featuresCol="f", classes=[0, 1], **PARAMS).fit(bad)
    with pytest.raises(ParameterError, match="dataNorm"):
        PrivateLogisticRegressionSpark(classes=[0.0, 1.0]).fit(df)


@settings(max_examples=40, deadline=None)
@given(
    epsilon=st.floats(0.01, 100.0),
    delta=st.floats(1e-12, 0.5),
    data_norm=st.floats(1e-3, 1e3),
    fit_intercept=st.booleans(),
    max_iter=st.integers(1, 10**6),
    seed=st.none() | st.integers(0, 2**31 - 1),
    mu=st.just("auto") | st.floats(1e-6, 10.0),
    classes=st.none() | st.lists(st.integers(-5, 5), min_size=2, max_size=4, unique=True),
)
def test_params_are_the_sklearn_estimators(
    epsilon, delta, data_norm, fit_intercept, max_iter, seed, mu, classes
):
    """Any Params set on the Spark estimator give the scikit-learn estimator with the same
    parameters (the one whose release the fit runs)."""
    spark_params = dict(
        epsilon=epsilon, delta=delta, dataNorm=data_norm, fitIntercept=fit_intercept,
        maxIter=max_iter, seed=seed, mu=mu, classes=classes,
    )  # fmt: skip
    est = PrivateLogisticRegressionSpark(**spark_params)
    made = objpert.PrivateLogisticRegression(**est.sklearn_params()).get_params()
    expected = {
        "epsilon": epsilon, "delta": delta, "data_norm": data_norm,
        "fit_intercept": fit_intercept, "max_iter": max_iter, "random_state": seed,
        "mu": mu, "classes": classes,
    }  # fmt: skip
    assert {k: made[k] for k in expected} == expected
    assert made["verbose"] is False
    with pytest.raises(ParameterError, match="unknown Params"):
        to_sklearn_params({"maxIterations": max_iter})


def test_engine_products_are_numpy_s(frame):
    """The engine's products with X, its gradient and its labels equal numpy's on the rows
    as checked (clipped to data_norm, the intercept column appended)."""
    from objpert._data import prepare
    from objpert._losses import get_loss
    from objpert.spark import LabelTarget, prepare_spark

    df, X, local = frame
    prepared = prepare_spark(df, "features", "target", data_norm=1.0, labels="real")
    with prepared.X as held:
        ref = prepare(X, local["target"].to_numpy(), labels="real", data_norm=1.0)
        assert prepared.n_clipped == ref.n_clipped and prepared.zeta == ref.zeta
        engine, y, clipped = held.for_plan(
            LabelTarget("real"), n=N, d=D + 1, zeta=ref.zeta, label_kind="real", clip=True
        )
        assert (y, clipped, engine.shape) == (None, 0, (N, D + 1))
        w = np.linspace(-1.0, 1.0, D + 1)
        # the blocks hold the rows in the order of the coalesced partitions: compare what
        # does not depend on the order of the rows
        margins = engine.matvec(w)
        np.testing.assert_allclose(np.sort(margins), np.sort(ref.X @ w), rtol=1e-12)
        np.testing.assert_allclose(engine.rmatvec(margins), ref.X.T @ (ref.X @ w), rtol=1e-12)
        np.testing.assert_array_equal(np.sort(engine.labels()), np.sort(ref.y))
        loss = get_loss("robust")
        exact = ref.X.T @ loss.d1(ref.X @ w, ref.y)
        np.testing.assert_allclose(engine.glm_gradient(w, None, loss), exact, rtol=1e-12)
        with pytest.raises(DataError, match="shape"):
            held.for_plan(LabelTarget("real"), n=N + 1, d=D + 1, zeta=ref.zeta,
                          label_kind="real", clip=True)  # fmt: skip
        with pytest.raises(DataError, match="binary"):
            held.for_plan(LabelTarget("real"), n=N, d=D + 1, zeta=ref.zeta,
                          label_kind="binary", clip=True)  # fmt: skip
