"""The package's shape: no import cycles, and each layer imports only the layers below it.

Imports are read from the source (every ``import`` and ``from ... import`` statement,
at module level or inside functions), so a cycle hidden in a lazy import is found too.
The layers are those of docs/architecture.md.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "objpert"

#: What each top-level part of the package may import (besides itself). A part not listed
#: here (the application layer, the command line) may import anything but must not be
#: imported by the library.
BASE = {"exceptions", "errors", "jsonable"}
ALLOWED: dict[str, set[str]] = {
    "exceptions": set(),
    "jsonable": set(),
    "errors": {"exceptions"},
    "special": BASE,
    "losses": BASE,
    "randomness": BASE,
    "certify": BASE | {"special", "losses"},
    "data": BASE | {"engines"},
    "engines": BASE | {"losses"},
    "solvers": BASE | {"losses", "engines"},
    "mechanisms": BASE
    | {
        "losses",
        "randomness",
        "certify",
        "data",
        "engines",
        "solvers",
    },
}
LIBRARY = set(ALLOWED) | {"estimators", "persistence", "audit", "accounting", "preprocessing"}
APPLICATIONS = {"apps", "cli", "__main__"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@functools.cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in SRC.rglob("*.py")}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """objpert modules imported by ``name`` (resolved to the longest known module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            targets = [f"{base}.{a.name}" for a in node.names]  # a submodule or a name
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name and t.startswith("objpert"):
                found.add(t)
    return found


@functools.cache  # read once per test process: the tests below only query it
def _graph() -> dict[str, frozenset[str]]:
    mods = _modules()
    known = set(mods)
    graph = {m: _imports(m, p, known) for m, p in mods.items()}
    # importing a submodule imports its packages first: that is not an edge of the design
    return {
        m: frozenset(deps - {m.rsplit(".", k)[0] for k in range(1, m.count("."))})
        for m, deps in graph.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below(part):
    bad = sorted(
        f"{m} -> {dep}"
        for m, deps in _graph().items()
        if _part(m) == part
        for dep in deps
        if _part(dep) not in ALLOWED[part] | {part} and dep != "objpert"
    )
    assert bad == []


def test_the_library_never_imports_the_applications():
    bad = sorted(
        f"{m} -> {dep}"
        for m, deps in _graph().items()
        if _part(m) in LIBRARY
        for dep in deps
        if _part(dep) in APPLICATIONS
    )
    assert bad == []


def test_every_public_module_declares_all():
    missing = [
        m
        for m, p in _modules().items()
        if not p.name.startswith("_") or p.name == "__init__.py"
        if "__all__" not in p.read_text(encoding="utf-8") and p.name != "__main__.py"
    ]
    assert missing == []
