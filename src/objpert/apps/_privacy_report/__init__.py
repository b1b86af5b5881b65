"""A privacy report of one model file, for a privacy officer (``objpert report``).

A ledger file (an accountant's, :mod:`objpert.persistence._ledger_file`) gets its own
report: each step, its spend, the composed total against the budget
(:func:`build_ledger_report`).

What was released (the model's shape, the mechanism, its public constants, the declared
bounds and label set), the certificate and what it does not cover, the signature status,
the full privacy profile delta(epsilon) and the same guarantee read as the highest
true-positive rate of any membership test (:mod:`objpert.certify._tradeoff`). Rendered as
one self-contained HTML page or as Markdown (docs/report.md).

:func:`build_report` computes the report's values from a checked model file;
:func:`render` turns them into text.
"""

from __future__ import annotations

from objpert.apps._privacy_report.content import PrivacyReport, ReleaseConstants, build_report
from objpert.apps._privacy_report.ledger import LedgerReport, build_ledger_report
from objpert.apps._privacy_report.render import FORMATS, to_html, to_markdown
from objpert.exceptions import ParameterError

__all__ = [
    "FORMATS",
    "LedgerReport",
    "PrivacyReport",
    "ReleaseConstants",
    "build_ledger_report",
    "build_report",
    "render",
    "to_html",
    "to_markdown",
]


def render(report: PrivacyReport | LedgerReport, fmt: str = "html") -> str:
    """The report as text in ``fmt`` ("html" or "md")."""
    if not isinstance(report, PrivacyReport | LedgerReport):
        raise ParameterError(f"render needs a PrivacyReport; got {type(report).__name__}")
    if fmt == "html":
        return to_html(report)
    if fmt == "md":
        return to_markdown(report)
    raise ParameterError(f"format must be one of {FORMATS}; got {fmt!r}")
