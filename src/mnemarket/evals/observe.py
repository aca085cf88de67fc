"""Observe mode: the reading agent is shown the dialogue a few turns at a time and stores what it
wants, paying for every record, before any question is asked.

One agent turn per batch of ``observe_turns`` dialogue turns (8 by default, within one session: a
LoCoMo session has 15-30 turns, so a session takes 2-4 agent turns; 8 turns are ~250-400 tokens of
dialogue, which keeps a small local model's prompt under ~700 tokens, where its latency on 2
cores stays in minutes). The agent replies with the notes to keep; each becomes a
`genesis_memory.add` action of the reader on its own long-term store, charged as in any run (1
scrip per record by default), so what it can store is bounded by its budget and a refused add is a
recorded failed action. A batch's adds commit in one transaction (``World.batch``) with the batch's
key in their events, so a killed eval re-observes exactly the batches that did not commit.

The ``extractive`` reference has a deterministic policy: store every turn verbatim (one record per
turn, its ``Speaker: words`` text), which makes observe mode testable without a model and
comparable with preloaded mode (the same records, paid for).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.evals import append_log
from mnemarket.evals.locomo_data import Conversation, Turn
from mnemarket.evals.reader import conversation_prompt
from mnemarket.providers import LLM, LLMResult

NOTES_FILE = "observe.jsonl"
"""One line per batch shown: the notes chosen, adds made and refused, scrip spent, the call's cost."""
OBSERVE_TURNS = 8
"""Dialogue turns shown per agent turn (see the module docstring for why)."""
MAX_OBSERVE_TURNS = 16
"""The most turns one batch may show, and so the most notes one reply may hold."""
NOTE_CHARS = 300
NOTES_TOKENS = 512
"""Room for a batch's notes in their JSON wrapper."""
OBSERVER_SYSTEM = ("You are listening to a long conversation between {a} and {b}. Later you will be asked questions "
                   "about it and can answer only from the notes you store now. Storing a note costs {price} scrip; "
                   "you have {balance} scrip.")


@dataclass(frozen=True)
class Batch:
    """Turns shown in one agent turn; ``key`` (``<session>:<index>``) marks its adds in the event log."""

    session: int
    index: int
    turns: tuple[Turn, ...]

    @property
    def key(self) -> str:
        return f"{self.session}:{self.index}"

    @property
    def date(self) -> str:
        return self.turns[0].date


def batches(conv: Conversation, size: int) -> list[Batch]:
    """The conversation in order, ``size`` turns at a time, never across a session boundary."""
    by_session: dict[int, list[Turn]] = {}
    for turn in conv.turns:
        by_session.setdefault(turn.session, []).append(turn)
    return [Batch(session, start // size, tuple(turns[start:start + size]))
            for session, turns in sorted(by_session.items()) for start in range(0, len(turns), size)]


class ObserveNotes(BaseModel):
    """The reply to one batch: the notes to store (none is a valid reply)."""

    model_config = ConfigDict(extra="forbid")
    store: list[str] = Field(default_factory=list, max_length=MAX_OBSERVE_TURNS,
                             description="self-contained notes to keep, each naming who, what and when")


def observe_messages(conv: Conversation, batch: Batch, balance: int, price: int) -> list[dict[str, str]]:
    lines = "\n".join(turn.text for turn in batch.turns)
    user = (f"Session {batch.session}, {batch.date}:\n{lines}\n\n"
            "Store the facts worth remembering (events, plans, names, places, dates, likes). Each note must "
            "make sense alone: say who, what, and when (turn 'yesterday' or 'last week' into a date from "
            f"the session's date). At most {len(batch.turns)} notes; an empty list stores nothing.\n"
            'Reply as JSON with one key, "store": the list of your notes, each a string.')
    return conversation_prompt(conv, OBSERVER_SYSTEM, user, price=price, balance=balance)


@dataclass
class Observed:
    """What the observer chose for one batch, and what choosing cost (no model call: zeros)."""

    notes: list[str]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float = 0.0
    ok: bool = True
    error: str = ""


class Observer(Protocol):
    def observe(self, conv: Conversation, batch: Batch, balance: int, price: int) -> Observed: ...


class StoreEveryTurn:
    """The extractive reference's policy: every turn, verbatim."""

    def observe(self, conv: Conversation, batch: Batch, balance: int, price: int) -> Observed:
        return Observed([turn.text for turn in batch.turns])


class ModelObserver:
    """A model chooses the notes (constrained to `ObserveNotes`); a failed call stores nothing and
    is recorded with its error."""

    def __init__(self, llm: LLM, seed: int = 0):
        self.llm = llm
        self.seed = seed

    def observe(self, conv: Conversation, batch: Batch, balance: int, price: int) -> Observed:
        reply: LLMResult = self.llm.generate(observe_messages(conv, batch, balance, price), schema=ObserveNotes,
                                             max_tokens=NOTES_TOKENS, temperature=0.0,
                                             seed=self.seed * 1_009 + batch.session * 101 + batch.index)
        notes = reply.parsed.store if isinstance(reply.parsed, ObserveNotes) else []
        kept = [n.strip()[:NOTE_CHARS] for n in notes if n.strip()][:len(batch.turns)]  # as many as the prompt allows
        return Observed(kept, reply.usage.prompt_tokens,
                        reply.usage.completion_tokens, round(reply.latency, 4), reply.cost, reply.ok,
                        reply.error or ("" if reply.parsed is not None else "no notes in the reply"))


def read_notes(out: Path) -> list[dict[str, Any]]:
    """The batch lines of ``OUT/observe.jsonl``, the last per batch."""
    lines = {(e.get("conversation"), e.get("batch")): e for e in append_log.read(out / NOTES_FILE)}
    return list(lines.values())


__all__ = ["MAX_OBSERVE_TURNS", "NOTES_FILE", "NOTE_CHARS", "OBSERVER_SYSTEM", "OBSERVE_TURNS", "Batch", "ModelObserver",
           "ObserveNotes", "Observed", "Observer", "StoreEveryTurn", "batches", "observe_messages", "read_notes"]
