"""What the answering model is shown for one question, per condition, and the extractive reference.

One prompt for every category (the reader is never told which questions are adversarial): the
memories shown, the question, and the instruction to answer in a short phrase or say
"Not mentioned in the conversation" (the phrase LoCoMo's category-5 scoring looks for). Its shape
and the reply's model are the agents' reader prompt (agents/reader_prompt.py), which an agent's
answer step uses too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from mnemarket.agents import ReaderAnswer, clean_answer, reader_text, reply_answer
from mnemarket.evals.locomo_data import Conversation, Turn
from mnemarket.evals.scoring import ABSTAIN_ANSWER
from mnemarket.providers import DEFAULT_MAX_TOKENS, LLM, LLMResult, MessagesLike, Usage, as_messages

Condition = Literal["rag", "oracle-evidence", "no-memory", "full-context"]
CONDITIONS: tuple[str, ...] = ("rag", "oracle-evidence", "no-memory", "full-context")
EXTRACTIVE = "extractive"
ANSWER_TOKENS = 64
"""A short phrase in its JSON wrapper; a longer reply is cut (its F1 would be low anyway)."""
CHARS_PER_TOKEN = 4
"""Estimate for the full-context window check (the model's own count is taken when it answers)."""
MEMORY_LINE = re.compile(r"^\[(?P<dia_id>[^\]|]+)\|[^\]]*\] (?P<text>.*)$")
#: The LoCoMo reader's system message (it names the conversation's speakers and the memory line's shape;
#: the answer step's, agents.answer_step.ANSWER_STEP_SYSTEM, has no conversation). Keep it byte-identical:
#: the LoCoMo figures were measured with it and recordings replay by the prompt's hash.
CONVERSATION_READER_SYSTEM = ("You answer questions about a long conversation between {a} and {b}, from what you remember of it. "
                              "Each memory is one line: [turn id | session, date] speaker: words.")


@dataclass(frozen=True)
class Shown:
    """The records a question's prompt holds, in prompt order (rank order for rag)."""

    turns: list[Turn]

    @property
    def ids(self) -> list[str]:
        return [t.dia_id for t in self.turns]


def memory_line(turn: Turn) -> str:
    return f"[{turn.dia_id} | session {turn.session}, {turn.date}] {turn.text}"


def conversation_prompt(conv: Conversation, system: str, user: str, **fields: object) -> list[dict[str, str]]:
    """The messages of a prompt about ``conv`` (answering, observing): ``system`` with the speakers
    (``{a}``, ``{b}``) and ``fields`` filled in, then ``user``."""
    a, b = conv.speakers
    return [{"role": "system", "content": system.format(a=a, b=b, **fields)}, {"role": "user", "content": user}]


def messages_for(conv: Conversation, question: str, shown: Shown, condition: str) -> list[dict[str, str]]:
    if condition == "no-memory":
        memories = "(you remember nothing of the conversation)"
    else:
        order = "in the order they were said" if condition == "full-context" else "most relevant first"
        memories = f"Memories ({order}):\n" + "\n".join(memory_line(t) for t in shown.turns)
    user = reader_text(memories, question,
                       "Answer with a short phrase, using the exact words of the memories where you can. For a "
                       "'when' question give the date, worked out from the memory's date if the words say "
                       f"'yesterday' or 'last week'. If the memories do not say, answer exactly: {ABSTAIN_ANSWER}.",
                       "short phrase")
    return conversation_prompt(conv, CONVERSATION_READER_SYSTEM, user)


def estimated_tokens(messages: Sequence[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN


class ExtractiveReader(LLM):
    """The deterministic reference reader: answers with the words of the first memory in its prompt
    (the best retrieved record under rag), without the speaker; with none shown it abstains.

    Not a test double: a lower bound any model should beat, and the one reader whose numbers
    depend on retrieval alone."""

    model_id = "extractive:best-record"
    billing = "free"

    def generate(self, messages: MessagesLike, *, schema: type[BaseModel] | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, temperature: float = 0.0, seed: int | None = None) -> LLMResult:
        start = time.perf_counter()
        prompt = as_messages(messages)[-1].content
        answer = ABSTAIN_ANSWER
        for line in prompt.splitlines():
            match = MEMORY_LINE.match(line)
            if match:
                answer = match["text"].split(": ", 1)[-1]
                break
        words = len(prompt.split())
        return LLMResult(text=answer, usage=Usage(prompt_tokens=words, completion_tokens=len(answer.split())),
                         latency=time.perf_counter() - start, model_id=self.model_id)


__all__ = ["ANSWER_TOKENS", "CONDITIONS", "CONVERSATION_READER_SYSTEM", "EXTRACTIVE", "Condition", "ExtractiveReader",
           "ReaderAnswer", "Shown", "clean_answer", "conversation_prompt", "reply_answer",
           "estimated_tokens", "memory_line", "messages_for"]
