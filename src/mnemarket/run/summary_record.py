"""summary.json as types: what `run.summary.summarize` computes (balances, supply, stores, trades,
per-agent figures) and what the runner adds when it writes the file. It is a JSON document that
`inspect --json` prints and the report, the metrics and experiments read back by key, so its parts
are typed dicts: the keys and values are what the file always held.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired

from typing_extensions import TypedDict  # pydantic validates a read-back file against it (run_info.read_summary)


class BudgetOverrun(TypedDict):
    """One agent's workflow step whose prompts ran over the token budget (a row of summary.json)."""

    agent: str
    step: str
    turns: int
    over_budget: int
    max_tokens: int
    budget: int | None
    dropped_sections: list[str]


class StoreRow(TypedDict):
    id: str
    owner: str
    creator: str
    entries: int


class TradeRow(TypedDict):
    artifact_id: str
    seller: str
    buyer: str
    price: int
    kind: str
    tick: int


class AgentTotals(TypedDict):
    """The per-agent counts summed over the agents (summary.json's top level)."""

    turns: int
    invalid_actions: int
    failed_actions: int
    lessons_written: int
    memory_invokes: int
    bounties_paid: int


class RejectedLesson(TypedDict):
    """A lesson a session end refused to migrate into long-term memory, and why (`SessionReport.rejected`)."""

    session: int
    lesson: str
    reason: str


class RejectedLessonStepLine(TypedDict):
    """A line a lesson step refused to write into working memory, and why (`LessonRecord.rejected`);
    ``lesson`` and ``reason`` are cut to `run.summary.REFUSED_TEXT_CHARS` (the step's marker in
    world state keeps them whole)."""

    session: int
    after_turn: int
    trigger: str
    """``failure`` (the step after a failed turn) or ``session_end``."""
    lesson: str
    reason: str


class AgentFigures(AgentTotals):
    """One agent's figures in summary.json (an agent that took a turn)."""

    lessons_stored_by_action: int
    lessons_migrated: int
    loop_breaker_triggers: int
    mean_context_tokens: float
    mean_baseline_tokens: float
    balance: int
    actions: dict[str, int]
    lessons_rejected_at_session_end: NotRequired[list[RejectedLesson]]
    """What its session ends refused to migrate (vacuous or repetitive), oldest session first (at a
    past turn, `inspect --at`, those of the session ends before it); absent in older files."""
    lessons_rejected_by_lesson_step: NotRequired[int]
    """How many lines its lesson steps refused to write into working memory (`LessonRecord.rejected`),
    so they never reached a session end; absent in older files."""
    lessons_rejected_by_lesson_step_lines: NotRequired[list[RejectedLessonStepLine]]
    """Those lines themselves, oldest step first (the count above is their number); absent in older files."""


class RunSummary(TypedDict, total=False):
    """summary.json and the `inspect --json` document: `summarize`'s keys, and what the runner adds
    when it writes the file (scenario, status, message, models, llm_calls_damaged, budget_overruns). Read back from a
    file it may lack any of them (an older or interrupted run), so every key is optional."""

    balances: dict[str, int]
    total_scrip: int
    initial_total_scrip: int
    minted: int
    burned: int
    supply_ok: bool
    artifacts: int
    memory_stores: list[StoreRow]
    trades: list[TradeRow]
    lessons_migrated: int
    events: int
    turns: int
    invalid_actions: int
    failed_actions: int
    lessons_written: int
    memory_invokes: int
    bounties_paid: int
    """`AgentTotals`' keys: optional here, as every key of a summary read back is."""
    tick: int
    agents: Mapping[str, AgentFigures]
    """Agent id -> figures (`inspect --at` adds each agent's working memory and memory entries)."""
    scenario: str
    status: str
    message: str
    models: dict[str, dict[str, Any]]
    llm_calls_damaged: dict[str, Any]
    """Damaged lines of llm_calls.jsonl and the estimate the spend caps count them at (`Spent.estimated`)."""
    budget_overruns: list[BudgetOverrun]


__all__ = ["AgentFigures", "AgentTotals", "BudgetOverrun", "RejectedLesson", "RejectedLessonStepLine", "RunSummary", "StoreRow",
           "TradeRow"]
