"""objpert train / predict on CSV and Parquet files."""

import dataclasses
import json
import time

import numpy as np
import pandas as pd
import pytest

from objpert.cli import main
from objpert.cli._train import parse_classes
from objpert.estimators import PrivateLogisticRegression
from objpert.exceptions import ObjpertError


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
    assert res["certificate"]["certified"] is True and res["certified"] is True
    assert res["epsilon"] <= 1 and res["delta"] <= 1e-6
    assert "data_statistics" not in res  # machine output: never statistics of the rows
    assert res["n"] == len(df)
    assert res["seeded"] is True and res["not_public"] == ["label set"]
    # predict with the saved model, dropping the label column and scoring against it
    data = root / "train.csv"
    code, out, err = run(
        capsys,
        ["predict", "--model", str(model), "--data", str(data), "--target", "label", "--json"],
    )
    assert code == 0, err
    pred = json.loads(out)
    assert pred["score"] > 0.7
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
    res = json.loads(out)
    assert "training_r2" not in json.dumps(res)  # a statistic of the private data
    assert "training_r2 (not covered by the certificate)" in err


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
            "--mu",
            "0.001",
            "--max-iter",
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


TRAIN = ["train", "--target", "label", "--epsilon", "1", "--delta", "1e-6", "--data-norm", "2"]


def _train(capsys, root, *extra):
    return run(capsys, [*TRAIN, "--data", str(root / "train.csv"), *extra])


def test_data_statistics_stay_out_of_json_and_the_model_file(table, tmp_path, capsys):
    root, _ = table
    model = tmp_path / "m.json"
    code, out, err = _train(capsys, root, "--out", str(model), "--json")
    assert code == 0, err
    res = json.loads(out)
    assert "data_statistics" not in res
    text = json.dumps(res) + model.read_text()
    for word in ("accuracy", "clipped", '"seconds"'):  # timings too (max_seconds is public)
        assert word not in text, word
    # printed for the person at the terminal, labelled
    assert "training_accuracy (not covered by the certificate)" in err
    assert "rows_clipped (not covered by the certificate)" in err


def test_statistics_of_the_rows_are_never_in_json(table, tmp_path, capsys):
    root, _ = table
    code, out, err = _train(capsys, root, "--out", str(tmp_path / "m.json"), "--json")
    assert code == 0, err
    assert "accuracy" not in out and "clipped" not in out
    code, _, err = _train(capsys, root, "--json", "--include-data-statistics")
    assert code == 2 and "unrecognized arguments: --include-data-statistics" in err


@pytest.mark.parametrize(
    "forge",
    [
        lambda c: dataclasses.replace(c, certified=False),
        lambda c: dataclasses.replace(c, epsilon=2 * c.epsilon),  # beyond --epsilon 1
        lambda c: dataclasses.replace(c, delta=1e-3),  # beyond --delta 1e-6
    ],
    ids=["uncertified", "epsilon", "delta"],
)
def test_train_certified_is_computed(table, tmp_path, capsys, monkeypatch, forge):
    root, _ = table
    fit = PrivateLogisticRegression.fit

    def failing_fit(self, X, y, **kw):
        fit(self, X, y, **kw)
        self.certificate_ = forge(self.certificate_)
        return self

    monkeypatch.setattr(PrivateLogisticRegression, "fit", failing_fit)
    model = tmp_path / "m.json"
    code, out, err = _train(capsys, root, "--out", str(model), "--json")
    assert code == 2 and out == ""
    last = err.splitlines()[-1]  # after the one-line warnings of the fit
    assert last.startswith("objpert: error:") and "Traceback" not in err
    assert "not certified" in last and "nothing was written" in last
    assert not model.exists()


@pytest.mark.parametrize("where", ["missing", "directory"])
def test_unwritable_out_fails_before_training(table, tmp_path, capsys, monkeypatch, where):
    root, _ = table
    calls = []

    def no_fit(self, X, y, **kw):
        calls.append(1)
        raise AssertionError("fit must not run when --out cannot be written")

    monkeypatch.setattr(PrivateLogisticRegression, "fit", no_fit)
    out = tmp_path / "no such dir" / "m.json" if where == "missing" else tmp_path
    start = time.perf_counter()
    code, _, err = _train(capsys, root, "--out", str(out))
    assert code == 2 and calls == []
    assert time.perf_counter() - start < 5
    assert err.count("\n") == 1 and err.startswith("objpert: error: --out")
    assert "does not exist" in err if where == "missing" else "directory" in err


def test_writability_check_leaves_no_file(table, tmp_path, capsys, monkeypatch):
    root, _ = table

    def boom(self, X, y, **kw):
        raise ObjpertError("fit failed")

    monkeypatch.setattr(PrivateLogisticRegression, "fit", boom)
    model = tmp_path / "m.json"
    code, _, _ = _train(capsys, root, "--out", str(model))
    assert code == 2 and not model.exists()


def test_declared_classes_leave_nothing_not_public(table, tmp_path, capsys):
    root, _ = table
    code, out, err = _train(capsys, root, "--classes", "no,yes", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["not_public"] == [] and res["certificate"]["not_public"] == []
    assert "label set" not in err
    code, out, err = _train(capsys, root, "--json")  # read from the data: warned, recorded
    assert code == 0 and json.loads(out)["not_public"] == ["label set"]
    assert "warning" in err and "label set" in err


def test_classes_outside_the_data_and_with_robust_are_refused(table, capsys):
    root, _ = table
    code, _, err = _train(capsys, root, "--classes", "no,maybe")
    assert code == 2 and err.count("\n") == 1 and "declared classes" in err
    code, _, err = _train(capsys, root, "--classes", "no,yes", "--loss", "robust")
    assert code == 2 and "--classes does not apply to --loss robust" in err


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0,1", [0, 1]),
        ("-1, 1", [-1, 1]),
        ("1.0,2", [1, 2]),
        ("no,yes", ["no", "yes"]),
        ("0,1.5", ["0", "1.5"]),
    ],
)
def test_parse_classes(text, want):
    got = parse_classes(text)
    assert got == want and [type(v) for v in got] == [type(v) for v in want]


@pytest.mark.parametrize("text", ["yes", "a,,b", ""])
def test_parse_classes_refuses_fewer_than_two(text, capsys):
    assert main([*TRAIN, "--data", "x.csv", "--classes", text]) == 2
    assert "--classes must list at least two" in capsys.readouterr().err


def test_train_signs_with_key_file(table, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OBJPERT_MODEL_KEY", raising=False)
    root, _ = table
    key = tmp_path / "key"
    key.write_bytes(b"s3cret\n")
    model = tmp_path / "m.json"
    code, out, err = _train(capsys, root, "--out", str(model), "--key-file", str(key), "--json")
    assert code == 0, err
    assert json.loads(out)["signed"] is True
    assert json.loads(model.read_text())["signature"]["algorithm"] == "hmac-sha256"
    code, out, err = run(capsys, ["verify", str(model), "--key-file", str(key), "--json"])
    assert code == 0 and json.loads(out)["verified"] is True
    # predict verifies too; without the key it warns on one line
    argv = ["predict", "--model", str(model), "--data", str(root / "train.csv"), "--json"]
    code, _, err = run(capsys, [*argv, "--key-file", str(key)])
    assert code == 0 and "unverified" not in err
    code, _, err = run(capsys, argv)
    assert code == 0 and "warning" in err and "unverified" in err
    other = tmp_path / "other"
    other.write_bytes(b"another")
    code, _, err = run(capsys, [*argv, "--key-file", str(other)])
    assert code == 2 and "signature does not verify" in err


def test_predict_notes_when_one_class_takes_almost_every_prediction():
    """The note reads the predictions only (the rows given to predict)."""
    from types import SimpleNamespace

    from objpert.cli._predict import one_class_note

    model = SimpleNamespace(classes_=np.array(["no", "yes"]))
    assert "96.0%" in one_class_note(model, np.array(["no"] * 96 + ["yes"] * 4))
    assert one_class_note(model, np.array(["no"] * 90 + ["yes"] * 10)) == ""
    assert one_class_note(SimpleNamespace(), np.zeros(100)) == ""  # regression
    assert one_class_note(model, np.array(["no"] * 10)) == ""  # too few rows to say
