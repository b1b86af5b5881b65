"""A whole pipeline tuned by a private search: the bounded steps' declared bound reaches
the estimator inside the search, the search saves and loads as one signed file that
predicts on raw frames, and the released model carries the search's certificate."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from churn_frames import churn_frame
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

import objpert
from objpert import PrivateLogisticRegression
from objpert.model_selection import PrivateGridSearch
from objpert.preprocessing import BoundedOneHotEncoder, BoundedScaler

KEY = b"k" * 32
CATEGORIES = [["month", "year", "two"], ["card", "check", "bank"]]
N = 1200


@pytest.fixture(scope="module")
def frame():
    return churn_frame(N, CATEGORIES, 5)


def _pipeline() -> Pipeline:
    columns = ColumnTransformer(
        [
            ("numbers", BoundedScaler(bounds=[(0, 72), (0, 150)]), ["tenure", "charges"]),
            ("categories", BoundedOneHotEncoder(categories=CATEGORIES), ["contract", "payment"]),
        ]
    )
    model = PrivateLogisticRegression(epsilon=2.0, classes=[0, 1], max_iter=2000)
    return Pipeline([("columns", columns), ("model", model)])


@pytest.fixture(scope="module", params=["split", "random_stopping"])
def search(request, frame):
    df, y = frame
    search = PrivateGridSearch(
        estimator=_pipeline(),
        param_grid={"model__mu": [0.3, 1.0]},
        method=request.param,
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(df, y)
    return search, caught


def test_the_declared_bound_reaches_the_estimator_inside_the_search(search):
    fitted, caught = search
    assert not [w for w in caught if issubclass(w.category, objpert.PrivacyLeakWarning)]
    assert len(caught) <= 3  # one per cause: here the testing seed's
    estimator = fitted.best_estimator_[-1]
    assert estimator.pipeline_data_norm_ is not None
    assert estimator.certificate_ is fitted.certificate_ and not fitted.certificate_.not_public


def test_the_search_saves_and_loads_as_one_signed_file(search, frame, tmp_path):
    fitted, _ = search
    df, _ = frame
    path = objpert.save(fitted, tmp_path / "search.json", key=KEY)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # verified: no UnverifiedModelWarning
        back = objpert.load(path, key=KEY)
    assert isinstance(back, Pipeline)
    np.testing.assert_array_equal(back.predict_proba(df), fitted.predict_proba(df))
    assert back[-1].certificate_.to_dict() == fitted.certificate_.to_dict()
    own = fitted.best_estimator_[-1].release_certificate_
    assert back[-1].release_certificate_.to_dict() == own.to_dict()


def test_the_chosen_pipeline_alone_is_not_saved(search, tmp_path):
    fitted, _ = search
    with pytest.raises(objpert.ModelFileError, match="save the PrivateGridSearch"):
        objpert.save(fitted.best_estimator_, tmp_path / "alone.json", key=KEY)


def test_the_command_line_reads_the_search_file(search, tmp_path, capsys):
    from objpert.cli import main

    fitted, _ = search
    path = objpert.save(fitted, tmp_path / "search.json", key=KEY)
    key = tmp_path / "key.txt"
    key.write_bytes(KEY)
    for command in (["verify"], ["certify", "--model"], ["report", "--out", str(tmp_path / "r")]):
        assert main([*command, str(path), "--key-file", str(key)]) == 0, capsys.readouterr()


def test_a_pipeline_ending_in_a_search_is_refused_with_what_to_save(tmp_path):
    from sklearn.pipeline import make_pipeline

    from objpert.exceptions import ModelFileError

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    search = PrivateGridSearch(
        estimator=PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=100),
        param_grid={"mu": [0.3, 1.0]},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(BoundedScaler(bounds=[(-1.0, 1.0)] * 2), search).fit(X, y)
    with pytest.raises(ModelFileError, match="search the whole pipeline instead"):
        objpert.save(pipe, tmp_path / "m.json", key=b"k" * 16)
    assert not (tmp_path / "m.json").exists()
