"""The world as it was after a chosen turn, rebuilt read-only from the run's logs.

`mnemarket inspect RUN --at SESSION:TURN` answers with the keys of `inspect --json`, values as of
that turn: balances and supply from the ledger entries up to the turn's tick, trades and figures
from the events up to it, artifacts that existed then, each memory store's entries created by
then, and each agent's working memory replayed from the writes and edits of its artifact. The
turn's tick is the one its agents' turn events carry; its lesson steps (same tick) are included,
the session-end migration after a session's last turn is not (it belongs to the next tick), nor
that session's end-of-session lesson step. The lessons refused, which no event records, come from
the world state rows that say at which step they were refused (`refused_by_turn`).
Nothing is written, locked or loaded beyond a read-only database and the memory tables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from mnemarket.agents import LessonStepRefusal, rejected_at_session_end, rejected_by_lesson_step
from mnemarket.errors import ConfigError
from mnemarket.genesis import all_trades, turn_record
from mnemarket.kernel import SYSTEM_PRINCIPAL, Event, World
from mnemarket.reports.inspect import RunView
from mnemarket.run import (
    AgentFigures,
    RunSummary,
    StoreRow,
    TradeRow,
    add_rejected_lessons,
    agent_figures,
    agent_totals,
    memory_stores,
)


@dataclass(frozen=True, order=True)
class TurnRef:
    session: int
    turn: int

    def __str__(self) -> str:
        return f"{self.session}:{self.turn}"


def parse_turn(text: str) -> TurnRef:
    """`SESSION:TURN` (both from 1), or a ConfigError saying the form."""
    session, sep, turn = text.partition(":")
    try:
        ref = TurnRef(int(session), int(turn)) if sep else None
    except ValueError:
        ref = None
    if ref is None or ref.session < 1 or ref.turn < 1:
        raise ConfigError(f"--at {text!r}: give SESSION:TURN, both from 1 (e.g. --at 1:3)")
    return ref


def turn_tick(world: World, at: TurnRef) -> int:
    """The tick the turn was played at.

    Raises:
        ConfigError: the run has not played that turn (yet).
    """
    last = None
    for event in world.iter_events():
        record = turn_record(event)
        if record is None:
            continue
        if (record.session, record.turn) == (at.session, at.turn):
            return event.tick
        last = f"{record.session}:{record.turn}"
    raise ConfigError(f"turn {at} was not played in this run (its last turn played is {last or 'none'}); "
                      "give an earlier --at SESSION:TURN")


class _EventsUpTo:
    """The parts of a World that `run.agent_figures` reads (`run.summary.EventHistory`), with events cut at a tick."""

    def __init__(self, world: World, tick: int, balances: dict[str, int]):
        self._world, self._tick = world, tick
        self.artifacts = world.artifacts
        self.balances = balances

    def iter_events(self, *, principal: str | None = None) -> Iterator[Event]:
        for event in self._world.iter_events(principal=principal):
            if event.tick > self._tick:
                return
            yield event


def _ledger_at(world: World, tick: int) -> tuple[dict[str, int], dict[str, int]]:
    """Balances and the supply's parts (initial, minted, burned) from the ledger up to ``tick``."""
    balances: dict[str, int] = defaultdict(int)
    supply = {"initial": 0, "minted": 0, "burned": 0}
    for principal in world.principals:
        if principal != SYSTEM_PRINCIPAL:
            balances[principal] += 0
    for entry in world.ledger():
        if entry.tick > tick:
            continue
        if entry.kind == "initial":
            supply["initial"] += entry.amount
        elif entry.sender == SYSTEM_PRINCIPAL:
            supply["minted"] += entry.amount
        elif entry.recipient == SYSTEM_PRINCIPAL:
            supply["burned"] += entry.amount
        if entry.sender != SYSTEM_PRINCIPAL:
            balances[entry.sender] -= entry.amount
        if entry.recipient != SYSTEM_PRINCIPAL:
            balances[entry.recipient] += entry.amount
    return dict(sorted(balances.items())), supply


def working_memory_at(world: World, artifact_id: str, tick: int) -> str:
    """An artifact's text after the writes and edits (events) up to ``tick``."""
    content = ""
    for event in world.iter_events():
        if event.tick > tick:
            break
        action = event.action
        if not event.success or action.get("artifact_id") != artifact_id:
            continue
        if event.action_type == "write_artifact":
            content = str(action.get("content") or "")
        elif event.action_type == "edit_artifact":
            content = content.replace(str(action.get("old_text") or ""), str(action.get("new_text") or ""), 1)
    return content


def refused_by_turn(world: World, at: TurnRef) -> tuple[dict[str, list[tuple[int, str, str]]],
                                                        dict[str, list[LessonStepRefusal]]]:
    """Per agent, the lessons refused by the end of turn ``at``: at session end, and by lesson steps.

    World state keeps no history, but each row here is written once, by the step its key names (a
    resumed step writes the same row): session ``s``'s end, and its end-of-session lesson step, run
    after its last turn and before session ``s + 1``'s first, so they count from that turn on; a
    failure lesson step runs within the turn it follows."""
    at_session_end = {agent: [row for row in rows if row[0] < at.session]
                      for agent, rows in rejected_at_session_end(world.state).items()}
    by_lesson_step = {agent: [r for r in rows if (r.session < at.session if r.trigger == "session_end"
                                                   else (r.session, r.after_turn) <= (at.session, at.turn))]
                      for agent, rows in rejected_by_lesson_step(world.state).items()}
    return at_session_end, by_lesson_step


class EntryAt(TypedDict):
    id: str
    kind: str
    created: float
    text: str


class AgentAt(AgentFigures, total=False):
    """An agent's figures as of a turn, with its working memory's text and its stores' entries."""

    working_memory: str
    memory: dict[str, list[EntryAt]]


class WorldAt(RunSummary, total=False):
    """The `inspect --at` document: `RunSummary`'s keys as of a turn, and which turn."""

    at: str


def world_at_turn(run_dir: Path, at: TurnRef) -> WorldAt:
    """The `inspect --json` document as of turn ``at`` (see the module doc), plus ``at`` and each
    agent's ``working_memory`` and ``memory`` (its stores' entries created by then)."""
    with RunView(run_dir) as view:
        world = view.world
        tick = turn_tick(world, at)
        balances, supply = _ledger_at(world, tick)
        per_agent, migrated = agent_figures(_EventsUpTo(world, tick, balances))
        add_rejected_lessons(per_agent, *refused_by_turn(world, at))
        stores: list[StoreRow] = []
        entries: dict[str, list[EntryAt]] = {}
        for artifact in memory_stores(world):
            if artifact.created_tick > tick:
                continue
            records = [r for r in view.store(artifact.id).records() if r.created <= tick]
            entries[artifact.id] = [{"id": r.id, "kind": r.kind, "created": r.created, "text": r.text}
                                    for r in records]
            stores.append({"id": artifact.id, "owner": artifact.owner, "creator": artifact.creator,
                           "entries": sum(1 for r in records if not r.archived)})
        agents_config = {a.id: a for a in view.config.resolved.agents}
        agents: dict[str, AgentAt] = {}
        for agent, figures in per_agent.items():
            agents[agent] = row = AgentAt(**figures)
            config = agents_config.get(agent)
            if config is None:
                continue
            row["working_memory"] = working_memory_at(world, config.working_memory_id, tick)
            row["memory"] = {store: entries.get(store, []) for store in (config.store_id, config.episodic_store_id)}
        trades: list[TradeRow] = [{"artifact_id": t.artifact_id, "seller": t.seller, "buyer": t.buyer, "price": t.price,
                   "kind": t.kind, "tick": t.tick} for t in all_trades(world.state) if t.tick <= tick]
        events = sum(1 for _ in _EventsUpTo(world, tick, balances).iter_events())
        total = sum(balances.values())
        return {
            "at": str(at),
            "balances": balances,
            "total_scrip": total,
            "initial_total_scrip": supply["initial"],
            "minted": supply["minted"],
            "burned": supply["burned"],
            "supply_ok": total == supply["initial"] + supply["minted"] - supply["burned"],
            "artifacts": sum(1 for i in world.find_ids() if world.artifacts.peek(i).created_tick <= tick),
            "memory_stores": stores,
            "trades": trades,
            "lessons_migrated": migrated,
            "events": events,
            **agent_totals(per_agent.values()),
            "tick": tick,
            "agents": agents,
        }


__all__ = ["TurnRef", "parse_turn", "refused_by_turn", "turn_tick", "working_memory_at", "world_at_turn"]
