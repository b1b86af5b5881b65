"""Which cells of one `objpert compare` run are unchanged in another.

    git show <commit>:docs/compare/compare.json > /tmp/before.json
    python benchmarks/compare_unchanged.py /tmp/before.json docs/compare/quick/compare.json

    objpert compare --quick --out /tmp/quick
    python benchmarks/compare_unchanged.py docs/compare/compare.json /tmp/quick/compare.json

Every (dataset, method, epsilon) present in both runs with at least one release is
listed with its mean test accuracy and mean training objective in each; a cell is
"unchanged" when both means and every release's accuracy and objective agree to 1e-12
(the same seeds give the same releases). `--quick`'s cells are cells of the full run, so
the second form checks a quick run against the committed full table. The exit status is
1 when a cell changed or the runs share no cell, 0 otherwise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOLERANCE = 1e-12
MEANS = ("accuracy_mean", "objective_mean")
RELEASES = ("accuracies", "objectives")


def cells(path: str) -> dict[tuple[str, str, float], dict]:
    rows = json.loads(Path(path).read_text())["rows"]
    return {(r["dataset"], r["method"], float(r["epsilon"])): r for r in rows if r["runs"]}


def same(a: dict, b: dict) -> bool:
    """Both means, and every release's values where both runs list them, agree to 1e-12."""
    if any(abs(a[f] - b[f]) > TOLERANCE for f in MEANS):
        return False
    for f in RELEASES:
        x, y = a.get(f), b.get(f)
        if (
            x
            and y
            and (len(x) != len(y) or any(abs(p - q) > TOLERANCE for p, q in zip(x, y, strict=True)))
        ):
            return False
    return True


def main(before: str, after: str) -> int:
    old, new = cells(before), cells(after)
    shared = sorted(old.keys() & new.keys())
    print("| dataset | method | epsilon | accuracy before | after | objective before | after | |")
    print("|---|---|---|---|---|---|---|---|")
    changed = 0
    for key in shared:
        a, b = old[key], new[key]
        unchanged = same(a, b)
        changed += not unchanged
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {a['accuracy_mean']:.6f} | "
            f"{b['accuracy_mean']:.6f} | {a['objective_mean']:.6f} | "
            f"{b['objective_mean']:.6f} | {'unchanged' if unchanged else 'changed'} |"
        )
    only = sorted(new.keys() - old.keys())
    if only:
        print("\nonly in the second run:", ", ".join(f"{m} at {e:g}" for _, m, e in only))
    print(f"\n{len(shared) - changed} of {len(shared)} shared cells unchanged")
    return 1 if changed or not shared else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
