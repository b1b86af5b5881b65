"""The commands that read a model file (``certify --model``, ``verify``, ``predict``,
``report``) refuse one above ``--max-bytes`` unread, in one line with exit status 2, and
never copy a hostile value of a file whole into their error line."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from objpert.cli import main
from objpert.cli._common import MODEL_MAX_BYTES, byte_count, one_line
from objpert.estimators import PrivateLogisticRegression
from objpert.persistence import MAX_BYTES, save

pytestmark = [
    pytest.mark.filterwarnings("ignore::objpert.exceptions.TestingSeedWarning"),
    pytest.mark.filterwarnings("ignore::objpert.exceptions.UnverifiedModelWarning"),
]


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    model = PrivateLogisticRegression(epsilon=2.0, data_norm=1.0, classes=[0, 1], random_state=0)
    return save(model.fit(X, y), tmp_path_factory.mktemp("m") / "model.json")


def commands(path):
    return {
        "verify": ["verify", str(path)],
        "report": ["report", str(path)],
        "certify": ["certify", "--model", str(path)],
        "predict": ["predict", "--model", str(path), "--data", str(path) + ".csv"],
    }


def test_the_command_line_default_is_the_library_limit():
    assert MODEL_MAX_BYTES == MAX_BYTES


@pytest.mark.parametrize("command", ["verify", "report", "certify", "predict"])
def test_a_model_file_above_max_bytes_is_refused_in_one_line(model_file, command, capsys):
    size = model_file.stat().st_size
    argv = [*commands(model_file)[command], "--max-bytes", str(size - 1)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("objpert: error: ")
    assert f"{size} bytes is more than a model file may have ({size - 1} bytes" in err


@pytest.mark.parametrize("command", ["verify", "report", "certify", "predict"])
def test_a_huge_model_file_is_refused_at_once(tmp_path, command, capsys):
    path = tmp_path / "huge.json"
    with open(path, "wb") as fh:  # sparse
        fh.truncate(MAX_BYTES + 1)
    start = time.perf_counter()
    assert main(commands(path)[command]) == 2
    assert time.perf_counter() - start < 2.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "refused unread" in err


def test_verify_reads_a_model_within_max_bytes(model_file, capsys):
    assert main(["verify", str(model_file), "--max-bytes", "1MiB", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["certified"] is True


@pytest.mark.parametrize("text", ["abc", "0", "-5", "1.5XB", "nan", "inf"])
def test_a_bad_max_bytes_is_a_usage_error(model_file, text, capsys):
    assert main(["verify", str(model_file), f"--max-bytes={text}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-bytes" in err


def test_byte_counts():
    assert byte_count("65536") == 65536
    assert byte_count("200MB") == 200_000_000
    assert byte_count("1GiB") == 2**30
    assert byte_count("64mib") == MAX_BYTES


def test_a_hostile_value_reaches_stderr_short_and_escaped(model_file, tmp_path, capsys):
    payload = json.loads(model_file.read_text())
    payload["format"] = "\x1b]0;pwned\x07" + "A" * 10_000_000
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(payload))
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400
    assert "\x1b" not in err and "\x07" not in err
    assert "(10000010 characters)" in err


def test_one_line():
    assert one_line("a\n  b\tc") == "a b c"
    assert one_line("\x1b[2J x") == "\\x1b[2J x"
    long = one_line("y" * 100_000, 50)
    assert long == "y" * 50 + "... (100000 characters)"


def test_predict_quotes_hostile_labels_of_a_data_file_short(model_file, tmp_path, capsys):
    data = tmp_path / "data.csv"
    label = "\x1b[31m" + "L" * 1_000_000
    data.write_text("a,b,c,y\n0.1,0.2,0.3,0\n0.1,0.1,0.1," + label + "\n")
    assert main(["predict", "--model", str(model_file), "--data", str(data), "--target", "y"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 600, len(err)
    assert "\x1b" not in err and "holds labels" in err and "(2 in all)" in err
