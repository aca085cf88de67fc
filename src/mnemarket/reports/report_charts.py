"""Inline SVG line charts for report.html: step series sampled on a tick grid, axes, legend.

This module computes the geometry (numbers and SVG point strings); templates/macros.html.j2 draws
it as inline SVG (no JS, no fonts or images), so the page stays self-contained, and autoescape
escapes every label (agent ids are chosen by agents).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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


def cumulative_counts(created: Sequence[float] | np.ndarray, grid: np.ndarray) -> np.ndarray:
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


@dataclass(frozen=True)
class Tick:
    """A grid line at `at` (user units, formatted) labelled `label`; `text_at` places the label."""

    at: str
    text_at: str
    label: str


@dataclass(frozen=True)
class ChartLine:
    """One series: its SVG points, colour and dash, and its last value for the legend."""

    name: str
    points: str
    colour: str
    dash: str
    last: str
    last_x: str


@dataclass(frozen=True)
class LineChart:
    """The geometry of one line chart, in SVG user units (formatted); the template draws it."""

    title: str
    x_label: str
    y_label: str
    width: int = 960
    height: int = 300
    left: int = 64
    top: int = 12
    plot_w: int = 0
    plot_h: int = 0
    y_ticks: Sequence[Tick] = ()
    x_ticks: Sequence[Tick] = ()
    marks: Sequence[Tick] = ()
    lines: Sequence[ChartLine] = ()

    @property
    def bottom(self) -> int:
        return self.top + self.plot_h


def line_chart(series: Mapping[str, Series], *, title: str, y_label: str, x_label: str = "tick",
               palette: Mapping[str, tuple[str, str]] | None = None, step: bool = True,
               marks: Mapping[float, str] | None = None, width: int = 960, height: int = 300) -> LineChart:
    """The geometry of a chart with one line per series (templates/macros.html.j2 `line_chart` draws
    it as a `<figure>` with an SVG and an HTML legend; no lines: "no data").

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
    data = {name: (np.asarray(x, float), np.asarray(y, float)) for name, (x, y) in series.items() if len(x)}
    if not data:
        return LineChart(title=title, x_label=x_label, y_label=y_label, width=width, height=height)
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

    def y_tick(value: float) -> Tick:
        y = float(sy(np.array(value)))
        return Tick(f"{y:.1f}", f"{y + 4:.1f}", _label(value))

    def x_tick(value: float, label: str) -> Tick:
        x = float(sx(np.array(value)))
        return Tick(f"{x:.1f}", f"{x + 3:.1f}", label)

    lines = []
    for name, (xs, ys) in data.items():
        px, py = sx(xs), sy(ys)
        if step and len(px) > 1:  # hold each value until the next sample, then jump
            px = np.repeat(px, 2)[1:]
            py = np.repeat(py, 2)[:-1]
        colour, dash = palette.get(name, (PALETTE[0], ""))
        lines.append(ChartLine(name=name, points=" ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py)),
                               colour=colour, dash=dash, last=_label(float(ys[-1])), last_x=_label(float(xs[-1]))))
    return LineChart(
        title=title, x_label=x_label, y_label=y_label, width=width, height=height, left=left, top=top,
        plot_w=plot_w, plot_h=plot_h, y_ticks=[y_tick(v) for v in y_ticks],
        x_ticks=[x_tick(v, _label(v)) for v in _ticks(x_min, x_max, integer=True)],
        marks=[x_tick(at, label) for at, label in sorted((marks or {}).items()) if x_min <= at <= x_max],
        lines=lines)


__all__ = ["MAX_POINTS", "PALETTE", "ChartLine", "LineChart", "Series", "Tick", "colours", "cumulative_counts",
           "line_chart", "sample_steps", "tick_grid"]
