"""An eval's outputs: results.json (the interface the checks read), questions.csv, report.html."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

from mnemarket.evals.locomo_data import CATEGORY_NAMES
from mnemarket.evals.reports import render

ANSWERABLE = tuple(CATEGORY_NAMES[c] for c in (4, 1, 2, 3))
"""Categories 1-4 in the order tables show them (single-hop first, as papers do)."""
CSV_COLUMNS = ("conversation", "question_id", "category", "category_name", "question", "answer", "gold", "f1", "em",
               "abstained", "evidence_ids", "retrieved_ids", "evidence_recall_at_10", "evidence_stored",
               "asked_after_session", "prompt_tokens", "completion_tokens", "latency_s", "search_ms", "cost_usd",
               "ok", "error")
"""One row per question asked; retrieved ids carry their rank (``1:D1:3 2:D4:5``)."""
GOOD_F1 = 0.5
"""An answer counts as right in the funnel at this F1 (the mean F1 is reported beside it)."""


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def scored(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the headline numbers cover: categories 1-4 with evidence."""
    return [r for r in rows if r["category"] != 5 and r["evidence_ids"]]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    recalls = [r["evidence_recall_at_10"] for r in rows if r["evidence_recall_at_10"] is not None]
    return {"n": len(rows), "f1": _mean([r["f1"] for r in rows]), "em": _mean([r["em"] for r in rows]),
            "evidence_recall_at_10": _mean(recalls)}


def funnel(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored -> shown -> answered, over the scored questions: where the answers were lost."""
    n = len(rows) or 1
    stored = [r for r in rows if (r["evidence_stored"] or 0) >= 1]
    shown = [r for r in rows if (r["evidence_recall_at_10"] or 0) > 0]
    right = [r for r in rows if r["f1"] >= GOOD_F1]
    right_shown = [r for r in shown if r["f1"] >= GOOD_F1]
    return [
        {"stage": "asked (categories 1-4 with evidence)", "n": len(rows), "share": 1.0 if rows else 0.0},
        {"stage": "all evidence turns stored", "n": len(stored), "share": round(len(stored) / n, 4)},
        {"stage": "some evidence turn in the prompt", "n": len(shown), "share": round(len(shown) / n, 4)},
        {"stage": f"answered (F1 >= {GOOD_F1})", "n": len(right), "share": round(len(right) / n, 4)},
        {"stage": f"answered when evidence was shown (F1 >= {GOOD_F1})", "n": len(right_shown),
         "share": round(len(right_shown) / (len(shown) or 1), 4)},
    ]


def results(rows: list[dict[str, Any]], options: dict[str, Any], seconds: float | None = None) -> dict[str, Any]:
    main = scored(rows)
    adversarial = [r for r in rows if r["category"] == 5]
    latencies = [r["latency_s"] for r in rows] or [0.0]
    searches = [r["search_ms"] for r in rows if r["search_ms"]] or [0.0]
    conversations = sorted({r["conversation"] for r in rows})
    return {
        "questions": len(rows), **{k: v for k, v in _summary(main).items() if k != "n"}, "scored": len(main),
        "categories": {name: _summary([r for r in main if r["category_name"] == name]) for name in ANSWERABLE},
        "adversarial": {"n": len(adversarial), "f1": _mean([r["f1"] for r in adversarial]),
                        "abstention_rate": _mean([float(r["abstained"]) for r in adversarial]),
                        "evidence_recall_at_10": _summary(adversarial)["evidence_recall_at_10"]},
        "false_abstention_rate": _mean([float(r["abstained"]) for r in main]),
        "funnel": funnel(main),
        "per_conversation": {c: _summary([r for r in main if r["conversation"] == c]) for c in conversations},
        "tokens": {"prompt": sum(r["prompt_tokens"] for r in rows),
                   "completion": sum(r["completion_tokens"] for r in rows)},
        "latency_s_p50": round(statistics.median(latencies), 4),
        "search_ms_p50": round(statistics.median(searches), 3),
        "cost_usd": round(sum(r["cost_usd"] for r in rows), 6),
        "failed_calls": sum(not r["ok"] for r in rows),
        "seconds": seconds,
        "model": options["model"], "mode": options["mode"], "condition": options["condition"],
        "conversations": conversations, "options": options,
    }


def _csv_value(row: dict[str, Any], column: str) -> Any:
    value = row[column]
    if column == "retrieved_ids":
        return " ".join(f"{rank}:{i}" for rank, i in enumerate(value, 1))
    if column == "evidence_ids":
        return " ".join(value)
    return "" if value is None else value


def write_outputs(out: Path, rows: list[dict[str, Any]], options: dict[str, Any],
                  seconds: float | None = None) -> dict[str, Any]:
    summary = results(rows, options, seconds)
    (out / "results.json").write_text(json.dumps(summary, indent=2))
    with (out / "questions.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(CSV_COLUMNS)
        for row in rows:
            writer.writerow([_csv_value(row, c) for c in CSV_COLUMNS])
    (out / "report.html").write_text(render("locomo.html.j2", summary=summary, answerable=ANSWERABLE))
    return summary


def category_table(summary: dict[str, Any]) -> list[tuple[str, int, float, float, float]]:
    """(category, n, F1, EM, evidence recall@10) rows, the overall and adversarial rows last."""
    rows = [(name, s["n"], s["f1"], s["em"], s["evidence_recall_at_10"])
            for name, s in summary["categories"].items()]
    rows.append(("overall 1-4", summary["scored"], summary["f1"], summary["em"], summary["evidence_recall_at_10"]))
    adv = summary["adversarial"]
    rows.append(("adversarial (abstained)", adv["n"], adv["f1"], adv["abstention_rate"], adv["evidence_recall_at_10"]))
    return rows


__all__ = ["CSV_COLUMNS", "category_table", "funnel", "results", "scored", "write_outputs"]
