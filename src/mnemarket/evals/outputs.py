"""An eval's outputs: results.json (the interface the checks read), questions.csv, report.html."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

from mnemarket.evals.formation import COVERS_AT
from mnemarket.evals.locomo_data import CATEGORY_NAMES
from mnemarket.evals.observe import read_notes
from mnemarket.evals.reports import render

ANSWERABLE = tuple(CATEGORY_NAMES[c] for c in (4, 1, 2, 3))
"""Categories 1-4 in the order tables show them (single-hop first, as papers do)."""
CSV_COLUMNS = ("conversation", "question_id", "category", "category_name", "question", "answer", "gold", "f1", "em",
               "judge_correct", "abstained", "evidence_ids", "retrieved_ids", "evidence_recall_at_10", "stored",
               "asked_after_session", "prompt_tokens", "completion_tokens", "latency_s", "search_ms", "cost_usd",
               "ok", "error")
"""One row per question asked; retrieved ids carry their rank (``1:D1:3 2:D4:5``); ``stored`` is the
share of the question's evidence turns in the store (observe mode: by the formation rule);
``judge_correct`` is empty without ``--judge`` and for adversarial questions."""
ROW_KEYS = {"stored": "evidence_stored"}
"""CSV columns read from a row key of another name."""
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
    """Formed -> retrieved -> used, over the scored questions: where the answers were lost. Each
    stage holds the questions of the one before (a turn in the prompt is a turn in the store)."""
    n = len(rows) or 1
    formed = [r for r in rows if (r["evidence_stored"] or 0) > 0]
    retrieved = [r for r in formed if (r["evidence_recall_at_10"] or 0) > 0]
    used = [r for r in retrieved if r["f1"] >= GOOD_F1]
    stages = [
        {"stage": "asked (categories 1-4 with evidence)", "n": len(rows), "share": 1.0 if rows else 0.0},
        {"stage": "formed: some evidence turn stored", "n": len(formed), "share": round(len(formed) / n, 4)},
        {"stage": "retrieved: some evidence turn in the prompt", "n": len(retrieved),
         "share": round(len(retrieved) / n, 4)},
        {"stage": f"used: answered from it (F1 >= {GOOD_F1})", "n": len(used), "share": round(len(used) / n, 4)},
    ]
    if any(r.get("judge_correct") is not None for r in rows):
        judged = [r for r in retrieved if r.get("judge_correct")]
        stages.append({"stage": "used: judged correct (evidence in the prompt)", "n": len(judged),
                       "share": round(len(judged) / n, 4)})
    return stages


def judge_summary(rows: list[dict[str, Any]], model: str | None) -> dict[str, Any] | None:
    """The judge's accuracy over the scored questions it gave a verdict on, overall and per category."""
    if not model:
        return None

    def accuracy(subset: list[dict[str, Any]]) -> dict[str, Any]:
        verdicts = [r["judge_correct"] for r in subset if r.get("judge_correct") is not None]
        return {"accuracy": _mean([float(v) for v in verdicts]), "n": len(verdicts),
                "failures": len(subset) - len(verdicts)}

    return {"model": model, **accuracy(rows),
            "categories": {name: accuracy([r for r in rows if r["category_name"] == name]) for name in ANSWERABLE}}


def storage(notes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Observe mode: what the reader chose to store, what it paid, what its choosing cost."""
    if not notes:
        return None
    budgets: dict[str, int] = {}
    for line in sorted(notes, key=lambda e: (e["conversation"], _batch_order(e["batch"]))):
        budgets.setdefault(line["conversation"], line["balance"])
    return {"batches": len(notes), "notes": sum(len(e["notes"]) for e in notes),
            "records_added": sum(e["added"] for e in notes), "adds_refused": sum(e["failed"] for e in notes),
            "scrip_spent": sum(e["scrip_spent"] for e in notes), "budget": sum(budgets.values()),
            "budget_per_conversation": budgets,
            "prompt_tokens": sum(e["prompt_tokens"] for e in notes),
            "completion_tokens": sum(e["completion_tokens"] for e in notes),
            "latency_s": round(sum(e["latency_s"] for e in notes), 3),
            "cost_usd": round(sum(e["cost_usd"] for e in notes), 6), "failed_calls": sum(not e["ok"] for e in notes)}


def _batch_order(key: str) -> tuple[int, int]:
    session, index = key.split(":")
    return int(session), int(index)


def results(rows: list[dict[str, Any]], options: dict[str, Any], seconds: float | None = None,
            notes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The summary; ``notes`` are observe mode's batch lines (`observe.read_notes`)."""
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
        "formation_rate": _mean([r["evidence_stored"] or 0.0 for r in main]),
        "formation_rule": (f"a record holds >= {COVERS_AT} of the evidence turn's content tokens"
                           if options.get("mode") == "observe" else "the evidence turn is a record"),
        "storage": storage(notes or []),
        "judge": judge_summary(main, options.get("judge")),
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
    value = row.get(ROW_KEYS.get(column, column))
    if column == "retrieved_ids":
        return " ".join(f"{rank}:{i}" for rank, i in enumerate(value or [], 1))
    if column == "evidence_ids":
        return " ".join(value or [])
    return "" if value is None else value


def write_outputs(out: Path, rows: list[dict[str, Any]], options: dict[str, Any],
                  seconds: float | None = None) -> dict[str, Any]:
    summary = results(rows, options, seconds, read_notes(out))
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


__all__ = ["CSV_COLUMNS", "category_table", "funnel", "judge_summary", "results", "scored", "storage",
           "write_outputs"]
