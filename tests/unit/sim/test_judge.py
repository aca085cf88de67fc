"""The optional LLM judge: rubric verdicts per lesson, agreement with the metrics, record and replay."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import yaml

from mnemarket.experiments.experiment import run_experiment
from mnemarket.experiments.judge import Verdict, agreement, rate_lessons
from mnemarket.providers import ScriptedLLM

ROOT = Path(__file__).resolve().parents[3]


def lesson(text: str, items: int, generic: bool) -> dict:
    return {"text": text, "specific_items": [f"id:{i}" for i in range(items)], "generic": generic}


def test_verdicts_land_on_each_lesson_and_agreement_is_measured():
    def judge(messages, schema):
        assert schema is Verdict and "fixed" not in messages[1].content
        named = len(re.findall(r"\w+_\w+", messages[1].content))  # a judge that counts named things
        return {"specific": min(5, 1 + 2 * named), "actionable": 3, "grounded": 3 if named else 1, "reason": "r"}
    cells = [{"metrics": {"lessons": [lesson("LESSON: genesis_escrow deposit needs authorized_writer", 2, False),
                                      lesson("LESSON: it went fine", 0, True),
                                      lesson("LESSON: alpha_longterm has the vault_code", 2, False)]}},
             {"metrics": {"lessons": [lesson("STRATEGY: be nice", 0, True)]}}]
    rate_lessons(ScriptedLLM(judge), cells)
    verdicts = [x["judge"] for c in cells for x in c["metrics"]["lessons"]]
    assert [v["specific"] for v in verdicts] == [5, 1, 5, 1] and all(0 <= v["score"] <= 1 for v in verdicts)
    report = agreement(cells)
    assert report["lessons_rated"] == 4 and report["judge_failures"] == 0
    assert report["spearman_with_specificity"] > 0.8
    assert report["score_generic_mean"] < report["score_specific_mean"]


def test_an_unusable_verdict_is_recorded_as_a_failure():
    cells = [{"metrics": {"lessons": [lesson("LESSON: x", 0, True)]}}]
    rate_lessons(ScriptedLLM(lambda m, s: {"specific": 9}, repair=False), cells)
    assert "error" in cells[0]["metrics"]["lessons"][0]["judge"]
    assert agreement(cells) == {"lessons_rated": 0, "judge_failures": 1, "judge_score_mean": None,
                                     "spearman_with_specificity": None, "score_generic_mean": None,
                                     "score_specific_mean": None}


def _experiment(tmp_path: Path, judge: str) -> Path:
    path = tmp_path / f"exp_{judge.split(':')[0]}.yaml"
    path.write_text(yaml.safe_dump({
        "name": "judged", "scenario": str(ROOT / "config" / "demo.yaml"), "models": ["scripted"], "seeds": [1],
        "judge": judge, "metrics_embedder": None}))
    return path


def test_an_experiment_judge_is_recorded_and_replays_to_the_same_scores(tmp_path):
    out = tmp_path / "out"
    first = json.loads(run_experiment(_experiment(tmp_path, "random"), out).read_text())
    lessons = first["cells"][0]["metrics"]["lessons"]
    assert first["judge"]["model"] == "random" and first["judge"]["lessons_rated"] == len(lessons) > 0
    calls = out / "judge_calls.jsonl"
    assert len(calls.read_text().splitlines()) == len(lessons)
    with (out / "lessons.csv").open() as handle:
        scores = [row["judge_score"] for row in csv.DictReader(handle)]
    assert scores == [str(x["judge"]["score"]) for x in lessons]
    replayed_calls = tmp_path / "recorded.jsonl"
    replayed_calls.write_text(calls.read_text())
    again = json.loads(run_experiment(_experiment(tmp_path, f"replay:{replayed_calls}"), out, only_report=True)
                       .read_text())
    assert [x["judge"] for x in again["cells"][0]["metrics"]["lessons"]] == [x["judge"] for x in lessons]
    assert "LLM judge of lesson quality" in (out / "comparison.md").read_text()
