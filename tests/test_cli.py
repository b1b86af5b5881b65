"""The objpert command line: JSON keys, values from the library, one-line errors."""

import json
import subprocess
import sys

import pytest

from objpert.certify import exact, theorem41
from objpert.cli import main
from objpert.reproduce import example_constants

EXAMPLE = [
    "certify",
    "--loss",
    "logistic",
    "--n",
    "1000000",
    "--d",
    "10000",
    "--zeta",
    "1",
    "--mu",
    "0.01",
    "--sigma",
    "1e-5",
    "--u",
    "6",
    "--iterations",
    "1500",
    "--epsilon",
    "1",
]


def run_json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_certify_theorem41_json(capsys):
    out = run_json(capsys, EXAMPLE)
    for key in (
        "form",
        "iterations",
        "threshold_iterations",
        "epsilon",
        "delta",
        "truncation_mass",
        "divergence_term",
        "certified",
        "epsilon0",
    ):
        assert key in out
    cert = theorem41.certify(example_constants(), 1e-5, 6, 1500, 1.0)
    assert out["form"] == "theorem41"
    assert out["threshold_iterations"] == cert.threshold_iterations
    assert out["delta"] == pytest.approx(cert.delta, rel=1e-12)
    assert out["certified"] is True


def test_certify_c13_and_limit_json(capsys):
    out = run_json(capsys, [*EXAMPLE, "--form", "c13"])
    for key in ("alpha_bar", "s_n", "tau", "radius_ok"):
        assert key in out
    cert = exact.certify(example_constants(), 1e-5, 1500, 1.0, u=6)
    assert out["s_n"] == pytest.approx(cert.details["s_n"], rel=1e-12)
    limit = run_json(capsys, [*EXAMPLE, "--form", "limit"])
    assert limit["truncation_mass"] == 0.0
    assert limit["delta"] < out["delta"]


def test_certify_min_iterations_is_519(capsys):
    out = run_json(
        capsys, [*EXAMPLE, "--target-delta", "1e-7", "--min-iterations", "--form", "c13"]
    )
    assert out["iterations"] == 519
    assert out["certified"] is True
    assert out["delta"] <= 1e-7


def test_certify_target_delta_gives_epsilon(capsys):
    assert EXAMPLE[-2] == "--epsilon"
    out = run_json(capsys, [*EXAMPLE[:-2], "--target-delta", "1e-7"])
    assert out["delta"] == pytest.approx(1e-7, rel=1e-9)
    assert out["epsilon"] < 1.0


def test_certify_uncertified_below_threshold(capsys):
    argv = [*EXAMPLE[:-4], "--iterations", "100", "--epsilon", "1"]
    out = run_json(capsys, argv)
    assert out["certified"] is False
    assert out["delta"] == 1.0
    assert any("threshold" in r for r in out["reasons"])


def test_certify_plot(tmp_path, capsys):
    png = tmp_path / "profile.png"
    assert main([*EXAMPLE, "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Certificate" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["corollary413", "tight"])
def test_calibrate_json(capsys, method):
    out = run_json(
        capsys,
        [
            "calibrate",
            "--loss",
            "logistic",
            "--n",
            "100000",
            "--d",
            "100",
            "--zeta",
            "1",
            "--epsilon",
            "1",
            "--delta",
            "1e-6",
            "--radius",
            "1",
            "--method",
            method,
        ],
    )
    for key in ("sigma", "mu", "eta", "iterations", "u", "utility_bound", "method"):
        assert key in out
    assert out["method"] == method
    assert out["certificate"]["certified"] is True
    assert out["certificate"]["delta"] <= 1e-6


def test_reproduce_json(capsys):
    out = run_json(capsys, ["reproduce"])
    bad = [e["quantity"] for e in out["entries"] if not e["matches"]]
    assert bad == ["Theorem 4.9 bound at N = 519"]
    assert {r["mu"] for r in out["mu_comparison"]} == {1e-3, 3e-3, 1e-2, 3e-2, 1e-1}


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        ([*EXAMPLE[:-2], "--epsilon", "0"], "epsilon"),
        ([*EXAMPLE, "--target-delta", "1.5", "--min-iterations"], "delta"),
        (
            [
                "certify",
                "--n",
                "1",
                "--d",
                "3",
                "--mu",
                "1",
                "--sigma",
                "1",
                "--iterations",
                "3",
                "--epsilon",
                "1",
            ],
            "n must be",
        ),
        ([*EXAMPLE, "--loss", "hinge"], "loss must be one of"),
        ([*EXAMPLE, "--loss", "squared"], "L1"),
        ([*EXAMPLE, "--sigma", "-1"], "sigma"),
        ([*EXAMPLE, "--eta", "10"], "eta"),
        (
            [*EXAMPLE[:-2], "--epsilon", "0.01", "--target-delta", "1e-7", "--min-iterations"],
            "increase sigma",
        ),
        (["certify", "--n", "10"], "required"),
        (
            [
                "calibrate",
                "--n",
                "1e5",
                "--d",
                "10",
                "--epsilon",
                "2",
                "--delta",
                "1e-6",
                "--method",
                "corollary413",
            ],
            "epsilon",
        ),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_errors_are_one_line_exit_2(capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("objpert: error:")
    assert fragment in err
    assert "Traceback" not in err


def test_console_script_error_subprocess():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "objpert",
            "certify",
            "--n",
            "1e6",
            "--d",
            "10",
            "--mu",
            "0.01",
            "--sigma",
            "0",
            "--iterations",
            "5",
            "--epsilon",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "sigma must be > 0" in proc.stderr


def test_tables_prints_certificates_and_calibration(capsys):
    out = run_json(capsys, ["tables"])
    forms = [c["form"] for c in out["certificates"]]
    assert forms == ["theorem41", "c13", "c13", "limit"]
    assert all(c["certified"] for c in out["certificates"])
    assert len(out["calibration"]) == 9
    for row in out["calibration"]:
        assert row["tight"]["certificate"]["delta"] <= 1e-6


def test_reproduce_qop_cli_writes_figures(tmp_path, capsys):
    assert main(["reproduce", "qop", "--runs", "2", "--out", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    spread = out["figure2"]["spread"]
    assert spread["QOP"] < spread["LOP-Clip"] < spread["LOP"]  # Figure 2's ordering
    for name in ("qop_figure1.png", "qop_figure2.png", "qop_figure1.csv", "qop_figure2.csv"):
        assert (tmp_path / name).stat().st_size > 0
