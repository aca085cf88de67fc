"""`--judge MODEL`: a recorded LLM judge of the answers, replayed without the model."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from mnemarket.errors import ConfigError
from mnemarket.evals.judge import JUDGE_FILE, JudgeVerdict
from mnemarket.evals.locomo_run import LocomoOptions, read_rows, run_locomo
from mnemarket.evals.outputs import write_outputs
from mnemarket.evals.scoring import normalize_answer
from mnemarket.providers import make_llm
from tests.unit.evals.locomo_fixture import write_conversation

SPEC = "scripted:gold-words"


def gold_words_rule(gold: str, answer: str) -> bool:
    """The scripted judge's rule: correct when the answer holds every normalised word of the gold."""
    return set(normalize_answer(gold).split()) <= set(normalize_answer(answer).split())


class CountingJudge:
    """A scripted judge (an explicit double) that reads the prompt it is given and counts its calls."""

    def __init__(self, fail: bool = False):
        self.calls = 0
        self.fail = fail
        self.llm = make_llm("scripted", policy=self.policy)

    def policy(self, messages, schema):
        assert schema is JudgeVerdict
        self.calls += 1
        if self.fail:
            raise AssertionError("the judge model was called; the recorded verdicts should have served")
        prompt = messages[-1].content
        gold = re.search(r"^Gold answer: (.*)$", prompt, re.M)[1]
        answer = re.search(r"^Generated answer: (.*)$", prompt, re.M)[1]
        return {"reason": "word check", "label": "CORRECT" if gold_words_rule(gold, answer) else "WRONG"}


def judged(tmp_path: Path, out: str, judge: CountingJudge | None, spec: str = SPEC, **options) -> tuple[Path, list, dict]:
    data = write_conversation(tmp_path / "data")
    opts = LocomoOptions(data=str(data), embedder="hashing", judge=spec, **options)
    rows = run_locomo(opts, tmp_path / out, judge_llm=judge.llm if judge else None)
    return tmp_path / out, rows, write_outputs(tmp_path / out, rows, opts.model_dump())


def test_the_judge_labels_each_answer_and_results_carry_its_accuracy(tmp_path):
    judge = CountingJudge()
    out, rows, summary = judged(tmp_path, "j", judge, condition="oracle-evidence")
    answerable = [r for r in rows if r["category"] != 5]
    assert judge.calls == len(answerable) == 6
    for row in answerable:
        assert row["judge_correct"] == gold_words_rule(row["gold"], row["answer"])
    assert [r["judge_correct"] for r in rows if r["category"] == 5] == [None]  # scored by abstention instead
    verdicts = [r["judge_correct"] for r in answerable]
    assert 0 < sum(verdicts) < 6  # the rule both passes and fails answers here
    assert summary["judge"]["model"] == SPEC and summary["judge"]["n"] == 6 and summary["judge"]["failures"] == 0
    assert summary["judge"]["accuracy"] == round(sum(verdicts) / 6, 4)
    single = [r["judge_correct"] for r in answerable if r["category_name"] == "single-hop"]
    assert summary["judge"]["categories"]["single-hop"] == {"accuracy": round(sum(single) / len(single), 4),
                                                            "n": len(single), "failures": 0}
    with (out / "questions.csv").open() as fh:
        column = [row["judge_correct"] for row in csv.DictReader(fh)]
    assert column == ["" if r["judge_correct"] is None else str(r["judge_correct"]) for r in rows]
    assert summary["funnel"][-1]["stage"] == "used: judged correct (evidence in the prompt)"
    assert summary["funnel"][-1]["n"] == sum(bool(r["judge_correct"]) for r in answerable if r["evidence_recall_at_10"])
    assert "LLM judge" in (out / "report.html").read_text()


def test_recorded_verdicts_replay_without_the_model(tmp_path):
    out, rows, summary = judged(tmp_path, "first", CountingJudge(), condition="oracle-evidence")
    recorded = {r["question_id"]: r["judge_correct"] for r in rows}
    # another eval replays the first one's judge.jsonl: no model is made or called
    _, replayed, replay_summary = judged(tmp_path, "second", None, spec=f"replay:{out / JUDGE_FILE}",
                                        condition="oracle-evidence")
    assert {r["question_id"]: r["judge_correct"] for r in replayed} == recorded
    assert replay_summary["judge"]["accuracy"] == summary["judge"]["accuracy"]
    # the same eval re-asked (its rows lost) finds its own verdicts: a judge that fails if called is never called
    (out / "rows.jsonl").unlink()
    failing = CountingJudge(fail=True)
    _, again, _ = judged(tmp_path, "first", failing, condition="oracle-evidence")
    assert failing.calls == 0 and {r["question_id"]: r["judge_correct"] for r in again} == recorded
    lines = [json.loads(line) for line in (out / JUDGE_FILE).read_text().splitlines()]
    assert len(lines) == 6 and len({line["key"] for line in lines}) == 6  # served, not recorded twice


def test_a_replay_without_the_answers_verdict_is_a_judge_failure_with_its_reason(tmp_path):
    out, _, _ = judged(tmp_path, "first", CountingJudge(), condition="oracle-evidence")
    _, rows, summary = judged(tmp_path, "other", None, spec=f"replay:{out / JUDGE_FILE}", condition="no-memory")
    answerable = [r for r in rows if r["category"] != 5]
    assert all(r["judge_correct"] is None and "no verdict" in r["judge_reason"] for r in answerable)
    assert summary["judge"]["n"] == 0 and summary["judge"]["failures"] == 6
    assert read_rows(tmp_path / "other") == rows


def test_an_unknown_judge_model_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ConfigError):
        judged(tmp_path, "bad", None, spec="no-such-provider:x")
    assert not (tmp_path / "bad").exists()
