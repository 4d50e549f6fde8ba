"""Inline SVG charts for the HTML report: deterministic text, no fonts or requests.

One chart shape serves every plot: rows of a point estimate with an interval
(and optionally a wider second interval), labelled on the left, on one shared
x axis with a reference line (zero for effects). Groups of rows get a header
row. Numbers are written with fixed decimals, so the same input always gives
the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

COLORS: Final = {
    "win": "#1a7f37",
    "regression": "#cf222e",
    "neutral": "#57606a",
    "muted": "#afb8c1",
    "arm": "#0969da",
}
WIDTH: Final = 960
LABEL_W: Final = 230
RIGHT_W: Final = 230
ROW_H: Final = 18
HEADER_H: Final = 22
AXIS_H: Final = 34
Scale = Callable[[float], float]  # a value to its x on the plot


@dataclass(frozen=True)
class Row:
    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    outer_low: float | None = None  # a second, wider interval (the decision interval)
    outer_high: float | None = None
    tone: str = "neutral"  # a COLORS key
    note: str = ""  # text right of the plot (the decision, n)
    group: str = ""  # rows of one group share a header


def _f(x: float) -> str:
    return f"{x:.1f}"


def nice_ticks(lo: float, hi: float, count: int = 6) -> list[float]:
    """Round tick values covering [lo, hi]."""
    if not math.isfinite(lo) or not math.isfinite(hi) or hi <= lo:
        return [lo] if math.isfinite(lo) else [0.0]
    raw = (hi - lo) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def _tick_text(value: float, ticks: Sequence[float]) -> str:
    span = max(abs(t) for t in ticks) if ticks else 1.0
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else span
    places = 0 if step >= 1 else min(6, max(0, -math.floor(math.log10(step)) + 1))
    if value == 0:
        return "0"
    if span >= 10_000 and step >= 1000:
        return f"{value / 1000:,.0f}k"
    return f"{value:,.{places}f}"


def _extent(rows: Sequence[Row], reference: float | None) -> tuple[float, float]:
    """The axis covers the reference, the estimates and the inner intervals; a wider
    outer interval is clipped at the edge (drawn with an open end)."""
    values = [reference] if reference is not None else []
    for r in rows:
        values += [v for v in (r.value, r.low, r.high) if v is not None]
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (-1.0, 1.0)
    lo, hi = min(finite), max(finite)
    if hi == lo:
        pad = abs(hi) * 0.1 or 1.0
        return (lo - pad, hi + pad)
    pad = (hi - lo) * 0.04
    return (lo - pad, hi + pad)


def _outer_marks(row: Row, mid: float, x: Scale, lo: float, hi: float, color: str) -> list[str]:
    """The decision interval's thin line, with an arrow where an end runs off the axis."""
    a = x(row.outer_low if row.outer_low is not None else lo)
    b = x(row.outer_high if row.outer_high is not None else hi)
    out = [
        f'<line x1="{_f(a)}" x2="{_f(b)}" y1="{_f(mid)}" y2="{_f(mid)}" '
        f'stroke="{color}" stroke-width="1.2" stroke-opacity="0.6"/>'
    ]
    for edge, beyond in ((lo, row.outer_low), (hi, row.outer_high)):
        if beyond is None or (beyond < lo if edge == lo else beyond > hi):
            ex = x(edge)
            tip = ex - 5 if edge == lo else ex + 5
            out.append(
                f'<path d="M{_f(ex)} {_f(mid - 3)}L{_f(tip)} {_f(mid)}L{_f(ex)} '
                f'{_f(mid + 3)}" fill="{color}" fill-opacity="0.6"/>'
            )
    return out


def _row_marks(row: Row, mid: float, x: Scale, lo: float, hi: float, plot_w: int) -> list[str]:
    """One row: its label, decision interval, percentile interval, dot and note."""
    out = [
        f'<text x="{LABEL_W - 8}" y="{_f(mid + 4)}" text-anchor="end">{escape(row.label)}</text>'
    ]
    color = COLORS.get(row.tone, COLORS["neutral"])
    if row.outer_low is not None or row.outer_high is not None:
        out += _outer_marks(row, mid, x, lo, hi, color)
    if row.low is not None and row.high is not None:
        out.append(
            f'<line x1="{_f(x(row.low))}" x2="{_f(x(row.high))}" y1="{_f(mid)}" '
            f'y2="{_f(mid)}" stroke="{color}" stroke-width="4"/>'
        )
    if row.value is not None:
        out.append(f'<circle cx="{_f(x(row.value))}" cy="{_f(mid)}" r="4" fill="{color}"/>')
    if row.note:
        out.append(
            f'<text x="{LABEL_W + plot_w + 10}" y="{_f(mid + 4)}" class="note" '
            f'fill="{color}">{escape(row.note)}</text>'
        )
    return out


def _grid(
    ticks: Sequence[float], x: Scale, bottom: float, reference: float | None, lo: float, hi: float
) -> list[str]:
    """The tick lines and labels, and the reference line when it is on the axis."""
    top = 4
    grid = []
    for t in ticks:
        gx = _f(x(t))
        grid.append(
            f'<line x1="{gx}" x2="{gx}" y1="{top}" y2="{bottom}" class="grid"/>'
            f'<text x="{gx}" y="{bottom + 14}" text-anchor="middle" class="tick">'
            f"{escape(_tick_text(t, ticks))}</text>"
        )
    if reference is not None and lo <= reference <= hi:
        rx = _f(x(reference))
        grid.append(f'<line x1="{rx}" x2="{rx}" y1="{top}" y2="{bottom}" class="ref"/>')
    return grid


def interval_chart(
    rows: Sequence[Row],
    *,
    axis_label: str,
    reference: float | None = 0.0,
    domain: tuple[float, float] | None = None,
    title: str = "",
) -> str:
    """An SVG of ``rows`` (estimate dots with intervals) on one x axis."""
    lo, hi = domain if domain is not None else _extent(rows, reference)
    ticks = [t for t in nice_ticks(lo, hi) if lo <= t <= hi]
    plot_w = WIDTH - LABEL_W - RIGHT_W

    def x(value: float) -> float:
        clamped = min(max(value, lo), hi)
        return LABEL_W + (clamped - lo) / (hi - lo) * (plot_w - 10) + 5

    body: list[str] = []
    y = 4
    group = None
    for row in rows:
        if row.group and row.group != group:
            group = row.group
            body.append(f'<text x="4" y="{y + 15}" class="g">{escape(row.group)}</text>')
            y += HEADER_H
        body += _row_marks(row, y + ROW_H / 2, x, lo, hi, plot_w)
        y += ROW_H
    bottom = y
    grid = _grid(ticks, x, bottom, reference, lo, hi)
    height = bottom + AXIS_H
    label = (
        f'<text x="{_f(LABEL_W + plot_w / 2)}" y="{height - 4}" text-anchor="middle" '
        f'class="axis">{escape(axis_label)}</text>'
    )
    heading = f"<title>{escape(title)}</title>" if title else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" role="img" class="chart">{heading}'
        + "".join(grid)
        + "".join(body)
        + label
        + "</svg>"
    )


__all__ = ["COLORS", "Row", "interval_chart", "nice_ticks"]
