"""objpert train / predict on CSV and Parquet files."""

import json

import numpy as np
import pandas as pd
import pytest

from objpert.cli import main


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.normal(size=(n, 3)) / 2
    w = np.array([2.0, -1.5, 1.0])
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ w) * 3))).astype(int)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["label"] = np.where(y == 1, "yes", "no")
    df["amount"] = X @ w + 0.1 * rng.normal(size=n)
    root = tmp_path_factory.mktemp("data")
    df.to_csv(root / "train.csv", index=False)
    df.drop(columns=["label"]).to_parquet(root / "train.parquet")
    return root, df


def run(capsys, argv):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_train_csv_json_and_predict(table, capsys):
    root, df = table
    model = root / "model.json"
    code, out, err = run(
        capsys,
        [
            "train",
            "--data",
            str(root / "train.csv"),
            "--target",
            "label",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--data-norm",
            "2",
            "--out",
            str(model),
            "--seed",
            "3",
            "--json",
        ],
    )
    assert code == 0, err
    assert "warning" in err and "testing" in err  # a seed makes the run a test run
    res = json.loads(out)
    assert res["certificate"]["certified"] is True
    assert res["epsilon"] <= 1 and res["delta"] <= 1e-6
    assert res["training_accuracy"] > 0.7
    assert res["n"] == len(df)
    # predict with the saved model, dropping the label column and scoring against it
    data = root / "train.csv"
    code, out, err = run(
        capsys,
        ["predict", "--model", str(model), "--data", str(data), "--target", "label", "--json"],
    )
    assert code == 0, err
    pred = json.loads(out)
    assert pred["score"] == pytest.approx(res["training_accuracy"])
    assert set(pred["predictions"]) <= {"yes", "no"}


def test_train_parquet_robust(table, capsys):
    root, _ = table
    code, out, err = run(
        capsys,
        [
            "train",
            "--data",
            str(root / "train.parquet"),
            "--target",
            "amount",
            "--loss",
            "robust",
            "--epsilon",
            "3",
            "--delta",
            "1e-6",
            "--data-norm",
            "2",
            "--json",
        ],
    )
    assert code == 0, err
    assert "training_r2" in json.loads(out)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--target", "nope"], "column 'nope' is not in"),
        (["--target", "a"], "numeric"),  # 'label' (strings) stays among the features
        (["--target", "label", "--epsilon", "0"], "epsilon"),
        (["--target", "label", "--delta", "2"], "delta"),
    ],
)
def test_train_errors_are_one_line(table, capsys, extra, fragment):
    root, _ = table
    argv = ["train", "--data", str(root / "train.csv"), "--epsilon", "1", "--delta", "1e-6"]
    # later flags win in argparse
    code, _out, err = run(capsys, [*argv, *extra])
    assert code == 2
    assert err.count("\n") == 1 and fragment in err, err


def test_train_too_few_rows(tmp_path, capsys):
    df = pd.DataFrame({"a": [0.1, -0.2, 0.3, 0.0], "y": [0, 1, 0, 1]})
    path = tmp_path / "tiny.csv"
    df.to_csv(path, index=False)
    code, _, err = run(
        capsys,
        [
            "train",
            "--data",
            str(path),
            "--target",
            "y",
            "--epsilon",
            "0.01",
            "--delta",
            "1e-9",
            "--alpha",
            "0.001",
            "--max-iterations",
            "50",
        ],
    )
    assert code == 2
    assert "certif" in err or "iterations" in err


def test_train_bad_file_type(tmp_path, capsys):
    path = tmp_path / "x.txt"
    path.write_text("a,b\n1,2\n")
    code, _, err = run(
        capsys, ["train", "--data", str(path), "--target", "b", "--epsilon", "1", "--delta", "1e-6"]
    )
    assert code == 2 and ".csv or .parquet" in err


def test_predict_rejects_tampered_model(table, tmp_path, capsys):
    root, _ = table
    model = tmp_path / "m.json"
    code, _, _ = run(
        capsys,
        [
            "train",
            "--data",
            str(root / "train.csv"),
            "--target",
            "label",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--out",
            str(model),
        ],
    )
    assert code == 0
    doc = json.loads(model.read_text())
    doc["coef"][0][0] += 1.0
    model.write_text(json.dumps(doc))
    code, _, err = run(
        capsys,
        ["predict", "--model", str(model), "--data", str(root / "train.csv"), "--target", "label"],
    )
    assert code == 2 and err.count("\n") == 1
