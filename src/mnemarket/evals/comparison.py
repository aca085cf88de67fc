"""LoCoMo's per-category table across a matrix of models x configs: the `locomo` part of an
experiment's comparison.json, and its comparison.md, .html and .csv (experiments/dataset_cells.py
builds the document from its cells).

A (model, config) group pools the question rows of its finished cells, over seeds and conversation
sets, and is scored as one eval (`outputs.results`): the means are over questions, as LoCoMo's
own table is, not means of cell means. Adversarial questions stay apart (abstention rate).

The memory effect is the ladder's (reports/ladder_results.py) on questions: per model and category,
the F1 of the `memory` config minus the `no_memory` config's (or the one rag config minus the one
no-memory config), paired by seed and question, its 95 % interval clustered by conversation (the
questions of one conversation share its world: plans/locomo-eval.md says why not by seed).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemarket.evals.outputs import ANSWERABLE, results, scored
from mnemarket.evals.reports import render
from mnemarket.reports import MEMORY_OFF, MEMORY_ON, MIN_SEEDS, EffectTable, MemoryEffect, clustered_mean
from mnemarket.run import write_atomic

GROUP_KEYS = ("questions", "scored", "f1", "em", "evidence_recall_at_10", "categories", "adversarial",
              "false_abstention_rate", "formation_rate", "judge", "mode", "tokens", "latency_s_p50", "search_ms_p50",
              "cost_usd", "failed_calls")
"""What a group keeps of `outputs.results` (the funnel and per-conversation figures stay in each cell)."""
TABLE_METRICS = (("f1", "F1"), ("em", "EM"), ("evidence_recall_at_10", "evidence recall@10"))
CSV_COLUMNS = ("experiment", "model", "config", "condition", "category", "n", "f1", "em", "evidence_recall_at_10")
OVERALL, ADVERSARIAL_ROW = "overall 1-4", "adversarial"
EFFECT_COLUMNS = (*ANSWERABLE, OVERALL, ADVERSARIAL_ROW)
"""The memory effect's columns: categories 1-4, their pool, and category 5 (its F1 is 1 for an abstention)."""


def group_summary(rows: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    """The pooled rows of one (model, config) group scored as one eval."""
    summary = results(rows, options)
    return {key: summary[key] for key in GROUP_KEYS}


def effect_configs(conditions: Mapping[str, str]) -> tuple[str, str] | None:
    """The (memory, no-memory) configs the effect pairs, from config name -> condition: those named
    `memory` and `no_memory`, else the only rag config and the only no-memory one; None otherwise."""
    if MEMORY_ON in conditions and MEMORY_OFF in conditions:
        return MEMORY_ON, MEMORY_OFF
    on = [name for name, condition in conditions.items() if condition == "rag"]
    off = [name for name, condition in conditions.items() if condition == "no-memory"]
    return (on[0], off[0]) if len(on) == len(off) == 1 else None


def memory_effect(on: list[dict[str, Any]], off: list[dict[str, Any]]) -> dict[str, MemoryEffect]:
    """Column -> on minus off F1 over the questions both answered (rows carry their cell's ``seed``),
    paired by (seed, question), the interval clustered by conversation (none below `MIN_SEEDS` of them)."""
    def keyed(rows: list[dict[str, Any]]) -> dict[tuple[int, str], dict[str, Any]]:
        return {(row["seed"], row["question_id"]): row for row in rows}

    with_memory, without = keyed(on), keyed(off)
    pairs = [(with_memory[key], without[key]) for key in sorted(set(with_memory) & set(without))]
    columns: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for a, b in pairs:
        if scored([a]):  # categories 1-4 with evidence, as the headline F1
            columns.setdefault(a["category_name"], []).append((a, b))
            columns.setdefault(OVERALL, []).append((a, b))
        elif a["category"] == 5:
            columns.setdefault(ADVERSARIAL_ROW, []).append((a, b))
    out: dict[str, MemoryEffect] = {}
    for column in EFFECT_COLUMNS:
        chosen = columns.get(column, [])
        if chosen:
            delta, ci = clustered_mean([a["f1"] - b["f1"] for a, b in chosen], [a["conversation"] for a, _ in chosen],
                                       bounds=(-1.0, 1.0))
            out[column] = MemoryEffect(delta=delta, ci=ci, n_pairs=len(chosen))
    return out


def effect_section(pooled: Mapping[tuple[str, str], list[dict[str, Any]]], models: list[str],
                   conditions: Mapping[str, str]) -> dict[str, Any]:
    """comparison.json's ``locomo.memory_effect`` (model -> column -> {delta, ci, n_pairs}, the ladder's
    shape) and ``locomo.memory_effect_configs`` (what was paired, how; None: no such pair of configs)."""
    pair = effect_configs(conditions)
    if pair is None:
        return {"memory_effect": {}, "memory_effect_configs": None}
    on, off = pair
    table: EffectTable = {}
    for model in models:
        effect = memory_effect(pooled.get((model, on), []), pooled.get((model, off), []))
        if effect:
            table[model] = effect
    return {"memory_effect": table,
            "memory_effect_configs": {"memory": on, "no_memory": off, "metric": "f1", "paired_by": "seed and question",
                                      "clustered_by": "conversation", "min_clusters_for_interval": MIN_SEEDS}}


def effect_text(effect: MemoryEffect | None) -> str:
    """``+0.123 [+0.05, +0.20] (n 40)``; the interval is n/a below `MIN_SEEDS` conversations."""
    if effect is None or effect["delta"] is None:
        return "–"
    ci = effect["ci"]
    interval = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "[n/a]"
    return f"{effect['delta']:+.3f} {interval} (n {effect['n_pairs']})"


def scored_groups(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The groups with at least one finished cell (the others have no figures yet)."""
    return [g for g in document["locomo"]["groups"] if "categories" in g]


def category_rows(group: dict[str, Any]) -> list[dict[str, Any]]:
    """(category, n, F1, EM, recall) of a group: categories 1-4, overall, then adversarial."""
    rows = [{"category": name, **group["categories"][name]} for name in ANSWERABLE]
    rows.append({"category": "overall 1-4", "n": group["scored"], "f1": group["f1"], "em": group["em"],
                 "evidence_recall_at_10": group["evidence_recall_at_10"]})
    adversarial = group["adversarial"]
    rows.append({"category": "adversarial (abstained)", "n": adversarial["n"], "f1": adversarial["f1"],
                 "em": adversarial["abstention_rate"], "evidence_recall_at_10": adversarial["evidence_recall_at_10"]})
    return rows


def comparison_csv(document: dict[str, Any]) -> str:
    """One row per group x category (the adversarial row's F1 and EM are its abstention rate)."""
    handle = io.StringIO()
    writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for group in scored_groups(document):
        for row in category_rows(group):
            writer.writerow({"experiment": document["experiment"], "model": group["model"],
                             "config": group["config"], "condition": group["condition"], **row})
    return handle.getvalue()


def _md_cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def comparison_markdown(document: dict[str, Any]) -> str:
    groups = scored_groups(document)
    lines = [f"# Comparison: {document['experiment']} (LoCoMo)", "", document.get("description") or "", "",
             f"- dataset: `{document['dataset']['data']}`, mode {document['dataset']['mode']}, conversation sets "
             f"{', '.join('+'.join(s) for s in document['matrix']['conversation_sets'])}",
             f"- generated {document['generated']} on {document['machine']['platform']} "
             f"({document['machine']['cores']} cores)", ""]
    for key, label in TABLE_METRICS:
        lines += [f"## {label} per category (pooled over seeds and conversations)", "",
                  "| model / config | " + " | ".join(f"{c}" for c in (*ANSWERABLE, "overall 1-4")) + " |",
                  "|---" * (len(ANSWERABLE) + 2) + "|"]
        for group in groups:
            values = [group["categories"][c][key] for c in ANSWERABLE] + [group[key]]
            lines.append(f"| {_md_cell(group['model'])} / {_md_cell(group['config'])} | "
                         + " | ".join(f"{v:.3f}" for v in values) + " |")
        lines.append("")
    lines += ["## Adversarial (category 5, apart)", "", "| model / config | n | abstained | false abstention 1-4 |",
              "|---|---|---|---|"]
    lines += [f"| {_md_cell(g['model'])} / {_md_cell(g['config'])} | {g['adversarial']['n']} | "
              f"{g['adversarial']['abstention_rate']:.3f} | {g['false_abstention_rate']:.3f} |" for g in groups]
    pair = document["locomo"].get("memory_effect_configs")
    if pair:
        lines += ["", f"## Memory effect: {_md_cell(pair['memory'])} minus {_md_cell(pair['no_memory'])} (F1, paired "
                  "by seed and question; 95 % interval clustered by conversation, n/a below "
                  f"{pair['min_clusters_for_interval']})",
                  "", "| model | " + " | ".join(EFFECT_COLUMNS) + " |", "|---" * (len(EFFECT_COLUMNS) + 1) + "|"]
        lines += [f"| {_md_cell(model)} | " + " | ".join(effect_text(effect.get(c)) for c in EFFECT_COLUMNS) + " |"
                  for model, effect in document["locomo"]["memory_effect"].items()]
    lines += ["", "## Cells", "", "| cell | status | questions | F1 1-4 | report |", "|---|---|---|---|---|"]
    for cell in document["cells"]:
        result = cell.get("results") or {}
        lines.append(f"| {_md_cell(cell['id'])} | {_md_cell(cell['status'])} | {result.get('questions', '–')} | "
                     f"{result.get('f1', '–')} | {cell.get('report') or '–'} |")
    return "\n".join(lines) + "\n"


def comparison_html(document: dict[str, Any]) -> str:
    return render("locomo_comparison.html.j2", document=document, answerable=ANSWERABLE, metrics=TABLE_METRICS,
                  effect_columns=EFFECT_COLUMNS, effect_text=effect_text,
                  groups=scored_groups(document),
                  pending=[g for g in document["locomo"]["groups"] if "categories" not in g])


def write_locomo_comparison(out_dir: Path, document: dict[str, Any]) -> Path:
    """comparison.json, .md, .html and .csv in ``out_dir``; returns the json path."""
    path = out_dir / "comparison.json"
    write_atomic(path, json.dumps(document, indent=2))
    write_atomic(out_dir / "comparison.md", comparison_markdown(document))
    write_atomic(out_dir / "comparison.html", comparison_html(document))
    write_atomic(out_dir / "comparison.csv", comparison_csv(document))
    return path


__all__ = ["CSV_COLUMNS", "EFFECT_COLUMNS", "category_rows", "comparison_csv", "comparison_html", "comparison_markdown",
           "effect_configs", "effect_section", "effect_text", "group_summary", "memory_effect", "scored_groups",
           "write_locomo_comparison"]
