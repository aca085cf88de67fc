"""Gifted memories: seed a character, its scenario and what it knows of others before the first turn.

Each field becomes one or more records (long texts chunked at 300 characters) with shared
metadata (``agent``, ``type``, ``category``, ``about``). With ``canonical_queries`` each record is
also indexed under the category's canonical questions ("who am I?", "what is my identity?", ...)
as alias vectors: stored once, found by any of its phrasings, so a question reliably reaches
declarative text. Record ids are deterministic, so seeding again (a resumed run) adds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.memory.chunking import DEFAULT_CHUNK_CHARS, chunk_text
from mnemarket.memory.dedup import DEFAULT_DEDUP, DedupPolicy, add_deduplicated, text_hash
from mnemarket.memory.persistence import Transaction
from mnemarket.memory.store import MemoryStore

CHARACTER_QUERIES: dict[str, tuple[str, ...]] = {
    "identity": ("who am I?", "what is my identity?", "describe myself"),
    "background": ("what is my background?", "what is my history?"),
    "communication": ("how do I communicate?", "how do I speak?", "what is my communication style?"),
    "decision_style": ("how do I make decisions?", "what is my decision style?"),
    "traits": ("what are my traits?", "describe my personality"),
    "skills": ("what am I good at?", "what are my skills?"),
    "values": ("what do I value?", "what are my principles?"),
}
"""Canonical queries per character category (the gifted-memory system's table)."""

SCENE_QUERIES: dict[str, tuple[str, ...]] = {
    "location": ("where am I?", "what is the location?", "describe the scene"),
    "atmosphere": ("what's the atmosphere?", "what's the mood?", "describe the atmosphere"),
    "time": ("what time is it?", "when is this happening?"),
    "situation": ("what is happening?", "what's the situation?"),
}
"""Canonical queries per scenario category."""

RELATION_QUERIES: tuple[str, ...] = ("who is {name}?", "what do I know about {name}?", "describe {name}")
"""Canonical queries for what a character knows about another (``{name}`` is filled in)."""

CHARACTER_FIELDS: tuple[str, ...] = tuple(CHARACTER_QUERIES)
SCENE_FIELDS: tuple[str, ...] = tuple(SCENE_QUERIES)
_FIELD_ALIASES = {"communication_style": "communication", "description": "identity", "tod": "time",
                  "context": "situation", "description_of_scene": "situation"}


class Scenario(BaseModel):
    """Shared scene context seeded once for everyone."""

    model_config = ConfigDict(extra="forbid")

    location: str = ""
    atmosphere: str = ""
    time: str = ""
    situation: str = ""


class SeedReport(BaseModel):
    """Ids seeded per category (``character:identity``, ``scene:location``, ``knows:bob``, ``lesson``)."""

    model_config = ConfigDict(extra="forbid")

    ids: dict[str, list[str]] = Field(default_factory=dict)
    aliases: int = 0
    """Alias vectors added."""
    existing: int = 0
    """Records already present (seeding is idempotent)."""

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.ids.values())


def _fields(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, BaseModel):
        data = obj.model_dump()
    elif isinstance(obj, Mapping):
        data = dict(obj)
    else:
        data = {k: getattr(obj, k) for k in dir(obj) if not k.startswith("_") and not callable(getattr(obj, k))}
    return {_FIELD_ALIASES.get(k, k): v for k, v in data.items()}


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (list, tuple, set)):
        return ", ".join(str(v).strip() for v in value if str(v).strip())
    return str(value).strip()


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text.lower())[:40] or "x"


class _Seeder:
    def __init__(self, store: MemoryStore, canonical: bool, chunk_chars: int, created: float | None,
                 importance: float, actor: str, connection: Transaction | None):
        self.store, self.canonical, self.chunk_chars = store, canonical, chunk_chars
        self.created, self.importance, self.actor, self.connection = created, importance, actor, connection
        self.report = SeedReport()

    def seed(self, key: str, id_prefix: str, text: str, kind: str, metadata: dict[str, Any],
             queries: Sequence[str]) -> None:
        chunks = chunk_text(text, self.chunk_chars) if text else []
        for index, chunk in enumerate(chunks):
            rid = f"{id_prefix}:{index}"
            if rid in self.store:
                self.report.existing += 1
            else:
                self.store.add(chunk, kind=kind, tier="long_term", importance=self.importance, created=self.created,
                               metadata={**metadata, "gifted": True}, questions_addressed=list(queries),
                               record_id=rid, connection=self.connection, actor=self.actor,
                               reason=f"gifted memory ({key})")
            if self.canonical and queries:
                self.report.aliases += self.store.add_aliases(rid, queries, actor=self.actor, connection=self.connection,
                                                              reason="canonical queries")
            self.report.ids.setdefault(key, []).append(rid)


def seed_character(
    store: MemoryStore,
    character: Any,
    scenario: Scenario | Mapping[str, Any] | None = None,
    relations: Mapping[str, str] | None = None,
    canonical_queries: bool = True,
    *,
    agent: str | None = None,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    created: float | None = 0.0,
    importance: float = 0.8,
    actor: str = "seed",
    connection: Transaction | None = None,
) -> SeedReport:
    """Seed a character's gifted memories (and optionally the scenario and its relations).

    Args:
        store: the character's store (or a shared one; ``agent`` scopes the records).
        character: a model, dict or object with any of ``identity`` (or ``description``),
            ``background``, ``communication`` (or ``communication_style``), ``decision_style``,
            ``traits``, ``skills``, ``values`` (lists are joined), optional ``name`` and ``knows``
            (name -> what this character knows of them).
        scenario: location, atmosphere, time, situation (seeded with ``type: scene``).
        relations: what this character knows about others, by name (merged over ``knows``).
        canonical_queries: index each record under its category's canonical questions.
        agent: the character's id in metadata (default its ``name``, else ``self``).
        chunk_chars: chunk size for long fields.
        created: creation time of the seeded records.
        importance: importance of the seeded records (0..1).
        actor: who seeds (audit).
        connection: write inside the caller's transaction.

    Returns:
        A :class:`SeedReport` of the ids per category.
    """
    fields = _fields(character)
    agent_id = agent or _as_text(fields.get("name")) or "self"
    seeder = _Seeder(store, canonical_queries, chunk_chars, created, importance, actor, connection)
    for category, queries in CHARACTER_QUERIES.items():
        text = _as_text(fields.get(category))
        if text:
            seeder.seed(f"character:{category}", f"gift:{_slug(agent_id)}:{category}", text, "character",
                        {"agent": agent_id, "type": "character", "category": category}, queries)
    known = {**dict(fields.get("knows") or {}), **dict(relations or {})}
    for name, text in known.items():
        relation_queries = [q.format(name=name) for q in RELATION_QUERIES]
        seeder.seed(f"knows:{name}", f"gift:{_slug(agent_id)}:knows:{_slug(name)}", _as_text(text),
                    "character_knowledge",
                    {"agent": agent_id, "type": "character_knowledge", "category": "knowledge", "about": name},
                    relation_queries)
    if scenario is not None:
        scene = seed_scenario(store, scenario, canonical_queries=canonical_queries, chunk_chars=chunk_chars,
                              created=created, importance=importance, actor=actor, connection=connection)
        seeder.report.ids.update(scene.ids)
        seeder.report.aliases += scene.aliases
        seeder.report.existing += scene.existing
    return seeder.report


def seed_scenario(store: MemoryStore, scenario: Scenario | Mapping[str, Any], *, canonical_queries: bool = True,
                  chunk_chars: int = DEFAULT_CHUNK_CHARS, created: float | None = 0.0, importance: float = 0.8,
                  actor: str = "seed", connection: Transaction | None = None) -> SeedReport:
    """Seed the shared scene context (``kind: scene``, ``type: scene``, category per field)."""
    fields = _fields(scenario)
    seeder = _Seeder(store, canonical_queries, chunk_chars, created, importance, actor, connection)
    for category, queries in SCENE_QUERIES.items():
        text = _as_text(fields.get(category))
        if text:
            seeder.seed(f"scene:{category}", f"gift:scene:{category}", text, "scene",
                        {"type": "scene", "category": category}, queries)
    return seeder.report


def seed_lessons(store: MemoryStore, lessons: Sequence[str], *, agent: str | None = None, importance: float = 0.7,
                 created: float | None = 0.0, dedup: DedupPolicy | None = DEFAULT_DEDUP, actor: str = "seed",
                 connection: Transaction | None = None) -> SeedReport:
    """Pre-seed lessons (``kind: lesson``, long-term); repeats of live lessons reinforce them."""
    report = SeedReport()
    metadata: dict[str, Any] = {"preseeded": True}
    if agent:
        metadata["agent"] = agent
    for lesson in lessons:
        text = lesson.strip()
        if not text:
            continue
        rid = f"preseed:{_slug(agent or 'all')}:{text_hash(text)}"
        if rid in store:  # seeded before (a resumed run): nothing to do
            report.existing += 1
            continue
        outcome = add_deduplicated(store, text, kind="lesson", policy=dedup or DedupPolicy(enabled=False),
                                   importance=importance, now=created, actor=actor, reason="pre-seeded lesson",
                                   connection=connection, tier="long_term", metadata=metadata,
                                   filter={"agent": agent} if agent else None, by="preseed", record_id=rid)
        if outcome.reinforced:
            report.existing += 1
        else:
            report.ids.setdefault("lesson", []).append(outcome.id)
    return report


__all__ = [
    "CHARACTER_FIELDS",
    "CHARACTER_QUERIES",
    "RELATION_QUERIES",
    "SCENE_FIELDS",
    "SCENE_QUERIES",
    "Scenario",
    "SeedReport",
    "seed_character",
    "seed_lessons",
    "seed_scenario",
]
