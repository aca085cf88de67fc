"""The memory ladder's four views in comparison.html (issue 36, point 6): a leaderboard, a ladder
plot (success by rung, memory on and off, with the optimum, random and the model's own R0), a
formation -> retrieval -> use funnel and a forest plot of Delta per rung.

This module computes geometry (SVG user units, formatted); templates/ladder.html.j2 draws it as
inline SVG: no script, as the report's CSP allows none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mnemarket.reports.comparison_data import (
    Abstention,
    ComparisonDocument,
    Interval,
    LadderDetails,
    LadderTable,
    MemoryEffect,
)
from mnemarket.reports.html_templates import Column, Table
from mnemarket.reports.report_charts import colours

WIDTH, HEIGHT, LEFT, TOP, BOTTOM = 620, 260, 48, 16, 40
PLOT_W, PLOT_H = WIDTH - LEFT - 150, HEIGHT - TOP - BOTTOM
FUNNEL_STAGES: tuple[Literal["formed", "retrieved", "used", "success"], ...] = ("formed", "retrieved", "used", "success")


@dataclass(frozen=True)
class Point:
    x: str
    y: str
    low: str | None
    high: str | None
    label: str


@dataclass(frozen=True)
class Series:
    name: str
    colour: str
    dashed: bool
    path: str
    points: list[Point]


@dataclass(frozen=True)
class Band:
    name: str
    y: str
    height: str
    colour: str


@dataclass(frozen=True)
class Axis:
    ticks: list[tuple[str, str]]
    """(position, label) pairs."""


@dataclass(frozen=True)
class LadderPlot:
    width: int
    height: int
    left: int
    top: int
    plot_w: int
    plot_h: int
    x_axis: Axis
    y_axis: Axis
    series: list[Series]
    bands: list[Band]


@dataclass(frozen=True)
class ForestRow:
    label: str
    y: str
    x: str
    low: str | None
    high: str | None
    text: str


@dataclass(frozen=True)
class ForestPlot:
    width: int
    height: int
    left: int
    zero: str
    axis: Axis
    rows: list[ForestRow]


@dataclass(frozen=True)
class FunnelBar:
    group: str
    stage: str
    y: str
    w: str
    text: str


@dataclass(frozen=True)
class LadderViews:
    leaderboard: Table
    lessons: Table
    plot: LadderPlot
    funnel: list[FunnelBar]
    funnel_height: int
    forest: ForestPlot | None


def _f(value: float) -> str:
    return f"{value:.1f}"


def _interval(value: float | None, ci: Interval | None) -> str:
    text = "–" if value is None else f"{value:.2f}"
    return f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else f"{text} (interval n/a)"


def _abstention(found: Abstention | None) -> list[str]:
    """False abstention and R7 - false abstention (reports/ladder_abstention.py): R7 alone is won
    by answering "unknown" to everything."""
    rate = found["false_abstention"] if found else None
    net = found["net"] if found else None
    return ["–" if rate is None else _interval(rate["rate"], rate["ci"]), "–" if net is None else f"{net:+.2f}"]


def leaderboard_table(document: ComparisonDocument) -> Table:
    """The leaderboard of a ladder document (its `ladder` and `ladder_details`; `ladder_abstention`
    is absent in a comparison.json written before it was added)."""
    ladder, details = document["ladder"], document["ladder_details"]
    abstention = document.get("ladder_abstention", {})
    rungs = sorted({r for g in ladder.values() for r in g})
    rows = []
    for row in details["leaderboard"]:
        rows.append([row["model"], row["config"], "–" if row["ladder_score"] is None else f"{row['ladder_score']:.2f}",
                     *[_interval(s["success"], s["ci"]) if (s := row["rungs"].get(r)) else "–" for r in rungs],
                     *_abstention(abstention.get(f"{row['model']}/{row['config']}")),
                     "–" if row["delta_mean"] is None else f"{row['delta_mean']:+.2f}",
                     "–" if row["tokens_per_turn"] is None else str(row["tokens_per_turn"]), f"{row['cost_usd']:.4f}"])
    headers = ["model", "config", "ladder score", *[f"{r} success [95% CI]" for r in rungs],
               "false abstention (gold in the episode)", "R7 - false abstention", "Delta (mean over rungs)",
               "model tokens/turn", "cost USD"]
    return Table([Column(h, "" if i < 2 else "num") for i, h in enumerate(headers)], rows, empty="no finished items")


def ladder_plot(ladder: LadderTable) -> LadderPlot:
    rungs = sorted({r for g in ladder.values() for r in g})
    step = PLOT_W / max(1, len(rungs) - 1) if len(rungs) > 1 else 0

    def x(rung: str) -> float:
        return LEFT + (rungs.index(rung) * step if len(rungs) > 1 else PLOT_W / 2)

    def y(value: float) -> float:
        return TOP + PLOT_H * (1 - value)
    palette = colours(sorted(ladder))
    series = []
    for group, figures in sorted(ladder.items()):
        points = [Point(_f(x(r)), _f(y(success)), _f(y(ci[0])) if (ci := f["ci"]) else None,
                        _f(y(ci[1])) if ci else None, f"{group} {r}: {_interval(success, ci)}")
                  for r, f in sorted(figures.items()) if (success := f["success"]) is not None]
        path = " ".join(("M" if i == 0 else "L") + f"{p.x},{p.y}" for i, p in enumerate(points))
        series.append(Series(group, palette[group][0], group.endswith("/no_memory"), path, points))
    bands = []
    for group, figures in sorted(ladder.items()):  # each model's own ceiling: its R0 interval
        r0 = figures.get("R0")
        if r0 and (ci := r0["ci"]) and not group.startswith(("scripted/", "random/")):
            top, bottom = y(ci[1]), y(ci[0])
            bands.append(Band(f"{group} R0", _f(top), _f(max(1.0, bottom - top)), palette[group][1]))
    return LadderPlot(WIDTH, HEIGHT, LEFT, TOP, PLOT_W, PLOT_H, Axis([(_f(x(r)), r) for r in rungs]),
                      Axis([(_f(y(v)), f"{v:.1f}") for v in (0, 0.25, 0.5, 0.75, 1.0)]), series, bands)


def funnel_bars(details: LadderDetails) -> tuple[list[FunnelBar], int]:
    bars, row = [], 0
    for group, stages in sorted(details["funnel"].items()):
        for stage in FUNNEL_STAGES:
            rate, n = stages[stage]["rate"], stages[stage]["n"]
            text = f"{group} {stage}: " + ("n/a" if rate is None else f"{rate:.2f} of {n}")
            bars.append(FunnelBar(group, stage, str(12 + row * 16), _f(300 * (rate or 0)), text))
            row += 1
        row += 1
    return bars, 24 + row * 16


def forest_plot(effect: dict[str, dict[str, MemoryEffect]]) -> ForestPlot | None:
    rows_in = [(model, rung, delta, f) for model, rungs in sorted(effect.items())
               for rung, f in sorted(rungs.items()) if (delta := f["delta"]) is not None]
    if not rows_in:
        return None
    left, width = 170, 520

    def x(value: float) -> float:
        return left + (value + 1) / 2 * (width - left - 20)
    rows = [ForestRow(f"{model} {rung}", str(20 + i * 18), _f(x(delta)), _f(x(ci[0])) if (ci := f["ci"]) else None,
                      _f(x(ci[1])) if ci else None, f"{model} {rung}: Delta {_interval(delta, ci)}, {f['n_pairs']} pairs")
            for i, (model, rung, delta, f) in enumerate(rows_in)]
    return ForestPlot(width, 40 + len(rows) * 18, left, _f(x(0)),
                      Axis([(_f(x(v)), f"{v:+.1f}") for v in (-1, -0.5, 0, 0.5, 1)]), rows)


def lessons_table(details: LadderDetails) -> Table:
    """Each group's lesson metrics per rung, as value / random's value under the same config."""
    from mnemarket.reports.ladder_results import LESSON_METRICS

    def text(value: float | None, random: float | None) -> str:
        return "–" if value is None else f"{value:.3g} / " + ("–" if random is None else f"{random:.3g}")

    rows = []
    # .get: a comparison.json written before the table was added
    for rung, groups in details.get("lessons_beside_random", {}).items():
        for group, metrics in groups.items():
            rows.append([rung, group, *[text(metrics[k]["value"], metrics[k]["random"]) for k in LESSON_METRICS]])
    return Table([Column("rung"), Column("group"), *[Column(f"{k} (value / random)", "num") for k in LESSON_METRICS]],
                 rows, empty="no lesson metrics")


def ladder_views(document: ComparisonDocument) -> LadderViews | None:
    """The four views, or None outside a ladder experiment."""
    if "ladder" not in document or "ladder_details" not in document:
        return None
    ladder, details = document["ladder"], document["ladder_details"]
    bars, height = funnel_bars(details)
    return LadderViews(leaderboard_table(document), lessons_table(details), ladder_plot(ladder), bars, height,
                       forest_plot(document.get("memory_effect", {})))


__all__ = ["LadderViews", "ladder_views"]
