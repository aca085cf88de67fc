"""summary.json: what a run holds, as plain data (balances, supply, stores, trades, per-agent figures).

The runner writes it at the end of every run part; `inspect` prints it recomputed (reports/inspect.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol

from mnemarket.agents import (
    DEFAULT_PREFIXES,
    LessonStepRefusal,
    prefixed_entries,
    rejected_at_session_end,
    rejected_by_lesson_step,
)
from mnemarket.genesis import (
    BOUNTY_ID,
    MEMORY_ID,
    STORE_TYPE,
    Genesis,
    all_trades,
    clip,
    is_invalid_decision,
    is_lesson,
    is_migration,
    turn_record,
)
from mnemarket.kernel import Artifact, ArtifactTable, Event, World
from mnemarket.memory import MemoryStore
from mnemarket.run.summary_record import AgentFigures, AgentTotals, RunSummary, StoreRow

OpenStore = Callable[[str], MemoryStore]

REFUSED_TEXT_CHARS = 240
"""Longest refused lesson-step line or reason summary.json quotes: a lesson-step line is bounded
by `lesson_step.lesson_chars` (at most 400, 140 by default) and the action it names, so the
default's lines and reasons fit whole; the step's marker in world state keeps every line whole."""


class EventHistory(Protocol):
    """What `agent_figures` reads of a world: its events, artifacts and balances (a `World`, or
    `reports.world_at`'s view of one cut at a tick)."""

    artifacts: ArtifactTable

    @property
    def balances(self) -> Mapping[str, int]: ...

    def iter_events(self, *, principal: str | None = None) -> Iterator[Event]: ...


def agent_totals(figures: Iterable[AgentFigures]) -> AgentTotals:
    rows = list(figures)
    return {"turns": sum(a["turns"] for a in rows), "invalid_actions": sum(a["invalid_actions"] for a in rows),
            "failed_actions": sum(a["failed_actions"] for a in rows),
            "lessons_written": sum(a["lessons_written"] for a in rows),
            "memory_invokes": sum(a["memory_invokes"] for a in rows),
            "bounties_paid": sum(a["bounties_paid"] for a in rows)}


def memory_stores(world: World) -> list[Artifact]:
    """The world's live memory-store artifacts, by id."""
    return [world.artifacts.peek(i) for i in world.find_ids(artifact_type=STORE_TYPE)]  # from the index: no full scan


def memory_entry_counts(world: World, open_store: OpenStore) -> dict[str, int]:
    """Live (not archived) entries per memory store, read through the memory engine."""
    return {a.id: sum(1 for r in open_store(a.id).records() if not r.archived) for a in memory_stores(world)}


def _invokes(event: Event, service: str, method: str | None = None) -> bool:
    action = event.action
    return (event.action_type == "invoke_artifact" and action.get("artifact_id") == service
            and (method is None or action.get("method") == method))


def _lesson_entries(world: EventHistory, event: Event) -> list[str]:
    """The `LESSON:`/`STRATEGY:`/`INSIGHT:` entries an event put into its principal's own
    working-memory artifact, by a write, an edit or the lesson step (none for any other event)."""
    if not event.success or event.action_type not in ("write_artifact", "edit_artifact"):
        return []
    artifact_id, table = str(event.action.get("artifact_id")), world.artifacts
    if (artifact_id not in table or table.value(artifact_id, "type") != "working_memory"
            or table.value(artifact_id, "owner") != event.principal):
        return []
    return prefixed_entries(str(event.action.get("content") or event.action.get("new_text") or ""), DEFAULT_PREFIXES)


def summarize(world: World, genesis: Genesis | None = None, *, open_store: OpenStore | None = None) -> RunSummary:
    """The `inspect --json` document (entry counts need a way to open stores: `genesis` or `open_store`)."""
    if open_store is None and genesis is not None:
        open_store = genesis.memory.store
    counts = memory_entry_counts(world, open_store) if open_store is not None else {}
    stores: list[StoreRow] = [{"id": a.id, "owner": a.owner, "creator": a.creator, "entries": counts.get(a.id, 0)}
              for a in memory_stores(world)]
    per_agent, migrated = agent_figures(world)
    add_rejected_lessons(per_agent, rejected_at_session_end(world.state), rejected_by_lesson_step(world.state))
    return {
        "balances": dict(sorted(world.balances.items())),
        "total_scrip": world.total_scrip(),
        "initial_total_scrip": world.supply.initial,
        "minted": world.supply.minted,
        "burned": world.supply.burned,
        "supply_ok": world.check_supply().ok,
        "artifacts": len(world.find_ids()),
        "memory_stores": stores,
        "trades": [{"artifact_id": t.artifact_id, "seller": t.seller, "buyer": t.buyer, "price": t.price,
                    "kind": t.kind, "tick": t.tick} for t in all_trades(world.state)],
        "lessons_migrated": migrated,
        "events": world.event_count,
        **agent_totals(per_agent.values()),
        "tick": world.tick,
        "agents": per_agent,
    }


def add_rejected_lessons(per_agent: Mapping[str, AgentFigures],
                         at_session_end: Mapping[str, Sequence[tuple[int, str, str]]],
                         by_lesson_step: Mapping[str, Sequence[LessonStepRefusal]]) -> None:
    """Put beside each agent's figures the lessons refused (vacuous or looping): those its session
    ends refused, each with session and reason (no event records them), and those its lesson steps
    refused, counted and each with session, turn, trigger and reason (read from the steps' markers:
    `agents.rejected_by_lesson_step`), text cut to `REFUSED_TEXT_CHARS`."""
    for agent, figures in per_agent.items():
        figures["lessons_rejected_at_session_end"] = [{"session": session, "lesson": lesson, "reason": reason}
                                                      for session, lesson, reason in at_session_end.get(agent, [])]
        refused = by_lesson_step.get(agent, [])
        figures["lessons_rejected_by_lesson_step"] = len(refused)
        figures["lessons_rejected_by_lesson_step_lines"] = [
            {"session": r.session, "after_turn": r.after_turn, "trigger": r.trigger,
             "lesson": clip(r.lesson, REFUSED_TEXT_CHARS), "reason": clip(r.reason, REFUSED_TEXT_CHARS)} for r in refused]


def agent_figures(world: EventHistory) -> tuple[dict[str, AgentFigures], int]:
    """Per agent that took a turn, its figures, and the run's successful migrations, from one pass
    over the events (read a page at a time: a long run's events are never held whole)."""
    counts: dict[str, Counter[str]] = {}
    actions: dict[str, Counter[str]] = {}
    written: dict[str, set[str]] = {}  # distinct lesson entries, so a rewritten one counts once
    migrated: Counter[str] = Counter()
    for event in world.iter_events():
        if entries := _lesson_entries(world, event):
            written.setdefault(event.principal, set()).update(entries)
        if is_migration(event) and event.success:
            migrated[event.principal] += 1
        record = turn_record(event)
        if record is None:
            continue
        actions.setdefault(event.principal, Counter())[event.action_type] += 1
        flags = {"turns": True, "invalid_actions": is_invalid_decision(event), "failed_actions": not event.success,
                 "memory_invokes": _invokes(event, MEMORY_ID),
                 "bounties_paid": _invokes(event, BOUNTY_ID, "claim") and event.success,
                 "lessons_stored_by_action": is_lesson(event), "loop_breaker_triggers": record.loop > 0}
        mine = counts.setdefault(event.principal, Counter())
        mine.update(name for name, on in flags.items() if on)
        mine["tokens"] += record.tokens
        mine["baseline_tokens"] += record.baseline_tokens
    figures: dict[str, AgentFigures] = {agent: {
        "turns": (mine := counts[agent])["turns"],
        "invalid_actions": mine["invalid_actions"],
        "failed_actions": mine["failed_actions"],
        "lessons_written": len(written.get(agent, ())),
        "memory_invokes": mine["memory_invokes"],
        "bounties_paid": mine["bounties_paid"],
        "lessons_stored_by_action": mine["lessons_stored_by_action"],
        "lessons_migrated": migrated[agent],
        "loop_breaker_triggers": mine["loop_breaker_triggers"],
        "mean_context_tokens": round(mine["tokens"] / mine["turns"], 1),
        "mean_baseline_tokens": round(mine["baseline_tokens"] / mine["turns"], 1),
        "balance": world.balances.get(agent, 0),
        "actions": dict(actions[agent]),
    } for agent in sorted(counts)}
    return figures, sum(migrated.values())


__all__ = ["REFUSED_TEXT_CHARS", "EventHistory", "OpenStore", "add_rejected_lessons", "agent_figures", "agent_totals",
           "memory_entry_counts", "memory_stores", "summarize"]
