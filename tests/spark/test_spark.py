"""objpert.spark on a classic session and on Spark Connect (every test taking ``spark``
runs on both).

The default release (AMP, distributed Newton) is compared with the same mechanism in
memory on the same rows and seed: the registry's AMP plan released by
:func:`objpert.mechanisms.amp_release` (the registry's ``get("amp").release``) and by the
in-memory batch code with one draw (damped Newton with dense systems, the same noise as
one release): equal to 1e-9. The gradient-descent release is compared with the
scikit-learn estimator.
"""

from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java (no java on PATH, no JAVA_HOME)", allow_module_level=True)

import objpert
from objpert._data import prepare
from objpert.estimators import fit_statistics
from objpert.exceptions import DataError, ParameterError, ToleranceError
from objpert.mechanisms import amp_release, get
from objpert.mechanisms._peers import peer_release_batch
from objpert.mechanisms._registry import plan as plan_release
from objpert.spark import (
    PrivateLogisticRegressionSpark,
    PrivateLogisticRegressionSparkModel,
    PrivateRobustRegressionSpark,
    to_sklearn_params,
)

N, D, STEPS = 1200, 3, 8
COLS = ["a", "b", "c"]
BOUNDS = [[-1.0, 1.0], [-0.5, 1.5], [-2.0, 0.5]]


def _data():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(N, D)) * 0.7
    label = (X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=N) > 0).astype(float)
    target = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=N)
    return X, label, target


@pytest.fixture(scope="module")
def frame(spark):
    """A cached DataFrame in 3 partitions: a Vector column, numeric columns, a binary
    label, three classes and a real target. Some rows have norm above 1."""
    from pyspark.ml.linalg import Vectors

    X, label, target = _data()
    three = np.where(X[:, 2] > 0.4, 2.0, label)
    rows = [
        (Vectors.dense(x), float(c), float(k), float(t), *map(float, x))
        for x, c, k, t in zip(X, label, three, target, strict=True)
    ]
    df = spark.createDataFrame(rows, ["features", "label", "label3", "target", *COLS])
    return df.repartition(3).cache()


def _seeded(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", objpert.TestingSeedWarning)
        return fn(*args)


def _newton_in_memory(X, y, labels, loss, *, epsilon, data_norm, seed, passes, **extra):
    """The same mechanism in memory: the AMP plan for the prepared rows, one draw of the
    batch release (damped Newton, dense systems)."""
    ref = prepare(X, y, labels=labels, data_norm=data_norm)
    gradient_bound = extra.get("loss_params", {}).get("scale", 1.0) * ref.zeta  # L1 zeta
    plan = plan_release(
        "amp", loss=loss, n=ref.n, d=ref.d, zeta=ref.zeta, epsilon=epsilon, delta=1e-6,
        max_iter=passes, gamma=1e-11 * gradient_bound, **extra,
    )  # fmt: skip
    out = _seeded(peer_release_batch, ref.X, ref.y, plan, 1, seed)
    for single in (amp_release, get("amp").release):  # one release: the same numbers
        np.testing.assert_array_equal(_seeded(single, ref.X, ref.y, plan, seed).weights,
                                      out.weights[0])  # fmt: skip
    return out.weights[0], plan


def test_default_release_equals_the_same_mechanism_in_memory(frame):
    X, label, _ = _data()
    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0], seed=11, epsilon=2.0)
    with fit_statistics() as fits:
        model = _seeded(est.fit, frame)
    w, plan = _newton_in_memory(
        X, label, "binary", "logistic", epsilon=2.0, data_norm=1.0, seed=11, passes=40
    )
    np.testing.assert_allclose(model.coefficientMatrix[0], w[:-1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.interceptVector[0], w[-1] * 1.0, rtol=1e-9, atol=1e-12)
    assert model.certificate.to_dict() == plan.certificate.to_dict()
    assert model.plan == plan
    assert fits[-1].passes <= 30  # the checking pass and the Newton passes
    assert not hasattr(model, "passes_")  # a statistic of the rows: not on the model
    assert model.estimator_ is None and model.numClasses == 2 and model.numFeatures == D


def test_robust_with_declared_bounds_equals_the_same_mechanism_in_memory(frame):
    """featureBounds: values clipped to them, dataNorm derived (nobody computes it)."""
    X, _, target = _data()
    est = PrivateRobustRegressionSpark(
        inputCols=COLS, featureBounds=BOUNDS, labelCol="target", scale=2.0, seed=3
    )
    model = _seeded(est.fit, frame)
    lo, hi = np.array(BOUNDS).T
    norm = float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi))))
    w, plan = _newton_in_memory(
        np.clip(X, lo, hi), target, "real", "robust", epsilon=1.0, data_norm=norm, seed=3,
        passes=40, loss_params={"scale": 2.0},
    )  # fmt: skip
    np.testing.assert_allclose(model.coefficients, w[:-1], rtol=1e-9, atol=1e-12)
    assert model.intercept == pytest.approx(w[-1] * norm, rel=1e-9, abs=1e-12)
    assert model.certificate.to_dict() == plan.certificate.to_dict()
    pred = model.transform(frame).select("prediction").toPandas()["prediction"].to_numpy()
    Xo = frame.select(*COLS).toPandas().to_numpy()
    np.testing.assert_allclose(pred, Xo @ model.coefficients + model.intercept, rtol=1e-9)


def test_gradient_descent_equals_the_sklearn_estimator(frame):
    """mechanism='gradient_descent': the finite-iterate release, one pass per step."""
    X, label, _ = _data()
    est = PrivateLogisticRegressionSpark(
        mechanism="gradient_descent", dataNorm=1.0, classes=[0.0, 1.0], seed=5, maxIter=STEPS
    )
    with fit_statistics() as fits:
        model = _seeded(est.fit, frame)
    ref = _seeded(
        objpert.PrivateLogisticRegression(
            data_norm=1.0, classes=[0.0, 1.0], random_state=5, max_iter=STEPS, verbose=False
        ).fit, X, label,
    )  # fmt: skip
    np.testing.assert_allclose(model.estimator_.coef_, ref.coef_, rtol=1e-9)
    np.testing.assert_allclose(model.interceptVector, ref.intercept_, rtol=1e-9)
    assert model.certificate.to_dict() == ref.certificate_.to_dict()
    assert fits[-1].passes == 1 + ref.plan_.iterations  # the check, then one per step


def test_a_worker_ending_mid_fit_leaves_the_release_unchanged(spark, frame, tmp_path):
    """A task's Python worker ends during a Newton pass: Spark retries the task (classic
    local[2,4]; the local Connect server gives one try), the retry reads its cached blocks
    again and the release is the same bit for bit."""
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        pytest.skip("the local Spark Connect server tries a task once (local[2])")
    flag = tmp_path / "fail-once"
    flag.write_text("")
    params = dict(dataNorm=1.0, classes=[0.0, 1.0], seed=11, epsilon=2.0)
    faulty = PrivateLogisticRegressionSpark(**params)
    faulty._fault = str(flag)
    model = _seeded(faulty.fit, frame)
    assert not flag.exists()  # the fault happened
    clean = _seeded(PrivateLogisticRegressionSpark(**params).fit, frame)
    np.testing.assert_array_equal(model.coefficientMatrix, clean.coefficientMatrix)
    np.testing.assert_array_equal(model.interceptVector, clean.interceptVector)


def test_a_pass_budget_too_small_releases_nothing(frame):
    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0], maxPasses=3)
    with pytest.raises(ToleranceError, match=r"maxPasses = 3.*nothing was released"):
        est.fit(frame)


def test_the_contract_is_checked_on_the_executors(spark, frame):
    with pytest.raises(DataError, match=r"rows have norm above data_norm = 1"):
        PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0], clip=False).fit(frame)
    with pytest.raises(DataError, match=r"2\.0"):
        PrivateLogisticRegressionSpark(labelCol="label3", dataNorm=1.0, classes=[0, 1]).fit(frame)
    with pytest.raises(ParameterError, match="two classes"):
        PrivateLogisticRegressionSpark(labelCol="label3", dataNorm=1.0, classes=[0, 1, 2]).fit(
            frame
        )
    with pytest.raises(ParameterError, match="dataNorm"):
        PrivateLogisticRegressionSpark(classes=[0.0, 1.0]).fit(frame)
    holes = spark.createDataFrame(
        [(1.0, None, 0.0), (0.5, 0.2, 1.0), (None, 0.1, None)], "a double, b double, y double"
    )
    with pytest.raises(DataError, match=r"1 in column 'a', 1 in column 'b', 1 in column 'y'"):
        PrivateLogisticRegressionSpark(inputCols=["a", "b"], labelCol="y", dataNorm=1.0).fit(holes)
    nan = spark.createDataFrame([([1.0, float("nan")], 1.0), ([0.0, 0.5], 0.0)], ["f", "y"])
    with pytest.raises(DataError, match="non-finite"):
        PrivateLogisticRegressionSpark(featuresCol="f", labelCol="y", dataNorm=1.0).fit(nan)


def test_a_pipeline_saves_and_loads_without_warnings(spark, frame, tmp_path):
    """VectorAssembler + the private stage: fitted, saved and loaded the Spark way; no
    warning from our calls (fit, save, load, transform)."""
    from pyspark.ml import Pipeline, PipelineModel
    from pyspark.ml.feature import VectorAssembler

    stages = [
        VectorAssembler(inputCols=COLS, outputCol="assembled"),
        PrivateLogisticRegressionSpark(featuresCol="assembled", dataNorm=1.0, classes=[0.0, 1.0]),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = Pipeline(stages=stages).fit(frame)
        fitted.write().overwrite().save(str(tmp_path / "pipeline"))
        loaded = PipelineModel.load(str(tmp_path / "pipeline"))
        scored = loaded.transform(frame).select("probability", "prediction", *COLS)
        stages[-1].save(str(tmp_path / "estimator"))
        again = PrivateLogisticRegressionSpark.load(str(tmp_path / "estimator"))
    assert [str(w.message) for w in caught] == []

    def named(stage):
        return {p.name: v for p, v in stage.extractParamMap().items()}

    assert named(again) == named(stages[-1])
    stage = loaded.stages[-1]
    assert isinstance(stage, PrivateLogisticRegressionSparkModel)
    np.testing.assert_array_equal(stage.coefficientMatrix, fitted.stages[-1].coefficientMatrix)
    assert stage.certificate.to_dict() == fitted.stages[-1].certificate.to_dict()
    assert stage.getOrDefault("dataNorm") == 1.0 and stage.getFeaturesCol() == "assembled"
    out = scored.toPandas()
    Xo = out[COLS].to_numpy()
    m = Xo @ stage.coefficientMatrix[0] + stage.interceptVector[0]
    p1 = np.vstack(out["probability"].map(lambda v: v.toArray()))[:, 1]
    np.testing.assert_allclose(p1, 1.0 / (1.0 + np.exp(-m)), rtol=1e-12)
    assert out["prediction"].tolist() == np.where(m > 0, 1.0, 0.0).tolist()


def test_cross_validation_warns_once_and_is_recorded(frame, cross_validate):
    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0], maxPasses=40)
    best, leaks = cross_validate(est, frame)
    assert len(leaks) == 1 and "CrossValidator fits this private estimator 3 times" in leaks[0]
    assert "model selection by CrossValidator (3 fits)" in best.certificate.not_public


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
    parameters (the one whose settings the fit validates and, for gradient descent, runs)."""
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


def test_feature_bounds_give_the_row_bound():
    est = PrivateRobustRegressionSpark(inputCols=COLS, featureBounds=BOUNDS)
    expected = float(np.linalg.norm([1.0, 1.5, 2.0]))
    assert est.sklearn_params()["data_norm"] == pytest.approx(expected, rel=1e-15)
    with pytest.raises(ParameterError, match="one \\(lo, hi\\) per column"):
        PrivateRobustRegressionSpark(inputCols=COLS, featureBounds=BOUNDS[:2]).sklearn_params()
    with pytest.raises(ParameterError, match="need inputCols"):
        PrivateRobustRegressionSpark(featureBounds=BOUNDS).sklearn_params()


def test_a_train_validation_split_is_found_on_the_frames():
    """The search is read from the calling frames: TrainValidationSplit fits each setting
    once, plus the refit of the selected one."""
    from pyspark.ml.tuning import ParamGridBuilder, TrainValidationSplit

    from objpert.spark._tuning import find_search

    est = PrivateLogisticRegressionSpark(dataNorm=1.0)
    grid = ParamGridBuilder().addGrid(est.epsilon, [0.5, 1.0, 2.0]).build()
    search = TrainValidationSplit(estimator=est, estimatorParamMaps=grid)

    def fit(self):  # a frame whose self is the search, as in its _fit
        return find_search()

    found, use = fit(search)
    assert found is search and use.record == "model selection by TrainValidationSplit (4 fits)"
    assert find_search() is None


def test_random_stopping_on_all_rows_is_certified_by_the_search(frame):
    """PrivateRandomStoppingSpark: every run on all the rows at the per-run budget of the
    in-memory search, the search's certificate recomputed from its public budget, the
    chosen model's release within the run budget; the same seed, the same choice."""
    from pyspark.ml.tuning import ParamGridBuilder

    from objpert.model_selection import random_stopping_budget, random_stopping_certificate
    from objpert.model_selection._random_stopping import candidate_budget
    from objpert.spark import PrivateRandomStoppingSpark

    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0], epsilon=4.0)
    grid = ParamGridBuilder().addGrid(est.mu, [0.01, 0.1]).build()
    search = PrivateRandomStoppingSpark(estimator=est, estimatorParamMaps=grid, runsMean=2,
                                        seed=3)  # fmt: skip
    _seeded(search.fit, frame)
    cert = search.certificate
    eps_c, delta_c = random_stopping_budget(4.0, 1e-6, 2)
    model_eps, score_eps = candidate_budget(eps_c, 0.1)
    assert (cert.model_epsilon, cert.score_epsilon, cert.candidate_delta) == (
        model_eps, score_eps, delta_c,
    )  # fmt: skip
    assert (cert.epsilon, cert.delta) == random_stopping_certificate(
        cert.candidate_epsilon, delta_c, 2
    )
    assert cert.epsilon <= 4.0 and cert.delta <= 1e-6 and cert.certified
    assert cert.n_rows == N and cert.n_candidates == 2
    chosen = search.bestModel.certificate
    assert chosen.epsilon <= model_eps and chosen.delta <= delta_c
    assert search.bestModel.getOrDefault("mu") == grid[search.bestIndex][est.mu]
    again = _seeded(
        PrivateRandomStoppingSpark(estimator=est, estimatorParamMaps=grid, runsMean=2,
                                   seed=3).fit, frame,
    )  # fmt: skip
    assert again.bestIndex == search.bestIndex
    np.testing.assert_array_equal(again.bestModel.coefficientMatrix,
                                  search.bestModel.coefficientMatrix)  # fmt: skip
    pred = search.transform(frame).select("prediction").toPandas()["prediction"]
    assert len(pred) == N
    with pytest.raises(ParameterError, match="sets epsilon of each run itself"):
        PrivateRandomStoppingSpark(
            estimator=est, estimatorParamMaps=ParamGridBuilder().addGrid(est.epsilon, [1.0]).build()
        ).fit(frame)


def test_the_private_score_is_the_in_memory_one(frame):
    """The score of a run on Spark (one DataFrame pass) equals the in-memory search's
    integer score of the same predictions."""
    from objpert.model_selection._stopping_runs import integer_utility
    from objpert.spark._stopping import _spark_utility

    model = PrivateRobustRegressionSpark(
        inputCols=COLS, featureBounds=BOUNDS, labelCol="target", epsilon=5.0
    ).fit(frame)
    out = model.transform(frame).select("prediction", "target").toPandas()
    for bound in (0.3, 2.0):
        expected = integer_utility(out["prediction"], out["target"], False, bound)
        assert _spark_utility(model, frame, False, bound) == expected < 0


def test_a_default_fit_transform_save_load_raises_no_warning(spark, frame, tmp_path):
    """The default fit (declared classes, no seed), transform, save and load of the model
    under an error filter: any warning raised during our calls fails; collected garbage
    (unclosed pools, sockets) included."""
    import gc

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0]).fit(frame)
        model.transform(frame).select("prediction").collect()
        model.save(str(tmp_path / "model"))  # (overwrite() needs the JVM: not on Connect)
        loaded = PrivateLogisticRegressionSparkModel.load(str(tmp_path / "model"))
        loaded.transform(frame).select("probability").collect()
        gc.collect()
    assert loaded.certificate.to_dict() == model.certificate.to_dict()


def test_a_gradient_descent_model_exports_to_the_signed_file(frame, tmp_path):
    """A finite-iterate Spark model inside a PipelineModel exports to objpert's signed file:
    it loads, verifies under the key and predicts as the Spark model."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler

    from objpert.persistence import read

    stages = [
        VectorAssembler(inputCols=COLS, outputCol="assembled"),
        PrivateLogisticRegressionSpark(
            featuresCol="assembled", dataNorm=1.0, classes=[0.0, 1.0],
            mechanism="gradient_descent", maxIter=STEPS,
        ),
    ]  # fmt: skip
    stage = Pipeline(stages=stages).fit(frame).stages[-1]
    path = stage.export(tmp_path / "model.json", key=b"k")
    loaded = read(path, key=b"k")
    assert loaded.verified
    X, _, _ = _data()
    np.testing.assert_array_equal(loaded.model.coef_, stage.coefficientMatrix)
    np.testing.assert_array_equal(loaded.model.predict_proba(X),
                                  stage.predictor().predict_proba(X))  # fmt: skip
    assert loaded.model.certificate_.to_dict() == stage.certificate.to_dict()


def test_an_amp_model_exports_to_the_signed_file(frame, tmp_path):
    """The default (AMP) Spark model inside a PipelineModel exports to objpert's signed
    file: it loads, verifies under the key, its plan re-derived by objpert.plan("amp", ...)
    equals the fit's, and it predicts as the Spark model (a robust regression's too); a
    model loaded from a Spark ML save (its plan not kept) is refused."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler

    from objpert.persistence import read

    stages = [
        VectorAssembler(inputCols=COLS, outputCol="assembled"),
        PrivateLogisticRegressionSpark(featuresCol="assembled", dataNorm=1.0, classes=[0.0, 1.0]),
    ]
    stage = Pipeline(stages=stages).fit(frame).stages[-1]
    path = stage.export(tmp_path / "amp.json", key=b"k")
    loaded = read(path, key=b"k")
    assert loaded.verified and loaded.model.plan_ == stage.plan
    assert loaded.model.certificate_.to_dict() == stage.certificate.to_dict()
    X, _, _ = _data()
    np.testing.assert_array_equal(loaded.model.coef_, stage.coefficientMatrix)
    np.testing.assert_array_equal(loaded.model.predict_proba(X),
                                  stage.predictor().predict_proba(X))  # fmt: skip
    np.testing.assert_array_equal(loaded.model.predict(X), stage.predictor().predict(X))
    np.testing.assert_array_equal(loaded.model.n_iter_, [stage.plan.max_iter])
    robust = PrivateRobustRegressionSpark(dataNorm=1.0, labelCol="target", scale=0.5).fit(frame)
    got = read(robust.export(tmp_path / "robust.json", key=b"k"), key=b"k")
    assert got.verified and got.model.plan_ == robust.plan
    np.testing.assert_array_equal(got.model.predict(X), robust.predictor().predict(X))
    stage.save(str(tmp_path / "stage"))
    with pytest.raises(ParameterError, match="export before saving"):
        PrivateLogisticRegressionSparkModel.load(str(tmp_path / "stage")).export(tmp_path / "x")


@settings(max_examples=30, deadline=None)
@given(
    runs_mean=st.none() | st.integers(-3, 20_000) | st.floats(0.5, 5.0) | st.just("4"),
    law=st.none() | st.sampled_from(["logarithmic", "geometric", "uniform", ""]),
    fraction=st.none() | st.floats(-1.0, 2.0),
    bound=st.floats(-1.0, 5.0),
)
@example(runs_mean=1.0, law=None, fraction=None, bound=1.0)  # an integral float: refused
@example(runs_mean=True, law=None, fraction=None, bound=1.0)
def test_random_stopping_settings_are_checked_before_any_row(runs_mean, law, fraction, bound):
    """Any setting of the Spark search is accepted or refused with a ParameterError before
    the DataFrame is read (here there is none)."""
    from objpert.spark import PrivateRandomStoppingSpark

    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0])
    search = PrivateRandomStoppingSpark(
        estimator=est, estimatorParamMaps=[{est.mu: 0.1}], runsMean=runs_mean, law=law,
        scoreFraction=fraction, scoreBound=bound,
    )  # fmt: skip
    valid = (
        (runs_mean is None or (type(runs_mean) is int and 1 <= runs_mean <= 10_000))
        and law in (None, "logarithmic", "geometric")
        and (fraction is None or 0.0 < fraction < 1.0)
        and bound > 0.0
    )
    if valid:
        assert search._checked()[1] in ("logarithmic", "geometric")
    else:
        with pytest.raises(ParameterError):
            search.fit(None)


def test_spark_one_vs_rest_over_a_private_stage_is_refused(frame):
    """It fits the stage once per class on the same rows, composed by nothing."""
    from pyspark.ml.classification import OneVsRest

    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0])
    with pytest.raises(ParameterError, match="OneVsRest fits this private estimator"):
        OneVsRest(classifier=est, labelCol="label3").fit(frame)


def test_random_stopping_refuses_a_privacy_unit_in_a_param_map():
    """The search is per row: a unit set by a ParamMap is refused as on the estimator."""
    from objpert.spark import PrivateRandomStoppingSpark

    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0])
    maps = [{est.mu: 0.1, est.privacyUnitCol: "pid", est.maxRowsPerUnit: 2}]
    search = PrivateRandomStoppingSpark(estimator=est, estimatorParamMaps=maps)
    with pytest.raises(ParameterError, match="privacy unit"):
        search.fit(None)


def test_random_stopping_refuses_param_maps_that_read_different_things():
    """The certificate names the chosen run's not_public items: ParamMaps that read a
    label set (classes unset) in some runs and not others are refused before any row."""
    from objpert.spark import PrivateRandomStoppingSpark

    est = PrivateLogisticRegressionSpark(dataNorm=1.0, classes=[0.0, 1.0])
    maps = [{est.mu: 0.1}, {est.mu: 0.1, est.classes: None}]
    search = PrivateRandomStoppingSpark(estimator=est, estimatorParamMaps=maps)
    with pytest.raises(ParameterError, match="reads other things from the private rows"):
        search.fit(None)


def test_cross_validation_over_a_pipeline_records_the_search_in_every_fold_model(frame):
    """A Pipeline's fits run in the search's worker threads: the search is found on the
    thread that runs it, so every fold model records it too."""
    from pyspark.ml import Pipeline
    from pyspark.ml.evaluation import BinaryClassificationEvaluator
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.tuning import CrossValidator, ParamGridBuilder

    est = PrivateLogisticRegressionSpark(
        featuresCol="assembled", dataNorm=1.0, classes=[0.0, 1.0], maxPasses=40
    )
    pipe = Pipeline(stages=[VectorAssembler(inputCols=COLS, outputCol="assembled"), est])
    grid = ParamGridBuilder().addGrid(est.epsilon, [1.0]).build()
    cv = CrossValidator(
        estimator=pipe, estimatorParamMaps=grid, numFolds=2, parallelism=1, seed=1,
        evaluator=BinaryClassificationEvaluator(), collectSubModels=True,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = cv.fit(frame)
    record = "model selection by CrossValidator (3 fits)"
    folds = [model.stages[-1] for fold in fitted.subModels for model in fold]
    assert len(folds) == 2
    assert all(record in stage.certificate.not_public for stage in folds)
    assert record in fitted.bestModel.stages[-1].certificate.not_public
