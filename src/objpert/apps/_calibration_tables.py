"""Tables comparing calibrations (for ``objpert tables`` and the README)."""

from __future__ import annotations

from typing import Any

from objpert.certify._plan import WatkinsAroraPlan

__all__ = ["CALIBRATION_COLUMNS", "CALIBRATION_TITLE", "calibration_markdown", "calibration_table"]

CALIBRATION_TITLE = (
    "Corollary 4.13 against tight calibration (logistic, d=100, zeta=1, delta=1e-6, W=1, "
    "delta_S=0.01)"
)
CALIBRATION_COLUMNS = (
    "n",
    "epsilon",
    "method",
    "sigma",
    "mu",
    "N",
    "Thm 4.10 bound",
    "Thm 4.7 bound",
    "delta certified",
)


def _cells(n: int, eps: float, plan: WatkinsAroraPlan | None, method: str) -> list[str]:
    if plan is None:
        return [f"{n:.0e}", f"{eps:g}", method, "n/a (needs epsilon <= 1)", "", "", "", "", ""]
    return [
        f"{n:.0e}",
        f"{eps:g}",
        method,
        f"{plan.sigma:.3e}",
        f"{plan.mu:.4g}",
        str(plan.iterations),
        f"{plan.theorem410_bound:.3e}",
        f"{plan.utility_bound:.5f}",
        f"{plan.certificate.delta:.3e}",
    ]


def _ratio(rows) -> list[str]:
    out = []
    for r in rows:
        if r.corollary is None:
            continue
        c, t = r.corollary, r.tight
        out.append(
            f"n={r.n:.0e}, epsilon={r.epsilon:g}: sigma {c.sigma / t.sigma:.2f}x smaller, "
            f"Thm 4.10 bound {c.theorem410_bound / t.theorem410_bound:.1f}x smaller, "
            f"Thm 4.7 bound ratio {c.utility_bound / t.utility_bound:.4f}"
        )
    return out


def calibration_table(rows, table_type: Any = None) -> Any:
    """The calibration comparison as a table of ``table_type`` (default ``rich.table.Table``;
    the command line passes its own, which prints as plain text without rich)."""
    if table_type is None:
        from rich.table import Table

        table_type = Table
    table = table_type(title=CALIBRATION_TITLE)
    for col in CALIBRATION_COLUMNS:
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(*_cells(r.n, r.epsilon, r.corollary, "corollary413"))
        table.add_row(*_cells(r.n, r.epsilon, r.tight, "tight"), end_section=True)
    table.caption = "\n".join(_ratio(rows))
    return table


def calibration_markdown(rows) -> str:
    lines = ["| " + " | ".join(CALIBRATION_COLUMNS) + " |", "|" + "---|" * len(CALIBRATION_COLUMNS)]
    for r in rows:
        for plan, method in ((r.corollary, "corollary413"), (r.tight, "tight")):
            lines.append("| " + " | ".join(_cells(r.n, r.epsilon, plan, method)) + " |")
    lines.append("")
    lines.extend(f"- {line}" for line in _ratio(rows))
    return "\n".join(lines)
