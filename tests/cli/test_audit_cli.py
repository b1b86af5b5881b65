"""``objpert audit``: tables, JSON from the library, the figure, one-line errors (exit 2);
``--mechanism`` takes the registry's names (a former name warns and is translated)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from objpert.audit import _attacks as attacks
from objpert.cli import main
from objpert.mechanisms import _registry as registry

FAST = ["--draws", "400", "--samples", "60", "--seed", "3"]


def run_json(capsys, argv):
    assert main(["audit", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_output_perturbation_json_matches_the_library(capsys):
    out = run_json(capsys, ["--mechanism", "output_perturbation", *FAST])
    assert out["mechanism"] == "output_perturbation" and out["profile"] is None
    attack = out["attack"]
    assert attack["draws"] == 400 and attack["positives"] == attack["negatives"] == 200
    assert out["epsilon_certified"] == pytest.approx(attacks.DEFAULT_EPSILON)
    assert out["delta_certified"] <= attacks.DEFAULT_DELTA
    assert attack["flagged"] is False and attack["epsilon_lower"] < out["epsilon_certified"]
    assert out["pair"]["name"] == "canonical" and out["pair"]["n"] == attacks.AUDIT_N
    plan = attacks.audit_plan("output_perturbation", epsilon=2.0, delta=1e-2)
    assert out["plan"]["sigma"] == plan.sigma
    again = run_json(capsys, ["--mechanism", "output_perturbation", *FAST])
    assert again["attack"] == attack  # seeded: reproducible


def test_wa_table_profile_and_plot(capsys, tmp_path):
    png = tmp_path / "audit.png"
    assert main(["audit", "--mechanism", "watkins_arora", *FAST, "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    assert "epsilon lower bound" in text and "Exact pairwise profile" in text
    assert "looseness" in text and str(png) in text
    assert "Jacobian of z -> w_N" in text and "violations" in text
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_wa_json_profile_at_the_grid(capsys):
    argv = ["--mechanism", "watkins_arora", *FAST, "--epsilon", "1.5", "--delta", "0.02"]
    out = run_json(capsys, argv)
    prof = out["profile"]
    assert prof["epsilons"] == pytest.approx([f * 1.5 for f in (0.025, 0.05, 0.1, 0.25, 0.5, 1)])
    assert prof["samples"] == 60 and len(prof["looseness"]) == 6
    assert prof["certified"][-1] <= 0.02
    assert out["attack"]["epsilon_certified"] == pytest.approx(1.5)
    jac = out["jacobian"]  # Theorem A.12 on the certificate's ball, clean for the real release
    assert jac["clean"] and jac["violations"] == []
    assert jac["min_sigma_min"] >= jac["alpha_bar"] > 0
    assert jac["max_sym_eigenvalue"] <= -jac["alpha_bar"]


def test_random_pair_and_qop(capsys):
    out = run_json(capsys, ["--mechanism", "lop_clip", "--pair", "random:7", *FAST])
    assert out["pair"]["name"] == "random:7" and out["attack"]["mechanism"] == "lop_clip"
    out = run_json(capsys, ["--mechanism", "qop", "--draws", "100", "--seed", "0"])
    assert out["pair"]["loss"] == "squared" and out["pair"]["x_prime"] == [0.0, 0.0]
    assert out["flagged"] is True  # the point mass at theta_ref (docs/audit.md)


def test_worst_pair_is_searched_then_attacked(capsys, monkeypatch):
    import objpert.audit._worst_pair as wp

    found = dataclasses.make_dataclass("W", ["x", "label", "x_prime", "label_prime"])
    monkeypatch.setattr(wp, "worst_pair", lambda *a, **k: found((0.0, 1.0), 1.0, (0.0, -1.0), 1.0))
    out = run_json(capsys, ["--mechanism", "amp", "--pair", "worst", *FAST])
    assert out["pair"]["name"] == "worst"
    assert out["pair"]["x"] == [0.0, 1.0] and out["pair"]["x_prime"] == [0.0, -1.0]


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--mechanism", "lop2"], "invalid choice"),
        (["--pair", "canonical"], "required"),
        (["--mechanism", "watkins_arora", "--pair", "random:x"], "random:SEED"),
        (["--mechanism", "watkins_arora", "--pair", "best"], "canonical, worst or random"),
        (["--mechanism", "watkins_arora", "--epsilon", "0"], "--epsilon"),
        (["--mechanism", "watkins_arora", "--epsilon", "-1"], "--epsilon"),
        (["--mechanism", "watkins_arora", "--epsilon", "nan"], "--epsilon"),
        (["--mechanism", "watkins_arora", "--delta", "0"], "--delta"),
        (["--mechanism", "watkins_arora", "--delta", "1"], "--delta"),
        (["--mechanism", "watkins_arora", "--samples", "0"], "--samples"),
        (["--mechanism", "watkins_arora", "--draws", "3"], "--draws"),
        (["--mechanism", "watkins_arora", "--seed", "-2"], "--seed"),
        (["--mechanism", "watkins_arora", "--draws", "many"], "invalid int"),
    ],
)
def test_errors_are_one_line_with_exit_2(capsys, argv, match):
    assert main(["audit", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("objpert: error:") and match in lines[0]
    assert "Traceback" not in captured.err


def test_mechanism_choices_are_the_registry_names(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    usage = " ".join(capsys.readouterr().out.split())
    assert "{" + ",".join(registry.names()) + "}" in usage


@pytest.mark.parametrize("name", ["wa", "lop-clip", "output", "noisy-gd"])
def test_only_registry_names_are_mechanisms(capsys, name):
    assert main(["audit", "--mechanism", name, "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice" in err


def test_audit_per_person(capsys):
    """``--max-rows-per-unit K``: the pair's differing row is one person's K rows, the
    certificate audited is the person-level one (W&A: Theorem C.13 for K rows, with its
    exact pairwise profile on the K-row pair; a peer: group privacy of its events)."""
    argv = ["--max-rows-per-unit", "3", *FAST]
    wa = run_json(capsys, ["--mechanism", "watkins_arora", *argv])
    assert wa["pair"]["name"] == "canonical x 3 rows" and wa["plan"]["rows"] == 3
    assert wa["epsilon_certified"] == pytest.approx(attacks.DEFAULT_EPSILON)
    assert wa["profile"] is not None and not wa["flagged"]
    peer = run_json(capsys, ["--mechanism", "output_perturbation", *argv])
    assert peer["epsilon_certified"] == pytest.approx(attacks.DEFAULT_EPSILON)
    assert peer["delta_certified"] <= attacks.DEFAULT_DELTA and not peer["flagged"]
    for bad in (["--mechanism", "qop", *argv], ["--mechanism", "lop", "--max-rows-per-unit", "0"]):
        assert main(["audit", *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("objpert: error:") and "\n" not in err
