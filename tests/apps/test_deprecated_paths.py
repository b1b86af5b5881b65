"""The applications' former import paths keep working for one release: each imports,
warns (DeprecationWarning) and exposes the same objects as the module it moved to."""

from __future__ import annotations

import importlib
import re
import sys
import types

import pytest

MOVED = {
    "objpert.demo": "objpert.apps.demo",
    "objpert.compare": "objpert.apps.compare",
    "objpert.reproduce": "objpert.apps.reproduce",
    "objpert.reproduce_qop": "objpert.apps.reproduce_qop",
    "objpert.report": "objpert.apps.report",
    "objpert.plots": "objpert.apps.plots",
    "objpert.datasets": "objpert.apps.datasets",
    "objpert.external": "objpert.apps.external",
    "objpert.external.diffprivlib_env": "objpert.apps.external.diffprivlib_env",
    "objpert.external.diffprivlib_runner": "objpert.apps.external.diffprivlib_runner",
    "objpert.bench": "objpert.apps.bench",
    "objpert.bench.common": "objpert.apps.bench.common",
    "objpert.bench.dask_engine": "objpert.apps.bench.dask_engine",
    "objpert.bench.engine": "objpert.apps.bench.engine",
    "objpert.bench.fit": "objpert.apps.bench.fit",
    "objpert.bench.runner": "objpert.apps.bench.runner",
}
PACKAGES = {"objpert.bench", "objpert.external"}


def fresh_import(name: str, monkeypatch) -> types.ModuleType:
    """Import ``name`` anew (its module object is put back after the test), expecting the
    DeprecationWarning that names it."""
    monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning, match=re.escape(f"{name} is deprecated")):
        return importlib.import_module(name)


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_old_path_imports_warns_and_exposes_the_same_objects(old, new, monkeypatch):
    moved = importlib.import_module(new)
    shim = fresh_import(old, monkeypatch)
    assert (shim.__doc__ or "").startswith("Deprecated")
    assert set(moved.__all__) <= set(shim.__all__)
    for name in moved.__all__:
        assert getattr(shim, name) is getattr(moved, name), name
    if old in PACKAGES:
        return
    for name, value in vars(moved).items():  # private helpers too (through __getattr__)
        if not name.startswith("__"):
            assert getattr(shim, name) is value, name


def test_star_import_from_an_old_path(monkeypatch):
    fresh_import("objpert.demo", monkeypatch)
    namespace: dict = {}
    exec("from objpert.demo import *", namespace)
    from objpert.apps import demo

    assert {k for k in namespace if not k.startswith("__")} == set(demo.__all__)


def test_renamed_thresholds_keep_their_former_names(monkeypatch):
    from objpert.apps.bench import dask_engine, engine

    old = fresh_import("objpert.bench.engine", monkeypatch)
    assert old.DENSE_OVER_STREAM_BAR == engine.DENSE_OVER_STREAM_THRESHOLD == 1.3
    assert old.TWO_PASS_SPEEDUP_BAR == engine.TWO_PASS_SPEEDUP_THRESHOLD == 1.5
    assert old.SPARSE_BAR == engine.SPARSE_THRESHOLD == 1.2
    assert old.BATCHED_BAR == engine.BATCHED_THRESHOLD == 5.0
    old = fresh_import("objpert.bench.dask_engine", monkeypatch)
    assert old.FIXED_OVERHEAD_BAR_S == dask_engine.FIXED_OVERHEAD_THRESHOLD_S == 0.030


def test_the_bench_command_is_still_reachable_from_the_old_runner(monkeypatch):
    from objpert.cli import bench

    old = fresh_import("objpert.bench.runner", monkeypatch)
    assert old.cmd_bench is bench.cmd_bench and old.register is bench.add_parser


def test_an_unknown_name_is_still_an_attribute_error(monkeypatch):
    shim = fresh_import("objpert.datasets", monkeypatch)
    with pytest.raises(AttributeError):
        shim.no_such_name  # noqa: B018
