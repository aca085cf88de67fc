"""The answer step: the answer of an answer-bounty claim written by a second, short model call.

The decision is made as always (the model picks the action and the bounty through its reply
schema). When it claims an answer bounty, a reader prompt (agents/reader_prompt.py, the shape the
LoCoMo reader uses) asks for the value alone, or "unknown": the bounty's question and what of the
turn's prompt carries facts (the memories retrieved, the working memory's entries, the newest
action's result that can hold one), never the menus, rules, balances or the reward; and (in the
system message) the answers to this bounty already judged wrong this session.
A small model copies the reward line ("10 scrip") when it answers inside the whole turn prompt,
and reads the value when it sees the facts and the question alone (plans/ladder.md, "Answer step").

Each part is taken from the assembled context as it was sent (cut or dropped by the budget as
there), with two additions from the agent's own events, which short-term history clearing
clears too: the result data of an older action the turn's history listed (when the newest was a
noop or a claim), and the wrong answers of this session. So with RAG off and short-term history
cleared ("memory off") the reader holds the question and this session's own results only.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

from pydantic import Field, create_model

from mnemarket.agents.config import AgentConfig
from mnemarket.agents.decision import Decision
from mnemarket.agents.history_text import history_parts
from mnemarket.agents.prompt_sections import as_data
from mnemarket.agents.reader_prompt import ReaderAnswer, reader_text
from mnemarket.agents.sampling import ANSWER_STEP, call_seed
from mnemarket.agents.trail import Trail
from mnemarket.agents.turn import AnswerTrace, TurnPlan
from mnemarket.errors import ProviderUnavailable
from mnemarket.genesis import ANSWER_STEP_CALL, BOUNTY_ID, UNKNOWN, Bounty, describe_event
from mnemarket.kernel import Event
from mnemarket.providers import LLM, MAX_PROVIDER_FAILURES, LLMResult, Message, labelled

#: The answer step's system message: facts from a turn, no conversation (the LoCoMo reader's is
#: evals.reader.CONVERSATION_READER_SYSTEM; the two share the user message's shape, `reader_text`).
ANSWER_STEP_SYSTEM = "You answer one question from the facts you were shown, copying the value exactly as it is written."
INSTRUCTION = ("Answer with the value alone (the number, name or words the question asks for), copied from the "
               f"facts or the question. If they do not give it, answer exactly: {UNKNOWN}.")
NOTHING_SHOWN = "FACTS: (none besides the question)"
LAST_RESULT = "YOUR LAST ACTION AND ITS RESULT:"
EARLIER_RESULT = "YOUR EARLIER ACTION AND ITS RESULT:"
TRIED = "These answers were already tried and are wrong, never give them:"
NO_FACTS = ("noop", "invalid")
"""Action types whose result holds no fact: a noop's "did nothing", an unparseable reply's failure."""


class AnswerStepReply(ReaderAnswer):
    """The answer step's reply, marked as its call for scripted policies (not part of the JSON schema)."""

    call: ClassVar[str] = ANSWER_STEP_CALL


@lru_cache(maxsize=8)
def answer_schema(max_chars: int) -> type[AnswerStepReply]:
    """The reader's reply: one non-empty answer of at most ``max_chars`` characters."""
    return create_model(f"AnswerStepReply{max_chars}", __base__=AnswerStepReply,
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


def _is_claim(event: Event) -> bool:
    return event.action_type == "invoke_artifact" and event.action.get("artifact_id") == BOUNTY_ID


def _carries_facts(event: Event) -> bool:
    """Whether ``event``'s result can hold a fact: not a bounty action (its result holds a reward),
    a noop ("did nothing") or an unparseable reply."""
    return not (_is_claim(event) or event.action_type in NO_FACTS)


def _last_result(plan: TurnPlan) -> tuple[str, str]:
    """The heading and text of the newest of the turn's actions whose result can hold a fact: the
    last-action section as sent when it is the newest; an older one with its result data, as the
    last-action section shows one, only when the turn's history section listed it (a budget cut
    drops the oldest lines first: nothing older was listed then either)."""
    texts = plan.context.texts
    event = next((e for e in reversed(plan.recent) if _carries_facts(e)), None)
    if event is None:
        return "", ""
    if event is plan.newest:
        return LAST_RESULT, _body(texts.get("last_action"))
    listed = describe_event(event) in _body(texts.get("history"))
    return (EARLIER_RESULT, history_parts([event])[1]) if listed else ("", "")


def shown_facts(plan: TurnPlan, shows: Sequence[str]) -> str:
    """What of the turn's prompt carries facts, as it was sent: the memories retrieved, the working
    memory's entries, the newest action whose result can hold a fact (`_last_result`)."""
    texts = plan.context.texts
    parts = []
    if "memories" in shows and "rag" in texts and plan.rag_hits:
        parts.append("MEMORIES (quoted data):\n" + "\n".join(f"- {as_data(h.text)}" for h in plan.rag_hits))
    if "working_memory" in shows and (notes := _entries(_body(texts.get("working_memory")))):
        parts.append(f"YOUR NOTES:\n{notes}")
    if "last_result" in shows:
        heading, last = _last_result(plan)
        if last:
            parts.append(f"{heading}\n{last}")
    return "\n\n".join(parts) or NOTHING_SHOWN


def tried_line(rejected: Sequence[str]) -> str:
    """The answers already judged wrong, quoted as data ("" when none): the reader is greedy, so
    told nothing it repeats its wrong answer on every try."""
    return f"{TRIED} {', '.join(as_data(a) for a in rejected)}." if rejected else ""


def reader_messages(plan: TurnPlan, bounty: Bounty, shows: Sequence[str], rejected: Sequence[str] = ()) -> list[Message]:
    """The reader's messages: the instruction, then the answers already judged wrong (in the system
    message: Gemma 3 270M copied a value it saw beside the facts or the question, even one it was
    told was wrong; plans/ladder.md, "Answer step"); the facts; the question last, with no reply
    placeholder (see `reader_text`). Deterministic: the same turn gives the same bytes."""
    tried = tried_line(rejected) if "rejected_answers" in shows else ""
    return [Message(role="system", content=" ".join(filter(None, [ANSWER_STEP_SYSTEM, INSTRUCTION, tried]))),
            Message(role="user", content=reader_text(shown_facts(plan, shows), bounty.description))]


def logged_prompt(messages: list[Message]) -> str:
    """What a trace shows of the reader's prompt: its user message, after the system message's
    line of answers already judged wrong when there is one (the rest of it is fixed)."""
    system = messages[0].content
    tried = system[system.index(TRIED):] if TRIED in system else ""
    return "\n\n".join(filter(None, [tried, messages[-1].content]))


class AnswerStep:
    """Writes the answer of an agent's answer-bounty claims with a reader call (`answer_step`)."""

    def __init__(self, config: AgentConfig, llm: LLM, bounties: dict[str, Bounty], trail: Trail, *, seed: int = 0):
        self.config = config
        self.llm = llm
        self.bounties = bounties
        self.trail = trail
        """The agent's own events: the answers its claims got judged wrong this session."""
        self.seed = seed

    async def answer(self, plan: TurnPlan, decision: LLMResult) -> LLMResult:
        """``decision`` with its claim's answer written by the reader; unchanged when the step is
        off or the decision claims no answer bounty. A reader call the provider never answered is
        asked again (up to :data:`MAX_PROVIDER_FAILURES` calls), keeping the decision: asking for
        the decision again would pay for it twice, and a model without a seed could decide otherwise.
        An unusable reader reply makes the turn a failed action (the claim is not sent). Records the
        call on ``plan.answer``.

        Raises:
            ProviderUnavailable: none of those calls got a reply: that many calls in a row, the
                runner's bound, so the run stops as after as many unanswered decisions (nothing
                of the turn is committed; a resume plays it again)."""
        step = self.config.answer_step
        plan.answer = None  # a decision asked again (the provider failed it) starts afresh
        bounty = claimed_bounty(decision, self.bounties) if step.enabled else None
        if bounty is None:
            return decision
        assert isinstance(decision.parsed, Decision)
        messages = reader_messages(plan, bounty, step.shows, self.trail.rejected_answers(plan.session, bounty.id))
        replies: list[LLMResult] = []
        with labelled(f"agent {self.config.id}, session {plan.session}, turn {plan.turn}, answer step"):
            while not replies or (replies[-1].provider_failed and len(replies) < MAX_PROVIDER_FAILURES):
                replies.append(await self.llm.agenerate(
                    messages, schema=answer_schema(step.max_answer_chars), max_tokens=step.max_output_tokens,
                    temperature=0.0, seed=call_seed(self.seed, plan.session, plan.turn, ANSWER_STEP)))
        reply = replies[-1]
        if reply.provider_failed:
            raise ProviderUnavailable(f"{len(replies)} model calls in a row got no reply (agent {self.config.id}'s "
                                      f"answer step, session {plan.session}, turn {plan.turn}); last: {reply.error}")
        answer = reply.parsed.answer.strip() if reply.ok and isinstance(reply.parsed, ReaderAnswer) else ""
        error = None if answer else _failure(reply)
        plan.answer = AnswerTrace(bounty=bounty.id, prompt=logged_prompt(messages),
                                  drafted=str(decision.parsed.args.get("answer", "")), reply=reply.text,
                                  answer=answer or None, error=error)
        return _merged(decision, replies, answer, error)


def _failure(reply: LLMResult) -> str:
    return f"answer step: the reader gave no usable answer ({reply.error or 'empty'})"


def _merged(decision: LLMResult, replies: list[LLMResult], answer: str, error: str | None) -> LLMResult:
    """One result for the turn: every call's tokens, cost and time; the claim with the reader's
    answer, or a failure whose text is no action (a reply that holds one must not be applied)."""
    calls = [decision, *replies]
    spent: dict[str, Any] = {
        "usage": sum((c.usage for c in replies), decision.usage), "cost": sum(c.cost for c in calls),
        "latency": sum(c.latency for c in calls), "queued": sum(c.queued for c in calls),
        "attempts": sum(c.attempts for c in calls), "requests": [r for c in calls for r in c.requests]}
    if error is not None:
        # Never "provider": that would have the runner ask for the decision again (paid twice).
        return decision.model_copy(update={**spent, "ok": False, "parsed": None, "failure": "reply", "error": error,
                                           "text": "(answer step: the reader gave no usable answer; the claim was not sent)"})
    assert isinstance(decision.parsed, Decision)
    parsed = decision.parsed.model_copy(update={"args": {**decision.parsed.args, "answer": answer}})
    return decision.model_copy(update={**spent, "parsed": parsed,
                                       "text": parsed.model_dump_json(exclude_defaults=True)})


__all__ = ["AnswerStep", "AnswerStepReply", "answer_schema", "claimed_bounty", "reader_messages", "shown_facts",
           "logged_prompt", "tried_line"]
