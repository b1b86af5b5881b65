"""Where a command writes is checked before any work: never over one of its inputs,
never over a device or a FIFO, never into a folder that is missing, and a plot only in
a format matplotlib writes. Each refusal is one line on stderr, exit code 2, and leaves
every file as it was."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from objpert.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("outputs")
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(200, 3))
    df = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=(X[:, 0] > 0).astype(int))
    df.to_csv(root / "good.csv", index=False)
    (root / "key.txt").write_text("secret\n")
    train = ["train", "--data", str(root / "good.csv"), "--target", "y", "--epsilon", "1",
             "--delta", "1e-5", "--data-norm", "1"]  # fmt: skip
    assert main([*train, "--out", str(root / "m.json")]) == 0
    return root, train


def _refused(capsys, argv, match, *unchanged):
    before = {p: p.read_bytes() for p in unchanged}
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("objpert: error:") and match in err
    assert {p: p.read_bytes() for p in unchanged} == before


def test_an_output_is_never_one_of_the_inputs(files, capsys):
    root, train = files
    data, key, model = root / "good.csv", root / "key.txt", root / "m.json"
    _refused(capsys, [*train, "--out", str(data)], "is an input", data)
    _refused(capsys, [*train, "--key-file", str(key), "--out", str(key)], "is an input", key)
    predict = ["predict", "--model", str(model), "--data", str(data)]
    _refused(capsys, [*predict, "--out", str(model)], "is an input", model)
    _refused(capsys, [*predict, "--out", str(data)], "is an input", data)
    _refused(capsys, ["report", str(model), "--out", str(model)], "is an input", model)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_not_an_output(files, capsys, tmp_path):
    _, train = files
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it to write would block until a reader comes
    _refused(capsys, [*train, "--out", str(fifo)], "not a regular file")
    assert not fifo.is_file()


def test_outputs_are_checked_before_the_work(files, capsys, tmp_path):
    root, _ = files
    certify = ["certify", "--n", "1000", "--d", "5", "--mu", "0.1", "--sigma", "1",
               "--iterations", "1000", "--epsilon", "1"]  # fmt: skip
    _refused(capsys, [*certify, "--plot", str(tmp_path / "p.txt")], "give a file name ending")
    _refused(capsys, [*certify, "--delta", "5"], "--delta")
    _refused(capsys, [*certify, "--delta", "nan"], "--delta")
    _refused(capsys, ["certify", "--model", str(root / "m.json"), "--delta", "nan"], "--delta")
    missing = str(tmp_path / "no such folder" / "x")
    _refused(capsys, ["audit", "--mechanism", "watkins_arora", "--plot", missing + ".png"],
             "does not exist")  # fmt: skip
    _refused(capsys, ["bench", "--only", "dense", "--quick", "--json-file", missing + ".json"],
             "does not exist")  # fmt: skip
    taken = tmp_path / "taken.json"
    taken.write_text("{}")
    _refused(capsys, ["compare", "--datasets", "breast_cancer", "--epsilons", "1", "--seeds",
                      "1", "--out", str(taken)], "cannot be a folder", taken)  # fmt: skip


def test_calibrate_offers_only_the_losses_it_plans(capsys):
    argv = ["calibrate", "--n", "1000", "--d", "5", "--epsilon", "1", "--delta", "1e-5"]
    _refused(capsys, [*argv, "--loss", "linear"], "invalid choice")


def test_a_reader_that_leaves_early_is_no_error(capsys, monkeypatch):
    """`objpert predict ... | head -1`: the pipe closes; exit 141 (128 + SIGPIPE), and no
    error line."""
    from objpert.cli import _certify

    def closed_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(_certify, "cmd_certify", closed_pipe)
    monkeypatch.setattr("objpert.cli._stdout_to_devnull", lambda: None)
    assert main(["certify", "--n", "10", "--d", "2", "--mu", "0.1", "--sigma", "1"]) == 141
    assert capsys.readouterr().err == ""


def test_a_column_named_twice_is_refused(capsys, tmp_path):
    """pandas renames the second "a" to "a.1": the model would train on a column nobody
    named."""
    data = tmp_path / "twice.csv"
    data.write_text("a,a,c,y\n1,2,3,0\n2,3,4,1\n3,1,2,0\n")
    _refused(capsys, ["train", "--data", str(data), "--target", "y", "--epsilon", "1",
                      "--delta", "1e-5", "--data-norm", "10"], "['a'] twice", data)  # fmt: skip


def test_certify_model_reads_the_target_epsilon_too(files, capsys):
    root, _ = files
    model = str(root / "m.json")
    assert main(["certify", "--model", model, "--epsilon", "0.01", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"certified": false' in out and "above the target 0.01" in out


def test_certify_of_a_seeded_model_says_so_and_refuses_a_plot(files, capsys, tmp_path):
    root, train = files
    assert main(["certify", "--model", str(root / "m.json"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seeded"] is False
    model = str(tmp_path / "seeded.json")
    assert main([*train, "--seed", "3", "--out", model]) == 0
    capsys.readouterr()
    assert main(["certify", "--model", model, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seeded"] is True
    assert main(["certify", "--model", model]) == 0
    assert "testing seed" in capsys.readouterr().out
    plot = tmp_path / "p.png"
    _refused(capsys, ["certify", "--model", model, "--plot", str(plot)], "objpert report")
    assert not plot.exists()


def test_an_output_is_never_a_bounds_file_the_command_reads(files, capsys, tmp_path):
    """--feature-bounds read from a file is an input too: --out naming it (by any spelling)
    is refused, and the file is kept."""
    root, _ = files
    bounds = tmp_path / "bounds.csv"
    bounds.write_text("lo,hi\n-1,1\n-1,1\n-1,1\n")
    train = ["train", "--data", str(root / "good.csv"), "--target", "y", "--epsilon", "1",
             "--delta", "1e-5", "--classes", "0,1"]  # fmt: skip
    for out in (str(bounds), str(tmp_path / "." / "bounds.csv")):
        _refused(capsys, [*train, f"--feature-bounds={bounds}", "--out", out],
                 "is an input of this command", bounds)  # fmt: skip
    assert main([*train, "--feature-bounds", str(bounds), "--out", str(tmp_path / "m.json")]) == 0


def test_seed_and_column_errors_name_what_the_user_typed(files, capsys, tmp_path):
    _, train = files
    for seed in ("-5", "x"):
        _refused(capsys, [*train, "--seed", seed, "--out", str(tmp_path / "m.json")],
                 "--seed takes a non-negative integer")  # fmt: skip
    spacey = tmp_path / "spacey.csv"
    spacey.write_text("a,b, y\n1,2,0\n2,1,1\n0,1,0\n")
    _refused(capsys, ["train", "--data", str(spacey), "--target", "y", "--epsilon", "1",
                      "--delta", "1e-5", "--data-norm", "5"], "' y'")  # fmt: skip
