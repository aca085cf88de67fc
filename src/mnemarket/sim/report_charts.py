"""Inline SVG line charts for report.html: step series sampled on a tick grid, axes, legend.

Everything is generated here as text (no JS, no fonts or images), so the page stays
self-contained. Every label that reaches the markup is escaped: agent ids are chosen by agents.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import numpy as np

MAX_POINTS = 300
"""Charts are sampled on at most this many ticks, however long the run."""

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#7f7f7f", "#bcbd22", "#393b79", "#ad494a")
DASHES = ("", "6 3", "2 3", "8 3 2 3")

Series = tuple[np.ndarray, np.ndarray]
"""(x, y) arrays of equal length."""


def colours(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A stable (colour, dash pattern) per name; dashes tell names apart once the palette repeats."""
    return {name: (PALETTE[i % len(PALETTE)], DASHES[(i // len(PALETTE)) % len(DASHES)])
            for i, name in enumerate(names)}


def tick_grid(max_tick: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """At most `max_points` integer ticks from 0 to `max_tick`, both ends included."""
    max_tick = max(int(max_tick), 0)
    return np.unique(np.linspace(0, max_tick, min(max_points, max_tick + 1)).round().astype(np.int64))


def sample_steps(change_ticks: np.ndarray, values: np.ndarray, grid: np.ndarray, before: float = 0) -> np.ndarray:
    """The value of a step function at each grid tick: the last value set at or before it.

    Args:
        change_ticks: non-decreasing ticks at which the value changed.
        values: the value after each change (same length).
        grid: ticks to sample at.
        before: the value before the first change.
    """
    index = np.searchsorted(change_ticks, grid, side="right") - 1
    padded = np.concatenate([[before], np.asarray(values, dtype=float)])
    return padded[index + 1]


def cumulative_counts(created: Sequence[float], grid: np.ndarray) -> np.ndarray:
    """How many items were created at or before each grid tick."""
    return np.searchsorted(np.sort(np.asarray(created, dtype=float)), grid, side="right").astype(float)


def _nice_step(span: float, target: int = 5) -> float:
    raw = max(span, 1e-9) / target
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _ticks(low: float, high: float, integer: bool, cover: bool = False) -> list[float]:
    """Round-numbered ticks within [low, high]; with `cover`, from below `low` to above `high`."""
    step = _nice_step(high - low)
    if integer:
        step = max(1.0, round(step))
    start = (math.floor if cover else math.ceil)(low / step) * step
    end = math.ceil(high / step - 1e-9) * step if cover else high
    return [start + i * step for i in range(int((end - start) / step + 1e-9) + 1)]


def _label(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")


def line_chart(series: Mapping[str, Series], *, title: str, y_label: str, x_label: str = "tick",
               palette: Mapping[str, tuple[str, str]] | None = None, step: bool = True,
               marks: Mapping[float, str] | None = None, width: int = 960, height: int = 300) -> str:
    """A `<figure>` with one SVG line per series and an HTML legend.

    Args:
        series: name -> (x, y); x ascending.
        title: the caption (also the SVG's accessible name).
        y_label: what the y axis counts.
        x_label: what the x axis counts.
        palette: name -> (colour, dash), e.g. from `colours`, so a name keeps its colour across charts.
        step: draw step lines (values hold until the next change), as balances and counts do.
        marks: x -> label of a dashed vertical line (e.g. where each session starts).
        width: SVG width in user units (the SVG scales to the page).
        height: SVG height in user units.
    """
    palette = palette or colours(list(series))
    caption = f"<figcaption>{html.escape(title)}</figcaption>"
    data = {name: (np.asarray(x, float), np.asarray(y, float)) for name, (x, y) in series.items() if len(x)}
    if not data:
        return f'<figure class="chart">{caption}<p class="muted">no data</p></figure>'
    left, right, top, bottom = 64, 16, 12, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    x_min = min(float(x.min()) for x, _ in data.values())
    x_max = max(float(x.max()) for x, _ in data.values())
    y_min = min(0.0, min(float(y.min()) for _, y in data.values()))
    y_max = max(float(y.max()) for _, y in data.values())
    if x_max <= x_min:
        x_max = x_min + 1
    y_ticks = _ticks(y_min, y_max if y_max > y_min else y_min + 1, integer=True, cover=True)
    y_min, y_max = y_ticks[0], y_ticks[-1]

    def sx(x: np.ndarray) -> np.ndarray:
        return left + (x - x_min) / (x_max - x_min) * plot_w

    def sy(y: np.ndarray) -> np.ndarray:
        return top + plot_h - (y - y_min) / (y_max - y_min) * plot_h

    parts = [f'<svg class="plot" viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">'
             f'<title>{html.escape(title)}</title>',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" class="area"/>']
    for value in y_ticks:
        y = float(sy(np.array(value)))
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{_label(value)}</text>')
    for value in _ticks(x_min, x_max, integer=True):
        x = float(sx(np.array(value)))
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" class="grid"/>'
                     f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">{_label(value)}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle" class="axis">'
                 f'{html.escape(x_label)}</text>'
                 f'<text transform="translate(14 {top + plot_h / 2}) rotate(-90)" text-anchor="middle" '
                 f'class="axis">{html.escape(y_label)}</text>')
    for at, label in sorted((marks or {}).items()):
        if x_min <= at <= x_max:
            x = float(sx(np.array(at)))
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" class="mark" '
                         f'stroke="#888" stroke-dasharray="2 3"/><text x="{x + 3:.1f}" y="{top + 10}" '
                         f'class="mark">{html.escape(label)}</text>')
    for name, (xs, ys) in data.items():
        px, py = sx(xs), sy(ys)
        if step and len(px) > 1:  # hold each value until the next sample, then jump
            px = np.repeat(px, 2)[1:]
            py = np.repeat(py, 2)[:-1]
        colour, dash = palette.get(name, (PALETTE[0], ""))
        points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"{dash_attr}>'
                     f'<title>{html.escape(name)}: {_label(float(ys[-1]))} at {x_label} {_label(float(xs[-1]))}'
                     f'</title></polyline>')
    parts.append("</svg>")
    legend = "".join(
        f'<span class="key"><svg width="22" height="10" aria-hidden="true"><line x1="0" x2="22" y1="5" y2="5" '
        f'stroke="{palette.get(name, (PALETTE[0], ""))[0]}" stroke-width="3"'
        + (f' stroke-dasharray="{palette[name][1]}"' if name in palette and palette[name][1] else "")
        + f'/></svg>{html.escape(name)} <b>{_label(float(data[name][1][-1]))}</b></span>'
        for name in data)
    return f'<figure class="chart">{caption}{"".join(parts)}<div class="legend">{legend}</div></figure>'


__all__ = ["MAX_POINTS", "PALETTE", "Series", "colours", "cumulative_counts", "line_chart", "sample_steps",
    "tick_grid"]
