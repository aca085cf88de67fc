"""A reader prompt: what the reader was shown, one question, how to answer, and the JSON reply's
shape; with the reply's model and how its answer is read back.

Two readers share it: the LoCoMo eval's answering model (evals/reader.py) and an agent's answer
step (agents/answer_step.py). A small model answers a question well when it sees the facts and
the question and nothing else (plans/ladder.md, "Answer step"), so the shape holds nothing more.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.providers import LLMResult


class ReaderAnswer(BaseModel):
    """The reply's shape: constrained decoding keeps a small model from echoing its prompt (Gemma 3
    270M repeats the prompt's first line when asked for free text)."""

    model_config = ConfigDict(extra="forbid")
    answer: str = Field(max_length=200, description="a short phrase, or Not mentioned in the conversation")


def reader_text(shown: str, question: str, instruction: str = "", placeholder: str | None = None) -> str:
    """The reader's user message: what it was shown, the question, then (if given) how to answer and
    the reply's shape. A small model copies a placeholder it is shown (``<value>``) as its answer, and
    answers "unknown" to everything when told how after the question: the answer step puts its
    instruction in the system message and leaves the shape to constrained decoding."""
    tail = [instruction] if instruction else []
    if placeholder is not None:
        tail.append(f'Reply as JSON: {{"answer": "<{placeholder}>"}}')
    return "\n".join([f"{shown}\n\nQuestion: {question}", *tail])


def reply_answer(reply: LLMResult) -> str:
    """The parsed answer, else the reply's first line without a leading "Answer:" echo."""
    if isinstance(reply.parsed, ReaderAnswer):
        return reply.parsed.answer.strip()
    return clean_answer(reply.text) if reply.ok else ""


def clean_answer(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return re.sub(r"^(short answer|answer)\s*:\s*", "", first, flags=re.IGNORECASE).strip()


__all__ = ["ReaderAnswer", "clean_answer", "reader_text", "reply_answer"]
