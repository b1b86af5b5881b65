"""Reproduce Figures 1 and 2 of Cortild & Cartis (2026), quadratic objective perturbation.

Figure 1 (:mod:`objpert.apps._reproduce_qop_bound`): the expected excess-risk bound of QOP
against delta, exact and inexact solve, minimised as the authors' companion code does.
Figure 2 (:mod:`objpert.apps._reproduce_qop_risk`): empirical risk against the box radius
kappa for LOP, LOP-Clip and QOP on an interpolating linear regression, beside the trivial
baseline of releasing the public reference point theta_ref.

:func:`run` writes both figures, their tables and a summary (``objpert reproduce qop``);
the figures' functions and settings are imported from here.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from objpert._files import write_atomically
from objpert.apps._reproduce_qop_bound import (
    FIGURE1,
    BoundRow,
    Figure1Result,
    figure1,
    figure1_deltas,
    optimal_bound,
)
from objpert.apps._reproduce_qop_risk import (
    FIGURE2,
    METHODS,
    Figure2Result,
    Figure2Row,
    figure2,
    lop_gradient_bound,
)

__all__ = [
    "FIGURE1",
    "FIGURE2",
    "METHODS",
    "BoundRow",
    "Figure1Result",
    "Figure2Result",
    "Figure2Row",
    "figure1",
    "figure1_deltas",
    "figure2",
    "lop_gradient_bound",
    "optimal_bound",
    "run",
]


#: The files :func:`run` writes into its folder.
QOP_FILES = (
    "qop_figure1.png", "qop_figure1.csv", "qop_figure2.png", "qop_figure2.csv",
    "qop_summary.json",
)  # fmt: skip


def _write_csv(path: Path, rows: list[dict]) -> None:
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    write_atomically(path, text.getvalue())  # whole or not at all


def run(
    out_dir: str | Path,
    *,
    runs: int = 10,
    kappas: Sequence[float] | None = None,
    deltas: Sequence[float] | None = None,
    reading: str = "authors",
) -> dict[str, Any]:
    """Both figures into ``out_dir`` (created): ``qop_figure1.png`` / ``.csv``,
    ``qop_figure2.png`` / ``.csv`` and ``qop_summary.json``. Returns the paths, Figure 2's
    spreads and both tables (the entry point of ``objpert reproduce qop``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    f1 = figure1(out / "qop_figure1.png", deltas=deltas, reading=reading)
    f2 = figure2(out / "qop_figure2.png", runs=runs, kappas=kappas, reading=reading)
    t1 = [
        {k: (json.dumps(v) if isinstance(v, list) else v) for k, v in r.to_dict().items()}
        for r in f1.rows
    ]
    _write_csv(out / "qop_figure1.csv", t1)
    _write_csv(out / "qop_figure2.csv", [asdict(r) for r in f2.rows])
    summary = {
        "figure1": {
            "png": str(out / "qop_figure1.png"),
            "table": str(out / "qop_figure1.csv"),
            "rows": [r.to_dict() for r in f1.rows],
        },
        "figure2": {
            "png": str(out / "qop_figure2.png"),
            "table": str(out / "qop_figure2.csv"),
            "spread": f2.spread,
            "max_std": f2.max_std,
            "risk_range": {k: list(v) for k, v in f2.risk_range.items()},
            "config": f2.config,
            "rows": [asdict(r) for r in f2.rows],
            "reference": f2.reference,
        },
    }
    path = out / "qop_summary.json"
    write_atomically(path, json.dumps(summary, indent=2))
    summary["summary"] = str(path)
    return summary
