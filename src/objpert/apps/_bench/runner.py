"""The benchmark runner behind ``objpert bench``: run a selection, tabulate, write JSON
and markdown (the command itself is :mod:`objpert.cli._bench`).

Every benchmark gets the same core count ``threads`` (default: the cores this process may
run on). The engines run ``threads`` worker threads with single-threaded BLAS inside each;
every baseline runs under a BLAS/OpenMP limit of ``threads``, set with threadpoolctl for the
whole run (and again inside each benchmark), and diffprivlib's subprocess gets the same
count through ``OPENBLAS/OMP/MKL_NUM_THREADS``: the ratios compare algorithms on equal
cores, not thread counts. A missed threshold is reported, never an error; a benchmark
that raises becomes a row saying why, and the others still run.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import platform
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from objpert._files import write_atomically
from objpert.apps._bench.common import BenchResult
from objpert.exceptions import ParameterError

__all__ = [
    "BENCHMARKS",
    "HEADER",
    "cells",
    "markdown",
    "metadata",
    "parse_selection",
    "resolve_threads",
    "run_benchmarks",
    "table",
    "write_results",
]

# name -> (module, function); each function returns list[BenchResult] and may accept
# ``quick`` (small sizes) and ``threads`` (the core count) keyword arguments
BENCHMARKS: dict[str, tuple[str, str]] = {
    "dense": ("objpert.apps._bench.engine", "bench_dense"),
    "sparse": ("objpert.apps._bench.engine", "bench_sparse"),
    "batched": ("objpert.apps._bench.engine", "bench_batched"),
    "dask": ("objpert.apps._bench.dask_engine", "bench_dask"),
    "fit": ("objpert.apps._bench.fit", "bench_fit"),
    "mechanisms": ("objpert.apps._bench.mechanisms", "bench_mechanisms"),
    "threads": ("objpert.apps._bench.threads", "bench_threads"),
}


def parse_selection(text: str | None) -> tuple[str, ...]:
    """``"dense,fit"`` -> ("dense", "fit"); None or "all" -> every benchmark."""
    if text is None or text.strip() == "all":
        return tuple(BENCHMARKS)
    names = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown or not names:
        raise ParameterError(
            f"--only takes a comma-separated subset of {','.join(BENCHMARKS)}; got {text!r}"
        )
    return names


def _unmeasured(name: str, why: str) -> BenchResult:
    return BenchResult(name, math.nan, "", math.nan, math.nan, note=why)


def _load(name: str) -> Callable[..., list[BenchResult]] | str:
    """The benchmark function, or why it is unavailable (a module or dependency missing)."""
    module, func = BENCHMARKS[name]
    try:
        return getattr(importlib.import_module(module), func)
    except ModuleNotFoundError as err:
        return f"{err.name} is not installed" if err.name != module else f"{module} is missing"
    except AttributeError:
        return f"{module} has no {func}"


def run_benchmarks(
    selection: str | Iterable[str] = tuple(BENCHMARKS),
    quick: bool = False,
    threads: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[BenchResult]:
    """Run the selected benchmarks (names, or "dense,fit") on ``threads`` cores (None: all
    this process may use), BLAS pinned to that count; rows in order."""
    from threadpoolctl import threadpool_limits

    names = parse_selection(selection if isinstance(selection, str) else ",".join(selection))
    threads = resolve_threads(threads)
    results: list[BenchResult] = []
    with threadpool_limits(limits=threads):
        for name in names:
            fn = _load(name)
            if isinstance(fn, str):
                results.append(_unmeasured(name, f"skipped: {fn}"))
                continue
            if progress:
                progress(name)
            accepted = inspect.signature(fn).parameters
            options = {"quick": quick, "threads": threads}
            try:
                results += fn(**{k: v for k, v in options.items() if k in accepted})
            except Exception as err:  # one broken benchmark must not lose the others' rows
                why = " ".join(f"{type(err).__name__}: {err}".split())
                results.append(_unmeasured(name, f"error: {why}"))
    return results


def resolve_threads(threads: int | None) -> int:
    """None -> the cores this process may run on; otherwise a positive integer."""
    from objpert._engines.blocked import available_cores

    if threads is None:
        return available_cores()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ParameterError(f"--threads must be a positive integer; got {threads!r}")
    return threads


def _num(value: float, digits: str = ".4g") -> str:
    return "" if math.isnan(value) else format(value, digits)


def cells(r: BenchResult) -> list[str]:
    """One row of the table: name, seconds, baseline, baseline s, ratio, the threshold
    (column ``threshold``), result, note."""
    threshold = "" if r.bar is None else f"{'<=' if r.bar_kind == 'max' else '>='} {r.bar:g}"
    verdict = {True: "pass", False: "FAIL", None: "-"}[r.passed]
    if r.note.startswith("skipped"):
        verdict = "skipped"
    elif r.note.startswith("error"):
        verdict = "ERROR"
    return [
        r.name,
        _num(r.seconds),
        r.baseline,
        _num(r.baseline_seconds),
        _num(r.ratio, ".3g"),
        threshold,
        verdict,
        r.note,
    ]


HEADER = ("benchmark", "seconds", "baseline", "baseline s", "ratio", "threshold", "result", "note")


def markdown(results: Sequence[BenchResult]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in cells(r)) + " |" for r in results]
    return "\n".join(lines)


def table(results: Sequence[BenchResult], title: str, table_type: Any = None) -> Any:
    """The results as a table of ``table_type`` (default ``rich.table.Table``; the command
    line passes its own, which prints as plain text without rich)."""
    if table_type is None:
        from rich.table import Table

        table_type = Table
    t = table_type(title=title, show_header=True, header_style="bold")
    for h in HEADER:
        numeric = h in ("seconds", "baseline s", "ratio")
        t.add_column(h, justify="right" if numeric else "left", overflow="fold")
    for r in results:
        row = cells(r)
        style = {"FAIL": "bold red", "ERROR": "bold red", "pass": "green"}.get(row[6], "")
        row[6] = f"[{style}]{row[6]}[/]" if style else row[6]
        t.add_row(*row)
    return t


def metadata(quick: bool, threads: int) -> dict[str, Any]:
    """What the figures depend on: sizes, threads, machine and versions."""
    import numpy
    import scipy
    import sklearn

    return {
        "quick": quick,
        "threads": threads,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__,
    }


def _finite_or_none(row: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN: skipped figures become null."""
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}


def write_results(
    results: Sequence[BenchResult],
    meta: dict[str, Any],
    json_path: str | Path | None = None,
    markdown_path: str | Path | None = None,
) -> None:
    if json_path:
        payload = {"meta": meta, "results": [_finite_or_none(r.to_dict()) for r in results]}
        write_atomically(json_path, json.dumps(payload, indent=2, allow_nan=False) + "\n")
    if markdown_path:
        write_atomically(markdown_path, markdown(results) + "\n")
