"""The command's output helper: number formatting, key-value tables, JSON or tables, and
the plain-text fallback when rich is not installed (tables as aligned text)."""

from __future__ import annotations

import argparse
import json
import sys
import types

import pytest

from objpert.cli import _output as output
from objpert.cli import main


@pytest.fixture
def no_rich(monkeypatch):
    """As if rich were not installed: the flag off and every ``import rich...`` failing."""
    monkeypatch.setattr(output, "RICH", False)
    for name in [m for m in sys.modules if m == "rich" or m.startswith("rich.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "rich", None)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (1 / 3, "0.3333333333"),
        (1e-7, "1.000000e-07"),
        (2.5e6, "2.500000e+06"),
        (0.0, "0.0"),
        (float("inf"), "inf"),
        (True, "True"),
        (None, "None"),
        (519, "519"),
    ],
)
def test_fmt(value, text):
    assert output.fmt(value) == text


def test_strip_markup_keeps_ordinary_brackets():
    assert output.strip_markup("[bold red]NO[/] see [0, 1]") == "NO see [0, 1]"
    assert output.strip_markup("[green]pass[/]") == "pass"


def test_plain_table_is_aligned_text():
    table = output.PlainTable(title="Results", caption="a caption")
    table.add_column("name")
    table.add_column("seconds", justify="right")
    table.add_row("dense", "0.08")
    table.add_row("[bold red]FAIL[/]", "12.5", end_section=True)
    table.add_row("sparse", "1")
    lines = table.render().splitlines()
    assert lines[0] == "Results" and lines[-1] == "a caption"
    assert lines[1:4] == ["name    seconds", "------  -------", "dense      0.08"]
    assert lines[4] == "FAIL       12.5" and lines[5] == "------  -------"
    assert lines[6] == "sparse        1"
    assert str(table) == table.render()


def test_kv_table_skips_nested_values_and_formats_numbers(no_rich):
    table = output.kv_table("Plan", {"sigma": 1e-7, "mu": 0.25, "certificate": {"x": 1}})
    assert isinstance(table, output.PlainTable)
    assert table.rows == [["sigma", "1.000000e-07"], ["mu", "0.25"]]
    assert table.justify == ["left", "right"]


def test_emit_prints_json_or_tables(capsys, no_rich):
    table = output.kv_table("T", {"a": 1})
    output.emit(argparse.Namespace(json=True), {"a": 1}, [table])
    assert json.loads(capsys.readouterr().out) == {"a": 1}
    output.emit(argparse.Namespace(json=False), {"a": 1}, [table])
    assert capsys.readouterr().out.splitlines() == [
        "T",
        "quantity  value",
        "--------  -----",
        "a             1",
    ]


def test_the_rich_tables_when_rich_is_installed():
    pytest.importorskip("rich")
    from rich.table import Table

    assert output.RICH and output.table_type() is Table
    assert isinstance(output.kv_table("T", {"a": 1}), Table)


def test_certify_without_rich_prints_an_aligned_table(capsys, no_rich):
    argv = ["certify", "--n", "1e6", "--d", "1e4", "--mu", "0.01", "--sigma", "1e-5"]
    assert main([*argv, "--iterations", "1500", "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    assert "─" not in out and "│" not in out  # no box drawing: plain text
    lines = out.splitlines()
    assert lines[0] == "Certificate (theorem41) for logistic, n=1000000, d=10000"
    assert lines[1].split() == ["quantity", "value"]
    rows = dict(line.rsplit(None, 1) for line in lines[3:])
    assert rows["epsilon"] == "1" and rows["form"] == "theorem41" and rows["iterations"] == "1500"
    assert len({len(line) for line in lines[1:]}) == 1  # every row as wide as the header


def test_reproduce_without_rich_strips_the_markup(capsys, no_rich):
    assert main(["reproduce"]) == 0
    out = capsys.readouterr().out
    assert "Watkins & Arora (2026): printed against computed" in out
    assert "[bold red]" not in out and "[/]" not in out


def test_bench_table_without_rich(capsys, no_rich, monkeypatch):
    from objpert.apps._bench import runner
    from objpert.apps._bench.common import BenchResult

    module = types.ModuleType("fake_bench_module")
    module.bench_fake = lambda: [BenchResult("fake", 1.0, "base", 2.0, 0.5, 1.0, "max")]
    monkeypatch.setitem(sys.modules, "fake_bench_module", module)
    monkeypatch.setitem(runner.BENCHMARKS, "fake", ("fake_bench_module", "bench_fake"))
    assert main(["bench", "--only", "fake", "--threads", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "objpert bench (full sizes, 1 thread(s))"
    assert out[1].split()[:3] == ["benchmark", "seconds", "baseline"]
    assert out[3].split() == ["fake", "1", "base", "2", "0.5", "<=", "1", "pass"]


def test_progress_and_status_are_silent_without_rich(capsys, no_rich):
    with output.progress("fits", total=3) as advance:
        advance()
        advance(2)
    with output.status("working ...") as spinner:
        spinner.update("still working ...")
    output.console(stderr=True).print("[bold]to stderr[/]")
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "to stderr\n"
