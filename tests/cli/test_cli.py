"""The objpert command line: JSON keys, values from the library, one-line errors."""

import json
import os
import subprocess
import sys

import pytest

from objpert.apps._reproduce import example_constants
from objpert.certify import _theorem41 as theorem41
from objpert.certify import _theorem_c13 as theorem_c13
from objpert.cli import main

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
    cert = theorem_c13.certify(example_constants(), 1e-5, 1500, 1.0, u=6)
    assert out["s_n"] == pytest.approx(cert.details["s_n"], rel=1e-12)
    limit = run_json(capsys, [*EXAMPLE, "--form", "limit"])
    assert limit["truncation_mass"] == 0.0
    assert limit["delta"] < out["delta"]


def test_certify_min_iterations_is_519(capsys):
    out = run_json(capsys, [*EXAMPLE, "--delta", "1e-7", "--min-iterations", "--form", "c13"])
    assert out["iterations"] == 519
    assert out["certified"] is True
    assert out["delta"] <= 1e-7


def test_certify_target_delta_gives_epsilon(capsys):
    assert EXAMPLE[-2] == "--epsilon"
    out = run_json(capsys, [*EXAMPLE[:-2], "--delta", "1e-7"])
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
            "--comparator-norm",
            "1",
            "--calibration",
            method,
        ],
    )
    for key in ("sigma", "mu", "eta", "iterations", "u", "utility_bound", "calibration"):
        assert key in out
    assert out["calibration"] == method
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
        ([*EXAMPLE, "--delta", "1.5", "--min-iterations"], "delta"),
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
        ([*EXAMPLE, "--loss", "hinge"], "invalid choice"),
        ([*EXAMPLE, "--loss", "squared"], "L1"),
        ([*EXAMPLE, "--sigma", "-1"], "sigma"),
        ([*EXAMPLE, "--eta", "10"], "eta"),
        (
            [*EXAMPLE[:-2], "--epsilon", "0.01", "--delta", "1e-7", "--min-iterations"],
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
                "--calibration",
                "corollary413",
            ],
            "epsilon",
        ),
        (["frobnicate"], "invalid choice"),
        (["reproduce", "qop", "--points", "1"], "--points must be an integer >= 2"),
        (["reproduce", "qop", "--runs", "1"], "--runs must be an integer >= 2"),
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


@pytest.mark.slow
def test_tables_prints_certificates_and_calibration(capsys):
    out = run_json(capsys, ["tables"])
    forms = [c["form"] for c in out["certificates"]]
    assert forms == ["theorem41", "c13", "c13", "limit"]
    assert all(c["certified"] for c in out["certificates"])
    assert len(out["calibration"]) == 9
    for row in out["calibration"]:
        assert row["tight"]["certificate"]["delta"] <= 1e-6


def test_reproduce_qop_checks_its_files_before_any_work(tmp_path, capsys):
    """A FIFO where a file would go would block the write: refused at once, as every
    other command's outputs are."""
    import os

    os.mkfifo(tmp_path / "qop_figure1.csv")
    argv = ["reproduce", "qop", "--runs", "2", "--points", "3", "--out", str(tmp_path)]
    assert main(argv) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["qop_figure1.csv"]


@pytest.mark.slow
def test_reproduce_qop_cli_writes_figures(tmp_path, capsys):
    argv = ["reproduce", "qop", "--runs", "2", "--points", "3", "--out", str(tmp_path)]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["figure1"]["rows"]) == 2 * 4 * 3  # (exact, inexact) x 4 epsilons x 3
    spread = out["figure2"]["spread"]
    assert spread["QOP"] < spread["LOP-Clip"] < spread["LOP"]  # Figure 2's ordering
    assert spread["theta_ref"] == 0.0  # the public reference point, released as it is
    assert "theta_ref" in out["figure2"]["reference"]["statement"]
    for name in ("qop_figure1.png", "qop_figure2.png", "qop_figure1.csv", "qop_figure2.csv"):
        assert (tmp_path / name).stat().st_size > 0


# ---------------------------------------------------------------- objpert verify


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    """A signed binary model (testing seed, declared classes), its key file, an unsigned
    multiclass model (labels read from the data) and a tampered copy of the signed one."""
    import warnings

    import numpy as np

    from objpert.estimators import PrivateLogisticRegression
    from objpert.persistence import save

    root = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 3)) / 2
    score = X @ np.array([1.0, -1.0, 0.5])
    key = root / "key"
    key.write_bytes(b"k3y\n")  # one trailing newline: stripped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        binary = PrivateLogisticRegression(
            epsilon=2.0,
            mu=0.2,
            max_iter=300,
            classes=[0, 1],
            data_norm=1.0,  # public: nothing read from the rows
            random_state=0,
        ).fit(X, (score > 0).astype(int))
        multi = PrivateLogisticRegression(
            epsilon=2.0, mu=0.2, max_iter=300, data_norm=1.0, multi_class="ovr"
        ).fit(X, np.digitize(score, [-0.3, 0.3]))
    signed = save(binary, root / "signed.json", key=b"k3y")
    unsigned = save(multi, root / "unsigned.json", key=None)
    doc = json.loads(signed.read_text())
    doc["coef"][0][0] += 0.25
    tampered = root / "tampered.json"
    tampered.write_text(json.dumps(doc))
    return {"signed": signed, "key": key, "unsigned": unsigned, "tampered": tampered}


@pytest.fixture(autouse=True)
def _no_env_key(monkeypatch):
    monkeypatch.delenv("OBJPERT_MODEL_KEY", raising=False)


def test_verify_signed_model(model_files, capsys):
    argv = ["verify", str(model_files["signed"]), "--key-file", str(model_files["key"])]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "signed and verified" in out
    assert "Theorem C.13" in out and "Watkins & Arora" in out
    assert "testing seed" in out  # seeded: reported
    out = run_json(capsys, argv)
    assert out["signature"] == "signed and verified" and out["verified"] is True
    assert out["certified"] is True and out["epsilon"] <= 2.0 and out["delta"] <= 1e-6
    assert out["not_public"] == [] and out["seeded"] is True
    assert out["composition"] == "single" and len(out["releases"]) == 1
    release = out["releases"][0]
    for key in ("n", "d", "zeta", "epsilon", "delta", "sigma", "mu", "eta", "iterations"):
        assert key in release
    assert release["n"] == 200 and release["d"] == 4


def test_verify_unsigned_model(model_files, capsys):
    argv = ["verify", str(model_files["unsigned"])]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "unsigned: weights unverified" in captured.out
    assert "label set" in captured.out
    out = run_json(capsys, argv)
    assert out["signature"] == "unsigned: weights unverified"
    assert out["signed"] is False and out["verified"] is False
    assert out["not_public"] == ["label set"] and out["seeded"] is False
    assert out["composition"] in ("basic", "advanced", "pld") and len(out["releases"]) == 3


def test_verify_signed_model_without_key(model_files, capsys):
    out = run_json(capsys, ["verify", str(model_files["signed"])])
    assert out["signed"] is True and out["verified"] is False
    assert "not verified" in out["signature"] and "weights unverified" in out["signature"]


@pytest.mark.parametrize(
    ("which", "key", "fragment"),
    [
        ("signed", b"wrong", "signature does not verify"),
        ("signed", b"k3y\n\n", "signature does not verify"),  # only one newline stripped
        ("tampered", b"k3y", "signature does not verify"),
        ("missing", None, "No such file"),
        ("garbage", None, "not a JSON model file"),
        ("signed", b"", "is empty"),
    ],
)
def test_verify_refusals_are_one_line_exit_2(model_files, tmp_path, capsys, which, key, fragment):
    path = model_files.get(which, tmp_path / f"{which}.json")
    if which == "garbage":
        path.write_bytes(b"\x00\x01 not json")
    argv = ["verify", str(path), "--json"]
    if key is not None:
        key_file = tmp_path / "key"
        key_file.write_bytes(key)
        argv += ["--key-file", str(key_file)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("objpert: error:")
    assert fragment in captured.err and "Traceback" not in captured.err


def test_verify_forged_plan_is_refused(model_files, tmp_path, capsys):
    from objpert.persistence import digest

    doc = json.loads(model_files["unsigned"].read_text())
    doc["plans"][0]["certificate"]["constants"]["L1"] = 0.5
    doc["digest"] = digest(doc)
    path = tmp_path / "forged.json"
    path.write_text(json.dumps(doc))
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plan 0" in err and "L1" in err


def test_verify_subprocess(model_files):
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "objpert",
            "verify",
            str(model_files["signed"]),
            "--key-file",
            str(model_files["key"]),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["signature"] == "signed and verified"
    bad = subprocess.run(
        [sys.executable, "-m", "objpert", "verify", str(model_files["tampered"])],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "OBJPERT_MODEL_KEY": "k3y"},
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0 and "Traceback" not in bad.stderr
    assert "signature does not verify" in bad.stderr
