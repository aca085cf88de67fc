"""An optional LLM judge of lesson quality (off by default): a fixed rubric through any provider.

The automatic metrics judge a lesson by its surface (named items, outcome words, near-duplicates).
A judge model reads it as a person would and rates it on three fixed criteria, 1-5 each. Every
call is recorded (`judge_calls.jsonl` in the experiment directory), so `judge: replay:PATH`
reproduces the ratings without the model. Its agreement with the automatic metrics (rank
correlation with specificity, mean rating of generic against specific lessons) is reported beside
them, so a reader can see whether the cheap metrics track what the judge sees.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from mnemarket.providers import LLM, Message, Recording, RecordingLLM, make_llm
from mnemarket.reports import Agreement, CellResult, LessonVerdict

RUBRIC = """You rate lessons that agents in a small market economy wrote for their future selves.
Rate the lesson on three criteria, each from 1 (not at all) to 5 (fully):
- specific: it names the artifact, method, number or condition it is about;
- actionable: it says what to do (or avoid) next time;
- grounded: it states an outcome that could have happened in such an economy, not filler or a
  copy of instructions.
Reply with JSON only."""
MAX_LESSONS_PER_CELL = 40
"""Lessons rated per cell (the first ones stored): bounds the judge's cost on a long run."""


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    specific: int = Field(ge=1, le=5)
    actionable: int = Field(ge=1, le=5)
    grounded: int = Field(ge=1, le=5)
    reason: str = Field("", max_length=160)

    def score(self) -> float:
        """The mean rating mapped to 0..1."""
        return round((self.specific + self.actionable + self.grounded - 3) / 12, 3)


def make_judge(spec: str, out_dir: Path) -> LLM:
    """The judge model named by ``spec``, recording every call to ``out_dir/judge_calls.jsonl``
    (a `replay:` judge is served from its recording and not recorded again)."""
    llm = make_llm(spec)
    if spec.startswith("replay:"):
        return llm
    return RecordingLLM(llm, Recording(out_dir / "judge_calls.jsonl"))


def rate_lessons(judge: LLM, cells: list[CellResult], *, seed: int = 0) -> None:
    """Add `judge` (a verdict dict with `score`, or `error`) to every lesson of every finished cell,
    in cell order, one call at a time (a replayed judge serves calls in the order recorded)."""
    async def rate(text: str, index: int) -> LessonVerdict:
        messages = [Message(role="system", content=RUBRIC), Message(role="user", content=f"Lesson: {text}")]
        result = await judge.agenerate(messages, schema=Verdict, max_tokens=96, temperature=0.0, seed=seed + index)
        verdict = result.parsed
        if not result.ok or not isinstance(verdict, Verdict):
            return {"error": result.error or "no verdict"}
        return {"specific": verdict.specific, "actionable": verdict.actionable, "grounded": verdict.grounded,
                "reason": verdict.reason, "score": verdict.score()}

    index = 0
    for cell in cells:
        for lesson in cell.get("metrics", {}).get("lessons", [])[:MAX_LESSONS_PER_CELL]:
            lesson["judge"] = asyncio.run(rate(lesson["text"], index))
            index += 1


def agreement(cells: list[CellResult]) -> Agreement:
    """How the judge's scores line up with the automatic metrics over every rated lesson."""
    rated = [lesson for cell in cells for lesson in cell.get("metrics", {}).get("lessons", [])
             if "score" in lesson.get("judge", {})]
    scores = np.array([lesson["judge"]["score"] for lesson in rated], dtype=float)
    specificity = np.array([len(lesson["specific_items"]) for lesson in rated], dtype=float)
    generic = np.array([lesson["generic"] for lesson in rated], dtype=bool)
    failed = sum(1 for cell in cells for lesson in cell.get("metrics", {}).get("lessons", [])
                 if "error" in lesson.get("judge", {}))
    return {
        "lessons_rated": len(rated), "judge_failures": failed,
        "judge_score_mean": round(float(scores.mean()), 3) if len(rated) else None,
        "spearman_with_specificity": _spearman(scores, specificity),
        "score_generic_mean": round(float(scores[generic].mean()), 3) if generic.any() else None,
        "score_specific_mean": round(float(scores[~generic].mean()), 3) if (~generic).any() else None,
    }


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None  # undefined when either side is constant
    from scipy.stats import spearmanr

    return round(float(spearmanr(a, b).statistic), 3)


__all__ = ["MAX_LESSONS_PER_CELL", "RUBRIC", "Verdict", "agreement", "make_judge", "rate_lessons"]
