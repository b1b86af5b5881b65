"""Line plots as inline SVG text (no external assets, no plotting library)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Series", "line_plot"]

_COLOURS = ("#1f5fa8", "#c0392b", "#2e8b57", "#7d3c98")


@dataclass(frozen=True)
class Series:
    """One curve: points (x, y), a legend label, and whether to draw it dashed."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    label: str
    dashed: bool = False


def _nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    span = hi - lo
    if not span > 0:
        return [lo]
    raw = span / count
    step = 10.0 ** math.floor(math.log10(raw))
    for mult in (1.0, 2.0, 2.5, 5.0, 10.0):
        if span / (step * mult) <= count:
            step *= mult
            break
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _label(value: float, log: bool) -> str:
    if log:
        exponent = round(value)
        return "1" if exponent == 0 else f"1e{exponent}"
    return f"{value:g}"


def line_plot(
    series: Sequence[Series],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    xlim: tuple[float, float],
    ylim: tuple[float, float],
    logy: bool = False,
    marks: Sequence[tuple[float, float, str]] = (),
    width: int = 720,
    height: int = 380,
) -> str:
    """An SVG element drawing ``series`` in the box ``xlim`` x ``ylim`` (log10 axis for y
    when ``logy``; values outside the box are clipped to it); ``marks`` are labelled points
    (x, y, text)."""
    left, right, top, bottom = 78, 20, 34, 52
    pw, ph = width - left - right, height - top - bottom

    def ty(v: np.ndarray) -> np.ndarray:
        return np.log10(np.maximum(v, 1e-300)) if logy else v

    y0, y1 = (float(ty(np.asarray(b))) for b in ylim)
    x0, x1 = xlim

    def px(x: np.ndarray) -> np.ndarray:
        return left + (np.clip(x, x0, x1) - x0) / (x1 - x0) * pw

    def py(y: np.ndarray) -> np.ndarray:
        return top + (1.0 - (np.clip(ty(y), y0, y1) - y0) / (y1 - y0)) * ph

    out = [
        f'<svg role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-label="{html.escape(title)}">',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="15" '
        f'font-weight="bold">{html.escape(title)}</text>',
    ]
    if logy:
        step = max(1, math.ceil((y1 - y0) / 8))
        yticks = [float(k) for k in range(math.ceil(y0), math.floor(y1) + 1) if k % step == 0]
    else:
        yticks = _nice_ticks(y0, y1)
    for t in yticks:
        yy = top + (1.0 - (t - y0) / (y1 - y0)) * ph
        out.append(
            f'<line x1="{left}" y1="{yy:.1f}" x2="{left + pw}" y2="{yy:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="12">'
            f"{_label(t, logy)}</text>"
        )
    for t in _nice_ticks(x0, x1):
        xx = left + (t - x0) / (x1 - x0) * pw
        out.append(
            f'<line x1="{xx:.1f}" y1="{top}" x2="{xx:.1f}" y2="{top + ph}" stroke="#e3e3e3"/>'
            f'<text x="{xx:.1f}" y="{top + ph + 18}" text-anchor="middle" font-size="12">'
            f"{t:g}</text>"
        )
    out.append(
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>'
        f'<text x="{left + pw / 2:.0f}" y="{height - 12}" text-anchor="middle" '
        f'font-size="13">{html.escape(xlabel)}</text>'
        f'<text x="16" y="{top + ph / 2:.0f}" text-anchor="middle" font-size="13" '
        f'transform="rotate(-90 16 {top + ph / 2:.0f})">{html.escape(ylabel)}</text>'
    )
    for i, s in enumerate(series):
        colour = _COLOURS[i % len(_COLOURS)]
        xs, ys = px(np.asarray(s.x, float)), py(np.asarray(s.y, float))
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(xs, ys, strict=True))
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(
            f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        ly = top + 16 + 18 * i
        out.append(
            f'<line x1="{left + pw - 250}" y1="{ly - 4}" x2="{left + pw - 222}" y2="{ly - 4}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
            f'<text x="{left + pw - 216}" y="{ly}" font-size="12">{html.escape(s.label)}</text>'
        )
    for x, y, text in marks:
        cx, cy = float(px(np.asarray(x, float))), float(py(np.asarray(y, float)))
        out.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="#c0392b"/>'
            f'<text x="{cx + 8:.1f}" y="{cy - 8:.1f}" font-size="12">{html.escape(text)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
