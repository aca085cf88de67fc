"""The answer step: the answer of an answer-bounty claim written by a second, short model call.

The decision is made as always (the model picks the action and the bounty through its reply
schema). When it claims an answer bounty, a reader prompt (agents/reader_prompt.py, the shape the
LoCoMo reader uses) asks for the value alone, or "unknown": the bounty's question and what of the
turn's prompt carries facts (the memories retrieved, the working memory's entries, the last
action's result), never the menus, rules, balances or the reward. A small model copies the
reward line ("10 scrip") when it answers inside the whole turn prompt, and reads the value when
it sees the facts and the question alone (plans/ladder.md, "Answer step").

The reader sees nothing the turn's prompt did not show: each part is taken from the assembled
context as it was sent (cut or dropped by the budget as there), so with RAG off and short-term
history cleared ("memory off") it holds the question and this session's own results only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from pydantic import Field, create_model

from mnemarket.agents.config import AgentConfig
from mnemarket.agents.decision import Decision
from mnemarket.agents.prompt_sections import as_data
from mnemarket.agents.reader_prompt import ReaderAnswer, reader_text
from mnemarket.agents.sampling import ANSWER_STEP, call_seed
from mnemarket.agents.turn import AnswerTrace, TurnPlan
from mnemarket.genesis import BOUNTY_ID, UNKNOWN, Bounty
from mnemarket.kernel import Event
from mnemarket.providers import LLM, LLMResult, Message, labelled

READER_SYSTEM = "You answer one question from the facts you were shown, copying the value exactly as it is written."
INSTRUCTION = ("Answer with the value alone (the number, name or words the question asks for), copied from the "
               f"facts or the question. If they do not give it, answer exactly: {UNKNOWN}.")
NOTHING_SHOWN = "FACTS: (none besides the question)"


@lru_cache(maxsize=8)
def answer_schema(max_chars: int) -> type[ReaderAnswer]:
    """The reader's reply: one non-empty answer of at most ``max_chars`` characters."""
    return create_model(f"AnswerStepReply{max_chars}", __base__=ReaderAnswer,
                        answer=(str, Field(min_length=1, max_length=max_chars,
                                           description=f"the value alone, or {UNKNOWN}")))


def claimed_bounty(decision: LLMResult, bounties: dict[str, Bounty]) -> Bounty | None:
    """The answer bounty ``decision`` claims, if it is a usable claim of one."""
    parsed = decision.parsed
    if not (decision.ok and isinstance(parsed, Decision)):
        return None
    if (parsed.action_type, parsed.target, parsed.method) != ("invoke_artifact", BOUNTY_ID, "claim"):
        return None
    bounty = bounties.get(str(parsed.args.get("bounty_id", "")))
    return bounty if bounty is not None and bounty.kind == "answer" else None


def _body(section_text: str | None) -> str:
    """A section's text without its heading line ("" when the turn did not send it)."""
    return section_text.split("\n", 1)[1].strip() if section_text and "\n" in section_text else ""


def _entries(working_memory: str) -> str:
    """The working memory's lines that hold something: the empty YAML skeleton (``lessons: []``) is no
    fact; a key that opens a list (``lessons:``) stays with its items."""
    empty = ("''", '""', "{}", "[]")
    return "\n".join(line for line in working_memory.splitlines()
                     if not (":" in line and line.split(":", 1)[1].strip() in empty and not line.startswith(" ")))


def _is_claim(event: Event | None) -> bool:
    return event is not None and event.action_type == "invoke_artifact" and event.action.get("artifact_id") == BOUNTY_ID


def shown_facts(plan: TurnPlan, shows: Sequence[str]) -> str:
    """What of the turn's prompt carries facts, as it was sent: the memories retrieved, the working
    memory's entries, the last action with its result (not a bounty claim's: that holds a reward)."""
    texts = plan.context.texts
    parts = []
    if "memories" in shows and "rag" in texts and plan.rag_hits:
        parts.append("MEMORIES (quoted data):\n" + "\n".join(f"- {as_data(h.text)}" for h in plan.rag_hits))
    if "working_memory" in shows and (notes := _entries(_body(texts.get("working_memory")))):
        parts.append(f"YOUR NOTES:\n{notes}")
    if "last_result" in shows and not _is_claim(plan.newest) and (last := _body(texts.get("last_action"))):
        parts.append(f"YOUR LAST ACTION AND ITS RESULT:\n{last}")
    return "\n\n".join(parts) or NOTHING_SHOWN


def reader_messages(plan: TurnPlan, bounty: Bounty, shows: Sequence[str]) -> list[Message]:
    # The instruction comes first and the question last, with no reply placeholder (see `reader_text`).
    return [Message(role="system", content=f"{READER_SYSTEM} {INSTRUCTION}"),
            Message(role="user", content=reader_text(shown_facts(plan, shows), bounty.description))]


class AnswerStep:
    """Writes the answer of an agent's answer-bounty claims with a reader call (`answer_step`)."""

    def __init__(self, config: AgentConfig, llm: LLM, bounties: dict[str, Bounty], *, seed: int = 0):
        self.config = config
        self.llm = llm
        self.bounties = bounties
        self.seed = seed

    async def answer(self, plan: TurnPlan, decision: LLMResult) -> LLMResult:
        """``decision`` with its claim's answer written by the reader; unchanged when the step is
        off or the decision claims no answer bounty. An unusable reader reply makes the turn a
        failed action (the claim is not sent); one the provider never gave is the decision's
        provider failure, so the runner asks again. Records the call on ``plan.answer``."""
        step = self.config.answer_step
        plan.answer = None  # a decision asked again (the provider failed) starts afresh
        bounty = claimed_bounty(decision, self.bounties) if step.enabled else None
        if bounty is None:
            return decision
        assert isinstance(decision.parsed, Decision)
        messages = reader_messages(plan, bounty, step.shows)
        with labelled(f"agent {self.config.id}, session {plan.session}, turn {plan.turn}, answer step"):
            reply = await self.llm.agenerate(
                messages, schema=answer_schema(step.max_answer_chars), max_tokens=step.max_output_tokens,
                temperature=0.0, seed=call_seed(self.seed, plan.session, plan.turn, ANSWER_STEP))
        answer = reply.parsed.answer.strip() if reply.ok and isinstance(reply.parsed, ReaderAnswer) else ""
        error = None if answer else f"answer step: the reader gave no usable answer ({reply.error or 'empty'})"
        plan.answer = AnswerTrace(bounty=bounty.id, prompt=messages[-1].content,
                                  drafted=str(decision.parsed.args.get("answer", "")), reply=reply.text,
                                  answer=answer or None, error=error)
        return _merged(decision, reply, answer, error)


def _merged(decision: LLMResult, reply: LLMResult, answer: str, error: str | None) -> LLMResult:
    """One result for the turn: both calls' tokens, cost and time; the claim with the reader's
    answer, or a failure whose text is no action (a reply that holds one must not be applied)."""
    spent: dict[str, Any] = {
        "usage": decision.usage + reply.usage, "cost": decision.cost + reply.cost,
        "latency": decision.latency + reply.latency, "queued": decision.queued + reply.queued,
        "attempts": decision.attempts + reply.attempts, "requests": [*decision.requests, *reply.requests]}
    if error is not None:
        failure = "provider" if reply.provider_failed else "model"
        return decision.model_copy(update={**spent, "ok": False, "parsed": None, "failure": failure, "error": error,
                                           "text": "(answer step: the reader gave no usable answer; the claim was not sent)"})
    assert isinstance(decision.parsed, Decision)
    parsed = decision.parsed.model_copy(update={"args": {**decision.parsed.args, "answer": answer}})
    return decision.model_copy(update={**spent, "parsed": parsed,
                                       "text": parsed.model_dump_json(exclude_defaults=True)})


__all__ = ["AnswerStep", "answer_schema", "claimed_bounty", "reader_messages", "shown_facts"]
