"""The memory record, the search hit, tiers and the known kinds."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

Tier = Literal["working", "episodic", "long_term"]
"""Where a memory lives: a session's working set, the episodic stream, or long-term semantic memory."""

TIERS: tuple[str, ...] = ("working", "episodic", "long_term")

KNOWN_KINDS: tuple[str, ...] = (
    "observation", "reflection", "lesson", "strategy", "character", "scene", "dialogue", "plan",
    "fact", "summary", "gift",
)
"""Kinds the engine knows by name; the set is open, any non-empty lower-case name is accepted."""

DEFAULT_KIND = "observation"
DEFAULT_TIER: Tier = "episodic"


class MemoryRecord(BaseModel):
    """One memory. Importance is stored on the 0..1 scale (see :mod:`mnemarket.memory.weights`).

    ``embedding`` is excluded from ``model_dump``/JSON (it is a float32 vector, persisted as a
    blob); use :meth:`MemoryStore.get` with ``with_embedding=True`` to fetch it.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    id: str
    """Identifier, unique within its store."""
    text: str
    """What is remembered."""
    kind: str = DEFAULT_KIND
    """observation, reflection, lesson, strategy, character, scene, dialogue, ... (open set)."""
    tier: Tier = DEFAULT_TIER
    """working, episodic or long_term."""
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    """Normalised importance, 0 (mundane) .. 1 (critical)."""
    created: float = 0.0
    """Time (simulation step or seconds) the memory was formed."""
    last_accessed: float = 0.0
    """Time of the last retrieval (or of creation); drives recency."""
    access_count: int = Field(default=0, ge=0)
    """How many searches returned this memory."""
    embedding_model: str = ""
    """The embedder model id that produced the vector; stores refuse to mix ids."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form facets used by filters: agent, category, about, turn, speaker, location, tags, ..."""
    source_ids: list[str] = Field(default_factory=list)
    """Evidence this memory rests on (for reflections: the memories it summarises)."""
    questions_addressed: list[str] = Field(default_factory=list)
    """Canonical questions this memory answers (gifted memories, reflection focal points)."""
    reinforced_by: list[str] = Field(default_factory=list)
    """Ids of later memories that repeated or confirmed this one (de-duplication, consolidation)."""
    archived: bool = False
    """Retained but excluded from search unless asked for (retention policies set this)."""
    embedding: np.ndarray | None = Field(default=None, exclude=True, repr=False)
    """The float32 unit vector, when fetched."""

    @field_validator("kind")
    @classmethod
    def _kind_is_a_name(cls, value: str) -> str:
        if not value or not value.strip() or value != value.strip().lower():
            raise ValueError(
                f"kind {value!r} must be a non-empty lower-case name such as {', '.join(KNOWN_KINDS[:4])}"
            )
        return value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryRecord):
            return NotImplemented
        if self.model_dump() != other.model_dump():
            return False
        if self.embedding is None or other.embedding is None:
            return self.embedding is None and other.embedding is None
        return bool(np.array_equal(self.embedding, other.embedding))


class MemoryHit(BaseModel):
    """One search result: the record's main fields plus the score and its three components.

    ``relevance``, ``recency`` and ``importance`` are the normalised (0..1) components that were
    weighted into ``score``; ``dense`` and ``lexical`` are the raw cosine and BM25 values (None when
    the mode did not compute them).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    kind: str
    tier: Tier
    created: float
    score: float
    relevance: float
    recency: float
    importance: float
    metadata: dict[str, Any]
    dense: float | None = None
    lexical: float | None = None
    record: MemoryRecord = Field(repr=False)
    """The full record as it was when retrieved (before this search touched it)."""
