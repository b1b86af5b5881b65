"""The cost of ``objpert report`` after the imports: reading and checking a model file,
computing its profile and attacker's bound, rendering the HTML page.

``python benchmarks/bench_report.py [--rounds 7] [--json FILE]``

Two model files of docs/report.md's example (n = 300, 3 features, epsilon = 1,
delta = 1e-6): a binary logistic regression (one release) and a 3-class one (one
multinomial release, the default for K >= 3 classes). Each
round times, for each file in turn (interleaved, one process), ``read`` + ``build_report``
+ ``render``, with the PLD cache of objpert.accounting cleared first so that every
round composes afresh. BLAS is pinned to one thread (threadpoolctl) while timed. The
rounds run twice: on the machine as it is, then with one busy process per core started
here (a competing CPU load). Prints median, min and max seconds, and checks that every
round's report has the same attacker's bounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np


def _busy(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _models(folder: Path) -> dict[str, str]:
    import objpert

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    kw = dict(epsilon=1.0, delta=1e-6, data_norm=1.0, max_iter=300)
    fits = {
        "binary": objpert.PrivateLogisticRegression(classes=[0, 1], **kw).fit(X, X[:, 0] > 0),
        "3 classes": objpert.PrivateLogisticRegression(classes=[0, 1, 2], **kw).fit(
            X, np.digitize(X[:, 0], [-0.3, 0.3])
        ),
    }
    paths = {}
    for name, model in fits.items():
        paths[name] = str(folder / f"{name.replace(' ', '_')}.json")
        objpert.save(model, paths[name])
    return paths


def _report(path: str, bounds: list[tuple[float, ...]]) -> Any:
    def go() -> None:
        from objpert.accounting import _pld as pld
        from objpert.apps._privacy_report import build_report, render
        from objpert.persistence import read

        cache = getattr(pld, "_single_pld", None)
        if cache is not None:
            cache.cache_clear()
        report = build_report(path, read(path))
        render(report, "html")
        bounds.append(report.tpr_bounds)

    return go


def _measure(paths: dict[str, str], rounds: int) -> dict[str, dict[str, float]]:
    from threadpoolctl import threadpool_limits

    from objpert.apps._bench.common import round_times

    bounds: dict[str, list[tuple[float, ...]]] = {name: [] for name in paths}
    fns = [_report(p, bounds[name]) for name, p in paths.items()]
    with threadpool_limits(limits=1):
        times = round_times(*fns, repeats=rounds, warmup=1, settle=0.05)
    for name, seen in bounds.items():
        assert len(set(seen)) == 1, (name, seen)  # same bounds every round
    return {
        name: {"median": statistics.median(ts), "min": min(ts), "max": max(ts)}
        for name, ts in zip(paths, times, strict=True)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="also write the numbers to this file")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    out: dict[str, Any] = {"command": " ".join(["python", *sys.argv]), "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        paths = _models(Path(tmp))
        out["as is"] = _measure(paths, args.rounds)
        stop = multiprocessing.Event()
        load = [
            multiprocessing.Process(target=_busy, args=(stop,), daemon=True)
            for _ in range(os.cpu_count() or 1)
        ]
        for p in load:
            p.start()
        try:
            out["under load"] = _measure(paths, args.rounds)
        finally:
            stop.set()
            for p in load:
                p.join()
    for cond in ("as is", "under load"):
        for name, t in out[cond].items():
            print(
                f"{cond:10s} {name:10s} median {t['median']:.3f} s "
                f"(min {t['min']:.3f}, max {t['max']:.3f})"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
