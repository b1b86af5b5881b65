"""Every count flag of the command line has an upper bound: a value above it is refused
while the arguments are read, before any work, in one line on stderr (exit status 2)
saying what the count costs; every count the docs use is well within its bound."""

from __future__ import annotations

import argparse
import time

import pytest

from objpert.cli import _common as c
from objpert.cli import build_parser, main
from objpert.exceptions import CliError

HUGE = "1000000000000"
#: Above 2^53 (certify --iterations: any N costs the same, so its limit is 2^53)
HUGER = "100000000000000000000"

#: (argv before the count, the flag, its limit)
COUNTS = {
    "audit --draws": (["audit", "--mechanism", "lop"], "--draws", c.MAX_DRAWS),
    "audit --samples": (["audit", "--mechanism", "watkins_arora"], "--samples", c.MAX_SAMPLES),
    "demo --seeds": (["demo"], "--seeds", c.MAX_SEEDS),
    "demo --threads": (["demo"], "--threads", c.MAX_THREADS),
    "compare --seeds": (["compare"], "--seeds", c.MAX_SEEDS),
    "compare --threads": (["compare"], "--threads", c.MAX_THREADS),
    "compare --workers": (["compare"], "--workers", c.MAX_WORKERS),
    "reproduce --runs": (["reproduce", "qop"], "--runs", c.MAX_RUNS),
    "reproduce --points": (["reproduce", "qop"], "--points", c.MAX_POINTS),
    "certify --iterations": (
        ["certify", "--n", "1e6", "--d", "10", "--mu", "0.01", "--sigma", "1e-5"],
        "--iterations",
        c.MAX_CERTIFY_ITERATIONS,
    ),
    "certify --max-iter": (["certify"], "--max-iter", c.MAX_SEARCH_ITERATIONS),
    "calibrate --max-iter": (
        ["calibrate", "--n", "1e5", "--d", "10", "--epsilon", "1", "--delta", "1e-6"],
        "--max-iter",
        c.MAX_PLAN_ITERATIONS,
    ),
    "calibrate --releases": (
        ["calibrate", "--n", "1e5", "--d", "10", "--epsilon", "1", "--delta", "1e-6"],
        "--releases",
        c.MAX_RELEASES,
    ),
    "bench --threads": (["bench"], "--threads", c.MAX_THREADS),
    "train --max-iter": (
        ["train", "--data", "x.csv", "--target", "y", "--epsilon", "1", "--delta", "1e-6"],
        "--max-iter",
        c.MAX_TRAIN_ITERATIONS,
    ),
    "train --n-jobs": (
        ["train", "--data", "x.csv", "--target", "y", "--epsilon", "1", "--delta", "1e-6"],
        "--n-jobs",
        c.MAX_THREADS,
    ),
}


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_a_count_above_its_limit_is_refused_before_any_work(name, capsys):
    head, flag, limit = COUNTS[name]
    huge = HUGER if limit > int(HUGE) else HUGE
    with pytest.raises(CliError, match=rf"{flag} {huge} is above the limit {limit:,} \(.+\)"):
        build_parser().parse_args([*head, flag, huge])  # refused while reading the arguments
    start = time.perf_counter()
    assert main([*head, flag, huge]) == 2
    assert time.perf_counter() - start < 2.0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("objpert: error: ")
    assert "is above the limit" in captured.err


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_the_limit_itself_is_accepted(name):
    head, flag, limit = COUNTS[name]
    args = build_parser().parse_args([*head, flag, str(limit)])
    dest = flag.lstrip("-").replace("-", "_")
    if name.startswith("train "):  # an estimator parameter
        dest = "param_" + dest
    assert getattr(args, dest) == limit
    with pytest.raises(CliError, match="above the limit"):
        build_parser().parse_args([*head, flag, str(limit + 1)])


def test_each_limit_states_its_cost():
    for head, flag, limit in COUNTS.values():
        with pytest.raises(CliError) as caught:
            build_parser().parse_args([*head, flag, str(limit + 1)])
        text = str(caught.value)
        assert text.count("(") >= 1 and len(text) < 300, text


CALIBRATE = ["calibrate", "--n", "1e5", "--d", "100", "--epsilon", "1", "--delta", "1e-6"]
TRAIN = ["train", "--data", "x.csv", "--target", "y", "--epsilon", "1", "--delta", "1e-6"]


@pytest.mark.parametrize(
    "argv",
    [  # the counts of the commands in README.md and docs/
        ["audit", "--mechanism", "watkins_arora", "--draws", "20000", "--samples", "4000"],
        ["audit", "--mechanism", "lop", "--pair", "random:1", "--draws", "20000", "--json"],
        ["demo", "--seeds", "10", "--threads", "2"],
        ["compare", "--seeds", "10", "--out", "docs/compare", "--workers", "2"],
        ["reproduce", "qop", "--runs", "10", "--points", "25"],
        ["certify", "--n", "1000000", "--d", "10000", "--mu", "0.01", "--iterations", "1500"],
        ["certify", "--min-iterations", "--max-iter", "1000000"],
        [*CALIBRATE, "--max-iter", "5000", "--releases", "10"],
        ["bench", "--only", "dense,fit", "--threads", "2"],
        [*TRAIN, "--max-iter", "5000", "--n-jobs", "1"],
    ],
)
def test_the_documented_counts_are_within_the_limits(argv):
    assert isinstance(build_parser().parse_args(argv), argparse.Namespace)


def test_a_count_that_is_not_an_integer_is_still_a_usage_error(capsys):
    assert main(["audit", "--mechanism", "lop", "--samples", "x"]) == 2
    assert "invalid int value: 'x'" in capsys.readouterr().err
    assert main(["audit", "--mechanism", "lop", "--samples", "9" * 5000]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "is above the limit" in err
    assert main(["audit", "--mechanism", "lop", "--samples", "x" * 5000]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 400 and "invalid int value" in err


@pytest.mark.parametrize("command", ["demo", "compare"])
def test_too_many_epsilons_are_refused_before_any_work(command, monkeypatch, capsys):
    from objpert.apps import _compare as compare
    from objpert.apps import _demo as demo

    def started(*args, **kwargs):
        raise AssertionError("the work started")

    monkeypatch.setattr(demo, "run", started)
    monkeypatch.setattr(compare, "run", started)
    many = ",".join(str(1 + k / 1000) for k in range(c.MAX_EPSILONS + 1))
    assert main([command, "--epsilons", many, "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--epsilons lists {c.MAX_EPSILONS + 1} values, above the limit" in err
    at_limit = ",".join(str(1 + k / 1000) for k in range(c.MAX_EPSILONS))
    assert len(c.sweep_epsilons(at_limit)) == c.MAX_EPSILONS
    assert c.sweep_epsilons("1,1,2") == [1.0, 2.0]  # a value listed twice runs once
