"""objpert train shows the rows clipped at fit time (the model keeps no such statistic)."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from objpert.cli import main

N, CLIPPED = 400, 17


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(N, 3))
    X *= 0.9 / np.linalg.norm(X, axis=1, keepdims=True).max()
    X[:CLIPPED] *= 1.5 / np.linalg.norm(X[:CLIPPED], axis=1, keepdims=True)  # norm 1.5 > 1
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["label"] = (X @ np.array([1.0, -1.0, 0.5]) > 0).astype(int)
    path = tmp_path_factory.mktemp("clip") / "train.csv"
    df.to_csv(path, index=False)
    return path


def _train(capsys, path, *extra):
    argv = ["train", "--data", str(path), "--target", "label", "--epsilon", "1"]
    argv += ["--delta", "1e-6", "--data-norm", "1", "--classes", "0,1", *extra]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out, captured.err


def test_the_terminal_shows_the_rows_clipped_at_fit_time(data, tmp_path, capsys):
    model = tmp_path / "m.json"
    out, err = _train(capsys, data, "--out", str(model), "--json")
    assert re.search(rf"rows_clipped \(not covered by the certificate\)\s*│?\s*{CLIPPED}\b", err)
    assert "clipped" not in out and "clipped" not in model.read_text()  # machine output


def test_the_count_never_reaches_json(data, capsys):
    out, err = _train(capsys, data, "--json")
    assert "data_statistics" not in json.loads(out) and "clipped" not in out
    assert "rows_clipped" in err
