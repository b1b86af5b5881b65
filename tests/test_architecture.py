"""The package's shape: no import cycles, and each layer imports only the layers below it.

Imports are read from the source (every ``import`` and ``from ... import`` statement,
at module level or inside functions), so a cycle hidden in a lazy import is found too.
The layers are those of docs/architecture.md.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "objpert"

#: The top-level parts of the package, lowest first, in the layers of docs/architecture.md.
#: Each part may import only the parts before it (and itself): the order inside a layer is
#: checked too. The package root (objpert/__init__.py, the public facade) may import any
#: library part, and no part may import it.
LAYERS: dict[str, tuple[str, ...]] = {
    "errors": ("exceptions", "_jsonable", "_validation"),
    "foundations": ("_special", "_losses", "_randomness", "_forksafe", "_files"),
    "privacy arithmetic": ("accounting",),
    "certificates": ("certify",),
    "engines": ("_engines",),
    "data": ("_data",),
    "solvers": ("_solvers",),
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
    """The top-level part of ``module``."""
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
    graph = {**_graph(), "objpert.certify.fake": frozenset({"objpert.estimators._base"})}
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


#: A privacy quantity, by the name it is held under: epsilon, delta or rho, alone or with a
#: suffix (eps1, epsilon_i, delta_output, grid["rho"]).
_PRIVACY_NAME = re.compile(r"^(eps|epsilon|delta|rho)(\d+|_\w+)?$")
#: How many releases a count is held under (T steps, k releases, ...).
_COUNT_NAME = re.compile(r"^(T|K|k|count|steps|iterations|n_releases|releases)$")


def _leaf(node: ast.AST) -> str:
    """The name a value is held under: x, a.x, a["x"] -> "x" (else "")."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if isinstance(node, ast.Call):
        return _leaf(node.func)
    return ""


def _privacy(node: ast.AST) -> bool:
    return bool(_PRIVACY_NAME.match(_leaf(node))) or "profile" in _leaf(node)


def _privacy_arithmetic(tree: ast.AST) -> list[str]:
    """Where ``tree`` composes privacy by hand: a sum of two privacy quantities (eps1 +
    eps2), a privacy quantity times a count (T * rho), or the max or sum of privacy
    quantities (max(c.epsilon for c in certs), sum(profile(p) for p in plans))."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            if _privacy(node.left) and _privacy(node.right):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = (node.left, node.right)
            if any(_privacy(s) for s in sides) and any(_COUNT_NAME.match(_leaf(s)) for s in sides):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.FunctionDef) and _PRIVACY_NAME.match(node.name.split("_")[-1]):
            for inner in ast.walk(node):  # a function that returns a privacy quantity
                if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Mult):
                    sides = (inner.left, inner.right)
                    if any(_COUNT_NAME.match(_leaf(s)) for s in sides):
                        found.append(f"line {inner.lineno}: {ast.unparse(inner)}")
        elif isinstance(node, ast.Call) and _leaf(node.func) in ("max", "sum", "fsum"):
            items = [
                a.elt if isinstance(a, ast.GeneratorExp | ast.ListComp) else a for a in node.args
            ]
            items = [e for a in items for e in (a.elts if isinstance(a, ast.List) else [a])]
            if items and all(_privacy(e) for e in items):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


#: Lines outside accounting that the check reads as composition but that compose nothing:
#: (module, source) -> why.
_NOT_COMPOSITION = {
    ("objpert.model_selection._search", "max((s.epsilon for s in settings))"): (
        "the default selection epsilon is the largest candidate's target, a public rule"
    ),
    ("objpert.audit._tables", "max(eps_c, a.epsilon_lower)"): "a plot's axis limit",
    ("objpert.apps._compare.harness", "max((f.epsilon for f in fits))"): (
        "a table cell states the largest certified epsilon of its seeds' separate fits"
    ),
    ("objpert.apps._compare.harness", "max((f.delta for f in fits))"): (
        "a table cell states the largest certified delta of its seeds' separate fits"
    ),
}


def test_no_privacy_arithmetic_outside_accounting():
    """Privacy numbers compose only in objpert.accounting: no other module adds epsilons,
    deltas or profiles, multiplies a rho by a count, or takes their max."""
    bad = []
    for m, tree in _outside_accounting().items():
        for hit in _privacy_arithmetic(tree):
            source = hit.split(": ", 1)[1]
            if (m, source) not in _NOT_COMPOSITION:
                bad.append(f"{m} {hit}")
    assert bad == []


#: The compositions the library once wrote outside accounting: each must be found.
_ONCE_OUTSIDE = [
    "rho = T * grid['rho']",  # noisy gradient descent's T steps
    # the discrete Gaussian's T steps
    "def discrete_gaussian_rho(g, scale, T):\n    return T * g * g / (2.0 * scale * scale)",
    "epsilon = eps1 + eps2",  # objective and output parts of a multinomial release
    "eps = max(max(c.epsilon for c in certs), selection_epsilon)",  # a split selection
    "total = sum(_release_profile(p, epsilons / k) for p in plans)",  # a report's profile
    "delta = float(delta1 + delta2)",  # the same, their deltas
    "return self.delta1 + self.delta2 + self.delta3 + self.delta4",  # QOP's four parts
]


@pytest.mark.parametrize("source", _ONCE_OUTSIDE)
def test_the_arithmetic_check_finds_each_composition(source):
    assert _privacy_arithmetic(ast.parse(source)) != []
