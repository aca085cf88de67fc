"""Session end: working-memory entries migrated into long-term memory, reflection, retention."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mnemarket.agents.config import AgentConfig
from mnemarket.agents.lesson_filter import refusal_reason
from mnemarket.agents.memories import AgentMemories
from mnemarket.agents.working_memory import WorkingMemory, prefixed_entries
from mnemarket.genesis import MEMORY_ID, MigrationRecord
from mnemarket.kernel import InvokeArtifact, World, WriteArtifact
from mnemarket.memory import apply_retention, find_duplicate, reinforce
from mnemarket.providers import LLM

REJECTED_STATE = "session_end_rejected"
"""World-state namespace of the lessons a session end refused: key ``{agent}:{session}``, value
lesson -> reason (`SessionReport.rejected`; under `history: carry` only those no earlier session end
of the agent refused). Refused lessons make no event, so this is their record."""


@dataclass
class SessionReport:
    agent_id: str
    session: int
    migrated: list[str]
    skipped_duplicates: list[str]
    failed: list[str]
    reflections: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    """Entries kept out of long-term memory, each with why (vacuous or repetitive: `lesson_filter.refusal_reason`);
    every one this session end refused, also one carried from an earlier session (`REJECTED_STATE` lists it once)."""


class SessionCloser:
    """Ends one agent's sessions; each step is safe to repeat when a resumed run ends the session again."""

    def __init__(self, config: AgentConfig, world: World, llm: LLM, memories: AgentMemories):
        self.config = config
        self.world = world
        self.llm = llm
        self.memories = memories

    @property
    def id(self) -> str:
        return self.config.id

    def end_session(self, session: int) -> SessionReport:
        """Migrate prefixed working-memory entries (charged per add), reflect, apply retention."""
        report = SessionReport(agent_id=self.id, session=session, migrated=[], skipped_duplicates=[], failed=[])
        if self.config.working_memory.enabled:
            self._migrate(session, report)
            self._record_rejected(session, report)  # before the working memory is cleared
            if self.config.history == "session":
                self._clear_working_memory(session)
        memory = self.config.memory
        reflector = self.memories.reflector if memory.reflection.enabled else None
        if reflector is not None and reflector.due():
            reflection = reflector.maybe_reflect(self.memories.episodic, self.llm, now=self.world.tick, actor=self.id)
            if reflection is not None:
                report.reflections = self._promote_reflections(reflection)
        if memory.retention is not None:
            report.archived = apply_retention(self.memories.episodic, memory.retention, now=self.world.tick,
                                              actor=self.id)
        return report

    def _record_rejected(self, session: int, report: SessionReport) -> None:
        """Keep what migration refused in world state, where summary.json and `inspect` read it.
        A session end resumed after its working memory was cleared finds nothing to refuse: its
        report reads back what the first attempt recorded."""
        key = f"{self.id}:{session}"
        recorded = self.world.state.get((REJECTED_STATE, key))
        if not report.rejected:
            report.rejected = dict(recorded or {})
            return
        listed = self._first_refusals(session, report.rejected)
        if listed and recorded != listed:  # a resumed session end with the same refusals writes nothing
            self.world.set_state(REJECTED_STATE, key, listed)

    def _first_refusals(self, session: int, rejected: dict[str, str]) -> dict[str, str]:
        """The refusals to list under this session end. With `history: carry` a refused entry stays
        in working memory and every later session end refuses it again: it is listed once, under
        the first (the count is of lines the agent wrote, not of sessions they outlived). With
        `history: session` the working memory is cleared, so a line refused again was written again."""
        if self.config.history != "carry":
            return dict(rejected)
        earlier: set[str] = set()
        for before in range(1, session):
            earlier.update(self.world.state.get((REJECTED_STATE, f"{self.id}:{before}")) or {})
        return {line: why for line, why in rejected.items() if line not in earlier}

    def _clear_working_memory(self, session: int) -> None:
        """Empty the working memory after migration (history: session); a resumed session end
        finds it empty and writes nothing."""
        empty = WorkingMemory().to_yaml()
        artifact = self.world.get(self.config.working_memory_id)
        if artifact is not None and artifact.content != empty:
            self.world.execute(self.id, WriteArtifact(artifact_id=self.config.working_memory_id, content=empty),
                               meta={"history_cleared": session})  # not a turn, not a migration

    def _migrate(self, session: int, report: SessionReport) -> None:
        entries = prefixed_entries(self.memories.working_memory_text(), self.config.memory.migration_prefixes)
        memory = self.config.memory
        longterm = self.memories.longterm
        for entry in entries:
            # One the agent wrote itself (the lesson step already refuses them) would cost an add
            # and fill long-term memory with a line no later turn can use.
            if (reason := refusal_reason(entry)) is not None:
                report.rejected[entry] = reason
                continue
            # Exact repeats are always skipped (this also makes a resumed session end idempotent);
            # near-duplicates only when de-duplication is on, and they reinforce the original.
            duplicate = find_duplicate(longterm, entry, memory.dedup_threshold if memory.dedup else None)
            if duplicate is not None and self._migrated_here(duplicate, session):
                # A resumed session end: this very migration committed before the process died.
                report.migrated.append(entry)
                continue
            if duplicate is not None:
                label = f"{self.config.working_memory_id}@session{session}"
                # One session end reinforces a record once: a resumed one finds its label already
                # there. At the world's time: the store's clock is the latest time it saw, which a
                # resumed process (that has not searched yet) does not share.
                if label not in longterm.get(duplicate).reinforced_by:
                    reinforce(longterm, duplicate, by=label, now=self.world.tick, actor=self.id,
                              reason="the same lesson migrated again")
                report.skipped_duplicates.append(entry)
                continue
            kind = entry.split(":", 1)[0].strip().lower()
            result = self.world.execute(self.id, InvokeArtifact(
                artifact_id=MEMORY_ID, method="add",
                args={"store_id": self.config.store_id, "text": entry,
                      "kind": kind if kind.isalpha() else "lesson",
                      "metadata": {"migrated_from": self.config.working_memory_id, "session": session}}),
                meta=MigrationRecord(session=session).meta())
            (report.migrated if result.success else report.failed).append(entry)

    def _migrated_here(self, record_id: str, session: int) -> bool:
        metadata = self.memories.longterm.get(record_id).metadata
        return (metadata.get("migrated_from") == self.config.working_memory_id and metadata.get("session") == session)

    def _promote_reflections(self, reflection) -> list[str]:
        """Copy new insights into long-term memory (where RAG finds them), keeping their evidence."""
        promoted = []
        longterm, episodic = self.memories.longterm, self.memories.episodic
        for rid, insight, sources in zip(reflection.ids, reflection.insights, reflection.source_ids):
            target_id = f"refl:{rid}"
            if target_id in longterm:
                continue
            longterm.add(f"INSIGHT: {insight}", kind="reflection", importance=0.8, created=self.world.tick,
                         metadata={"agent": self.id, "reflected_from": episodic.store_id},
                         source_ids=list(sources), tier="long_term", record_id=target_id, actor=self.id,
                         reason="threshold reflection over episodic memory")
            promoted.append(insight)
        return promoted


def rejected_at_session_end(state: Mapping[tuple[str, str], Any]) -> dict[str, list[tuple[int, str, str]]]:
    """Per agent, the lessons its session ends refused as (session, lesson, reason), by session,
    read from a world's state (`REJECTED_STATE`)."""
    found: dict[str, list[tuple[int, str, str]]] = {}
    for (namespace, key), rejected in state.items():
        if namespace != REJECTED_STATE or not isinstance(rejected, dict):
            continue
        agent, _, session = key.rpartition(":")
        if agent and session.isdigit():
            found.setdefault(agent, []).extend((int(session), str(line), str(why)) for line, why in rejected.items())
    return {agent: sorted(rows, key=lambda row: row[0]) for agent, rows in sorted(found.items())}
