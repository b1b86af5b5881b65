"""A privacy report as one self-contained HTML page (inline CSS and SVG, no external
asset) or as Markdown (the figures' numbers in tables)."""

from __future__ import annotations

import html
from typing import Any

from objpert.apps._privacy_report.content import PrivacyReport
from objpert.apps._privacy_report.sections import Block, Section, sections

__all__ = ["FORMATS", "to_html", "to_markdown"]

FORMATS = ("html", "md")

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
  background: #f4f5f7; color: #1d1d1f; }
main { max-width: 1000px; margin: 0 auto; padding: 24px 32px 48px; background: #ffffff; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 19px; margin-top: 32px; border-bottom: 2px solid #1f5fa8; padding-bottom: 4px; }
.sub { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 10px 0; font-size: 14px; }
th, td { border: 1px solid #ccc; padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #eef2f8; }
td { font-variant-numeric: tabular-nums; }
.notice { padding: 12px 16px; margin: 10px 0; border-radius: 4px; font-size: 15px; }
.ok { background: #e8f5ec; border-left: 6px solid #2e8b57; }
.alert { background: #fdecea; border-left: 6px solid #c0392b; font-weight: bold; }
figure { margin: 12px 0; }
li { margin: 4px 0; }
"""


def _html_block(b: Block) -> str:
    e = html.escape
    if b.kind in ("ok", "alert"):
        return f'<div class="notice {b.kind}">{e(b.text)}</div>'
    if b.kind == "p":
        return f"<p>{e(b.text)}</p>"
    if b.kind == "list":
        return "<ul>" + "".join(f"<li>{e(i)}</li>" for i in b.items) + "</ul>"
    if b.kind == "figure":
        return f"<figure>{b.svg}</figure>"
    head = "".join(f"<th>{e(h)}</th>" for h in b.header)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in b.rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _title(report: PrivacyReport) -> str:
    return report.title or f"Privacy report: {report.model_path}"


def _subtitle(report: PrivacyReport) -> str:
    dated = f"; report of {report.date}" if report.date else ""
    return f"{report.estimator}, released by {report.mechanism} ({report.model_path}{dated})"


def _page(report: Any) -> tuple[str, str, list[Block], list[Section]]:
    """(title, subtitle, headline notices, sections) of a model's or a ledger's report."""
    from objpert.apps._privacy_report.ledger import LedgerReport, ledger_page

    if isinstance(report, LedgerReport):
        return ledger_page(report)
    head, secs = sections(report)
    return _title(report), _subtitle(report), head, secs


def to_html(report: Any) -> str:
    """The report as one HTML page that references nothing outside itself."""
    title, subtitle, head, secs = _page(report)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">{html.escape(subtitle)}</p>',
        *(_html_block(b) for b in head),
    ]
    for s in secs:
        parts.append(f"<section><h2>{html.escape(s.title)}</h2>")
        parts.extend(_html_block(b) for b in s.blocks)
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _md_text(text: str) -> str:
    """Text as Markdown shows it, never as HTML: every "<" (which alone opens a tag or a
    comment) written as an entity, since column names, categories and titles come from the
    user's files."""
    return text.replace("<", "&lt;")


def _md_cell(text: str) -> str:
    return _md_text(text).replace("|", "\\|").replace("\n", " ")


def _md_block(b: Block) -> str:
    if b.kind == "ok":
        return f"> {_md_text(b.text)}"
    if b.kind == "alert":
        return f"> **{_md_text(b.text)}**"
    if b.kind == "p":
        return _md_text(b.text)
    if b.kind == "list":
        return "\n".join(f"- {_md_text(i)}" for i in b.items)
    if b.kind == "figure":
        return ""  # Markdown carries the figures' numbers in the tables next to them
    lines = [
        "| " + " | ".join(_md_cell(h) for h in b.header) + " |",
        "|" + "---|" * len(b.header),
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b.rows]
    return "\n".join(lines)


def _md_section(s: Section) -> str:
    blocks = [t for t in (_md_block(b) for b in s.blocks) if t]
    return f"## {_md_text(s.title)}\n\n" + "\n\n".join(blocks)


def to_markdown(report: Any) -> str:
    """The report as Markdown: the same content, figures replaced by their tables."""
    title, subtitle, head, secs = _page(report)
    parts = [f"# {_md_text(title)}", _md_text(subtitle)]
    parts += [_md_block(b) for b in head]
    parts += [_md_section(s) for s in secs]
    return "\n\n".join(parts) + "\n"
