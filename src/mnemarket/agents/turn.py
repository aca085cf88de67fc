"""What one agent's turn carries from its prompt to its event: the turn facts, the draft, the plan
and the outcome.

`TurnFacts` is the one record of a turn's when-and-what (session, turn, step, loop level, the
memories shown, the prompt's size): the plan hands it to the applier, the runner commits it with
the decision so a resumed run re-applies it, and the applier writes it into the event as a
`genesis.TurnRecord`, whose fields carry the same names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from mnemarket.agents.context import AssembledContext, Section
from mnemarket.agents.loop_breaker import LoopState
from mnemarket.genesis import ContextHit, ContextRecord, ContextSection
from mnemarket.kernel import ActionResult, Event
from mnemarket.memory import MemoryHit
from mnemarket.providers import LLMResult, Message


class TurnFacts(BaseModel):
    """One turn's facts, fixed before the model is called; committed with the decision so a
    resumed run re-applies it.

    The run state has held ``rag_hits`` as ``rag_hit_ids`` and ``loop`` as ``loop_level`` since
    before the names were made one: those are the names it is stored under (``model_dump(by_alias=True)``)
    and both forms read back.
    """

    model_config = ConfigDict(frozen=True)

    session: int
    turn: int
    step: str
    rag_hits: list[str] = Field(default=[], validation_alias=AliasChoices("rag_hits", "rag_hit_ids"),
                                serialization_alias="rag_hit_ids")
    """Ids of the long-term memories the prompt showed."""
    loop: int = Field(default=0, validation_alias=AliasChoices("loop", "loop_level"), serialization_alias="loop_level")
    """Loop-breaker level (0 = no repeat seen)."""
    loop_trigger: str | None = None
    tokens: int = 0
    """Context tokens sent."""
    baseline_tokens: int = 0
    """Tokens the same prompt would have had with everything stuffed in (no budget, no RAG)."""


@dataclass
class Draft:
    """A turn's prompt before its memories are retrieved (see `Agent.draft`)."""

    session: int
    turn: int
    step: str
    loop: LoopState
    query: str
    system: list[Section]
    user: list[Section]
    count: Callable[[str], int]
    history: str = ""
    """Recent actions as rendered for the prompt (scripted policies read them as data)."""
    recent: tuple[Event, ...] = ()
    """The actions the prompt's history and last-action sections show, oldest first."""
    memory_query: str | None = None
    """The RAG query when memories will be retrieved; None when RAG is off or the store is empty."""
    context: AssembledContext | None = None
    """The finished context when the probe already is it (the RAG section dropped)."""
    narrow: list[Section] | None = None
    """The rules with only the step's own menu, when `system` describes the workflow's whole menu:
    used in a turn where the whole menu would leave the working memory no room (`TurnBuilder.complete`)."""


@dataclass
class TurnPlan:
    """Everything decided before the model is called."""

    agent_id: str
    session: int
    turn: int
    step: str
    messages: list[Message]
    context: AssembledContext
    rag_query: str
    rag_hits: list[MemoryHit]
    loop: LoopState
    baseline_tokens: int
    avoid: tuple[str, str, str] | None = None
    """The repeated action a forced loop breaker takes out of the reply schema."""
    history: str = ""
    """Recent actions as rendered for the prompt (before any budget cut), for scripted policies."""
    recent: tuple[Event, ...] = ()
    """The actions the prompt's history and last-action sections show, oldest first."""
    answer: AnswerTrace | None = None
    """The answer step's call, when the decision claimed an answer bounty (`answer_step`)."""

    @property
    def newest(self) -> Event | None:
        """The action the prompt's last-action section shows (None: none yet this session)."""
        return self.recent[-1] if self.recent else None

    def facts(self) -> TurnFacts:
        return TurnFacts(session=self.session, turn=self.turn, step=self.step,
                         rag_hits=[h.id for h in self.rag_hits], loop=self.loop.level,
                         loop_trigger=self.loop.trigger,
                         tokens=self.context.tokens, baseline_tokens=self.baseline_tokens)

    def log_record(self, reply: str | None, reply_error: str | None) -> ContextRecord:
        """The turn's line of the context log, with the model's reply (the trace shows it)."""
        return ContextRecord(
            agent=self.agent_id, session=self.session, turn=self.turn, step=self.step,
            tokens=self.context.tokens, budget=self.context.budget, baseline_tokens=self.baseline_tokens,
            sections=[ContextSection.model_validate(s, from_attributes=True) for s in self.context.sections],
            rag_query=self.rag_query,
            rag_hits=[ContextHit(id=h.id, text=h.text, score=round(h.score, 4)) for h in self.rag_hits],
            loop=self.loop.level, loop_trigger=self.loop.trigger,
            system=self.context.system, user=self.context.user, reply=reply, reply_error=reply_error,
            **({} if self.answer is None else {"answer_prompt": self.answer.prompt, "answer_reply": self.answer.reply}))


@dataclass(frozen=True)
class AnswerTrace:
    """One answer step (agents/answer_step.py): the reader's prompt, its reply, the answer taken."""

    bounty: str
    prompt: str
    """The reader's user message, after the answers already judged wrong when there are any (the
    rest of its system message is fixed): `answer_step.logged_prompt`."""
    drafted: str
    """The answer the decision itself carried (replaced)."""
    reply: str
    answer: str | None = None
    """The claim's answer; None when the reply was unusable (the turn is a failed action)."""
    error: str | None = None


@dataclass
class TurnOutcome:
    plan: TurnFacts
    llm: LLMResult
    result: ActionResult
    captured: list[str] = field(default_factory=list)
