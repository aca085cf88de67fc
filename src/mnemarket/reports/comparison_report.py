"""comparison.json, .md, .html and .csv of an experiment.

The html page is self-contained (inline CSS and SVG, no scripts or fonts, a Content-Security-Policy
that allows neither). This module builds its data; the markup is templates/comparison.html.j2,
rendered with autoescape, so model names, config names and agent ids (they come from files) and
lesson texts are escaped. Plots: one horizontal bar chart per headline metric, a bar per
(model, config) group at the mean over seeds, a whisker of +-1 standard deviation, and a dot per seed.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, TypeVar

import numpy as np

from mnemarket.reports.comparison_data import CellResult, ComparisonDocument, Difference, GroupSummary, JudgeSummary, Stat
from mnemarket.reports.html_templates import Cell, Column, Link, Table, render
from mnemarket.reports.ladder_views import ladder_views
from mnemarket.reports.report_charts import PALETTE, LineChart, line_chart
from mnemarket.reports.statistics import MIN_SEEDS
from mnemarket.run import atomic_writer, write_atomic

METRICS: tuple[tuple[str, str], ...] = (
    ("score", "score (share of the upper bound earned)"),
    ("lessons_stored", "lessons stored"),
    ("duplicate_rate", "duplicate rate"),
    ("generic_rate", "generic rate"),
    ("specificity_mean", "specificity (items/lesson)"),
    ("uptake_rate", "lesson uptake"),
    ("lesson_retrievals", "lesson retrievals"),
    ("failure_lessons", "failure lessons"),
    ("application_pairs", "applied failure lessons"),
    ("failures_per_turn_before", "same failure/turn before lesson"),
    ("failures_per_turn_after", "same failure/turn after retrieval"),
    ("relevance_hybrid", "RAG relevance (hybrid, as the search default)"),
    ("relevance_cosine", "RAG relevance (cosine)"),
    ("relevance_lexical", "RAG relevance (names shared)"),
    ("scrip_delta_total", "scrip gained (all agents)"),
    ("bounties_won", "bounties won"),
    ("memory_trades", "memory trades"),
    ("buyers_scrip_delta_mean", "scrip gain of memory buyers"),
    ("non_buyers_scrip_delta_mean", "scrip gain of non-buyers"),
    ("context_tokens_per_turn", "context tokens/turn"),
    ("model_tokens_per_turn", "model tokens/turn"),
    ("cost_usd", "cost USD"),
    ("invalid_action_rate", "invalid action rate"),
    ("unparseable_rate", "unparseable reply rate"),
    ("loop_breaker_triggers", "loop-breaker triggers"),
)
BETTER: dict[str, str] = {
    "score": "higher", "lessons_stored": "higher", "duplicate_rate": "lower", "generic_rate": "lower",
    "specificity_mean": "higher",
    "uptake_rate": "higher", "lesson_retrievals": "higher", "application_pairs": "higher",
    "failures_per_turn_after": "lower", "relevance_cosine": "higher", "relevance_lexical": "higher",
    "scrip_delta_total": "higher", "bounties_won": "higher", "buyers_scrip_delta_mean": "higher",
    "context_tokens_per_turn": "lower", "model_tokens_per_turn": "lower", "cost_usd": "lower",
    "invalid_action_rate": "lower", "unparseable_rate": "lower", "loop_breaker_triggers": "lower",
}
"""Which direction of each metric is better; metrics absent here describe rather than rank."""
DEFINITIONS: dict[str, str] = {
    "score": "bounty reward earned / the scenario's upper bound (what a perfect-memory policy earns)",
    "lessons_stored": "successful genesis_memory.add calls (by action and by session-end migration)",
    "duplicate_rate": "share of lessons repeating an earlier one (same text, or cosine >= 0.92)",
    "generic_rate": "share of lessons naming no outcome, condition or number",
    "specificity_mean": "named artifacts/methods, numbers and condition words per lesson",
    "uptake_rate": "share of lessons in the agent's own RAG store later shown in a prompt",
    "lesson_retrievals": "times a lesson was shown in a later prompt",
    "failure_lessons": "lessons naming an action that failed before they were stored",
    "application_pairs": "(failure lesson, failed action) pairs whose lesson was later retrieved",
    "failures_per_turn_before": "that failure per turn before the lesson was stored",
    "failures_per_turn_after": "that failure per turn once the lesson was first retrieved",
    "relevance_hybrid": "hybrid similarity of retrieved memories to the turn's situation",
    "relevance_cosine": "embedding cosine of retrieved memories to the turn's situation",
    "relevance_lexical": "share of a memory's search terms found in the turn's situation",
    "scrip_delta_total": "final minus starting scrip, summed over agents",
    "bounties_won": "successful bounty claims",
    "memory_trades": "licences, copies and memory stores sold",
    "buyers_scrip_delta_mean": "mean scrip gain of agents who bought memory",
    "non_buyers_scrip_delta_mean": "mean scrip gain of agents who bought none",
    "context_tokens_per_turn": "prompt tokens the assembler sent per turn",
    "model_tokens_per_turn": "prompt + completion tokens billed per turn (repairs included)",
    "cost_usd": "model spend",
    "invalid_action_rate": "failed actions per turn",
    "unparseable_rate": "replies that were not a valid action, per turn",
    "loop_breaker_triggers": "turns on which the loop breaker warned or forced",
}
"""One line per metric, shown beside it (the full definitions: plans/metrics.md)."""
_ARROW = {"higher": " (higher is better)", "lower": " (lower is better)"}
CSV_COLUMNS = ("experiment", "cell", "model", "config", "seed", "agent", "metric", "value", "better")
PLOTTED = ("score", "lessons_stored", "duplicate_rate", "generic_rate", "specificity_mean", "uptake_rate",
           "relevance_cosine", "scrip_delta_total", "invalid_action_rate", "model_tokens_per_turn")
CELL_COLUMNS = ("score", "lessons_stored", "duplicate_rate", "generic_rate", "specificity_mean", "uptake_rate",
                "relevance_cosine", "scrip_delta_total", "bounties_won", "invalid_action_rate")
AGENT_COLUMNS = ("lessons_stored", "duplicate_rate", "generic_rate", "specificity_mean", "uptake_rate",
                 "application_pairs", "relevance_cosine", "scrip_delta", "bounties_won", "memory_bought",
                 "invalid_action_rate", "loop_breaker_triggers")


def _scored(document: ComparisonDocument) -> bool:
    """Whether the scenario declares an upper bound (then `score` heads the tables; else it is left out)."""
    return any(isinstance(row.get("metrics", {}).get("cell", {}).get("score"), (int, float))
               for row in document.get("cells", []))


Key = TypeVar("Key", str, tuple[str, str])


def without_score(document: ComparisonDocument, keys: tuple[Key, ...]) -> tuple[Key, ...]:
    """``keys`` (metric names, or (name, label) pairs) without `score` when no cell has one."""
    if _scored(document):
        return keys
    return tuple(k for k in keys if (k[0] if isinstance(k, tuple) else k) != "score")


CURVES = (("bounty_reward", "bounty reward earned per session", "scrip"),
          ("lessons_stored", "lessons stored per session", "lessons"),
          ("failures_per_turn", "failed actions per turn, per session", "failures/turn"))


def learning_curve_charts(document: ComparisonDocument) -> list[LineChart]:
    """One line chart per curve metric: x = session, a line per group (mean over its seeds)."""
    charts = []
    for key, title, unit in CURVES:
        values: dict[str, dict[int, list[float]]] = {}
        for row in document["cells"]:
            for point in row.get("metrics", {}).get("sessions", []):
                figures: Mapping[str, object] = point
                if isinstance(value := figures.get(key), (int, float)):
                    label = f"{row['model']} / {row['config']}"
                    values.setdefault(label, {}).setdefault(point["session"], []).append(float(value))
        series = {label: (np.array(sorted(points), dtype=float),
                          np.array([np.mean(points[s]) for s in sorted(points)], dtype=float))
                  for label, points in values.items()}
        charts.append(line_chart(series, title=title, y_label=unit, x_label="session", step=False))
    return charts


def learning_curves(document: ComparisonDocument) -> str:
    """The learning-curve charts as HTML (`<figure>`s), as comparison.html shows them."""
    return render("charts.html.j2", line_charts=learning_curve_charts(document), bar_charts=[])


def write_reports(out_dir: Path, document: ComparisonDocument) -> Path:
    """Write the three files; returns the json path."""
    out_dir = Path(out_dir)
    path = out_dir / "comparison.json"
    # Each file is written beside its name and renamed over it: a symlink there is replaced, not followed.
    write_atomic(path, json.dumps(document, indent=2))
    write_atomic(out_dir / "comparison.md", render_markdown(document))
    write_atomic(out_dir / "comparison.html", render_html(document, out_dir))
    write_csv(out_dir / "comparison.csv", document)
    with atomic_writer(out_dir / "lessons.csv", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LESSON_COLUMNS)
        writer.writeheader()
        writer.writerows(lesson_rows(document))
    return path


class TidyRow(TypedDict):
    """A row of comparison.csv (`CSV_COLUMNS`)."""

    experiment: str
    cell: str
    model: str
    config: str
    seed: int
    agent: str
    metric: str
    value: int | float
    better: str


def tidy_rows(document: ComparisonDocument) -> list[TidyRow]:
    """One row per cell x agent x numeric metric (agent "(cell)" for whole-cell figures)."""
    rows: list[TidyRow] = []
    for cell in document["cells"]:
        metrics = cell.get("metrics", {})
        scopes: list[tuple[str, Mapping[str, object]]] = [("(cell)", metrics.get("cell", {})),
                                                          *sorted(metrics.get("agents", {}).items())]
        for agent, figures in scopes:
            for metric, value in figures.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    rows.append({"experiment": document["experiment"], "cell": cell["id"], "model": cell["model"],
                                 "config": cell["config"], "seed": cell["seed"], "agent": agent, "metric": metric,
                                 "value": value, "better": BETTER.get(metric, "")})
    return rows


LESSON_COLUMNS = ("experiment", "cell", "model", "config", "seed", "agent", "lesson_id", "session", "migrated",
                  "text", "duplicate_of", "generic", "generic_reason", "specificity", "specific_items",
                  "retrievals", "first_retrieved", "failures_named", "failure_recurred", "failure_recurred_after_stored",
                  "judge_score")


def lesson_rows(document: ComparisonDocument) -> list[dict[str, object]]:
    """One row per lesson of every finished cell (`metrics.lesson_evidence`), flat for pandas."""
    rows = []
    for cell in document["cells"]:
        for lesson in cell.get("metrics", {}).get("lessons", []):
            retrievals = lesson["retrievals"]
            first = retrievals[0] if retrievals else None
            rows.append({
                "experiment": document["experiment"], "cell": cell["id"], "model": cell["model"],
                "config": cell["config"], "seed": cell["seed"], "agent": lesson["agent"],
                "lesson_id": lesson["lesson_id"], "session": lesson["session"], "migrated": lesson["migrated"],
                "text": lesson["text"], "duplicate_of": lesson["duplicate_of"], "generic": lesson["generic"],
                "generic_reason": lesson["generic_reason"], "specificity": len(lesson["specific_items"]),
                "specific_items": ";".join(lesson["specific_items"]), "retrievals": len(retrievals),
                "first_retrieved": f"s{first['session']}t{first['turn']}" if first else "",
                "failures_named": ";".join(lesson["failures_named"]),
                "failure_recurred": "" if lesson["failure_recurred"] is None else lesson["failure_recurred"],
                # .get: a comparison.json written before the field was added
                "failure_recurred_after_stored": "" if lesson.get("failure_recurred_after_stored") is None
                else lesson["failure_recurred_after_stored"],
                "judge_score": lesson["judge"].get("score", "") if "judge" in lesson else "",
            })
    return rows


def judge_text(judge: JudgeSummary) -> str:
    """One paragraph: what the judge rated and how it agrees with the automatic metrics."""
    return (f"{judge['model']} rated {judge['lessons_rated']} lessons ({judge['judge_failures']} without a verdict) "
            f"on a fixed rubric (specific, actionable, grounded; 0-1): mean {fmt(judge['judge_score_mean'])}; "
            f"rank correlation with specificity {fmt(judge['spearman_with_specificity'])}; lessons the metrics call "
            f"generic {fmt(judge['score_generic_mean'])} against specific {fmt(judge['score_specific_mean'])}. "
            "Per-lesson scores: lessons.csv (judge_score).")


def write_csv(path: Path, document: ComparisonDocument) -> None:
    with atomic_writer(path, newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(tidy_rows(document))


def fmt(value: object) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def stat_text(stat: Stat | None, interval: list[float] | None = None) -> str:
    if not stat:
        return "–"
    text = fmt(stat["mean"])
    if stat["n"] > 1:
        text += f" ± {fmt(stat['std'])}"
    if interval is not None:
        text += f" [{fmt(interval[0])}, {fmt(interval[1])}]"
    return text


def group_stat_text(group: GroupSummary, key: str) -> str:
    """A group's figure on ``key`` as the tables show it: mean ± std [interval]."""
    return stat_text(group["metrics"].get(key), (group.get("intervals") or {}).get(key))


def metric_label(key: str, label: str) -> str:
    return label + _ARROW.get(BETTER.get(key, ""), "") + (f": {DEFINITIONS[key]}" if key in DEFINITIONS else "")


def difference_rows(document: ComparisonDocument) -> list[list[object]]:
    labels = dict(METRICS)
    rows = []
    for diff in document.get("differences", []):
        if diff["metric"] not in labels:
            continue
        interval = diff["interval"]
        rows.append([f"{diff['model']} / {diff['config']}", metric_label(diff["metric"], labels[diff["metric"]]),
                     fmt(diff["mean"]), f"[{fmt(interval[0])}, {fmt(interval[1])}]" if interval else "–", diff["n"],
                     "yes" if diff["separated"] else "no"])
    return rows


DIFFERENCE_HEADERS = ("group", "metric", "mean difference", "95% interval", "paired seeds", "separated")


def group_label(group: GroupSummary | Difference) -> str:
    return f"{group['model']} / {group['config']}"


# -- markdown -----------------------------------------------------------------------------------------------

def _md(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(document: ComparisonDocument) -> str:
    groups = document["groups"]
    matrix = document["matrix"]
    parts = [f"# Comparison: {document['experiment']}", "",
             document.get("description") or "", "",
             f"- scenario: `{document['scenario']}`",
             f"- models: {', '.join(matrix['models'])}; configs: {', '.join(matrix['configs'])}; "
             f"seeds: {', '.join(map(str, matrix['seeds']))}; sessions x turns: "
             f"{matrix['sessions'] or 'scenario'} x {matrix['turns'] or 'scenario'}",
             f"- metrics embedder: {document['metrics_embedder'] or 'none (exact/lexical only)'}",
             f"- generated {document['generated']} on {document['machine']['platform']} "
             f"({document['machine']['cores']} cores)", "",
             *_ladder_markdown(document),
             "## Groups (mean ± sample std [95% bootstrap interval] over seeds)", ""]
    if groups:
        headers = ["metric", *[group_label(g) for g in groups]]
        rows: list[list[object]] = [[metric_label(key, label), *[group_stat_text(g, key) for g in groups]]
                                    for key, label in without_score(document, METRICS)]
        rows.insert(0, ["seeds finished", *[g["seeds"] for g in groups]])
        parts.append(_md_table(headers, rows))
    else:
        parts.append("No finished cells yet.")
    baseline = document.get("baseline")
    if baseline and document.get("differences"):
        parts += ["", f"## Differences from the baseline {baseline['model']} / {baseline['config']} "
                      "(mean of per-seed differences)", "",
                  _md_table(DIFFERENCE_HEADERS, difference_rows(document))]
    for warning in document.get("warnings", []):
        parts += ["", f"> warning: {warning}"]
    for warning in run_warnings(document):
        parts += ["", f"> run warning: {warning}"]
    if judge := document.get("judge"):
        parts += ["", "## LLM judge of lesson quality", "", judge_text(judge)]
    parts += ["", "## Cells", ""]
    cell_rows = []
    columns = without_score(document, CELL_COLUMNS)
    for row in document["cells"]:
        cell = row.get("metrics", {}).get("cell", {})
        cell_rows.append([row["id"], row["status"], row.get("seconds") or "–",
                          *[fmt(cell.get(k)) for k in columns]])
    parts.append(_md_table(["cell", "status", "seconds", *columns], cell_rows))
    parts += ["", "Definitions: plans/metrics.md. Per-agent figures: comparison.json or comparison.html.", ""]
    return "\n".join(parts)


def _ladder_markdown(document: ComparisonDocument) -> list[str]:
    """The memory ladder's leaderboard and Delta per rung (plans/ladder.md); nothing elsewhere."""
    views = ladder_views(document)
    if views is None:
        return []
    board = views.leaderboard
    effect = [[model, rung, fmt(f["delta"]), f"[{f['ci'][0]}, {f['ci'][1]}]" if f["ci"] else "n/a", f["n_pairs"]]
              for model, rungs in document["memory_effect"].items() for rung, f in rungs.items()]
    return ["## Memory ladder: leaderboard (success [95% interval clustered by seed]; per item: ladder.csv)", "",
            _md_table([c.label for c in board.columns], board.rows), "",
            "## Memory effect: Delta = memory - no_memory (paired by seed, level and instance)", "",
            _md_table(["model", "rung", "Delta", "95% interval", "pairs"], effect), ""]


# -- html ----------------------------------------------------------------------------------------------------

def _html_table(headers: Sequence[str], rows: Sequence[Sequence[object]], links: dict[str, Cell] | None = None) -> Table:
    """A table of plain cells (always drawn, header only when empty); ``links`` maps a first-column
    value to the cell shown instead (e.g. a `Link` to the cell's report)."""
    def cells(row: Sequence[object]) -> list[Cell]:
        if not row:
            return []
        first: Cell = (links or {}).get(str(row[0])) or str(row[0])
        return [first, *(str(c) for c in row[1:])]
    return Table([Column(str(h)) for h in headers], [cells(row) for row in rows], empty=None)


@dataclass(frozen=True)
class Bar:
    """One group's row of a bar chart, in SVG user units (formatted)."""

    label: str
    stat: str
    mean: str
    colour: str
    y: int
    mid: str
    bar_x: str
    bar_w: str
    whisker: tuple[str, str] | None
    dots: Sequence[str]


@dataclass(frozen=True)
class BarChart:
    """The geometry of one metric's bar chart (templates/macros.html.j2 `bar_chart` draws it)."""

    title: str
    rows: Sequence[Bar] = ()
    label_w: int = 230
    plot_w: int = 320
    row_h: int = 26
    top: int = 28
    height: int = 0
    zero: str = ""
    low: str = ""
    high: str = ""

    @property
    def width(self) -> int:
        return self.label_w + self.plot_w + 70


def bar_chart(title: str, groups: Sequence[GroupSummary], key: str, seed_values: dict[str, list[float]]) -> BarChart:
    """Horizontal bars (mean), whiskers (+-1 std) and dots (one per seed) for one metric; no rows: no data."""
    entries = [(group_label(g), stat) for g in groups if (stat := g["metrics"].get(key))]
    if not entries:
        return BarChart(title)
    label_w, plot_w, row_h, top = 230, 320, 26, 28
    height = top + row_h * len(entries) + 24
    values = [stat["mean"] + stat["std"] for _, stat in entries] + [stat["mean"] - stat["std"] for _, stat in entries]
    values += [v for label, _ in entries for v in seed_values.get(label, [])]
    low, high = min(0.0, min(values)), max(0.0, max(values))
    if high == low:
        high = low + 1.0

    def x(v: float) -> float:
        return label_w + (v - low) / (high - low) * plot_w

    rows = []
    for i, (label, stat) in enumerate(entries):
        y = top + i * row_h
        x0, x1 = sorted((x(0), x(stat["mean"])))
        whisker = (f"{x(stat['mean'] - stat['std']):.1f}", f"{x(stat['mean'] + stat['std']):.1f}") if stat["std"] else None
        rows.append(Bar(label=label, stat=stat_text(stat), mean=fmt(stat["mean"]), colour=PALETTE[i % len(PALETTE)],
                        y=y, mid=f"{y + row_h / 2:.1f}", bar_x=f"{x0:.1f}", bar_w=f"{max(x1 - x0, 1):.1f}",
                        whisker=whisker, dots=[f"{x(v):.1f}" for v in seed_values.get(label, [])]))
    return BarChart(title, rows, label_w, plot_w, row_h, top, height, zero=f"{x(0):.1f}", low=fmt(low), high=fmt(high))


def _cell_link(row: CellResult, out_dir: Path | None) -> Cell:
    """A link to the cell's report.html when it exists (relative to comparison.html), else the cell id."""
    report = Path(row["run_dir"]) / "report.html" if out_dir is not None and row.get("run_dir") else None
    if report is None or not report.exists():
        return str(row["id"])
    return Link(href=os.path.relpath(report, out_dir), text=str(row["id"]))


def render_html(document: ComparisonDocument, out_dir: Path | None = None) -> str:
    groups = document["groups"]
    matrix = document["matrix"]
    labels = {k: v for k, v in METRICS}
    metrics = without_score(document, METRICS)
    plotted, columns = without_score(document, PLOTTED), without_score(document, CELL_COLUMNS)
    seed_values: dict[str, dict[str, list[float]]] = {}
    for row in document["cells"]:
        cell = row.get("metrics", {}).get("cell")
        if not cell:
            continue
        label = f"{row['model']} / {row['config']}"
        for key in plotted:
            value = cell.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                seed_values.setdefault(key, {}).setdefault(label, []).append(float(value))
    group_table = _html_table(["metric", *[group_label(g) for g in groups]],
                              [["seeds finished", *[g["seeds"] for g in groups]]]
                              + [[metric_label(key, label), *[group_stat_text(g, key) for g in groups]]
                                 for key, label in metrics]) if groups else None
    cell_table = _html_table(["cell", "status", "seconds", *columns],
                             [[row["id"], row["status"], row.get("seconds") or "–",
                               *[fmt(row.get("metrics", {}).get("cell", {}).get(k)) for k in columns]]
                              for row in document["cells"]],
                             links={row["id"]: _cell_link(row, out_dir) for row in document["cells"]})
    baseline = document.get("baseline") or {}
    agent_rows = [[row["id"], agent, *[fmt(figures.get(k)) for k in AGENT_COLUMNS]]
                  for row in document["cells"] for agent, figures in row.get("metrics", {}).get("agents", {}).items()]
    config_rows = [[name, json.dumps(spec.get("agents", {})), json.dumps(spec.get("per_agent", {})),
                    spec.get("description", "")] for name, spec in matrix["configs"].items()]
    return render(
        "comparison.html.j2",
        experiment=str(document["experiment"]), description=str(document.get("description", "")),
        scenario=str(document["scenario"]), experiment_file=str(document["experiment_file"]),
        models=", ".join(map(str, matrix["models"])), seeds=", ".join(map(str, matrix["seeds"])),
        sessions=str(matrix["sessions"] or "scenario"), turns=str(matrix["turns"] or "scenario"),
        embedder=str(document["metrics_embedder"] or "none"), generated=str(document["generated"]),
        platform=str(document["machine"]["platform"]), cores=str(document["machine"]["cores"]),
        configs=_html_table(["config", "merged into every agent", "per agent", "description"], config_rows),
        bar_charts=[bar_chart(labels[key], groups, key, seed_values.get(key, {})) for key in plotted],
        groups=group_table,
        differences=_html_table(list(DIFFERENCE_HEADERS), difference_rows(document))
        if document.get("differences") else None,
        baseline=f"{baseline.get('model')} / {baseline.get('config')}",
        warnings=[str(w) for w in document.get("warnings", [])],
        run_warnings=run_warnings(document),
        judge=judge_text(judge) if (judge := document.get("judge")) else "",
        learning_curves=learning_curve_charts(document),
        cells=cell_table,
        agents=_html_table(["cell", "agent", *AGENT_COLUMNS], agent_rows),
        ladder=ladder_views(document), min_seeds=MIN_SEEDS)


def run_warnings(document: ComparisonDocument) -> list[str]:
    """Each distinct warning the cells' runs gave (a step over its budget, ...), with the cells
    that gave it: their figures come from runs that warned."""
    cells: dict[str, list[str]] = {}
    for row in document["cells"]:
        for warning in row.get("warnings") or []:
            cells.setdefault(str(warning), []).append(str(row["id"]))
    return [f"{', '.join(ids)}: {warning}" for warning, ids in cells.items()]


__all__ = ["CSV_COLUMNS", "group_stat_text", "render_html", "render_markdown", "run_warnings", "without_score",
    "write_reports"]
