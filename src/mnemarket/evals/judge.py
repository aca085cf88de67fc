"""An optional LLM judge of LoCoMo answers (`--judge MODEL`), recorded so a re-run replays it.

The prompt is the one mem0's evaluation made the field's default (CORRECT / WRONG given the
question and the gold answer, generous on wording and date formats), with the reply constrained
to JSON. Adversarial questions (category 5) are not judged: their gold is the answer the
question baits, and they are scored by abstention.

Every verdict is appended to ``OUT/judge.jsonl`` before its row, keyed by the question id and a
hash of the whole call (`providers.record_replay.llm_prompt_hash`: prompt, schema, parameters).
A re-run finds its verdicts there and calls no model; ``--judge replay:PATH`` serves verdicts
from another eval's ``judge.jsonl`` and never calls a model (an answer that differs from the
recorded one has no verdict and is counted as a judge failure, with the reason). Keys, not call
order: a killed eval asks a question again, and its judge call must not shift every later one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.evals import append_log
from mnemarket.evals.locomo_data import Question
from mnemarket.providers import LLM, llm_prompt_hash, make_llm

JUDGE_FILE = "judge.jsonl"
REPLAY = "replay:"
JUDGE_TOKENS = 160
JUDGE_PROMPT = """Your task is to label an answer to a question as "CORRECT" or "WRONG". You will be given
(1) a question (posed by one user to another user), (2) a "gold" (ground truth) answer, and (3) a
generated answer, which you will score as CORRECT or WRONG.

The point of the question is to ask about something one user should know about the other user
based on their prior conversations. The gold answer will usually be a concise and short answer
that includes the referenced topic. The generated answer might be much longer, but be generous
with your grading: as long as it touches on the same topic as the gold answer, it is CORRECT.
For time-related questions the gold answer will be a specific date, month or year. The generated
answer might use another format or relative references ("last Tuesday"); as long as it refers to
the same date or time period as the gold answer, it is CORRECT.

Question: {question}
Gold answer: {gold}
Generated answer: {answer}

Give a one-sentence reason, then the label."""


class JudgeVerdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field("", max_length=300)
    label: Literal["CORRECT", "WRONG"]


class AnswerJudge:
    """Judges one answer at a time; ``llm`` overrides the model ``spec`` names (tests pass an
    explicit double here; the command line never does)."""

    def __init__(self, spec: str, out: Path, llm: LLM | None = None, *, seed: int = 0):
        self.spec = spec
        self.path = out / JUDGE_FILE
        self.seed = seed
        append_log.repair_tail(self.path)
        source = Path(spec[len(REPLAY):]) if spec.startswith(REPLAY) else None
        self.replayed = {} if source is None else _verdicts(source)
        self.recorded = _verdicts(self.path)
        self.llm = llm if llm is not None or source is not None else make_llm(spec)

    def judge(self, question: Question, answer: str) -> dict[str, Any]:
        """``{"judge_correct": bool | None, "judge_reason": str}``; None: not judged (adversarial)
        or the judge failed (the reason says why)."""
        if question.adversarial:
            return {"judge_correct": None, "judge_reason": "adversarial: scored by abstention"}
        messages = [{"role": "user", "content": JUDGE_PROMPT.format(question=question.question, gold=question.answer,
                                                                     answer=answer or "(no answer)")}]
        key = f"{question.qid}:{llm_prompt_hash(messages, JudgeVerdict, JUDGE_TOKENS, 0.0, self.seed)}"
        entry = self.recorded.get(key) or self.replayed.get(key)
        if entry is None:
            entry = self._call(key, messages)
        if key not in self.recorded:
            append_log.append(self.path, entry)
            self.recorded[key] = entry
        label = entry.get("label")
        return {"judge_correct": None if label is None else label == "CORRECT",
                "judge_reason": entry.get("reason") or entry.get("error", "")}

    def _call(self, key: str, messages: list[dict[str, str]]) -> dict[str, Any]:
        if self.llm is None:
            return {"key": key, "model": self.spec, "label": None,
                    "error": f"no verdict for this answer in {self.spec[len(REPLAY):]} (the answer or question differs "
                             "from the recorded eval's)"}
        reply = self.llm.generate(messages, schema=JudgeVerdict, max_tokens=JUDGE_TOKENS, temperature=0.0,
                                  seed=self.seed)
        verdict = reply.parsed if isinstance(reply.parsed, JudgeVerdict) else None
        return {"key": key, "model": reply.model_id, "label": verdict.label if verdict else None,
                "reason": verdict.reason if verdict else "", "error": "" if verdict else (reply.error or "no verdict"),
                "prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens,
                "latency_s": round(reply.latency, 4), "cost_usd": reply.cost}


def _verdicts(path: Path) -> dict[str, dict[str, Any]]:
    """Recorded verdicts by key (a failed call is not kept: it is asked again)."""
    return {e["key"]: e for e in append_log.read(path) if "key" in e and e.get("label") is not None}


__all__ = ["JUDGE_FILE", "JUDGE_PROMPT", "AnswerJudge", "JudgeVerdict"]
