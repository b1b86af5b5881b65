"""No module of the package is longer than MAX_LINES lines: a longer one is split into
modules that each do one thing."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "objpert"

#: The most lines a module under src/objpert may have.
MAX_LINES = 600


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_longer_than_the_limit():
    sizes = {p.relative_to(SRC.parent).as_posix(): _lines(p) for p in sorted(SRC.rglob("*.py"))}
    assert sizes, f"no module found under {SRC}"
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    report = "\n".join(
        f"  {name}: {n} lines" for name, n in sorted(over.items(), key=lambda kv: -kv[1])
    )
    assert not over, f"modules over {MAX_LINES} lines (split them):\n{report}"
