"""Declared bounds flow to the estimator: after objpert's bounded steps in a scikit-learn
Pipeline (however it is built), a private estimator without data_norm takes its row-norm
bound from those steps' parameters, reads nothing from the rows, and saves it declared."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from objpert import PrivacyLeakWarning, PrivateLogisticRegression, PrivateRobustRegression
from objpert.accounting import pipeline_certificate
from objpert.persistence import load, save
from objpert.preprocessing import (
    BoundedOneHotEncoder,
    BoundedScaler,
    PrivateFeatureBounds,
    row_norm_bound,
)

N = 400
CATEGORIES = [["month", "year"], ["card", "transfer", "check"]]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({
        "tenure": rng.integers(0, 73, N),
        "charges": rng.uniform(18, 120, N),
        "contract": rng.choice(CATEGORIES[0], N),
        "payment": rng.choice(CATEGORIES[1], N),
    })  # fmt: skip
    y = ((df["contract"] == "month") * 1.0 - df["tenure"] / 36 > 0).astype(int).to_numpy()
    return df, y


def _columns() -> ColumnTransformer:
    return ColumnTransformer([
        ("numbers", BoundedScaler(bounds=[(0, 72), (0, 150)]), ["tenure", "charges"]),
        ("categories", BoundedOneHotEncoder(categories=CATEGORIES), ["contract", "payment"]),
    ])  # fmt: skip


def _model(**kw):
    return PrivateLogisticRegression(
        epsilon=2.0, delta=1e-6, classes=[0, 1], max_iter=300, random_state=1, **kw
    )


def _fit_quietly(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # nothing read from the rows
        warnings.filterwarnings("ignore", message=".*seed.*")
        return model.fit(X, y)


def test_a_column_transformer_declares_the_bound_the_estimator_uses(frame):
    df, y = frame
    pipe = _fit_quietly(make_pipeline(_columns(), _model()), df, y)
    model = pipe[-1]
    bound = row_norm_bound(_columns())
    assert bound == pytest.approx(2.0)  # sqrt(2 scaled columns + 2 one-hot columns)
    assert model.pipeline_data_norm_ == bound
    assert model.certificate_.not_public == ()
    # the same release as an estimator told the bound, on the transformed rows
    Xt = pipe[0].transform(df)
    direct = _fit_quietly(_model(data_norm=bound), Xt, y)
    assert direct.plan_ == model.plan_
    np.testing.assert_array_equal(direct.coef_, model.coef_)


@pytest.mark.parametrize(
    "build",
    [
        lambda m: Pipeline([("pre", _columns()), ("model", m)]),
        lambda m: Pipeline([("pre", _columns()), ("noop", "passthrough"), ("model", m)]),
        lambda m: make_pipeline(_columns(), make_pipeline("passthrough", m)),
        lambda m: make_pipeline(
            ColumnTransformer(
                [
                    (
                        "u",
                        FeatureUnion(
                            [
                                ("a", BoundedScaler(bounds=[(0, 72)])),
                                ("b", BoundedScaler(bounds=[(0, 72)])),
                            ]
                        ),
                        ["tenure"],
                    ),
                ]
            ),
            m,
        ),
    ],
)
def test_however_the_pipeline_is_built(frame, build):
    df, y = frame
    pipe = _fit_quietly(build(_model()), df, y)
    model = pipe[-1] if not isinstance(pipe[-1], Pipeline) else pipe[-1][-1]
    assert model.pipeline_data_norm_ is not None and model.certificate_.not_public == ()


def test_in_a_search_the_refitted_model_declares_it_too(frame):
    df, y = frame
    search = GridSearchCV(make_pipeline(_columns(), _model()),
                          {"privatelogisticregression__mu": [0.5, 1.0]}, cv=2)  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(df, y)
    leaks = [w for w in caught if "data norm" in str(w.message) or "row norm" in str(w.message)]
    assert leaks == []
    assert search.best_estimator_[-1].pipeline_data_norm_ == pytest.approx(2.0)


def test_a_step_without_a_public_bound_still_reads_it_and_says_so(frame):
    df, y = frame
    X = df[["tenure", "charges"]].to_numpy(float)
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        pipe = make_pipeline(StandardScaler(), _model()).fit(X, y)
    assert pipe[-1].pipeline_data_norm_ is None
    assert "data norm" in pipe[-1].certificate_.not_public


def test_a_declared_data_norm_wins_and_outside_a_pipeline_nothing_changes(frame):
    df, y = frame
    pipe = _fit_quietly(make_pipeline(_columns(), _model(data_norm=3.0)), df, y)
    assert pipe[-1].pipeline_data_norm_ is None
    assert pipe[-1].plan_.zeta == pytest.approx(math.hypot(3.0, 3.0))  # intercept c = 3
    Xt = _columns().fit(df).transform(df)
    with pytest.warns(PrivacyLeakWarning):
        alone = PrivateRobustRegression(max_iter=200, random_state=0).fit(Xt, y * 1.0)
    assert alone.pipeline_data_norm_ is None


def test_the_saved_model_declares_the_bound(frame, tmp_path):
    df, y = frame
    model = _fit_quietly(make_pipeline(_columns(), _model()), df, y)[-1]
    path = save(model, tmp_path / "m.json", key=b"k" * 16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load(path, key=b"k" * 16)
    assert loaded.get_params()["data_norm"] == pytest.approx(2.0)
    assert loaded.certificate_.not_public == ()
    np.testing.assert_array_equal(loaded.coef_, model.coef_)


FITTED = "preprocessing fitted on the private rows"


def _imputing_columns() -> ColumnTransformer:
    return ColumnTransformer([
        ("numbers", make_pipeline(SimpleImputer(), BoundedScaler(bounds=[(0, 72), (0, 150)])),
         ["tenure", "charges"]),
        ("categories", BoundedOneHotEncoder(categories=CATEGORIES), ["contract", "payment"]),
    ])  # fmt: skip


@pytest.mark.parametrize(
    ("build", "frame_in", "name"),
    [
        (lambda: make_pipeline(StandardScaler(), BoundedScaler(bounds=[(-5, 5)] * 2), _model()),
         False, "StandardScaler"),
        (lambda: make_pipeline(_imputing_columns(), _model()), True, "SimpleImputer"),
        (lambda: Pipeline([
            ("pre", make_pipeline(StandardScaler(), BoundedScaler(bounds=[(-5, 5)] * 2))),
            ("fit", make_pipeline(_model())),
        ]), False, "StandardScaler"),
    ],
    ids=["before-a-bounded-step", "inside-a-column-transformer", "nested-pipelines"],
)  # fmt: skip
def test_a_step_fitted_on_the_rows_is_flagged_and_not_certified(frame, build, frame_in, name):
    """A StandardScaler or an imputer before the bounded steps makes each preprocessed
    row depend on every row: the bound holds, the replace-one sensitivity does not."""
    df, y = frame
    X = df if frame_in else df[["tenure", "charges"]].to_numpy(float)
    with pytest.warns(PrivacyLeakWarning, match=name):
        pipe = build().fit(X, y)
    model = pipe[-1][-1] if isinstance(pipe[-1], Pipeline) else pipe[-1]
    item = f"{FITTED}: {name}"
    assert model.certificate_.not_public == (item,)
    assert pipeline_certificate(pipe).not_public == (item,)


def test_public_steps_are_not_flagged(frame):
    """objpert's bounded transformers, a stateless scikit-learn step and a private
    release (its own certificate) read nothing the certificate misses."""
    df, y = frame
    X = df[["tenure", "charges"]].to_numpy(float)
    bounds = PrivateFeatureBounds(epsilon=0.5, ranges=[(0, 100), (0, 200)], random_state=0)
    pipe = _fit_quietly(make_pipeline(FunctionTransformer(np.log1p), bounds, _model()), X, y)
    assert pipe[-1].certificate_.not_public == ()
    assert pipeline_certificate(pipe).not_public == ()


@pytest.mark.parametrize("method", ["split", "random_stopping"])
def test_a_private_search_as_the_last_step_sees_the_steps_before_it(frame, method):
    """A private search ending a pipeline fits its candidates inside it: a step fitted on
    the rows before the search is flagged on the search's certificate, and a bounded step's
    public bound reaches the candidates."""
    from objpert.model_selection import PrivateGridSearch

    df, y = frame
    X = df[["tenure", "charges"]].to_numpy(float)
    search = PrivateGridSearch(
        estimator=_model(), param_grid={"comparator_norm": [1.0, 3.0]}, method=method,
        random_state=0,
    )  # fmt: skip
    bounded = BoundedScaler(bounds=[(-5, 5)] * 2)
    with pytest.warns(PrivacyLeakWarning, match="StandardScaler"):
        pipe = make_pipeline(StandardScaler(), bounded, search).fit(X, y)
    item = f"{FITTED}: StandardScaler"
    assert item in pipe[-1].certificate_.not_public
    assert item in pipeline_certificate(pipe).not_public
    assert pipe[-1].best_estimator_.pipeline_data_norm_ == pytest.approx(row_norm_bound(bounded))


def test_a_grid_search_as_the_last_step_sees_a_fitted_step_before_it(frame):
    """scikit-learn's GridSearchCV ending a pipeline fits its clones inside it too."""
    df, y = frame
    X = df[["tenure", "charges"]].to_numpy(float)
    search = GridSearchCV(_model(data_norm=3.0), {"comparator_norm": [1.0]}, cv=2)
    with pytest.warns(PrivacyLeakWarning, match="StandardScaler"):
        pipe = make_pipeline(StandardScaler(), search).fit(X, y)
    assert f"{FITTED}: StandardScaler" in pipe[-1].best_estimator_.certificate_.not_public


@pytest.mark.parametrize(
    ("options", "flagged"),
    [
        ({"transformer": StandardScaler()}, True),  # the targets' mean and scale
        ({"transformer": make_pipeline(StandardScaler())}, True),
        ({"func": np.log1p, "inverse_func": np.expm1}, False),  # public constants
        ({}, False),  # the identity
    ],
)
def test_a_target_transformer_fitted_on_the_targets_is_flagged(options, flagged):
    """A TransformedTargetRegressor whose transformer is fitted on the private targets:
    every transformed target depends on every row (PrivacyLeakWarning, not_public); a
    transform by public functions is not flagged."""
    from sklearn.compose import TransformedTargetRegressor

    rng = np.random.default_rng(4)
    X = rng.uniform(-0.5, 0.5, (200, 2))
    y = 100.0 + 30.0 * X[:, 0] + rng.normal(size=200)
    model = TransformedTargetRegressor(
        PrivateRobustRegression(epsilon=1.0, data_norm=1.0, random_state=0), **options
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        model.fit(X, y)
    leaks = [str(w.message) for w in seen if issubclass(w.category, PrivacyLeakWarning)]
    items = [i for i in model.regressor_.certificate_.not_public if "target" in i]
    assert bool(leaks) == flagged and bool(items) == flagged
    if flagged:
        assert "StandardScaler" in leaks[0] and items == [
            "target transformer fitted on the private targets: StandardScaler"
        ]
