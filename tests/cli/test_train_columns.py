"""objpert train speaks columns: --categories COLUMN=a,b,c and --feature-bounds by name
give the Python pipeline's encoding and row-norm bound, in a signed pipeline file that
objpert predict reads with the raw CSV."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

from objpert import PrivateLogisticRegression, load
from objpert.cli import main
from objpert.preprocessing import BoundedOneHotEncoder, BoundedScaler, row_norm_bound

KEY = b"k" * 32
CATEGORIES = {"plan": ["basic", "plus", "pro"], "region": ["1", "2"]}  # region: digits


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "income": rng.uniform(0, 2e5, n),
        "plan": rng.choice(CATEGORIES["plan"], n),
        "region": rng.choice([1, 2], n),  # read back from the CSV as integers
    })  # fmt: skip
    df["label"] = np.where((df["plan"] == "pro") | (df["age"] > 60), "yes", "no")
    root = tmp_path_factory.mktemp("columns")
    df.to_csv(root / "mixed.csv", index=False)
    (root / "key").write_bytes(KEY)
    return root, df


def _train(capsys, root, *extra):
    argv = ["train", "--data", str(root / "mixed.csv"), "--target", "label", "--epsilon",
            "1", "--delta", "1e-6", "--classes", "no,yes", "--key-file", str(root / "key"),
            "--json", *extra]  # fmt: skip
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_categories_give_the_python_pipelines_bound(capsys, table):
    root, df = table
    model_file = root / "model.json"
    code, out, err = _train(
        capsys, root, "--feature-bounds", "age=18:99,income=0:200000",
        "--categories", "plan=basic,plus,pro", "--categories", "region=1,2",
        "--out", str(model_file),
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["certified"] is True and result["not_public"] == []
    assert result["n_features"] == 2 + 3 + 2  # two scaled columns, 3 + 2 indicators
    python = ColumnTransformer([
        ("numbers", BoundedScaler(bounds=[(18, 99), (0, 200000)]), ["age", "income"]),
        ("categories", BoundedOneHotEncoder(categories=list(CATEGORIES.values())),
         ["plan", "region"]),
    ])  # fmt: skip
    bound = row_norm_bound(python)
    assert bound == pytest.approx(2.0)  # sqrt(2 scaled + 2 encoded columns)
    pipe = load(model_file, key=KEY)
    assert pipe[-1].get_params()["data_norm"] == pytest.approx(bound)
    assert pipe[-1].plan_.zeta == pytest.approx(math.hypot(bound, bound))  # intercept c
    # the same release as the Python pipeline with the same seed
    X = df.drop(columns="label").astype({"region": str})
    same = make_pipeline(python, PrivateLogisticRegression(
        epsilon=1.0, delta=1e-6, classes=["no", "yes"])).fit(X, df["label"])  # fmt: skip
    assert same[-1].plan_ == pipe[-1].plan_
    # objpert predict reads the raw CSV (region as integers) through the pipeline file
    argv = ["predict", "--model", str(model_file), "--key-file", str(root / "key"),
            "--data", str(root / "mixed.csv"), "--target", "label", "--json"]  # fmt: skip
    assert main(argv) == 0
    pred = json.loads(capsys.readouterr().out)
    assert pred["predictions"] == pipe.predict(X).tolist() and pred["score"] > 0.6


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--categories", "plan=basic,plus,pro"], "numeric columns .* need public bounds"),
        (["--categories", "nope=a,b"], "has no column 'nope'"),
        (["--categories", "plan"], "give COLUMN=a,b,c"),
        (["--categories", "plan=a,a"], "give COLUMN=a,b,c"),
        (
            [
                "--feature-bounds",
                "age=18:99,wage=0:1",
                "--categories",
                "plan=basic,plus,pro",
                "--categories",
                "region=1,2",
            ],
            "not numeric columns",
        ),
        (
            [
                "--feature-bounds",
                "18:99",
                "--categories",
                "plan=basic,plus,pro",
                "--categories",
                "region=1,2",
            ],
            "1 pairs for the 2 numeric columns",
        ),
    ],
)
def test_column_mistakes_are_one_line(capsys, table, extra, message):
    root, _ = table
    code, _, err = _train(capsys, root, *extra)
    assert code == 2 and err.count("\n") == 1
    assert re.search(message, err), err


@pytest.fixture(scope="module")
def gaps(table):
    root, df = table
    gappy = df.astype({"plan": object, "income": float, "region": object}).copy()
    gappy.loc[5, "income"] = np.nan
    gappy.loc[9, "plan"] = None
    gappy.loc[3, "region"] = "n/a"  # a category, not a missing value
    gappy.to_csv(root / "gaps.csv", index=False)
    return root, len(gappy)


def _train_gaps(capsys, root, *extra):
    argv = ["train", "--data", str(root / "gaps.csv"), "--target", "label", "--epsilon", "1",
            "--delta", "1e-6", "--classes", "no,yes", "--json",
            "--feature-bounds", "age=18:99,income=0:200000",
            "--categories", "plan=basic,plus,pro",
            "--categories", "region=1,2,n/a", *extra]  # fmt: skip
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_missing_values_are_refused_naming_column_and_row(capsys, gaps):
    root, _ = gaps
    code, _, err = _train_gaps(capsys, root)
    assert code == 2 and err.count("\n") == 1
    assert "'income' (1, first at data row 6)" in err and "'plan' (1, first at data row 10)" in err
    assert "--missing drop" in err


def test_missing_drop_trains_on_the_complete_rows_and_says_so(capsys, gaps):
    root, n = gaps
    code, out, err = _train_gaps(capsys, root, "--missing", "drop")
    assert code == 0, err
    assert json.loads(out)["n"] == n - 2  # "n/a" is a declared category, not missing
    assert "2 row(s) with missing values were left out" in err and "do not publish" in err


def test_missing_drop_is_recorded_in_the_file_and_the_report_without_the_count(
    capsys, gaps, tmp_path
):
    """The model file and the report say that rows were left out and that the rows trained
    on are not covered, and neither holds how many were left out."""
    from objpert.estimators._base import ROWS_LEFT_OUT

    root, _ = gaps
    model = tmp_path / "m.json"
    code, out, err = _train_gaps(capsys, root, "--missing", "drop", "--out", str(model))
    assert code == 0, err
    assert ROWS_LEFT_OUT in json.loads(out)["not_public"]
    text = model.read_text()
    assert ROWS_LEFT_OUT in text and 'left out": 2' not in text and "dropped" not in text
    report = tmp_path / "r.md"
    assert main(["report", str(model), "--out", str(report)]) == 0, capsys.readouterr()
    body = report.read_text()
    assert "Rows with missing values were left out before training" in body
    assert "2 row" not in body


def test_an_undeclared_text_column_points_to_categories(tmp_path, capsys):
    """A text column with no declaration is refused by naming --categories (with or
    without --feature-bounds for the numeric ones)."""
    import pandas as pd

    from objpert.cli import main

    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {"age": rng.integers(18, 90, 50), "job": rng.choice(["a", "b"], 50),
         "label": rng.choice(["no", "yes"], 50)}
    )  # fmt: skip
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    base = ["train", "--data", str(path), "--target", "label", "--classes", "no,yes",
            "--epsilon", "1", "--delta", "1e-6",
            "--out", str(tmp_path / "m.json")]  # fmt: skip
    for extra in ([], ["--feature-bounds", "age=18:90"]):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--categories job=" in err


def test_categories_naming_the_target_points_to_classes(tmp_path, capsys):
    import pandas as pd

    from objpert.cli import main

    df = pd.DataFrame({"age": [20, 30, 40, 50] * 5, "label": ["no", "yes"] * 10})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    args = ["train", "--data", str(path), "--target", "label", "--epsilon", "1",
            "--delta", "1e-6", "--feature-bounds", "age=18:90", "--categories",
            "label=no,yes", "--out", str(tmp_path / "m.json")]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--classes no,yes" in err


def test_number_coded_categories_with_an_empty_cell(capsys, tmp_path):
    """A category column coded 1/2/3 with one empty cell is read as floats by pandas: its
    cells are still the declared categories ("2", not "2.0"), and an empty cell at predict
    is named as empty, not as an unknown category."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.uniform(-1, 1, 80), "grp": np.arange(80) % 3 + 1})
    frame["y"] = (frame["a"] > 0).astype(int)
    frame.to_csv(tmp_path / "full.csv", index=False)
    holes = frame.astype({"grp": object})
    holes.loc[5, "grp"] = ""
    holes.to_csv(tmp_path / "holes.csv", index=False)
    train = ["train", "--target", "y", "--epsilon", "1", "--delta", "1e-5", "--classes", "0,1",
             "--feature-bounds", "a=-1:1", "--categories", "grp=1,2,3"]  # fmt: skip
    model = str(tmp_path / "m.json")
    assert main([*train, "--data", str(tmp_path / "holes.csv"), "--missing", "drop",
                 "--out", model]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["predict", "--model", model, "--data", str(tmp_path / "full.csv"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 80
    assert main(["predict", "--model", model, "--data", str(tmp_path / "holes.csv")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "empty cell" in err and "'grp'" in err
