"""Which cells of one `objpert compare` run are unchanged in another.

    git show <commit>:docs/compare/compare.json > /tmp/before.json
    python benchmarks/compare_unchanged.py /tmp/before.json docs/compare/quick/compare.json

Every (dataset, method, epsilon) present in both runs with at least one release is
listed with its mean test accuracy and mean training objective in each; a cell is
"unchanged" when both means agree to 1e-12 (the same seeds give the same releases).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOLERANCE = 1e-12


def cells(path: str) -> dict[tuple[str, str, float], dict]:
    rows = json.loads(Path(path).read_text())["rows"]
    return {(r["dataset"], r["method"], float(r["epsilon"])): r for r in rows if r["runs"]}


def main(before: str, after: str) -> int:
    old, new = cells(before), cells(after)
    print("| dataset | method | epsilon | accuracy before | after | objective before | after | |")
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(old.keys() & new.keys()):
        a, b = old[key], new[key]
        same = all(abs(a[f] - b[f]) <= TOLERANCE for f in ("accuracy_mean", "objective_mean"))
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {a['accuracy_mean']:.6f} | "
            f"{b['accuracy_mean']:.6f} | {a['objective_mean']:.6f} | "
            f"{b['objective_mean']:.6f} | {'unchanged' if same else 'changed'} |"
        )
    only = sorted(new.keys() - old.keys())
    if only:
        print("\nonly in the second run:", ", ".join(f"{m} at {e:g}" for _, m, e in only))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
