"""A new user's first run, through the ``objpert`` command as the README and the user
guide show it: train on their own CSV (with a header) with public bounds and a declared
label set, certify the saved model, predict, write a report; and every bad input they
are likely to meet ends with one line on stderr and exit status 2, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # through subprocesses: an application test

KEY = "a private signing key\n"
BOUNDS = "18:99,0:200000,0:1"  # public: the form's age range, an income cap, a yes/no box


def objpert(cwd, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "objpert", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    smoker = rng.integers(0, 2, n)
    p = 1 / (1 + np.exp(-((age - 50) / 10 + 1.5 * smoker - 0.7)))
    return pd.DataFrame(
        {
            "age": age,
            "income": rng.uniform(0, 150_000, n).round(2),
            "smoker": smoker,
            "label": np.where(rng.random(n) < p, "yes", "no"),
        }
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """The user's folder: their data, a key, a model trained as the guide shows, and a
    0/1 model (trained through the library) for the label-mismatch case."""
    root = tmp_path_factory.mktemp("user")
    _frame(600, 0).to_csv(root / "patients.csv", index=False)
    new = _frame(20, 1)
    new.drop(columns=["label"]).to_csv(root / "new.csv", index=False)
    (root / "key.txt").write_text(KEY)
    # the bad files
    _frame(1, 2).to_csv(root / "one_row.csv", index=False)
    (root / "empty.csv").write_text("")
    (root / "latin1.csv").write_bytes("age,income,smoker,label\n30,1,0,s\xed\n".encode("latin-1"))
    nan_label = _frame(50, 3)
    nan_label.loc[7, "label"] = None
    nan_label.to_csv(root / "nan_label.csv", index=False)
    cont = _frame(50, 4)
    cont["label"] = np.linspace(0.05, 0.95, 50)
    cont.to_csv(root / "continuous.csv", index=False)
    nan_feat = new.drop(columns=["label"]).astype({"income": float})
    nan_feat.loc[3, "income"] = np.nan
    nan_feat.to_csv(root / "nan_features.csv", index=False)
    new.head(0).to_csv(root / "header_only.csv", index=False)
    new.to_csv(root / "string_labels.csv", index=False)

    from objpert import PrivateLogisticRegression, save

    X = new[["age", "income", "smoker"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        binary = PrivateLogisticRegression(
            feature_bounds=[(18, 99), (0, 200_000), (0, 1)], classes=[0, 1], random_state=0
        ).fit(X, (new["label"] == "yes").astype(int))
    save(binary, root / "binary.json", key=KEY.rstrip("\n"))

    train = objpert(
        root,
        *("train", "--data", "patients.csv", "--target", "label"),
        *("--epsilon", "1", "--delta", "1e-6", "--feature-bounds", BOUNDS),
        *("--classes", "no,yes", "--key-file", "key.txt", "--out", "model.json"),
    )
    return root, train


def lines(text: str) -> list[str]:
    return [s for s in text.splitlines() if s.strip()]


def test_train_certify_predict_report(home):
    root, train = home
    assert train.returncode == 0, train.stderr
    assert "Traceback" not in train.stderr + train.stdout
    assert (root / "model.json").is_file()
    assert "not covered by the certificate" in train.stderr  # statistics: stderr only

    cert = objpert(root, "certify", "--model", "model.json", "--key-file", "key.txt", "--json")
    assert cert.returncode == 0, cert.stderr
    payload = json.loads(cert.stdout)
    assert payload["certified"] is True and payload["reasons"] == []
    assert payload["epsilon"] <= 1.0 and payload["delta"] <= 1e-6
    assert payload["not_public"] == []  # bounds and labels were declared

    pred = objpert(root, "predict", "--model", "model.json", "--data", "new.csv", "--key-file",
                   "key.txt")  # fmt: skip
    assert pred.returncode == 0, pred.stderr
    assert pred.stderr == ""  # a signed, verified model: nothing to warn about
    assert len(lines(pred.stdout)) == 20 and set(lines(pred.stdout)) <= {"no", "yes"}

    report = objpert(root, "report", "model.json", "--key-file", "key.txt", "--out", "r.md")
    assert report.returncode == 0, report.stderr
    text = (root / "r.md").read_text()
    assert "differentially private" in text and "Traceback" not in report.stderr


TRAIN = ("train", "--target", "label", "--epsilon", "1", "--delta", "1e-6",
         "--feature-bounds", BOUNDS, "--classes", "no,yes")  # fmt: skip
PREDICT = ("predict", "--model", "binary.json", "--key-file", "key.txt")

BAD = [
    ((*TRAIN, "--data", "one_row.csv"), ["1 data row", "at least 2 rows"]),
    ((*TRAIN, "--data", "empty.csv"), ["is empty", "header line"]),
    ((*TRAIN, "--data", "latin1.csv"), ["not UTF-8", "save it as UTF-8"]),
    ((*TRAIN, "--data", "nan_label.csv"), ["missing value", "row 8", "drop or fill"]),
    ((*TRAIN[:-2], "--data", "continuous.csv"), ["non-integer", "--loss robust"]),
    ((*TRAIN, "--data", "header_only.csv"), ["no data rows"]),
    ((*PREDICT, "--data", "nan_features.csv"), ["non-finite", "impute or drop"]),
    ((*PREDICT, "--data", "header_only.csv"), ["no data rows"]),
    ((*PREDICT, "--data", "empty.csv"), ["is empty"]),
    ((*PREDICT, "--data", "string_labels.csv", "--target", "label"), ["'no'", "classes [0, 1]"]),
    (("demo", "--seeds", "0"), ["--seeds", "positive integer"]),
    ((*TRAIN, "--data", "patients.csv", "--delta", "0"), ["delta"]),
    ((*TRAIN, "--data", "patients.csv", "--epsilon", "nan"), ["--epsilon", "finite"]),
    (("calibrate", "--n", "100", "--d", "3", "--epsilon", "1", "--delta", "1.5"), ["delta"]),
]


#: The bad inputs also run through the ``objpert`` command (the others call its ``main``
#: in this process, as the console script does: the same code without the interpreter's
#: start, several seconds each).
THROUGH_THE_COMMAND = {0, 6, 10}


def _check_one_line(code: int, out: str, err_text: str, fragments: list[str]) -> None:
    assert code == 2, (out, err_text)
    assert "Traceback" not in err_text + out
    err = lines(err_text)
    assert len(err) == 1 and err[0].startswith("objpert: error: "), err_text
    for fragment in fragments:
        assert fragment in err[0], err[0]


@pytest.mark.parametrize(("argv", "fragments"), BAD, ids=[" ".join(a[:4]) for a, _ in BAD])
def test_bad_input_is_one_line_exit_2(home, argv, fragments, monkeypatch, capsys):
    root, _ = home
    monkeypatch.chdir(root)
    from objpert.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    _check_one_line(code, captured.out, captured.err, fragments)


@pytest.mark.parametrize("case", sorted(THROUGH_THE_COMMAND))
def test_bad_input_through_the_command(home, case):
    root, _ = home
    argv, fragments = BAD[case]
    run = objpert(root, *argv)
    _check_one_line(run.returncode, run.stdout, run.stderr, fragments)


def test_suspicious_budget_warns_and_trains(home):
    """delta >= 1/n, epsilon > 20 and a row bound far below the rows: one warning line each,
    and the run goes on."""
    root, _ = home
    run = objpert(
        root,
        *("train", "--data", "patients.csv", "--target", "label", "--classes", "no,yes"),
        *("--epsilon", "1e300", "--delta", "0.5", "--data-norm", "1e-9", "--json"),
    )
    assert run.returncode == 0, run.stderr
    warned = [s for s in lines(run.stderr) if s.startswith("objpert: warning: ")]
    text = "\n".join(warned)
    assert "delta = 0.5 is not below 1/n = 0.00167" in text
    assert "epsilon = 1e+300 is above 20" in text
    assert "clipped" in text
    assert json.loads(run.stdout)["certified"] is True
