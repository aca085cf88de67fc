"""The metrics' results as types: what `reports.metrics` returns per agent, per cell, per lesson and
per session. They are the JSON a comparison stores (cell.json, metrics.json) and reads back by key,
so they are typed dicts: the keys, their order and their values are what the metrics always wrote.
Every figure is defined in plans/metrics.md.
"""

from __future__ import annotations

from typing import Generic, TypeAlias, TypedDict, TypeVar


class LessonQuality(TypedDict):
    lessons_stored: int
    lessons_by_action: int
    lessons_migrated: int
    duplicates: int
    duplicate_rate: float | None
    generic: int
    generic_rate: float | None
    specificity_mean: float | None


class Uptake(TypedDict):
    lessons_in_rag_store: int
    lessons_retrieved: int
    uptake_rate: float | None
    lesson_retrievals: int


class PooledApplication(TypedDict):
    """Failure lessons and the failure rates before and after they were first retrieved (for a
    cell: over all its agents, the raw counts summed, then the rates)."""

    failure_lessons: int
    application_pairs: int
    failures_per_turn_before: float | None
    failures_per_turn_after: float | None
    failure_rate_before: float | None
    failure_rate_after: float | None


class Application(PooledApplication):
    """One agent's `PooledApplication` with the raw counts behind the rates."""

    attempts_before: int
    attempts_after: int
    failures_before: int
    failures_after: int
    turns_before: int
    turns_after: int


class Relevance(TypedDict):
    rag_turns: int
    rag_hits: int
    relevance_hybrid: float | None
    relevance_cosine: float | None
    relevance_lexical: float | None


class Economy(TypedDict):
    balance: int | None
    scrip_delta: int | None
    bounties_won: int
    bounty_reward: int
    memory_bought: int
    memory_sold: int
    trades: int


class Costs(TypedDict):
    turns: int
    context_tokens_per_turn: float | None
    model_tokens_per_turn: float | None
    cost_usd: float
    invalid_action_rate: float | None
    unparseable_rate: float | None
    loop_breaker_triggers: int
    loop_triggers: dict[str, int]


class AgentMetrics(LessonQuality, Uptake, Application, Relevance, Economy, Costs):
    """One agent's figures: each family's keys, in the order `agent_metrics` joins them."""


class CellTotals(PooledApplication):
    """A cell's figures: counts summed over its agents, rates pooled (numerators over denominators);
    `PooledApplication`'s keys stand after ``lesson_retrievals``."""

    score: float | None
    agents: int
    turns: float
    lessons_stored: float
    lessons_by_action: float
    lessons_migrated: float
    duplicate_rate: float | None
    generic_rate: float | None
    uptake_rate: float | None
    specificity_mean: float | None
    lesson_retrievals: float
    relevance_hybrid: float | None
    relevance_cosine: float | None
    relevance_lexical: float | None
    scrip_delta_total: float
    bounties_won: float
    bounty_reward: float
    memory_trades: int
    buyers_scrip_delta_mean: float | None
    non_buyers_scrip_delta_mean: float | None
    context_tokens_per_turn: float | None
    model_tokens_per_turn: float | None
    cost_usd: float
    invalid_action_rate: float | None
    unparseable_rate: float | None
    loop_breaker_triggers: float
    supply_ok: bool | None


class Retrieval(TypedDict):
    """A turn whose prompt showed a lesson: when, at which rank, with which score."""

    session: int
    turn: int
    rank: int
    score: float | None


class LessonFields(TypedDict):
    """What a lesson's evidence row holds wherever it is read (here and in comparison.json)."""

    lesson_id: str
    agent: str
    model: str
    session: int | None
    migrated: bool
    store_id: str
    text: str
    duplicate_of: str
    generic: bool
    generic_reason: str
    specific_items: list[str]
    retrievals: list[Retrieval]
    failures_named: list[str]
    failure_recurred: bool | None


class LessonEvidence(LessonFields):
    """A stored lesson with the judgement behind each metric (`lesson_evidence`)."""

    failure_recurred_after_stored: bool | None


class SessionRow(TypedDict):
    """A point of the learning curve: one session over all agents."""

    session: int
    turns: int
    failures: int
    bounty_reward: int
    lessons_stored: int
    failures_per_turn: float | None


CellT = TypeVar("CellT")
AgentT = TypeVar("AgentT")
LessonT = TypeVar("LessonT")
SessionT = TypeVar("SessionT")


class CellFigures(TypedDict, Generic[CellT, AgentT, LessonT, SessionT]):
    """A cell's measurements, one set of keys seen two ways: as `cell_metrics` writes them
    (`CellMetrics` below) and as comparison.json is read back by metric name, tolerating older
    documents (`reports.comparison_data.CellMetrics`)."""

    cell: CellT
    agents: dict[str, AgentT]
    lessons: list[LessonT]
    sessions: list[SessionT]


CellMetrics: TypeAlias = CellFigures[CellTotals, AgentMetrics, LessonEvidence, SessionRow]
"""What `reports.metrics.cell_metrics` returns."""


__all__ = ["AgentMetrics", "Application", "CellFigures", "CellMetrics", "CellTotals", "Costs", "Economy",
           "LessonEvidence", "LessonFields", "LessonQuality", "PooledApplication", "Relevance", "Retrieval", "SessionRow",
           "Uptake"]
