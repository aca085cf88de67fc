"""Presets: each source system's documented memory defaults, selectable by name in config.

Every named preset keeps its source system's cosine ranking (``mode="dense"``): the LoCoMo table in
benchmarks/README.md that made hybrid the store's default measured the store, not these systems,
and a preset exists to reproduce its system. A preset defined without a mode gets hybrid.

==========  ==============================================================================
genagents   Generative Agents (genagents): hp = [recency 0, relevance 1, importance 0.5],
            n = 120, decay 0.99, importance 0-100 by LLM, results re-sorted oldest first,
            anchored reflection (120 retrieved, 5 insights).
dual        Dual episodic/semantic memory (ADR-006): relevance 0.5, recency 0.3, importance 0.2;
            importance 1-10 (batched LLM); reflection when accumulated importance passes 100
            (3 questions, 10 memories each, reflections rated 8); retention caps 1000
            observations / 100 reflections, importance-weighted.
cognitive   Working/episodic consolidation (flood households): working 10, episodic 50,
            consolidation at 0.7, decay 0.95 per year, top 5, working memory listed first,
            importance from a fixed table of the world's events (passed in: make_rater(table=...)).
gifted      Gifted memories: cosine with metadata filters, top 5, canonical queries on.
ecology     Artifact-economy long-term store: cosine (or hybrid) top-k with RAG limit 7,
            LESSON:/STRATEGY:/INSIGHT: migration, de-duplication of lessons.
==========  ==============================================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mnemarket.errors import ConfigError, did_you_mean
from mnemarket.memory.dedup import DedupPolicy
from mnemarket.memory.importance import (
    BatchLLMRaterConfig,
    HeuristicRaterConfig,
    ImportanceRaterLike,
    LLMRaterConfig,
    RaterSpec,
    TableRaterConfig,
    make_importance_rater,
)
from mnemarket.memory.migration import DEFAULT_PREFIXES
from mnemarket.memory.reflection import ThresholdReflector
from mnemarket.memory.retention import RetentionPolicy
from mnemarket.memory.store import MemoryStore
from mnemarket.memory.tiers import TierConfig, WorkingMemoryTier
from mnemarket.memory.weights import ImportanceScale, RetrievalWeights, SearchMode
from mnemarket.providers import LLM


class ReflectionSettings(BaseModel):
    """How a preset reflects."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    form: Literal["anchored", "threshold"]
    retrieval_count: int = Field(default=120, ge=1)
    """Anchored: memories retrieved for the anchor."""
    reflection_count: int = Field(default=5, ge=1)
    """Anchored: insights asked for."""
    threshold: float = Field(default=100.0, gt=0)
    """Threshold: accumulated importance (on ``scale``) that triggers."""
    scale: ImportanceScale = "1-10"
    questions: int = Field(default=3, ge=1)
    memories_per_question: int = Field(default=10, ge=1)
    recent: int = Field(default=100, ge=1)
    reflection_importance: float = 8.0
    """Threshold: importance of each reflection, on ``scale``."""


class MemoryPreset(BaseModel):
    """One source system's memory behaviour as numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    weights: RetrievalWeights
    """Retrieval weights (and recency decay)."""
    k: int = Field(ge=1)
    """Memories retrieved per query (n_count / top_k / RAG limit)."""
    mode: SearchMode = "hybrid"
    """Relevance mode; a new preset gets the store's default (hybrid, chosen on the LoCoMo dev set).
    The named presets below pin ``dense``: their source systems rank by cosine."""
    chronological: bool = False
    """Re-sort the selected memories oldest first (Generative Agents)."""
    importance_scale: ImportanceScale = "unit"
    """Scale the system reads and writes importance on."""
    rater: RaterSpec = Field(default_factory=HeuristicRaterConfig)
    reflection: ReflectionSettings | None = None
    tiers: TierConfig | None = None
    retention: RetentionPolicy | None = None
    dedup: DedupPolicy | None = None
    canonical_queries: bool = False
    migration_prefixes: list[str] | None = None

    def search_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :meth:`MemoryStore.search` this preset implies."""
        return {"k": self.k, "weights": self.weights, "mode": self.mode, "chronological": self.chronological}

    def make_rater(self, llm: LLM | None = None, *, table: Mapping[str, float] | None = None) -> ImportanceRaterLike:
        """The preset's importance rater (LLM kinds need ``llm``; the table kind rates by the
        world's events, so it needs ``table``: event type -> importance on the rater's scale).

        Raises:
            ConfigError: an LLM kind without ``llm``, or the table kind without a table.
        """
        spec = self.rater
        if isinstance(spec, TableRaterConfig):
            if table is None and not spec.table:
                raise ConfigError(f"preset {self.name!r} rates importance by a table of the world's events; "
                                  "pass make_rater(table={event type: importance}), e.g. the flood scenario's "
                                  "FLOOD_EVENT_TABLE")
            if table is not None:
                spec = spec.model_copy(update={"table": dict(table)})
        return make_importance_rater(spec, llm)

    def make_reflector(self, **overrides: Any) -> ThresholdReflector:
        """A threshold reflector with this preset's numbers.

        Raises:
            ConfigError: the preset does not reflect by threshold.
        """
        r = self.reflection
        if r is None or r.form != "threshold":
            raise ConfigError(f"preset {self.name!r} has no threshold reflection; the 'dual' preset does")
        options: dict[str, Any] = {"threshold": r.threshold, "scale": r.scale, "questions": r.questions,
                                   "memories_per_question": r.memories_per_question, "recent": r.recent,
                                   "reflection_importance": r.reflection_importance, "mode": self.mode}
        options.update(overrides)
        return ThresholdReflector(**options)

    def make_tiers(self, store: MemoryStore, *, scope: Mapping[str, Any] | None = None, actor: str = "") -> WorkingMemoryTier:
        """Working/episodic tiers over ``store`` with this preset's numbers (default numbers if it has none)."""
        return WorkingMemoryTier(store, self.tiers or TierConfig(), scope=scope, actor=actor)


PRESETS: dict[str, MemoryPreset] = {
    "genagents": MemoryPreset(
        name="genagents",
        description="Generative Agents memory stream: relevance + half-weighted importance, 120 memories, "
                    "chronological, 0-100 LLM importance, anchored reflection",
        weights=RetrievalWeights(recency=0.0, relevance=1.0, importance=0.5, decay=0.99),
        k=120, mode="dense", chronological=True, importance_scale="0-100",
        rater=LLMRaterConfig(scale="0-100"),
        reflection=ReflectionSettings(form="anchored", retrieval_count=120, reflection_count=5),
    ),
    "dual": MemoryPreset(
        name="dual",
        description="Dual episodic/semantic memory: 0.5/0.3/0.2 scoring, 1-10 batched importance, "
                    "threshold reflection at 100, retention 1000 observations / 100 reflections",
        weights=RetrievalWeights(relevance=0.5, recency=0.3, importance=0.2, decay=0.99),
        k=10, mode="dense", importance_scale="1-10",
        rater=BatchLLMRaterConfig(scale="1-10"),
        reflection=ReflectionSettings(form="threshold", threshold=100.0, scale="1-10", questions=3,
                                      memories_per_question=10, recent=100, reflection_importance=8.0),
        retention=RetentionPolicy.dual(1000, 100),
    ),
    "cognitive": MemoryPreset(
        name="cognitive",
        description="Working/episodic consolidation: working 10 (FIFO), episodic 50, consolidation 0.7, "
                    "decay 0.95 per year, top 5, working first, importance from an event table",
        weights=RetrievalWeights(relevance=0.0, recency=1.0, importance=1.0, decay=0.95),
        k=5, mode="dense", rater=TableRaterConfig(table={}),  # the world's events: make_rater(table=...)
        tiers=TierConfig(working_capacity=10, episodic_capacity=50, episodic_threshold=0.7,
                         consolidation_threshold=0.7, decay=0.95, top_k=5, working_first=True),
    ),
    "gifted": MemoryPreset(
        name="gifted",
        description="Gifted memories: cosine with metadata filters, top 5, canonical-query aliases",
        weights=RetrievalWeights(relevance=1.0), k=5, mode="dense", canonical_queries=True,
    ),
    "ecology": MemoryPreset(
        name="ecology",
        description="Artifact-economy long-term store: cosine top-k with RAG limit 7, prefixed lessons "
                    "migrated at session end, lessons de-duplicated",
        weights=RetrievalWeights(relevance=1.0), k=7, mode="dense", dedup=DedupPolicy(),
        migration_prefixes=list(DEFAULT_PREFIXES),
    ),
}
"""Every preset by name."""


def get_preset(name: str) -> MemoryPreset:
    """The preset called ``name``.

    Raises:
        ConfigError: unknown name; the message lists the presets and suggests the closest.
    """
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"memory preset {name!r} is unknown; use one of {', '.join(PRESETS)}."
                          f"{did_you_mean(str(name), PRESETS)}") from None


__all__ = ["PRESETS", "MemoryPreset", "ReflectionSettings", "get_preset"]
