"""Server-side SVG charts (no script): quadrant counts per day as stacked bars."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from capdaemon.dashboard.html import esc

COLOURS = {"A": "#2f855a", "B": "#2b6cb0", "C": "#b7791f", "D": "#c53030"}


def quadrant_bars(days: Sequence[tuple[date, dict[str, int]]], *, height: int = 180) -> str:
    """A stacked bar per day (A at the bottom, D on top), a legend and a hover title per bar."""
    bar, gap, left, bottom = 22, 6, 34, 22
    width = left + len(days) * (bar + gap) + 10
    peak = max((sum(c.values()) for _, c in days), default=0) or 1
    scale = (height - bottom - 10) / peak
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="quadrant-chart" role="img" '
        f'width="{width}" height="{height + 24}" viewBox="0 0 {width} {height + 24}" '
        f'font-family="system-ui,sans-serif" font-size="10">'
        f"<title>Classifications per day by quadrant (last {len(days)} days, UTC)</title>",
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 6}" y2="{height - bottom}" '
        f'stroke="#99a"/>',
        f'<text x="{left - 4}" y="14" text-anchor="end">{peak}</text>',
        f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
    ]
    for i, (day, counts) in enumerate(days):
        x = left + i * (bar + gap)
        y: float = height - bottom
        total = sum(counts.values())
        tip = f"{day.isoformat()}: " + ", ".join(f"{q} {counts.get(q, 0)}" for q in COLOURS)
        parts.append(
            f'<g data-day="{day.isoformat()}" data-total="{total}"><title>{esc(tip)}</title>'
        )
        for q, colour in COLOURS.items():
            n = counts.get(q, 0)
            if not n:
                continue
            h = n * scale
            y -= h
            parts.append(
                f'<rect x="{x}" y="{y:.1f}" width="{bar}" height="{h:.1f}" fill="{colour}" '
                f'data-q="{q}" data-n="{n}"/>'
            )
        parts.append("</g>")
        if i % 5 == 0 or i == len(days) - 1:
            parts.append(
                f'<text x="{x + bar / 2}" y="{height - 6}" text-anchor="middle">'
                f"{day.strftime('%m-%d')}</text>"
            )
    lx = left
    for q, colour in COLOURS.items():
        parts.append(
            f'<rect x="{lx}" y="{height + 8}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{lx + 14}" y="{height + 17}">{q}</text>'
        )
        lx += 40
    parts.append("</svg>")
    return "".join(parts)


def bars(
    points: Sequence[tuple[str, float]],
    *,
    id_: str,
    title: str,
    unit: str = "",
    height: int = 160,
    colour: str = "#2b6cb0",
) -> str:
    """One bar per (label, value), a hover title per bar; labels under every few bars."""
    step = max(2, min(24, 840 // max(1, len(points))))  # a year of days fits in 840 px
    gap, left, bottom = (2 if step > 6 else 1), 40, 22
    bar = step - gap
    width = left + len(points) * (bar + gap) + 10
    peak = max((v for _, v in points), default=0) or 1
    scale = (height - bottom - 10) / peak
    every = max(1, -(-34 // (bar + gap)))  # labels at least 34 px apart
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{esc(id_)}" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-family="system-ui,sans-serif" '
        f'font-size="10"><title>{esc(title)}</title>',
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 6}" y2="{height - bottom}" '
        'stroke="#99a"/>',
        f'<text x="{left - 4}" y="14" text-anchor="end">{esc(f"{peak:g}")}</text>',
        f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
    ]
    for i, (label, value) in enumerate(points):
        x = left + i * (bar + gap)
        h = value * scale
        parts.append(
            f'<rect x="{x}" y="{height - bottom - h:.1f}" width="{bar}" height="{h:.1f}" '
            f'fill="{colour}" data-label="{esc(label)}" data-n="{esc(f"{value:g}")}">'
            f"<title>{esc(label)}: {esc(f'{value:g}')}{esc(unit)}</title></rect>"
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + bar / 2}" y="{height - 6}" text-anchor="middle">'
                f"{esc(label[-5:])}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)
