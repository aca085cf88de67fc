"""LoCoMo's per-category table across a matrix of models x configs: the `locomo` part of an
experiment's comparison.json, and its comparison.md, .html and .csv (experiments/dataset_cells.py
builds the document from its cells).

A (model, config) group pools the question rows of its finished cells, over seeds and conversation
sets, and is scored as one eval (`outputs.results`): the means are over questions, as LoCoMo's
own table is, not means of cell means. Adversarial questions stay apart (abstention rate).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemarket.evals.outputs import ANSWERABLE, results
from mnemarket.evals.reports import render
from mnemarket.run import write_atomic

GROUP_KEYS = ("questions", "scored", "f1", "em", "evidence_recall_at_10", "categories", "adversarial",
              "false_abstention_rate", "formation_rate", "judge", "mode", "tokens", "latency_s_p50", "search_ms_p50",
              "cost_usd", "failed_calls")
"""What a group keeps of `outputs.results` (the funnel and per-conversation figures stay in each cell)."""
TABLE_METRICS = (("f1", "F1"), ("em", "EM"), ("evidence_recall_at_10", "evidence recall@10"))
CSV_COLUMNS = ("experiment", "model", "config", "condition", "category", "n", "f1", "em", "evidence_recall_at_10")


def group_summary(rows: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    """The pooled rows of one (model, config) group scored as one eval."""
    summary = results(rows, options)
    return {key: summary[key] for key in GROUP_KEYS}


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
    lines += ["", "## Cells", "", "| cell | status | questions | F1 1-4 | report |", "|---|---|---|---|---|"]
    for cell in document["cells"]:
        result = cell.get("results") or {}
        lines.append(f"| {_md_cell(cell['id'])} | {_md_cell(cell['status'])} | {result.get('questions', '–')} | "
                     f"{result.get('f1', '–')} | {cell.get('report') or '–'} |")
    return "\n".join(lines) + "\n"


def comparison_html(document: dict[str, Any]) -> str:
    return render("locomo_comparison.html.j2", document=document, answerable=ANSWERABLE, metrics=TABLE_METRICS,
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


__all__ = ["CSV_COLUMNS", "category_rows", "comparison_csv", "comparison_html", "comparison_markdown", "group_summary",
           "scored_groups", "write_locomo_comparison"]
