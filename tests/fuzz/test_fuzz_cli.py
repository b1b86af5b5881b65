"""Fuzz: every ``objpert`` subcommand in-process (``objpert.cli.main``) with generated
arguments, and a few through subprocesses. The contract: exit 0, or exit 2 with exactly one
stderr line starting "objpert: error:" (after any "objpert: warning:" lines), never a
traceback and never an internal error."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from fuzz_support import fuzz
from hypothesis import given
from hypothesis import strategies as st

from objpert.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")

#: command-line spellings of numbers, good and bad
NUMBER_TEXT = st.one_of(
    st.sampled_from(
        ["0", "-1", "1", "2", "0.5", "1e-300", "5e-324", "1e300", "1e400", "-1e400", "nan",
         "inf", "-inf", "1" * 400, "abc", "", "1,2", "0x10", "True", "9007199254740993"]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**6), 10**6).map(str),
)  # fmt: skip


def check_exit(code: int, err: str) -> None:
    """The contract of one run, from its exit code and stderr."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    if code == 0:
        assert not any(line.startswith("objpert: error:") for line in lines), err
        return
    assert code == 2, (code, err)
    errors = [line for line in lines if line.startswith("objpert: error:")]
    assert len(errors) == 1, err
    assert lines[-1] == errors[0], err
    assert all(line.startswith("objpert: warning:") for line in lines[:-1]), err
    assert "internal error" not in errors[0], errors[0]


def run_cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    out, err = capsys.readouterr()
    check_exit(code, err)
    return code, out, err


def options(data, spec: dict[str, st.SearchStrategy]) -> list[str]:
    """``--flag value`` pairs: each flag present or not, its value from its strategy (a
    generated number text half the time)."""
    argv: list[str] = []
    for flag, values in spec.items():
        if data.draw(st.booleans(), label=f"has {flag}"):
            if values is None:
                argv.append(flag)
            else:
                value = data.draw(st.one_of(values, NUMBER_TEXT), label=flag)
                argv += [flag, value] if not value.startswith("-") else [f"{flag}={value}"]
    return argv


PROBLEM = {
    "--loss": st.sampled_from(["logistic", "robust", "squared", "hinge"]),
    "--scale": st.sampled_from(["1", "0.5"]),
    "--zeta": st.sampled_from(["1", "2"]),
}


@fuzz(60)
@given(data=st.data())
def test_certify(capsys, data):
    argv = ["certify", "--n", data.draw(st.one_of(st.just("1000"), NUMBER_TEXT)),
            "--d", data.draw(st.one_of(st.just("5"), NUMBER_TEXT)),
            "--mu", data.draw(st.one_of(st.just("0.1"), NUMBER_TEXT)),
            "--sigma", data.draw(st.one_of(st.just("0.05"), NUMBER_TEXT))]  # fmt: skip
    argv = _equals(argv)
    argv += options(
        data,
        {
            **PROBLEM,
            "--eta": st.sampled_from(["1", "0.5"]),
            "--u": st.sampled_from(["6", "0"]),
            "--iterations": st.sampled_from(["100", "5000"]),
            "--epsilon": st.sampled_from(["1", "0.5"]),
            "--form": st.sampled_from(["theorem41", "c13", "limit", "bogus"]),
            "--truncation": st.sampled_from(["paper", "exact"]),
            "--delta": st.sampled_from(["1e-6", "0.5"]),
            "--min-iterations": None,
            "--max-iter": st.sampled_from(["1000", "100000"]),
            "--json": None,
        },
    )
    code, out, _ = run_cli(capsys, argv)
    if code == 0 and "--json" in argv:
        payload = json.loads(out)
        assert 0.0 <= payload["delta"] <= 1.0 and payload["epsilon"] >= 0


def _equals(argv: list[str]) -> list[str]:
    """``--flag -1`` written ``--flag=-1`` (argparse reads a leading '-' as a flag)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i].startswith("--") and i + 1 < len(argv) and argv[i + 1].startswith("-"):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


@fuzz(30)
@given(data=st.data())
def test_calibrate(capsys, data):
    argv = _equals(["calibrate", "--n", data.draw(st.one_of(st.just("1000"), NUMBER_TEXT)),
                    "--d", "5", "--epsilon", data.draw(st.one_of(st.just("0.5"), NUMBER_TEXT)),
                    "--delta", data.draw(st.one_of(st.just("1e-6"), NUMBER_TEXT)),
                    "--calibration", "corollary413"])  # fmt: skip
    argv += options(
        data,
        {
            **PROBLEM,
            "--radius": st.sampled_from(["1", "3"]),
            "--comparator-norm": st.sampled_from(["1", "3"]),
            "--mu": st.sampled_from(["auto", "0.1", "x"]),
            "--objective": st.sampled_from(["empirical", "population", "bogus"]),
            "--releases": st.sampled_from(["1", "3", "0"]),
            "--max-iter": st.sampled_from(["50", "0"]),
            "--delta-sample": st.sampled_from(["0.01"]),
            "--json": None,
        },
    )
    run_cli(capsys, argv)


@cache
def files(root: str) -> dict[str, str]:
    """Data files and model files the train/predict/verify runs read."""
    from objpert.persistence import save

    d = Path(root)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)) / 3
    rows = ["a,b,y"] + [f"{x[0]},{x[1]},{int(x[0] > 0)}" for x in X]
    out = {}
    (d / "good.csv").write_text("\n".join(rows) + "\n")
    (d / "reg.csv").write_text(
        "\n".join(["a,b,y"] + [f"{x[0]},{x[1]},{x[0] * 2}" for x in X]) + "\n"
    )
    (d / "dates.csv").write_text("a,b,y\n2020-01-01,1,0\n2020-01-02,2,1\n2020-01-03,3,0\n")
    (d / "text.csv").write_text("a,b,y\nx,1,0\ny,2,1\nz,3,0\n")
    (d / "nan.csv").write_text("a,b,y\n1,nan,0\n2,2,1\n3,3,0\n")
    (d / "huge.csv").write_text("a,b,y\n1e308,-1e308,0\n1e300,2,1\n3,1e-300,0\n")
    (d / "labels.csv").write_text("a,b,y\n1,1,\n2,2,dog\n3,3,cat\n0,0,dog\n")
    (d / "empty.csv").write_text("")
    (d / "junk.csv").write_bytes(b"\x00\xff\xfe\x01garbage\n\x80")
    (d / "junk.parquet").write_bytes(b"PAR1 not really")
    for name in ("good", "reg", "dates", "text", "nan", "huge", "labels", "empty", "junk"):
        out[name] = str(d / f"{name}.csv")
    out["junk.parquet"] = str(d / "junk.parquet")
    from objpert.estimators import PrivateLogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = PrivateLogisticRegression(calibration="corollary413", random_state=0)
        model.fit(X, (X[:, 0] > 0).astype(int))
    # the file is written with feature names a, b: refit on a frame
    import pandas as pd

    frame = pd.DataFrame(X, columns=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame, (X[:, 0] > 0).astype(int))
    save(model, d / "model.json")
    out["model"] = str(d / "model.json")
    text = (d / "model.json").read_text()
    (d / "nan-model.json").write_text(text.replace('"epsilon": 1.0', '"epsilon": NaN', 1))
    (d / "deep-model.json").write_text("[" * 50000 + "]" * 50000)
    (d / "int-model.json").write_text('{"format": ' + "7" * 5000 + "}")
    payload = json.loads(text)
    payload["plans"][0]["delta_truncation"] = 5.0
    from objpert.persistence import digest

    payload["digest"] = digest(payload)
    (d / "trunc-model.json").write_text(json.dumps(payload))
    for name in ("nan-model", "deep-model", "int-model", "trunc-model"):
        out[name] = str(d / f"{name}.json")
    out["missing"] = str(d / "missing.json")
    out["dir"] = str(d)
    return out


DATA = ["good", "reg", "dates", "text", "nan", "huge", "labels", "empty", "junk",
        "junk.parquet", "missing"]  # fmt: skip


@fuzz(30)
@given(data=st.data())
def test_train(capsys, tmp_path_factory, data):
    paths_ = _paths(tmp_path_factory)
    argv = _equals([
        "train", "--data", paths_[data.draw(st.sampled_from(DATA))],
        "--target", data.draw(st.sampled_from(["y", "y", "a", "nope"])),
        "--epsilon", data.draw(st.one_of(st.just("0.5"), NUMBER_TEXT)),
        "--delta", data.draw(st.one_of(st.just("1e-6"), NUMBER_TEXT)),
        "--calibration", "corollary413",
    ])  # fmt: skip
    argv += _equals(
        options(
            data,
            {
                "--loss": st.sampled_from(["logistic", "robust"]),
                "--data-norm": st.sampled_from(["1", "2"]),
                "--no-clip": None,
                "--mu": st.sampled_from(["auto", "0.5", "x"]),
                "--max-iter": st.sampled_from(["1000"]),
                "--no-fit-intercept": None,
                "--classes": st.sampled_from(["0,1", "cat,dog", "0", "a,,b"]),
                "--seed": st.sampled_from(["0", "-1"]),
                "--feature-bounds": st.sampled_from(["-1:1,-1:1", "1:0,0:1", "-1:1", "x"]),
                "--comparator-norm": st.sampled_from(["1", "3"]),
                "--intercept-scaling": st.sampled_from(["none", "2"]),
                "--n-jobs": st.sampled_from(["1", "0"]),
                "--verbose": st.sampled_from(["auto", "false", "maybe"]),
                "--out": st.sampled_from([paths_["dir"] + "/out.json", paths_["dir"],
                                          "/nonexistent/dir/m.json"]),
                "--json": None,
            },
        )
    )  # fmt: skip
    run_cli(capsys, argv)


def _paths(tmp_path_factory):
    return files(str(tmp_path_factory.getbasetemp()))


MODELS = ["model", "nan-model", "deep-model", "int-model", "trunc-model", "missing", "good"]


@fuzz(30)
@given(data=st.data())
def test_predict_and_verify(capsys, tmp_path_factory, data):
    paths_ = _paths(tmp_path_factory)
    model = paths_[data.draw(st.sampled_from(MODELS))]
    kind = data.draw(st.sampled_from(["verify", "certify", "predict"]))
    if kind == "verify":
        argv = ["verify", model, *options(data, {"--json": None})]
    elif kind == "certify":
        argv = _equals(
            [
                "certify",
                "--model",
                model,
                *options(data, {"--delta": st.just("1e-6"), "--json": None}),
            ]
        )
    else:
        argv = ["predict", "--model", model, "--data", paths_[data.draw(st.sampled_from(DATA))]]
        argv += options(data, {"--target": st.sampled_from(["y", "nope"]), "--json": None})
    code, _, err = run_cli(capsys, argv)
    if model.endswith(("nan-model.json", "deep-model.json", "int-model.json",
                       "trunc-model.json")):  # fmt: skip
        assert code == 2, (argv, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--methods", ",", "--datasets", "breast_cancer"],
        ["compare", "--methods", "", "--datasets", "breast_cancer"],
        ["compare", "--seeds", "0", "--datasets", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--seeds=-3", "--datasets", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--datasets", ",", "--methods", "nonprivate", "--seeds", "1"],
        ["compare", "--datasets", "nope", "--methods", "nonprivate", "--seeds", "1"],
        ["compare", "--epsilons", ",", "--datasets", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--epsilons", "nan", "--datasets", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--epsilons=-1", "--datasets", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--delta", "2", "--datasets", "breast_cancer", "--methods", "nonprivate"],
        ["compare", "--methods", "bogus"],
        ["demo", "--seeds", "0", "--datasets", "breast_cancer", "--epsilons", "1"],
        ["demo", "--datasets", ",", "--epsilons", "1"],
        ["demo", "--epsilons", "abc"],
        ["demo", "--epsilons", "0", "--datasets", "breast_cancer"],
        ["demo", "--delta", "nan", "--datasets", "breast_cancer", "--seeds", "1"],
        ["reproduce", "bogus"],
        ["reproduce", "watkins-arora", "--runs", "x"],
        ["tables", "--bogus"],
        ["reproduce", "qop", "--runs", "0"],
        ["reproduce", "qop", "--runs", "x"],
        ["bench", "--only", "bogus"],
        ["bench", "--threads", "0"],
        ["bench", "--threads=-1"],
        ["audit", "--mechanism", "bogus"],
        ["audit", "--mechanism", "lop", "--draws", "0"],
        ["audit", "--mechanism", "lop", "--epsilon", "nan"],
        ["audit", "--mechanism", "lop", "--delta", "1.5"],
        ["audit", "--mechanism", "lop", "--pair", "bogus"],
        ["audit", "--mechanism", "lop", "--samples", "0"],
        ["audit", "--mechanism", "lop", "--seed=-1"],
        [],
        ["bogus"],
        ["certify"],
        ["--version-bogus"],
    ],
)
def test_bad_arguments_exit_2(capsys, argv):
    code, _, _ = run_cli(capsys, argv)
    assert code == 2, argv


def test_compare_one_valid_run(capsys):
    code, out, _ = run_cli(
        capsys,
        ["compare", "--datasets", "breast_cancer", "--methods", "nonprivate", "--seeds", "1",
         "--epsilons", "1", "--json"],
    )  # fmt: skip
    assert code == 0
    rows = json.loads(out)["rows"]
    assert rows and all(np.isfinite(r["accuracy_mean"]) for r in rows)


@pytest.mark.parametrize(
    "argv",
    [
        ["certify", "--n", "1" * 400, "--d", "3", "--mu", "1", "--sigma", "1",
         "--iterations", "10", "--epsilon", "1"],
        ["certify", "--n", "1000", "--d", "3", "--mu", "1", "--sigma", "1e-300",
         "--iterations", "10", "--epsilon", "1"],
        ["calibrate", "--n", "1000", "--d", "3", "--epsilon", "1e-300", "--delta", "1e-6",
         "--calibration", "corollary413"],
        ["compare", "--seeds", "0", "--datasets", "breast_cancer", "--methods", "nonprivate"],
    ],
)  # fmt: skip
def test_subprocess_one_line(argv):
    """Through a real process: exit 0, or exit 2 with one line on stderr (no traceback)."""
    proc = subprocess.run(
        [sys.executable, "-m", "objpert", *argv], capture_output=True, text=True, timeout=120
    )
    check_exit(proc.returncode, proc.stderr)


TEXT = st.one_of(NUMBER_TEXT, st.text(max_size=30), st.lists(NUMBER_TEXT, max_size=4).map(":".join))


@fuzz(100)
@given(text=st.one_of(TEXT, st.lists(TEXT, max_size=4).map(",".join)))
def test_feature_bounds_text(text):
    """Pairs of finite numbers lo < hi, or an ArgumentTypeError naming the flag."""
    import argparse

    from objpert.cli._params import parse_feature_bounds

    try:
        pairs = parse_feature_bounds(text)
    except argparse.ArgumentTypeError as err:
        assert "--feature-bounds" in str(err) and "\n" not in str(err)
        return
    assert pairs and all(np.isfinite([lo, hi]).all() and lo < hi for lo, hi in pairs)


@fuzz(100)
@given(
    text=TEXT,
    kind=st.sampled_from(["float > 0", "int >= 1", '"auto" or float > 0', "float or None",
                          'bool or "auto"', "str"]),
)  # fmt: skip
def test_value_reader(text, kind):
    """A value of the documented kind, or an ArgumentTypeError naming the flag."""
    import argparse
    import math

    from objpert.cli._params import value_reader

    try:
        value = value_reader("some_param", None, kind)(text)
    except argparse.ArgumentTypeError as err:
        assert "--some-param" in str(err)
        return
    if value is None:
        assert text.strip().lower() == "none"
    elif isinstance(value, bool):
        assert "bool" in kind
    elif isinstance(value, int):  # any size: the estimator's checks bound it (one line)
        assert "int" in kind or "float" in kind
    elif isinstance(value, float):
        assert math.isfinite(value) and "float" in kind
    else:
        assert value == "auto" or kind == "str"


@fuzz(200)
@given(delta=st.floats(0.0, 1.0), target=st.floats(5e-324, 1.0))
def test_target_reasons_exact(delta, target):
    from objpert.cli._certify import target_reasons

    reasons = target_reasons(delta, target)
    assert (reasons == []) == (delta <= target)
    assert all("\n" not in r and repr(target) in r for r in reasons)


@fuzz(60)
@given(
    epsilon=st.floats(allow_nan=True, allow_infinity=True),
    masses=st.tuples(st.floats(0, 2), st.floats(0, 2)),
    reasons=st.lists(st.text(min_size=1, max_size=40), max_size=3),
    k=st.integers(1, 40),
)
def test_printed_certificates(epsilon, masses, reasons, k):
    """A certificate and a composition of k of them print a few short lines; repr is one."""
    from objpert.accounting._certificate import ReleaseCertificate
    from objpert.accounting._composition import compose
    from objpert.exceptions import ParameterError

    cert = ReleaseCertificate.conclude(
        "c13", epsilon, *masses, reasons, iterations=10,
        threshold_iterations=None, sigma=0.5, truncation="exact", constants={},
    )  # fmt: skip
    assert "\n" not in repr(cert)
    assert len(str(cert).splitlines()) == 2 + len(cert.reasons)
    try:
        composed = compose([cert] * k, "basic" if k > 1 else "single")
    except ParameterError as err:  # a negative or NaN epsilon: refused, in one line
        assert "\n" not in str(err)
        return
    assert "\n" not in repr(composed) and len(repr(composed)) < 300
    assert len(str(composed).splitlines()) <= 2 + min(5, len(cert.reasons))
