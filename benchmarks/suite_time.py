"""The test suite's wall and CPU time, against the suite of an earlier commit.

Usage: python benchmarks/suite_time.py --base COMMIT [--rounds R] [--skip-whole] [--json FILE]

Each round runs, one after the other in this order: the test suite of ``COMMIT``, the tests
of this checkout's last commit (``HEAD``) whose names (file aside: the tests have moved)
also exist at ``COMMIT``, and the whole suite of ``HEAD``; each in a fresh clone with its
own ``src`` first on ``PYTHONPATH``, each as ``python -m pytest -q -p no:cacheprovider`` with the
project's own options (``-n auto``). Every run starts with numba's cache of the kernels
empty, as on a fresh checkout. Reported: wall time and the CPU time of the test processes
(user + system, from the children's resource usage), median with min and max over the
rounds, and the number of tests run. On a machine shared with other work the CPU time is
the steadier figure: the wall time also counts the waits for a core.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = "objpert_suite_subset"
PLUGIN_SOURCE = """
import os

NAMES = set(open(os.environ["OBJPERT_SUITE_NAMES"], encoding="utf-8").read().split("\\n"))


def pytest_collection_modifyitems(config, items):
    kept = [i for i in items if i.nodeid.split("::", 1)[-1] in NAMES]
    config.hook.pytest_deselected(items=[i for i in items if i not in kept])
    items[:] = kept
"""


def _names(checkout: Path, env: dict[str, str]) -> set[str]:
    """The test names (``test[params]`` after the file) the suite at ``checkout`` collects."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p",
         "no:cacheprovider"],
        cwd=checkout, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return {line.split("::", 1)[1] for line in out.splitlines() if "::" in line}


def _fresh_kernel_cache(checkout: Path) -> None:
    for cache in (checkout / "src").rglob("__pycache__"):
        for f in cache.glob("*.nb[ic]"):
            f.unlink()


def _timed(checkout: Path, env: dict[str, str], extra: list[str]) -> dict:
    _fresh_kernel_cache(checkout)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        cwd=checkout, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    passed = re.search(r"(\d+) passed", tail)
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return {
        "failed": failed,
        "wall": wall,
        "cpu": cpu,
        "passed": int(passed.group(1)) if passed else 0,
        "returncode": done.returncode,
        "summary": tail,
    }


def _spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the earlier commit whose suite is timed")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument(
        "--skip-whole", action="store_true", help="time only the earlier suite and its tests here"
    )
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="objpert-suite-"))
    try:
        base = work / "base"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(base)], check=True)
        subprocess.run(["git", "-C", str(base), "checkout", "-q", args.base], check=True)
        base_env = {**os.environ, "PYTHONPATH": str(base / "src")}
        head = work / "head"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(head)], check=True)
        here_env = {**os.environ, "PYTHONPATH": str(head / "src")}
        names = work / "names.txt"
        names.write_text("\n".join(sorted(_names(base, base_env))), encoding="utf-8")
        (work / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
        subset_env = {**here_env, "PYTHONPATH": f"{work}{os.pathsep}{head / 'src'}",
                      "OBJPERT_SUITE_NAMES": str(names)}  # fmt: skip
        runs: dict[str, list[dict]] = {"base suite": [], "same tests here": [], "whole suite": []}
        for r in range(args.rounds):
            runs["base suite"].append(_timed(base, base_env, []))
            runs["same tests here"].append(_timed(head, subset_env, ["-p", PLUGIN]))
            if not args.skip_whole:
                runs["whole suite"].append(_timed(head, here_env, []))
            for name, rows in runs.items():
                if not rows:
                    continue
                row = rows[-1]
                print(f"round {r + 1} {name:16s} wall {row['wall']:7.1f} s  cpu "
                      f"{row['cpu']:7.1f} s  {row['summary']}", flush=True)  # fmt: skip
                for line in row["failed"]:
                    print(f"    {line}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        name: {
            "wall_s": _spread([r["wall"] for r in rows]),
            "cpu_s": _spread([r["cpu"] for r in rows]),
            "passed": [r["passed"] for r in rows],
            "returncodes": [r["returncode"] for r in rows],
            "failed": [r["failed"] for r in rows],
        }
        for name, rows in runs.items()
        if rows
    }
    meta = {"base": args.base, "rounds": args.rounds, "cores": os.cpu_count(),
            "load_average": os.getloadavg()}  # fmt: skip
    for name, s in summary.items():
        w, c = s["wall_s"], s["cpu_s"]
        wall = f"{w['median']:7.1f} s [{w['min']:.1f}-{w['max']:.1f}]"
        cpu = f"{c['median']:7.1f} s [{c['min']:.1f}-{c['max']:.1f}]"
        print(f"{name:16s} wall {wall}  cpu {cpu}  passed {s['passed']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "runs": summary}, indent=2))
    return 0 if all(r["returncode"] == 0 for rows in runs.values() for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
