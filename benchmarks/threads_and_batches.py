"""Batches, one-vs-rest releases and thread counts, as the machine is and under a competing
CPU-bound process the benchmark starts itself: ``objpert bench --only threads``.

Usage: python benchmarks/threads_and_batches.py [--quick] [--json r.json] [--markdown-file r.md]
       python benchmarks/threads_and_batches.py --one-vs-rest [--rounds R]
       python benchmarks/threads_and_batches.py --one-vs-rest-fit [--rounds R] [--json r.json]
       python benchmarks/threads_and_batches.py --batched [--rounds R] [--json r.json]
Medians with min/max over interleaved rounds in one process, BLAS on one thread
(threadpoolctl) around the timed work; docs/performance.md has the figures measured.
``--one-vs-rest`` runs only the one-vs-rest figures (synthetic 20,000 x 51 and digits,
K = 10), as the machine is and under one competing process per core but one.
"""

import json
import os
import sys
import time
import warnings

from objpert.cli import main


def one_vs_rest(rounds: int = 7) -> int:
    from objpert.apps._bench.threads import _one_vs_rest, competing_load

    warnings.simplefilter("ignore")  # the testing-seed warning of every release
    rows = [(False, digits) for digits in (False, True)]
    results = [(loaded, _one_vs_rest(False, rounds, 0, digits=d)) for loaded, d in rows]
    with competing_load():
        results += [(True, _one_vs_rest(False, rounds, 0, digits=d)) for _, d in rows]
    for loaded, r in results:
        print(f"{r.name}{'_under_load' if loaded else ''}: speed-up {r.ratio:.2f}; {r.note}")
    return 0


def one_vs_rest_fit(rounds: int = 5, json_file: str | None = None) -> int:
    from objpert.apps._bench.threads import _one_vs_rest_fit, _one_vs_rest_fit_digits

    return _figures((_one_vs_rest_fit, _one_vs_rest_fit_digits), rounds, json_file)


def batched(rounds: int = 7, json_file: str | None = None) -> int:
    from objpert.apps._bench.threads import _batched

    return _figures((_batched,), rounds, json_file)


def _figures(figures, rounds: int, json_file: str | None) -> int:
    """Each figure as the machine is, then each under the competing load; printed and
    written to ``json_file``."""
    from objpert.apps._bench.threads import competing_load

    warnings.simplefilter("ignore")  # the testing-seed warning of every release
    load_before = os.getloadavg()
    results = [(False, figure(False, rounds, 0)) for figure in figures]
    with competing_load():
        results += [(True, figure(False, rounds, 0)) for figure in figures]
    rows = []
    for loaded, r in results:
        name = f"{r.name}{'_under_load' if loaded else ''}"
        kind = "<=" if r.bar_kind == "max" else ">="
        print(f"{name}: ratio {r.ratio:.3f} (threshold {kind} {r.bar:.3f}); {r.note}")
        rows.append({**r.to_dict(), "name": name})
    if json_file:
        with open(json_file, "w", encoding="utf-8") as fh:
            meta = {"rounds": rounds, "cores": os.cpu_count(), "date": time.strftime("%F %T %Z")}
            meta["load_average_before_after"] = [load_before, os.getloadavg()]
            json.dump({**meta, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    out = args[args.index("--json") + 1] if "--json" in args else None
    if "--one-vs-rest-fit" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
        raise SystemExit(one_vs_rest_fit(rounds, out))
    if "--batched" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 7
        raise SystemExit(batched(rounds, out))
    if "--one-vs-rest" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 7
        raise SystemExit(one_vs_rest(rounds))
    raise SystemExit(main(["bench", "--only", "threads", *args]))
