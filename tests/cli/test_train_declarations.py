"""objpert train: a negative first bound needs no "=", and an unsigned model file is said
to be unsigned (a signed one is not)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from objpert.cli import main


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"a": rng.uniform(-3, 3, 300), "b": rng.uniform(0, 1, 300)})
    df["y"] = (df["a"] > 0).astype(int)
    root = tmp_path_factory.mktemp("train")
    df.to_csv(root / "t.csv", index=False)
    (root / "key").write_bytes(b"k" * 32)
    return root


def _train(capsys, root, *extra):
    argv = ["train", "--data", str(root / "t.csv"), "--target", "y", "--epsilon", "1",
            "--delta", "1e-6", "--classes", "0,1", "--json", *extra]  # fmt: skip
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("form", [["--feature-bounds", "-3:3,0:1"], ["--feature-bounds=-3:3,0:1"]])
def test_a_negative_first_bound_needs_no_equals_sign(capsys, table, form):
    code, out, err = _train(capsys, table, *form)
    assert code == 0, err
    assert json.loads(out)["not_public"] == []  # every bound declared


def test_an_unsigned_model_file_is_said_to_be_unsigned(capsys, table, monkeypatch):
    monkeypatch.delenv("OBJPERT_MODEL_KEY", raising=False)
    out_file = table / "m.json"
    code, out, err = _train(capsys, table, "--data-norm", "3", "--out", str(out_file))
    assert code == 0 and json.loads(out)["signed"] is False
    assert f"objpert: warning: {out_file} is unsigned" in err and "--key-file" in err
    code, out, err = _train(
        capsys, table, "--data-norm", "3", "--out", str(out_file), "--key-file", str(table / "key")
    )
    assert code == 0 and json.loads(out)["signed"] is True and "unsigned" not in err


def test_messages_name_the_flags_not_the_python_parameters(capsys, table):
    code, _, err = _train(capsys, table)  # --classes given, no bound declared
    assert code == 0
    assert "no --data-norm" in err and "declare --data-norm, --feature-bounds lo:hi" in err
    for python in ("data_norm=None", "feature_bounds=[", "classes=[", "objpert.preprocessing"):
        assert python not in err, python
    argv = ["train", "--data", str(table / "t.csv"), "--target", "y", "--epsilon", "1",
            "--delta", "1e-6", "--data-norm", "3", "--json"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "no --classes" in err and "--classes a,b,..." in err and "classes=" not in err


@pytest.mark.parametrize(
    ("extra", "flag", "python"),
    [
        (["--data-norm", "0"], "--data-norm must be", "'data_norm' parameter"),
        (["--data-norm", "1", "--no-clip"], "leave out --no-clip", "clip=True"),
    ],
)
def test_refusals_name_the_flags_too(capsys, table, extra, flag, python):
    code, _, err = _train(capsys, table, *extra)
    assert code == 2 and flag in err and python not in err and err.count("\n") == 1


def test_train_offers_no_flag_it_cannot_read(capsys):
    """A prior's weights are for the caller's own feature coordinates, not for the columns
    as train encodes them: no --prior flag (its text was passed on unread and refused)."""
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "--prior" not in capsys.readouterr().out
