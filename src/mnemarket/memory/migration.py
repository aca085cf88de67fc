"""Session-end migration: prefixed working-memory entries (LESSON:, STRATEGY:, INSIGHT:, ...) move
into a long-term store, de-duplicated against what it already holds, with counts reported.

The agents layer may do the writes itself (e.g. through charged economy calls); it can still use
:func:`extract_prefixed` and :func:`mnemarket.memory.dedup.find_duplicate` /
:func:`~mnemarket.memory.dedup.reinforce` here for the same decisions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.memory.dedup import DEFAULT_DEDUP, DedupPolicy, add_deduplicated
from mnemarket.memory.persistence import Transaction
from mnemarket.memory.records import MemoryRecord
from mnemarket.memory.store import MemoryStore

DEFAULT_PREFIXES: tuple[str, ...] = ("LESSON:", "STRATEGY:", "INSIGHT:")
MAX_ENTRY_CHARS = 2000
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
_KIND = re.compile(r"^[a-z][a-z_]{0,31}$")


class MigrationReport(BaseModel):
    """What a migration did; ``migrated`` and ``reinforced`` are record ids, ``skipped`` texts."""

    model_config = ConfigDict(extra="forbid")

    migrated: list[str] = Field(default_factory=list)
    """Ids of new long-term records."""
    reinforced: list[str] = Field(default_factory=list)
    """Ids of existing records a repeated entry reinforced (one per repeat)."""
    skipped: list[str] = Field(default_factory=list)
    """Entries not migrated: no configured prefix, empty after the prefix, or too long."""
    source_ids: list[str] = Field(default_factory=list)
    """Working-memory record ids that were migrated (when records were given)."""

    @property
    def counts(self) -> dict[str, int]:
        return {"migrated": len(self.migrated), "reinforced": len(self.reinforced), "skipped": len(self.skipped)}


def _strip_bullet(line: str) -> str:
    return _BULLET.sub("", line.strip(), count=1).strip()


def matching_prefix(text: str, prefixes: Sequence[str]) -> str | None:
    """The configured prefix ``text`` starts with (case-insensitive, after a list bullet), or None."""
    body = _strip_bullet(text).upper()
    for prefix in sorted(prefixes, key=len, reverse=True):
        if body.startswith(prefix.upper()):
            return prefix
    return None


def extract_prefixed(text: str, prefixes: Sequence[str] = DEFAULT_PREFIXES) -> list[str]:
    """Lines of ``text`` that start with one of ``prefixes`` (bullets removed), in order."""
    return [_strip_bullet(line) for line in text.splitlines() if matching_prefix(line, prefixes)]


def kind_for_prefix(prefix: str) -> str:
    """``LESSON:`` -> ``lesson``; a prefix that is not a simple word -> ``lesson``."""
    name = prefix.strip().rstrip(":").strip().lower().replace(" ", "_")
    return name if _KIND.match(name) else "lesson"


def migrate_prefixed(
    entries_or_text: str | Sequence[str] | Sequence[MemoryRecord],
    prefixes: Sequence[str],
    target_store: MemoryStore,
    *,
    dedup: DedupPolicy | None = DEFAULT_DEDUP,
    kind_by_prefix: Mapping[str, str] | None = None,
    importance: float | None = None,
    tier: str = "long_term",
    metadata: Mapping[str, Any] | None = None,
    session: str | int | None = None,
    now: float | None = None,
    actor: str = "session-end",
    dedup_filter: Mapping[str, Any] | None = None,
    connection: Transaction | None = None,
) -> MigrationReport:
    """Migrate prefixed entries into ``target_store``.

    Args:
        entries_or_text: a working memory's text (one entry per line), a list of entries, or
            working-tier records (their ids become ``source_ids`` of the migrated records).
        prefixes: entry prefixes that mark what is worth keeping.
        target_store: the long-term store.
        dedup: repeats of live records reinforce them instead of adding copies (None: off).
        kind_by_prefix: kind per prefix (default: the prefix's word, ``STRATEGY:`` -> ``strategy``).
        importance: importance of new records (None: the store's rater or default).
        tier: tier of new records.
        metadata: added to every new record (plus ``migrated_from``/``session`` when known).
        session: the session that ended (recorded in metadata, ``reinforced_by`` and audit).
        now: time of the migration.
        actor: who migrates (audit).
        dedup_filter: restrict duplicate candidates (e.g. to this agent's records).
        connection: write inside the caller's transaction.

    Returns:
        A :class:`MigrationReport`; one ``migrate`` audit entry summarises it.
    """
    if isinstance(entries_or_text, str):
        items: list[tuple[str, MemoryRecord | None]] = [(line, None) for line in entries_or_text.splitlines() if line.strip()]
    else:
        items = [(e.text, e) if isinstance(e, MemoryRecord) else (str(e), None) for e in entries_or_text]
    report = MigrationReport()
    label = f"migration:{session}" if session is not None else "migration"
    for text, record in items:
        prefix = matching_prefix(text, prefixes)
        body = _strip_bullet(text)
        if prefix is None or not body[len(prefix):].strip() or len(body) > MAX_ENTRY_CHARS:
            report.skipped.append(text)
            continue
        kind = (kind_by_prefix or {}).get(prefix) or kind_for_prefix(prefix)
        meta = dict(metadata or {})
        if session is not None:
            meta.setdefault("session", session)
        if record is not None:
            meta.setdefault("migrated_from", record.id)
        outcome = add_deduplicated(
            target_store, body, kind=kind, policy=dedup or DedupPolicy(enabled=False), importance=importance,
            by=record.id if record is not None else label, filter=dedup_filter, now=now, actor=actor,
            reason=f"session-end migration of a {prefix} entry", connection=connection, tier=tier, metadata=meta,
            source_ids=[record.id] if record is not None else None,
        )
        (report.reinforced if outcome.reinforced else report.migrated).append(outcome.id)
        if record is not None:
            report.source_ids.append(record.id)
    target_store.record_audit(
        "migrate", [*report.migrated, *report.reinforced], actor=actor, connection=connection,
        reason=f"session-end migration{'' if session is None else f' of session {session}'}",
        details={**report.counts, "prefixes": list(prefixes), "source_ids": report.source_ids},
        time=now,
    )
    return report


__all__ = ["DEFAULT_PREFIXES", "MigrationReport", "extract_prefixed", "kind_for_prefix", "matching_prefix",
           "migrate_prefixed"]
