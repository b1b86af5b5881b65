"""The public surface: a few hundred names, each listed in docs/library.md.

Every module of the library is private (its name starts with ``_``) but the packages
below, the error classes and the bundled datasets; what each public module exports is its
``__all__``, and docs/library.md ("The public API") lists exactly those names.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "objpert"
DOC = ROOT / "docs" / "library.md"

#: The public modules: packages whose ``__init__`` is the interface, and three modules.
PUBLIC = (
    "objpert",
    "objpert.exceptions",
    "objpert.accounting",
    "objpert.certify",
    "objpert.mechanisms",
    "objpert.estimators",
    "objpert.preprocessing",
    "objpert.model_selection",
    "objpert.persistence",
    "objpert.audit",
    "objpert.spark",
    "objpert.apps",
    "objpert.apps.datasets",
    "objpert.apps.pipeline_datasets",
    "objpert.cli",
)
MAX_PUBLIC_NAMES = 300


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _public_modules_on_disk() -> set[str]:
    """Modules no part of whose dotted name starts with an underscore."""
    out = set()
    for path in SRC.rglob("*.py"):
        name = _module_name(path)
        if path.name == "__main__.py" or any(p.startswith("_") for p in name.split(".")):
            continue
        out.add(name)
    return out


def _exports() -> dict[str, list[str]]:
    return {m: list(importlib.import_module(m).__all__) for m in PUBLIC}


def _listed() -> dict[str, list[str]]:
    """docs/library.md's public API: a ``### `module``` heading, then its names."""
    text = DOC.read_text(encoding="utf-8").split("## The public API", 1)[1]
    out = {}
    for block in re.split(r"\n### ", text)[1:]:
        head, _, body = block.partition("\n")
        module = head.strip().strip("`")
        out[module] = re.findall(r"`([^`]+)`", body.lstrip("\n").split("\n\n", 1)[0])
    return out


def test_every_other_module_is_private():
    assert sorted(_public_modules_on_disk() - set(PUBLIC)) == []


def test_the_public_names_are_a_few_hundred():
    total = sum(len(names) for names in _exports().values())
    assert total <= MAX_PUBLIC_NAMES, total


@pytest.mark.parametrize("module", PUBLIC)
def test_docs_list_exactly_the_public_names(module):
    assert sorted(_listed().get(module, [])) == sorted(_exports()[module])


def test_the_listing_check_can_fail():
    listed = _listed()
    first = next(iter(listed))
    assert sorted(listed[first][1:]) != sorted(_exports()[first])
