"""The memory engine: records, hybrid retrieval with Generative-Agents scoring, filters, persistence.

Usable without a world::

    from mnemarket.memory import MemoryStore, RetrievalWeights
    store = MemoryStore()                       # in memory, MiniLM embedder
    rid = store.add("Alice sells apples at the market", metadata={"agent": "bob", "turn": 3})
    hits = store.search("who sells fruit?", k=5, filter={"agent": "bob"})

Mechanics over a store (plans/memory-mechanics.md): importance raters, anchored and threshold
reflection, working/episodic tiers and consolidation, session-end migration, de-duplication,
retention with archive, chunking, gifted memories with canonical-query aliases, presets of each
source system, a Generative-Agents ``MemoryStream`` facade and an audit trail of every change.
"""

from mnemarket.memory.audit import AuditEntry
from mnemarket.memory.chunking import DEFAULT_CHUNK_CHARS, chunk_text
from mnemarket.memory.dedup import (
    DEFAULT_DEDUP,
    AddOutcome,
    DedupPolicy,
    DuplicateMatch,
    add_deduplicated,
    find_duplicate,
    find_duplicate_match,
    normalise_text,
    reinforce,
)
from mnemarket.memory.errors import EmbeddingModelMismatchError, MemoryNotFoundError
from mnemarket.memory.filters import OPERATORS, FilterSpec
from mnemarket.memory.gifted import (
    CHARACTER_QUERIES,
    RELATION_QUERIES,
    SCENE_QUERIES,
    Scenario,
    SeedReport,
    seed_character,
    seed_lessons,
    seed_scenario,
)
from mnemarket.memory.importance import (
    RATER_KINDS,
    BatchLLMRater,
    BatchLLMRaterConfig,
    HeuristicRater,
    HeuristicRaterConfig,
    ImportanceRaterLike,
    LLMRater,
    LLMRaterConfig,
    RaterSpec,
    Rating,
    TableRater,
    TableRaterConfig,
    make_importance_rater,
)
from mnemarket.memory.lexical import BM25Index, tokenize
from mnemarket.memory.migration import DEFAULT_PREFIXES, MigrationReport, extract_prefixed, migrate_prefixed
from mnemarket.memory.persistence import MemoryPersistence, Transaction
from mnemarket.memory.presets import PRESETS, MemoryPreset, ReflectionSettings, get_preset
from mnemarket.memory.records import KNOWN_KINDS, TIERS, MemoryHit, MemoryRecord, Tier
from mnemarket.memory.reflection import ReflectionReport, ThresholdReflector, ThresholdReflectorState, reflect_anchored
from mnemarket.memory.retention import RetentionCap, RetentionPolicy, apply_retention, archived, restore
from mnemarket.memory.scoring import recency
from mnemarket.memory.store import ImportanceRater, MemoryStore
from mnemarket.memory.stream import ConceptNode, MemoryStream
from mnemarket.memory.tiers import ConsolidationReport, Placement, TierConfig, TierItem, WorkingMemoryTier, consolidate
from mnemarket.memory.vector_index import AnnConfig, IndexMode, UsearchVectorIndex
from mnemarket.memory.weights import (
    DEFAULT_IMPORTANCE,
    DEFAULT_WEIGHTS,
    IMPORTANCE_SCALES,
    SEARCH_MODES,
    Fusion,
    ImportanceScale,
    RetrievalWeights,
    SearchMode,
    importance_from_scale,
    importance_to_scale,
)

__all__ = [
    "CHARACTER_QUERIES", "DEFAULT_CHUNK_CHARS", "DEFAULT_DEDUP", "DEFAULT_IMPORTANCE", "DEFAULT_PREFIXES",
    "DEFAULT_WEIGHTS", "IMPORTANCE_SCALES", "KNOWN_KINDS", "OPERATORS", "PRESETS", "RATER_KINDS",
    "RELATION_QUERIES", "SCENE_QUERIES", "SEARCH_MODES", "TIERS", "AddOutcome", "AnnConfig", "AuditEntry",
    "BM25Index", "BatchLLMRater", "BatchLLMRaterConfig", "ConceptNode", "ConsolidationReport", "DedupPolicy",
    "DuplicateMatch", "EmbeddingModelMismatchError", "FilterSpec", "Fusion", "HeuristicRater",
    "HeuristicRaterConfig", "ImportanceRater", "ImportanceScale", "IndexMode", "LLMRater", "LLMRaterConfig",
    "MemoryHit", "MemoryNotFoundError", "MemoryPersistence", "MemoryPreset", "MemoryRecord", "MemoryStore",
    "MemoryStream", "MigrationReport", "Placement", "RaterSpec", "Rating", "ReflectionReport",
    "ReflectionSettings", "RetentionCap", "RetentionPolicy", "RetrievalWeights", "Scenario", "SearchMode",
    "SeedReport", "TableRater", "TableRaterConfig", "ThresholdReflector", "ThresholdReflectorState", "Tier",
    "TierConfig", "TierItem", "Transaction", "UsearchVectorIndex", "WorkingMemoryTier", "add_deduplicated",
    "apply_retention", "archived", "chunk_text", "consolidate", "extract_prefixed", "find_duplicate",
    "find_duplicate_match", "get_preset", "importance_from_scale", "importance_to_scale", "make_importance_rater",
    "migrate_prefixed", "normalise_text", "recency", "reflect_anchored", "reinforce", "restore", "seed_character",
    "seed_lessons", "seed_scenario", "ImportanceRaterLike", "tokenize",
]
