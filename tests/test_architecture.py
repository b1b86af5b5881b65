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

#: The top-level parts of the package, lowest first, in the layers of docs/architecture.md.
#: Each part may import only the parts before it (and itself): the order inside a layer is
#: checked too. The package root (objpert/__init__.py, the public facade) may import any
#: library part, and no part may import it.
LAYERS: dict[str, tuple[str, ...]] = {
    "errors": ("exceptions", "jsonable", "validation"),
    "foundations": ("special", "losses", "randomness", "forksafe"),
    "certificates": ("certify",),
    "composition": ("accounting",),
    "peer certificates": ("certify.peers",),
    "engines": ("engines",),
    "data": ("data",),
    "solvers": ("solvers",),
    "mechanisms": ("mechanisms",),
    "interfaces": (
        "preprocessing",
        "estimators",
        "model_selection",
        "persistence",
        "audit",
        "spark",
    ),
    "applications": ("apps", "cli", "__main__"),
}
ORDER = [part for parts in LAYERS.values() for part in parts]
PEER_PACKAGES = ("objpert.certify.peers", "objpert.certify.qop")
APPLICATIONS = set(LAYERS["applications"])
LIBRARY = set(ORDER) - APPLICATIONS


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
    """The top-level part of ``module``; the peers' certificates (``certify.peers`` and QOP's
    ``certify.qop``), which compose through the accounting layer, are a part of their own
    above it."""
    if any(module == p or module.startswith(p + ".") for p in PEER_PACKAGES):
        return "certify.peers"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_import_cycles():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_top_level_module_has_a_place():
    parts = {_part(m) for m in _modules()} - {""}
    assert sorted(parts - set(ORDER)) == []


@pytest.mark.parametrize("part", ORDER)
def test_each_part_imports_only_the_parts_below(part):
    below = set(ORDER[: ORDER.index(part)])
    bad = sorted(
        f"{m} -> {dep}"
        for m, deps in _graph().items()
        if _part(m) == part
        for dep in deps
        if _part(dep) not in below | {part}
    )
    assert bad == []


def test_the_root_imports_the_library_only():
    bad = sorted(dep for dep in _graph()["objpert"] if _part(dep) in APPLICATIONS)
    assert bad == []


def test_the_layer_check_finds_an_upward_import(monkeypatch):
    graph = {**_graph(), "objpert.certify.fake": frozenset({"objpert.estimators.base"})}
    monkeypatch.setattr(__import__(__name__), "_graph", lambda: graph)
    with pytest.raises(AssertionError):
        test_each_part_imports_only_the_parts_below("certify")


def test_every_public_module_declares_all():
    missing = [
        m
        for m, p in _modules().items()
        if not p.name.startswith("_") or p.name == "__init__.py"
        if "__all__" not in p.read_text(encoding="utf-8") and p.name != "__main__.py"
    ]
    assert missing == []


def _outside_accounting() -> dict[str, ast.Module]:
    return {
        m: ast.parse(p.read_text(encoding="utf-8"))
        for m, p in _modules().items()
        if _part(m) != "accounting"
    }


def test_composition_lives_in_accounting():
    """Only objpert.accounting composes: no other module imports dp-accounting (the PLD
    library) or defines a composition theorem."""
    bad = []
    for m, tree in _outside_accounting().items():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n == "dp_accounting" or n.startswith("dp_accounting.") for n in names):
                bad.append(f"{m} imports dp_accounting")
            if isinstance(node, ast.FunctionDef) and node.name in ("compose", "basic", "advanced"):
                bad.append(f"{m} defines {node.name}")
    assert bad == []
