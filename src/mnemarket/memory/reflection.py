"""Reflection: an LLM turns retrieved memories into higher-level insights stored as ``reflection``
records that point at their evidence.

Two forms, as the source systems have them:

- **anchored** (Generative Agents' ``reflect``): retrieve up to ``retrieval_count`` records for an
  anchor, ask for ``reflection_count`` insights, rate each insight's importance, store each with
  ``source_ids`` = the retrieved ids and ``questions_addressed`` = [anchor];
- **threshold-triggered** (ADR-006): importance accumulates as memories arrive; once it passes
  ``threshold`` the LLM asks questions of the recent records, each question retrieves evidence and
  yields one insight (``source_ids`` = that evidence, ``questions_addressed`` = [question]), and
  the accumulator resets. The accumulator lives in the store's settings, so a run killed and
  reopened resumes it.

Prompts use small schemas with ``maxLength``/``max_length`` so a tiny local model can answer them.
A failed model call writes nothing, returns a report with ``error`` and leaves a ``reflect_failed``
audit entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from mnemarket.memory.importance import BatchLLMRater, ImportanceRaterBase
from mnemarket.memory.persistence import Transaction
from mnemarket.memory.store import MemoryStore
from mnemarket.memory.weights import (
    ImportanceScale,
    RetrievalWeights,
    SearchMode,
    importance_from_scale,
    importance_to_scale,
)
from mnemarket.providers import LLM

INSIGHT_CHARS = 200
QUESTION_CHARS = 120
MEMORY_LINE_CHARS = 300

Insight = Annotated[str, StringConstraints(min_length=3, max_length=INSIGHT_CHARS, strip_whitespace=True)]
Question = Annotated[str, StringConstraints(min_length=3, max_length=QUESTION_CHARS, strip_whitespace=True)]


def _insights_model(n: int) -> type[BaseModel]:
    class Insights(BaseModel):
        model_config = ConfigDict(extra="forbid")
        insights: list[Insight] = Field(min_length=1, max_length=n)

    return Insights


def _questions_model(n: int) -> type[BaseModel]:
    class Questions(BaseModel):
        model_config = ConfigDict(extra="forbid")
        questions: list[Question] = Field(min_length=1, max_length=n)

    return Questions


class OneInsight(BaseModel):
    model_config = ConfigDict(extra="forbid")
    insight: Insight


class ReflectionReport(BaseModel):
    """What a reflection produced."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(default_factory=list)
    """New reflection records."""
    insights: list[str] = Field(default_factory=list)
    source_ids: list[list[str]] = Field(default_factory=list)
    """Evidence of each insight (parallel to ``ids``)."""
    questions: list[str] = Field(default_factory=list)
    """The anchor, or the generated questions."""
    error: str | None = None
    """Why nothing (or less) was written, if the model failed."""


def _token_budget(items: int, chars: int) -> int:
    """Tokens that always fit ``items`` strings of up to ``chars`` characters in JSON (a small
    model's odd tokens average about 1.5 characters), so bounded output is never cut short."""
    return 16 + items * (chars * 2 // 3 + 8)


def _numbered(texts: Sequence[str]) -> str:
    return "\n".join(f"{i + 1}. {t[:MEMORY_LINE_CHARS]}" for i, t in enumerate(texts))


def _audit_failure(store: MemoryStore, actor: str, why: str, details: Mapping[str, Any],
                   connection: Transaction | None, now: float | None) -> None:
    store.record_audit("reflect_failed", [], actor=actor, reason=why[:500], details=dict(details),
                       connection=connection, time=now)


def reflect_anchored(
    store: MemoryStore,
    anchor: str,
    llm: LLM,
    *,
    retrieval_count: int = 120,
    reflection_count: int = 5,
    now: float | None = None,
    actor: str = "",
    rater: ImportanceRaterBase | None = None,
    filter: Mapping[str, Any] | None = None,
    weights: RetrievalWeights | None = None,
    tier: str = "long_term",
    metadata: Mapping[str, Any] | None = None,
    max_tokens: int | None = None,
    connection: Transaction | None = None,
    mode: SearchMode | None = None,
) -> ReflectionReport:
    """Generative Agents' ``reflect``: insights about ``anchor`` from the memories it retrieves.

    Args:
        store: the memory store (reflections are written here).
        anchor: the topic.
        llm: writes the insights (and rates them when ``rater`` is None).
        retrieval_count: memories retrieved for the anchor (Generative Agents: 120).
        reflection_count: insights asked for (Generative Agents: 5).
        now: the current time (retrieval touches the evidence at ``now``; reflections are created then).
        actor: who reflects (audit).
        rater: rates each insight; None uses one batched LLM call with ``llm``.
        filter: restrict the evidence (e.g. to one agent).
        weights: retrieval weights (default the store's).
        mode: retrieval mode (default the store's; the genagents preset passes ``dense``).
        tier: tier of the reflection records.
        metadata: added to each reflection.
        max_tokens: cap of the insight call (default: enough for ``reflection_count`` full insights).
        connection: write inside the caller's transaction.
    """
    now = store.now if now is None else float(now)
    hits = store.search(anchor, k=retrieval_count, now=now, filter=filter, weights=weights, mode=mode,
                        chronological=True, connection=connection)
    report = ReflectionReport(questions=[anchor])
    if not hits:
        report.error = "no memories to reflect on"
        return report
    prompt = (f"Memories:\n{_numbered([h.text for h in hits])}\n\nWhat are {reflection_count} high-level insights "
              f"about {anchor!r} that these memories support? Each insight is one short sentence.")
    result = llm.generate([{"role": "user", "content": prompt}], schema=_insights_model(reflection_count),
                          max_tokens=max_tokens or _token_budget(reflection_count, INSIGHT_CHARS), temperature=0.0)
    if not result.ok or result.parsed is None:
        report.error = f"insight generation failed: {result.error or 'no parsed reply'}"
        _audit_failure(store, actor, report.error, {"anchor": anchor, "raw": result.text[:300]}, connection, now)
        return report
    insights = list(dict.fromkeys(result.parsed.insights))[:reflection_count]
    ratings = (rater or BatchLLMRater(llm)).rate(insights)
    evidence = [h.id for h in hits]
    items = []
    for text, rating in zip(insights, ratings):
        meta = {**dict(metadata or {}), "anchor": anchor, "importance_source": rating.source}
        if rating.error:
            meta["importance_error"] = rating.error[:300]
        items.append({"text": text, "kind": "reflection", "tier": tier, "importance": rating.value, "created": now,
                      "source_ids": evidence, "questions_addressed": [anchor], "metadata": meta})
    report.ids = store.add_many(items, connection=connection, actor=actor, reason=f"anchored reflection on {anchor!r}")
    report.insights = insights
    report.source_ids = [list(evidence) for _ in insights]
    store.record_audit("reflect", report.ids, actor=actor, reason=f"anchored reflection on {anchor!r}",
                       details={"anchor": anchor, "evidence": evidence, "model": result.model_id},
                       connection=connection, time=now)
    return report


class ThresholdReflectorState(BaseModel):
    """The saved state of a :class:`ThresholdReflector`."""

    model_config = ConfigDict(extra="forbid")

    accumulated: float = 0.0
    """Importance (on the reflector's scale) observed since the last reflection."""
    observed: int = 0
    """Memories observed since the last reflection."""
    reflections: int = 0
    """Reflections run so far."""
    last_reflection: float | None = None
    """Time of the last reflection."""


class ThresholdReflector:
    """Reflect when the importance accumulated since the last reflection passes ``threshold``.

    Args:
        threshold: accumulated importance (on ``scale``) that triggers (ADR-006: 100 on 1-10).
        scale: scale importance is accumulated on.
        questions: questions generated per reflection (ADR-006: 3).
        memories_per_question: evidence retrieved per question (ADR-006: 10).
        recent: recent records the questions are drawn from (ADR-006: 100).
        reflection_importance: importance of each reflection, on ``scale`` (ADR-006: 8).
        enabled: False never reflects (lite mode).
        key: name of the state in the store's settings.
        filter: restrict recent records and evidence (e.g. ``{"agent": "alice"}``).
        tier: tier of reflection records.
        mode: evidence retrieval mode (default the store's; the dual preset passes ``dense``).
    """

    def __init__(self, threshold: float = 100.0, *, scale: ImportanceScale = "1-10", questions: int = 3,
                 memories_per_question: int = 10, recent: int = 100, reflection_importance: float = 8.0,
                 enabled: bool = True, key: str = "threshold_reflector", filter: Mapping[str, Any] | None = None,
                 tier: str = "long_term", state: ThresholdReflectorState | None = None,
                 mode: SearchMode | None = None):
        self.threshold = float(threshold)
        self.mode = mode
        self.scale: ImportanceScale = scale
        self.questions = questions
        self.memories_per_question = memories_per_question
        self.recent = recent
        self.reflection_importance = reflection_importance
        self.enabled = enabled
        self.key = key
        self.filter = dict(filter or {})
        self.tier = tier
        self.state = state or ThresholdReflectorState()

    # ------------------------------------------------------------ state

    @property
    def accumulated(self) -> float:
        return self.state.accumulated

    def due(self) -> bool:
        """True when a reflection would run."""
        return self.enabled and self.state.accumulated >= self.threshold

    def observe(self, importance: float, *, store: MemoryStore | None = None,
                connection: Transaction | None = None) -> float:
        """Add a memory's importance (0..1, stored scale) to the accumulator; returns the total.

        With ``store`` the new state is saved in its settings (same transaction as ``connection``).
        """
        self.state.accumulated += float(importance_to_scale(float(importance), self.scale))
        self.state.observed += 1
        if store is not None:
            self.save(store, connection=connection)
        return self.state.accumulated

    def save(self, store: MemoryStore, *, connection: Transaction | None = None) -> None:
        """Persist the state in ``store.settings[key]``."""
        store.update_settings({self.key: self.state.model_dump()}, connection=connection)

    @classmethod
    def load(cls, store: MemoryStore, key: str = "threshold_reflector", **options: Any) -> ThresholdReflector:
        """A reflector resuming the state saved in ``store`` (fresh if none)."""
        saved = store.settings.get(key)
        state = ThresholdReflectorState.model_validate(saved) if saved else ThresholdReflectorState()
        return cls(key=key, state=state, **options)

    # -------------------------------------------------------- reflecting

    def maybe_reflect(self, store: MemoryStore, llm: LLM, now: float | None = None, actor: str = "", *,
                      connection: Transaction | None = None, max_tokens: int | None = None) -> ReflectionReport | None:
        """Reflect if due; returns None when not due. The accumulator resets only on success."""
        if not self.due():
            return None
        return self.reflect(store, llm, now, actor, connection=connection, max_tokens=max_tokens)

    def reflect(self, store: MemoryStore, llm: LLM, now: float | None = None, actor: str = "", *,
                connection: Transaction | None = None, max_tokens: int | None = None) -> ReflectionReport:
        """Questions from recent records, evidence per question, one insight per question."""
        now = store.now if now is None else float(now)
        recent = [r for r in store.records({**self.filter, "archived": False, "kind": {"ne": "reflection"}})]
        recent = sorted(recent, key=lambda r: r.created)[-self.recent:]
        report = ReflectionReport()
        if not recent:
            report.error = "no memories to reflect on"
            return report
        prompt = (f"Memories:\n{_numbered([r.text for r in recent])}\n\nGiven only the memories above, what are the "
                  f"{self.questions} most salient high-level questions we can answer about the subjects in them?")
        result = llm.generate([{"role": "user", "content": prompt}], schema=_questions_model(self.questions),
                              max_tokens=max_tokens or _token_budget(self.questions, QUESTION_CHARS), temperature=0.0)
        if not result.ok or result.parsed is None:
            report.error = f"question generation failed: {result.error or 'no parsed reply'}"
            _audit_failure(store, actor, report.error, {"raw": result.text[:300]}, connection, now)
            return report
        questions = list(dict.fromkeys(result.parsed.questions))[: self.questions]
        importance = float(importance_from_scale(self.reflection_importance, self.scale))
        failures = []
        for question in questions:
            hits = store.search(question, k=self.memories_per_question, now=now, mode=self.mode,
                                filter={**self.filter, "kind": {"ne": "reflection"}}, connection=connection)
            if not hits:
                failures.append(f"{question!r}: no evidence")
                continue
            ask = (f"Memories:\n{_numbered([h.text for h in hits])}\n\nQuestion: {question}\n"
                   "Answer with one insight, a short sentence the memories support.")
            answer = llm.generate([{"role": "user", "content": ask}], schema=OneInsight,
                                  max_tokens=max_tokens or _token_budget(1, INSIGHT_CHARS),
                                  temperature=0.0)
            if not answer.ok or answer.parsed is None:
                failures.append(f"{question!r}: {answer.error or 'no parsed reply'}")
                continue
            evidence = [h.id for h in hits]
            rid = store.add(answer.parsed.insight, kind="reflection", tier=self.tier, importance=importance,
                            created=now, source_ids=evidence, questions_addressed=[question],
                            metadata={**self.filter, "trigger": "threshold", "importance_source": "reflection_rule"},
                            connection=connection, actor=actor, reason="threshold reflection")
            report.ids.append(rid)
            report.insights.append(answer.parsed.insight)
            report.source_ids.append(evidence)
            report.questions.append(question)
        if failures:
            report.error = "; ".join(failures)
        if not report.ids:
            _audit_failure(store, actor, report.error or "no insight", {"questions": questions}, connection, now)
            return report
        before = self.state.accumulated
        self.state = ThresholdReflectorState(accumulated=0.0, observed=0, reflections=self.state.reflections + 1,
                                             last_reflection=now)
        self.save(store, connection=connection)
        store.record_audit("reflect", report.ids, actor=actor, connection=connection, time=now,
                           reason=f"accumulated importance {before:g} passed threshold {self.threshold:g}",
                           details={"questions": report.questions, "evidence": report.source_ids,
                                    "accumulated": before, "threshold": self.threshold, "model": result.model_id})
        return report


__all__ = ["ReflectionReport", "ThresholdReflector", "ThresholdReflectorState", "reflect_anchored"]
