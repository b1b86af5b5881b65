"""Batches, one-vs-rest releases and thread counts, as the machine is and under a competing
CPU-bound process the benchmark starts itself: ``objpert bench --only threads``.

Usage: python benchmarks/threads_and_batches.py [--quick] [--json r.json] [--markdown-file r.md]
       python benchmarks/threads_and_batches.py --one-vs-rest [--rounds R]
       python benchmarks/threads_and_batches.py --one-vs-rest-fit [--rounds R] [--json r.json]
Medians with min/max over interleaved rounds in one process, BLAS on one thread
(threadpoolctl) around the timed work; docs/performance.md has the figures measured.
``--one-vs-rest`` runs only the one-vs-rest figures (synthetic 20,000 x 51 and digits,
K = 10), as the machine is and under one competing process per core but one.
"""

import json
import sys
import warnings

from objpert.cli import main


def one_vs_rest(rounds: int = 7) -> int:
    from objpert.apps.bench.threads import _one_vs_rest, competing_load

    warnings.simplefilter("ignore")  # the testing-seed warning of every release
    rows = [(False, digits) for digits in (False, True)]
    results = [(loaded, _one_vs_rest(False, rounds, 0, digits=d)) for loaded, d in rows]
    with competing_load():
        results += [(True, _one_vs_rest(False, rounds, 0, digits=d)) for _, d in rows]
    for loaded, r in results:
        print(f"{r.name}{'_under_load' if loaded else ''}: speed-up {r.ratio:.2f}; {r.note}")
    return 0


def one_vs_rest_fit(rounds: int = 5, json_file: str | None = None) -> int:
    from objpert.apps.bench.threads import _one_vs_rest_fit, competing_load

    warnings.simplefilter("ignore")  # the testing-seed warning of every fit
    results = [(False, _one_vs_rest_fit(False, rounds, 0, digits=d)) for d in (False, True)]
    with competing_load():
        results += [(True, _one_vs_rest_fit(False, rounds, 0, digits=d)) for d in (False, True)]
    rows = []
    for loaded, r in results:
        name = f"{r.name}{'_under_load' if loaded else ''}"
        print(f"{name}: ratio {r.ratio:.3f} (threshold <= {r.bar:.3f}); {r.note}")
        rows.append({**r.to_dict(), "name": name})
    if json_file:
        with open(json_file, "w", encoding="utf-8") as fh:
            json.dump({"rounds": rounds, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--one-vs-rest-fit" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
        out = args[args.index("--json") + 1] if "--json" in args else None
        raise SystemExit(one_vs_rest_fit(rounds, out))
    if "--one-vs-rest" in args:
        rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 7
        raise SystemExit(one_vs_rest(rounds))
    raise SystemExit(main(["bench", "--only", "threads", *args]))
