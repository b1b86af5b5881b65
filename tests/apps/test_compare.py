"""The comparison harness (small configurations; the full report is `objpert compare`)."""

import json
import re

import numpy as np
import pytest

from objpert.apps import _compare as compare
from objpert.cli import main
from objpert.exceptions import CliError


@pytest.mark.slow
def test_harness_rows_certificates_and_references():
    rows, _ = compare.run(
        ["breast_cancer"], [1.0, 3.0], 1e-6, 2, methods=("watkins_arora", "qop", "nonprivate")
    )
    by = {(r.method, r.epsilon): r for r in rows}
    for eps in (1.0, 3.0):
        wa = by[("watkins_arora", eps)]
        assert wa.runs == 2
        assert wa.certified_epsilon <= eps and wa.certified_delta <= 1e-6
        assert 0.5 < wa.accuracy_mean <= 1.0
        qop = by[("qop", eps)]  # the squared loss on the +-1 labels, paired with theta_ref
        assert qop.runs == 2 and qop.versus == "theta_ref"
        assert qop.certified_epsilon <= eps and qop.certified_delta == 1.0  # not certified
    assert by[("nonprivate", 1.0)].accuracy_mean > 0.9
    # more budget, better fit of the training objective
    assert by[("watkins_arora", 3.0)].objective_mean < by[("watkins_arora", 1.0)].objective_mean
    assert "| watkins_arora | 1 | 2 |" in compare.markdown(rows)
    assert {r.method for r in rows} == {"watkins_arora", "qop", "nonprivate"}


@pytest.mark.slow  # builds diffprivlib's environment on first use (minutes, network)
def test_diffprivlib_peer_runs_in_its_own_environment():
    rows, meta = compare.run(["breast_cancer"], [3.0], 1e-6, 2, methods=("diffprivlib",))
    (row,) = rows
    assert row.certified_delta == 0.0 and row.note == "pure epsilon-DP"
    assert meta["diffprivlib"]["versions"]["diffprivlib"] == "0.6.6"
    major, minor = map(int, meta["diffprivlib"]["versions"]["scikit-learn"].split(".")[:2])
    assert (major, minor) < (1, 8)
    assert 0.4 < row.accuracy_mean <= 1.0 and np.isfinite(row.objective_mean)


def test_compare_cli_writes_report(tmp_path, capsys):
    argv = [
        "compare",
        "--datasets",
        "breast_cancer",
        "--epsilons",
        "3",
        "--seeds",
        "1",
        "--methods",
        "watkins_arora,nonprivate",
        "--out",
        str(tmp_path),
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in out["rows"]} == {"watkins_arora", "nonprivate"}
    text = (tmp_path / "compare.md").read_text()
    assert text.startswith("Produced by `objpert ") and "### breast_cancer" in text
    assert (tmp_path / "compare.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "argv", [["compare", "--methods", "magic"], ["compare", "--epsilons", "a,b"]]
)
def test_compare_cli_errors(argv, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_methods_are_the_registry_names_and_the_baselines():
    from objpert.cli._compare import parse_methods
    from objpert.mechanisms import _registry as registry

    assert parse_methods(None) == compare.DEFAULT_METHODS
    assert (*registry.names(), "nonprivate", "diffprivlib", "theta_ref") == compare.DEFAULT_METHODS
    assert parse_methods(" lop_clip, nonprivate ,lop_clip") == ("lop_clip", "nonprivate")


def test_only_registry_names_and_baselines_are_methods():
    from objpert.cli._compare import parse_methods

    with pytest.raises(CliError, match="unknown methods"):
        parse_methods("output,diffprivlib")


@pytest.mark.parametrize(
    ("text", "fragment"), [("magic", "unknown methods ['magic']"), (",", "no method")]
)
def test_unknown_or_no_methods_are_refused(text, fragment):
    from objpert.cli._compare import parse_methods
    from objpert.exceptions import ObjpertError

    with pytest.raises(ObjpertError, match=re.escape(fragment)):
        parse_methods(text)
