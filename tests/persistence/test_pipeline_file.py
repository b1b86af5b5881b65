"""A fitted pipeline of objpert's bounded transformers and an estimator is a model file:
signed, re-checked at load, predicting the same on the raw frame; a step that reads
statistics of the rows is refused at save."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from churn_frames import churn_frame
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from objpert import ModelFileError, PrivateLogisticRegression, PrivateRobustRegression
from objpert.persistence import load, save
from objpert.preprocessing import (
    BoundedBinner,
    BoundedOneHotEncoder,
    BoundedScaler,
    PrivateFeatureBounds,
)

KEY = b"k" * 32
N = 300
CATEGORIES = [["month", "year"], ["card", "transfer", "check"]]
BOUNDS = [(0, 72), (0, 150)]

pytestmark = pytest.mark.filterwarnings("ignore::objpert.TestingSeedWarning")


@pytest.fixture(scope="module")
def frame():
    return churn_frame(N, CATEGORIES, 3)


def _columns():
    return ColumnTransformer(
        [
            ("numbers", BoundedScaler(bounds=BOUNDS), ["tenure", "charges"]),
            ("categories", BoundedOneHotEncoder(categories=CATEGORIES), ["contract", "payment"]),
        ]
    )


def _private_columns():
    return ColumnTransformer([
        ("numbers", PrivateFeatureBounds(epsilon=0.5, ranges=[(0, 200), (0, 500)]),
         ["tenure", "charges"]),
        ("categories", BoundedOneHotEncoder(categories=CATEGORIES), ["contract", "payment"]),
    ])  # fmt: skip


def _model():
    return PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=300, random_state=0)


def test_a_column_transformer_pipeline_round_trips_signed(frame, tmp_path):
    df, y = frame
    pipe = make_pipeline(_columns(), _model()).fit(df, y)
    path = save(pipe, tmp_path / "pipe.json", key=KEY)
    stored = json.loads(path.read_text())["preprocessing"]
    assert stored["columns"] == ["tenure", "charges", "contract", "payment"]
    text = json.dumps(stored)
    assert '"bounds": [[0, 72], [0, 150]]' in text and '"transfer"' in text
    back = load(path, key=KEY)  # verified: no warning
    np.testing.assert_array_equal(back.predict(df), pipe.predict(df))
    np.testing.assert_array_equal(back.predict_proba(df), pipe.predict_proba(df))
    assert back[-1].certificate_.to_dict() == pipe[-1].certificate_.to_dict()
    assert back[0].named_transformers_["categories"].categories == CATEGORIES


def test_a_changed_bound_is_refused(frame, tmp_path):
    df, y = frame
    path = save(make_pipeline(_columns(), _model()).fit(df, y), tmp_path / "p.json", key=KEY)
    payload = json.loads(path.read_text())
    payload["preprocessing"]["steps"][0][1]["transformers"][0][1]["params"]["bounds"][0] = [0, 7]
    path.write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match=r"digest|signature"):
        load(path, key=KEY)


@pytest.mark.parametrize(
    "build",
    [
        lambda: make_pipeline(
            BoundedScaler(bounds=[(-3, 3)] * 3),
            PrivateRobustRegression(max_iter=200, random_state=0),
        ),
        lambda: make_pipeline(
            FeatureUnion(
                [
                    ("s", BoundedScaler(bounds=[(-3, 3)] * 3)),
                    ("b", BoundedBinner(edges=[[-1, 0, 1]] * 3)),
                ]
            ),
            make_pipeline("passthrough", PrivateRobustRegression(max_iter=200, random_state=0)),
        ),
    ],
)
def test_arrays_and_nested_steps_round_trip(tmp_path, build):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    t = X @ [1.0, -0.5, 0.2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = build().fit(X, t)
        back = load(save(pipe, tmp_path / "p.json", key=KEY), key=KEY)
    np.testing.assert_array_equal(back.predict(X), pipe.predict(X))


@pytest.mark.parametrize(
    ("step", "reason"),
    [
        (StandardScaler(), "StandardScaler"),
        (OneHotEncoder(), "OneHotEncoder"),
    ],
)
def test_a_step_that_reads_the_rows_is_refused_at_save(tmp_path, step, reason):
    rng = np.random.default_rng(2)
    X = np.clip(rng.normal(size=(200, 3)), -3, 3)
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(step, _model()).fit(X, y)
    with pytest.raises(ModelFileError, match=reason):
        save(pipe, tmp_path / "p.json", key=KEY)
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize(
    "command", [["verify"], ["certify", "--model"], ["report", "--out", "REPORT"]]
)
def test_every_command_reads_a_pipeline_file(frame, tmp_path, capsys, command):
    """verify, certify and report read the pipeline files train writes, as predict does."""
    from objpert.cli import main

    df, y = frame
    path = save(make_pipeline(_columns(), _model()).fit(df, y), tmp_path / "p.json", key=KEY)
    args = [str(tmp_path / "r.html") if a == "REPORT" else a for a in command]
    key = tmp_path / "key.txt"
    key.write_bytes(KEY if isinstance(KEY, bytes) else KEY.encode())
    assert main([*args, str(path), "--key-file", str(key)]) == 0, capsys.readouterr().err
    assert "internal error" not in capsys.readouterr().err


def test_objpert_predict_reads_the_raw_csv_of_a_pipeline_file(frame, tmp_path, capsys):
    from objpert.cli import main

    df, y = frame
    pipe = make_pipeline(_columns(), _model()).fit(df, y)
    path = save(pipe, tmp_path / "p.json", key=KEY)
    data = tmp_path / "raw.csv"
    df.assign(label=y).to_csv(data, index=False)
    (tmp_path / "key").write_bytes(KEY)
    argv = ["predict", "--model", str(path), "--data", str(data), "--target", "label",
            "--key-file", str(tmp_path / "key"), "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["predictions"] == pipe.predict(df).tolist()
    assert out["score"] == pytest.approx(pipe.score(df, y))


def test_the_report_of_a_pipeline_file_shows_its_columns(frame, tmp_path, capsys):
    from objpert.cli import main

    df, y = frame
    path = save(make_pipeline(_columns(), _model()).fit(df, y), tmp_path / "p.json", key=KEY)
    out = tmp_path / "report.md"
    argv = ["report", str(path), "--out", str(out), "--title", "Churn model",
            "--purpose", "Who may leave"]  # fmt: skip
    assert main(argv) == 0
    text = out.read_text()
    assert text.startswith("# Churn model") and "Purpose: Who may leave" in text
    assert "| tenure | numeric, declared range [0, 72] |" in text
    assert "| contract | categories month, year |" in text
    assert text.index("## Summary") < text.index("## What an attacker can achieve")
    assert text.index("## What an attacker can achieve") < text.index("## Privacy profile")


def test_private_bounds_are_saved_as_their_release(frame, tmp_path):
    from objpert.accounting import pipeline_certificate

    df, y = frame
    private = _private_columns()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(private, _model()).fit(df, y)
        back = load(save(pipe, tmp_path / "p.json", key=KEY), key=KEY)
    fitted = pipe[0].named_transformers_["numbers"]
    restored = back[0].named_transformers_["numbers"]
    assert type(restored) is PrivateFeatureBounds
    np.testing.assert_array_equal(restored.bounds_, fitted.bounds_)
    assert restored.certificate_.to_dict() == fitted.certificate_.to_dict()
    assert pipeline_certificate(back).to_dict() == pipeline_certificate(pipe).to_dict()
    np.testing.assert_array_equal(back.predict_proba(df), pipe.predict_proba(df))
    # released bounds outside the declared ranges are refused
    payload = json.loads((tmp_path / "p.json").read_text())
    record = payload["preprocessing"]["steps"][0][1]["transformers"][0][1]
    record["bounds"][0] = [-5, 10]
    from objpert.persistence._fileformat import digest

    payload["digest"], payload["signature"] = None, None
    payload["digest"] = digest(payload)
    (tmp_path / "q.json").write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match="within ranges"):
        load(tmp_path / "q.json")


@pytest.mark.parametrize(
    ("where", "value", "reason"),
    [
        ("params", {"accountant": "os.system"}, "accountant"),
        ("seeded", "no", "seeded"),
        ("params", {"random_state": 5}, "recorded as not seeded"),  # a seed, yet unseeded
    ],
)
def test_a_private_bounds_record_is_checked_as_its_constructor(
    frame, tmp_path, where, value, reason
):
    """A file's PrivateFeatureBounds parameters meet the constructor's constraints, and its
    seeded flag is a boolean (the text "no" is not read as true)."""
    from objpert.persistence._fileformat import digest

    df, y = frame
    private = _private_columns()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(private, _model()).fit(df, y)
    path = save(pipe, tmp_path / "p.json")
    payload = json.loads(path.read_text())
    record = payload["preprocessing"]["steps"][0][1]["transformers"][0][1]
    if where == "params":
        record["params"].update(value)
    else:
        record[where] = value
    payload["digest"], payload["signature"] = None, None
    payload["digest"] = digest(payload)
    (tmp_path / "q.json").write_text(json.dumps(payload))
    with pytest.raises(ModelFileError, match=reason), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load(tmp_path / "q.json")


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda p: p.update(columns=None, n_features_in=10**9), "n_features_in"),
        (lambda p: p.update(columns=None, n_features_in=5 * 10**7), "n_features_in"),
        (lambda p: p.update(columns=[f"c{i}" for i in range(400_000)]), "columns"),
        (lambda p: p.update(columns=["tenure"] * 4), "distinct"),
        (
            lambda p: p["steps"][0][1]["transformers"][1][1]["params"].update(
                categories=[[str(i) for i in range(400_000)], ["card"]]
            ),
            "output columns",
        ),
    ],
)
def test_a_small_hostile_file_is_refused_before_large_work(frame, tmp_path, edit, reason):
    """The declared widths are checked against each other and a public limit before any
    row of that width is built: a few kilobytes of JSON never cost gigabytes."""
    import time

    from objpert.persistence._fileformat import digest

    df, y = frame
    path = save(make_pipeline(_columns(), _model()).fit(df, y), tmp_path / "p.json")
    payload = json.loads(path.read_text())
    edit(payload["preprocessing"])
    payload["digest"], payload["signature"] = None, None
    payload["digest"] = digest(payload)
    (tmp_path / "q.json").write_text(json.dumps(payload))
    start = time.perf_counter()
    with pytest.raises(ModelFileError, match=reason), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load(tmp_path / "q.json")
    assert time.perf_counter() - start < 5.0


def test_a_file_records_the_bounds_a_model_was_fitted_with(tmp_path):
    """set_params after fit changes neither the predictions nor the file: both keep the
    bounds the release was fitted with (a refit would take the new ones)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, size=(300, 2))
    y = (X[:, 0] > 5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PrivateLogisticRegression(
            classes=[0, 1], feature_bounds=[(0, 10)] * 2, random_state=0
        ).fit(X, y)
        pipe = make_pipeline(
            BoundedScaler(bounds=[(0, 10)] * 2),
            PrivateLogisticRegression(classes=[0, 1], random_state=0),
        ).fit(X, y)
    for fitted, edit in (
        (model, {"feature_bounds": [(0, 1)] * 2}),
        (pipe, {"boundedscaler__bounds": [(0, 1)] * 2}),
    ):
        before = fitted.predict_proba(X)
        fitted.set_params(**edit)
        np.testing.assert_array_equal(fitted.predict_proba(X), before)
        back = load(save(fitted, tmp_path / "m.json", key=KEY), key=KEY)
        np.testing.assert_allclose(back.predict_proba(X), before, rtol=1e-12, atol=1e-15)


def test_a_seeded_private_step_makes_the_file_seeded(frame, tmp_path, capsys):
    """Private bounds drawn from a testing seed before an unseeded model: verify, certify
    and the report say the file is seeded (no guarantee), as for a seeded model."""
    from objpert.cli import main

    df, y = frame
    private = ColumnTransformer([
        ("numbers", PrivateFeatureBounds(epsilon=0.5, ranges=[(0, 200), (0, 500)],
                                         random_state=0), ["tenure", "charges"]),
        ("categories", BoundedOneHotEncoder(categories=CATEGORIES), ["contract", "payment"]),
    ])  # fmt: skip
    model = PrivateLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = save(make_pipeline(private, model).fit(df, y), tmp_path / "p.json")
    assert not model.seeded_
    for command in (["verify"], ["certify", "--model"]):
        assert main([*command, str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["seeded"] is True
    assert main(["report", str(path), "--out", str(tmp_path / "r.md")]) == 0
    text = (tmp_path / "r.md").read_text()
    assert "TESTING SEED" in text and "The guarantee: NONE" in text
