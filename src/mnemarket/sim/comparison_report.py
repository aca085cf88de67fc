"""comparison.json, .md, .html and .csv of an experiment.

The html page is self-contained (inline CSS and SVG, no scripts or fonts); every value that
reaches the markup is escaped, since model names, config names and agent ids come from files.
Plots: one horizontal bar chart per headline metric, a bar per (model, config) group at the
mean over seeds, a whisker of +-1 standard deviation, and a dot per seed.
"""

from __future__ import annotations

import csv
import html
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemarket.sim.report_charts import PALETTE

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


def _scored(document: dict[str, Any]) -> bool:
    """Whether the scenario declares an upper bound (then `score` heads the tables; else it is left out)."""
    return any(isinstance(row.get("metrics", {}).get("cell", {}).get("score"), (int, float))
               for row in document.get("cells", []))


def _without_score(document: dict[str, Any], keys: tuple[Any, ...]) -> tuple[Any, ...]:
    if _scored(document):
        return keys
    return tuple(k for k in keys if (k[0] if isinstance(k, tuple) else k) != "score")


CURVES = (("bounty_reward", "bounty reward earned per session", "scrip"),
          ("lessons_stored", "lessons stored per session", "lessons"),
          ("failures_per_turn", "failed actions per turn, per session", "failures/turn"))


def learning_curves(document: dict[str, Any]) -> str:
    """One line chart per curve metric: x = session, a line per group (mean over its seeds)."""
    from mnemarket.sim.report_charts import line_chart

    figures = []
    for key, title, unit in CURVES:
        values: dict[str, dict[int, list[float]]] = {}
        for row in document["cells"]:
            for point in row.get("metrics", {}).get("sessions", []):
                if isinstance(point.get(key), (int, float)):
                    label = f"{row['model']} / {row['config']}"
                    values.setdefault(label, {}).setdefault(point["session"], []).append(float(point[key]))
        series = {label: (np.array(sorted(points), dtype=float),
                          np.array([np.mean(points[s]) for s in sorted(points)], dtype=float))
                  for label, points in values.items()}
        figures.append(line_chart(series, title=title, y_label=unit, x_label="session", step=False))
    return "".join(figures)


def write_reports(out_dir: Path, document: dict[str, Any]) -> Path:
    """Write the three files; returns the json path."""
    out_dir = Path(out_dir)
    path = out_dir / "comparison.json"
    path.write_text(json.dumps(document, indent=2))
    (out_dir / "comparison.md").write_text(render_markdown(document))
    (out_dir / "comparison.html").write_text(render_html(document, out_dir))
    write_csv(out_dir / "comparison.csv", document)
    with (out_dir / "lessons.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=LESSON_COLUMNS)
        writer.writeheader()
        writer.writerows(lesson_rows(document))
    return path


def tidy_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per cell x agent x numeric metric (agent "(cell)" for whole-cell figures)."""
    rows = []
    for cell in document["cells"]:
        metrics = cell.get("metrics") or {}
        scopes = [("(cell)", metrics.get("cell", {})), *sorted(metrics.get("agents", {}).items())]
        for agent, figures in scopes:
            for metric, value in figures.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    rows.append({"experiment": document["experiment"], "cell": cell["id"], "model": cell["model"],
                                 "config": cell["config"], "seed": cell["seed"], "agent": agent, "metric": metric,
                                 "value": value, "better": BETTER.get(metric, "")})
    return rows


LESSON_COLUMNS = ("experiment", "cell", "model", "config", "seed", "agent", "lesson_id", "session", "migrated",
                  "text", "duplicate_of", "generic", "generic_reason", "specificity", "specific_items",
                  "retrievals", "first_retrieved", "failures_named", "failure_recurred", "judge_score")


def lesson_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
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
                "judge_score": lesson.get("judge", {}).get("score", ""),
            })
    return rows


def judge_text(judge: dict[str, Any]) -> str:
    """One paragraph: what the judge rated and how it agrees with the automatic metrics."""
    return (f"{judge['model']} rated {judge['lessons_rated']} lessons ({judge['judge_failures']} without a verdict) "
            f"on a fixed rubric (specific, actionable, grounded; 0-1): mean {fmt(judge['judge_score_mean'])}; "
            f"rank correlation with specificity {fmt(judge['spearman_with_specificity'])}; lessons the metrics call "
            f"generic {fmt(judge['score_generic_mean'])} against specific {fmt(judge['score_specific_mean'])}. "
            "Per-lesson scores: lessons.csv (judge_score).")


def write_csv(path: Path, document: dict[str, Any]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(tidy_rows(document))


def fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def stat_text(stat: dict[str, Any] | None, interval: list[float] | None = None) -> str:
    if not stat:
        return "–"
    text = fmt(stat["mean"])
    if stat["n"] > 1:
        text += f" ± {fmt(stat['std'])}"
    if interval is not None:
        text += f" [{fmt(interval[0])}, {fmt(interval[1])}]"
    return text


def _group_cells(group: dict[str, Any], key: str) -> str:
    return stat_text(group["metrics"].get(key), (group.get("intervals") or {}).get(key))


def metric_label(key: str, label: str) -> str:
    return label + _ARROW.get(BETTER.get(key, ""), "") + (f": {DEFINITIONS[key]}" if key in DEFINITIONS else "")


def difference_rows(document: dict[str, Any]) -> list[list[Any]]:
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


def group_label(group: dict[str, Any]) -> str:
    return f"{group['model']} / {group['config']}"


# -- markdown -----------------------------------------------------------------------------------------------

def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |",
             "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(document: dict[str, Any]) -> str:
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
             "## Groups (mean ± sample std [95% bootstrap interval] over seeds)", ""]
    if groups:
        headers = ["metric", *[group_label(g) for g in groups]]
        rows = [[metric_label(key, label), *[_group_cells(g, key) for g in groups]]
                for key, label in _without_score(document, METRICS)]
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
    if document.get("judge"):
        parts += ["", "## LLM judge of lesson quality", "", judge_text(document["judge"])]
    parts += ["", "## Cells", ""]
    cell_rows = []
    columns = _without_score(document, CELL_COLUMNS)
    for row in document["cells"]:
        cell = row.get("metrics", {}).get("cell", {})
        cell_rows.append([row["id"], row["status"], row.get("seconds") or "–",
                          *[fmt(cell.get(k)) for k in columns]])
    parts.append(_md_table(["cell", "status", "seconds", *columns], cell_rows))
    parts += ["", "Definitions: plans/metrics.md. Per-agent figures: comparison.json or comparison.html.", ""]
    return "\n".join(parts)


# -- html ----------------------------------------------------------------------------------------------------

def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
                raw_first: dict[Any, str] | None = None) -> str:
    """A table of escaped cells; ``raw_first`` maps a first-column value to ready (escaped) markup."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)

    def cells(row: Sequence[Any]) -> str:
        first = (raw_first or {}).get(row[0]) if row else None
        rest = row[1:] if first is not None else row
        return (f"<td>{first}</td>" if first is not None else "") + "".join(f"<td>{_e(c)}</td>" for c in rest)
    body = "".join(f"<tr>{cells(row)}</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def bar_chart(title: str, groups: Sequence[dict[str, Any]], key: str, seed_values: dict[str, list[float]]) -> str:
    """Horizontal bars (mean), whiskers (+-1 std) and dots (one per seed) for one metric."""
    entries = [(group_label(g), g["metrics"].get(key)) for g in groups]
    entries = [(label, stat) for label, stat in entries if stat]
    if not entries:
        return f'<figure class="chart"><figcaption>{_e(title)}: no data</figcaption></figure>'
    label_w, plot_w, row_h, top = 230, 320, 26, 28
    height = top + row_h * len(entries) + 24
    values = [stat["mean"] + stat["std"] for _, stat in entries] + [stat["mean"] - stat["std"] for _, stat in entries]
    values += [v for label, _ in entries for v in seed_values.get(label, [])]
    low, high = min(0.0, min(values)), max(0.0, max(values))
    if high == low:
        high = low + 1.0

    def x(v: float) -> float:
        return label_w + (v - low) / (high - low) * plot_w

    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 70}" height="{height}" '
           f'role="img" aria-label="{_e(title)}">',
           f'<text x="4" y="16" font-size="13" font-weight="bold">{_e(title)}</text>',
           f'<line x1="{x(0):.1f}" y1="{top - 4}" x2="{x(0):.1f}" y2="{height - 20}" stroke="#888"/>']
    for i, (label, stat) in enumerate(entries):
        y = top + i * row_h
        colour = PALETTE[i % len(PALETTE)]
        x0, x1 = sorted((x(0), x(stat["mean"])))
        svg.append(f'<text x="{label_w - 6}" y="{y + 15}" font-size="11" text-anchor="end">{_e(label)}</text>')
        svg.append(f'<rect x="{x0:.1f}" y="{y + 4}" width="{max(x1 - x0, 1):.1f}" height="{row_h - 10}" '
                   f'fill="{colour}" fill-opacity="0.55"><title>{_e(label)}: {_e(stat_text(stat))}</title></rect>')
        if stat["std"]:
            lo, hi = x(stat["mean"] - stat["std"]), x(stat["mean"] + stat["std"])
            svg.append(f'<line x1="{lo:.1f}" y1="{y + row_h / 2:.1f}" x2="{hi:.1f}" y2="{y + row_h / 2:.1f}" '
                       'stroke="#222" stroke-width="1.5"/>')
        for v in seed_values.get(label, []):
            svg.append(f'<circle cx="{x(v):.1f}" cy="{y + row_h / 2:.1f}" r="3" fill="#111"/>')
        svg.append(f'<text x="{label_w + plot_w + 6}" y="{y + 15}" font-size="11">{_e(fmt(stat["mean"]))}</text>')
    svg.append(f'<text x="{label_w}" y="{height - 6}" font-size="10" fill="#555">{_e(fmt(low))}</text>')
    svg.append(f'<text x="{label_w + plot_w}" y="{height - 6}" font-size="10" fill="#555" text-anchor="end">'
               f'{_e(fmt(high))}</text>')
    svg.append("</svg>")
    return f'<figure class="chart">{"".join(svg)}</figure>'


def _cell_link(row: dict[str, Any], out_dir: Path | None) -> str:
    report = Path(row["run_dir"]) / "report.html" if out_dir is not None and row.get("run_dir") else None
    if report is None or not report.exists():
        return _e(row["id"])
    return f'<a href="{_e(os.path.relpath(report, out_dir))}">{_e(row["id"])}</a>'


def render_html(document: dict[str, Any], out_dir: Path | None = None) -> str:
    groups = document["groups"]
    matrix = document["matrix"]
    labels = {k: v for k, v in METRICS}
    metrics, plotted, columns = (_without_score(document, keys) for keys in (METRICS, PLOTTED, CELL_COLUMNS))
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
    charts = "".join(bar_chart(labels[key], groups, key, seed_values.get(key, {})) for key in plotted)
    group_table = _html_table(["metric", *[group_label(g) for g in groups]],
                              [["seeds finished", *[g["seeds"] for g in groups]]]
                              + [[metric_label(key, label), *[_group_cells(g, key) for g in groups]]
                                 for key, label in metrics]) if groups else "<p>No finished cells yet.</p>"
    cell_table = _html_table(["cell", "status", "seconds", *columns],
                             [[row["id"], row["status"], row.get("seconds") or "–",
                               *[fmt(row.get("metrics", {}).get("cell", {}).get(k)) for k in columns]]
                              for row in document["cells"]],
                             raw_first={row["id"]: _cell_link(row, out_dir) for row in document["cells"]})
    baseline = document.get("baseline") or {}
    differences = (f"<h2>Differences from the baseline {_e(baseline.get('model'))} / {_e(baseline.get('config'))}"
                   f" (mean of per-seed differences)</h2>"
                   + _html_table(list(DIFFERENCE_HEADERS), difference_rows(document))
                   + "".join(f'<p class="warning">warning: {_e(w)}</p>' for w in document.get("warnings", []))
                   ) if document.get("differences") else ""
    if document.get("judge"):
        differences += f"<h2>LLM judge of lesson quality</h2><p>{_e(judge_text(document['judge']))}</p>"
    differences += f'<h2>Learning curves (mean over seeds)</h2><div class="charts">{learning_curves(document)}</div>'

    agent_rows = [[row["id"], agent, *[fmt(figures.get(k)) for k in AGENT_COLUMNS]]
                  for row in document["cells"] for agent, figures in row.get("metrics", {}).get("agents", {}).items()]
    agent_table = _html_table(["cell", "agent", *AGENT_COLUMNS], agent_rows)
    config_rows = [[name, json.dumps(spec.get("agents", {})), json.dumps(spec.get("per_agent", {})),
                    spec.get("description", "")] for name, spec in matrix["configs"].items()]
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Comparison: {_e(document['experiment'])}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:2em;max-width:1300px;color:#222}}
table{{border-collapse:collapse;margin:1em 0;font-size:13px}}
th,td{{border:1px solid #ccc;padding:3px 7px;text-align:right}}
th:first-child,td:first-child{{text-align:left}} thead{{background:#f3f3f3}}
.charts{{display:flex;flex-wrap:wrap;gap:12px}} figure.chart{{margin:0;border:1px solid #eee;padding:6px}}
code{{background:#f6f6f6;padding:1px 4px}}
</style></head><body>
<h1>Comparison: {_e(document['experiment'])}</h1>
<p>{_e(document.get('description', ''))}</p>
<ul>
<li>scenario <code>{_e(document['scenario'])}</code>;
experiment file <code>{_e(document['experiment_file'])}</code></li>
<li>models {_e(', '.join(matrix['models']))}; seeds {_e(', '.join(map(str, matrix['seeds'])))};
sessions x turns {_e(matrix['sessions'] or 'scenario')} x {_e(matrix['turns'] or 'scenario')}</li>
<li>metrics embedder {_e(document['metrics_embedder'] or 'none')}; generated {_e(document['generated'])} on
{_e(document['machine']['platform'])} ({_e(document['machine']['cores'])} cores)</li>
</ul>
<h2>Memory configurations</h2>
{_html_table(["config", "merged into every agent", "per agent", "description"], config_rows)}
<h2>Plots (bar = mean over seeds, whisker = ±1 std, dots = seeds)</h2>
<div class="charts">{charts}</div>
<h2>Groups (mean ± sample std [95% bootstrap interval] over seeds)</h2>
{group_table}
{differences}
<h2>Cells</h2>
{cell_table}
<h2>Agents</h2>
{agent_table}
<p>Definitions of every metric: plans/metrics.md.</p>
</body></html>
"""


__all__ = ["CSV_COLUMNS", "render_html", "render_markdown", "write_reports"]
