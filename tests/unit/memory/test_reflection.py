"""Anchored and threshold-triggered reflection with a scripted LLM."""

from __future__ import annotations

import pytest

from mnemarket.memory import MemoryStore, ThresholdReflector, reflect_anchored
from mnemarket.providers import ScriptedLLM

EVENTS = ["Bob missed the deadline again", "Bob was stressed about the project deadline",
          "Alice sold apples at the market", "Bob asked for an extension on the deadline"]


def _store(embedder):
    store = MemoryStore(embedder)
    for t, text in enumerate(EVENTS):
        store.add(text, importance=0.5, created=t)
    return store


def policy(messages, schema):
    name = schema.__name__ if schema else ""
    prompt = messages[-1].content
    if name == "Insights":
        return {"insights": ["Bob struggles with deadlines", "Bob asks for help when stressed"]}
    if name == "ImportanceScores":
        return {"scores": [9, 6]}
    if name == "Questions":
        return {"questions": ["How does Bob handle deadlines?", "What does Alice sell?"]}
    if name == "OneInsight":
        return {"insight": "Bob handles deadlines poorly" if "Bob" in prompt.split("Question:")[1] else "Alice sells fruit"}
    raise AssertionError(f"unexpected schema {name}")


def test_anchored_reflection_stores_insights_with_evidence(embedder):
    store = _store(embedder)
    report = reflect_anchored(store, "Bob and deadlines", ScriptedLLM(policy), retrieval_count=3, reflection_count=2,
                              now=10, actor="alice")
    assert report.error is None and len(report.ids) == 2
    hits = [store.get(i) for i in report.source_ids[0]]
    assert len(hits) == 3 and all(h.last_accessed == 10 for h in hits)  # retrieval touched its evidence
    first, second = (store.get(i) for i in report.ids)
    assert first.kind == "reflection" and first.text == "Bob struggles with deadlines"
    assert first.source_ids == report.source_ids[0] and first.questions_addressed == ["Bob and deadlines"]
    assert first.importance == pytest.approx(8 / 9) and second.importance == pytest.approx(5 / 9)
    assert first.metadata["importance_source"] == "llm_batch" and first.created == 10
    (entry,) = store.audit_log("reflect")
    assert entry.record_ids == report.ids and entry.actor == "alice" and entry.details["evidence"] == report.source_ids[0]


def test_anchored_reflection_failure_writes_nothing_but_is_audited(embedder):
    store = _store(embedder)
    report = reflect_anchored(store, "Bob", ScriptedLLM(["not json", "still not json"]), retrieval_count=2)
    assert report.ids == [] and "insight generation failed" in report.error
    assert store.count({"kind": "reflection"}) == 0
    assert store.audit_log("reflect_failed")[0].details["anchor"] == "Bob"
    assert reflect_anchored(MemoryStore(embedder), "x", ScriptedLLM([])).error == "no memories to reflect on"


def test_threshold_reflection_triggers_resets_and_points_at_evidence(embedder):
    store = _store(embedder)
    reflector = ThresholdReflector(threshold=20, scale="1-10", questions=2, memories_per_question=2)
    llm = ScriptedLLM(policy)
    reflector.observe(1.0)  # 10 on the 1-10 scale
    assert reflector.maybe_reflect(store, llm, now=5) is None
    reflector.observe(1.0)
    report = reflector.maybe_reflect(store, llm, now=6, actor="bob")
    assert report is not None and report.questions == ["How does Bob handle deadlines?", "What does Alice sell?"]
    bob = store.get(report.ids[0])
    assert bob.text == "Bob handles deadlines poorly" and bob.questions_addressed == [report.questions[0]]
    evidence = store.search(report.questions[0], k=2, filter={"kind": "observation"}, touch=False)
    assert bob.source_ids == [h.id for h in evidence] == report.source_ids[0]
    assert bob.importance == pytest.approx(7 / 9)  # 8 on 1-10
    assert reflector.accumulated == 0 and reflector.state.reflections == 1
    assert store.audit_log("reflect")[0].details["accumulated"] == 20


def test_threshold_state_survives_reopen_and_failures_keep_the_accumulator(open_store):
    store = open_store()
    for t, text in enumerate(EVENTS):
        store.add(text, created=t)
    reflector = ThresholdReflector(threshold=15, key="alice_reflector")
    reflector.observe(0.9, store=store)  # 9.1 on 1-10
    resumed_store = open_store()  # as after a kill -9: a fresh process reopens the database
    resumed = ThresholdReflector.load(resumed_store, key="alice_reflector", threshold=15)
    assert resumed.accumulated == pytest.approx(9.1) and resumed.state.observed == 1
    resumed.observe(0.9, store=resumed_store)
    failed = resumed.maybe_reflect(resumed_store, ScriptedLLM(["??", "??"]))
    assert failed is not None and "question generation failed" in failed.error
    assert resumed.due() and ThresholdReflector.load(open_store(), key="alice_reflector").accumulated == pytest.approx(18.2)
    done = resumed.maybe_reflect(resumed_store, ScriptedLLM(policy), now=9)
    assert len(done.ids) == 2
    assert ThresholdReflector.load(open_store(), key="alice_reflector").state.reflections == 1
    assert ThresholdReflector.load(open_store(), key="alice_reflector").accumulated == 0


def test_disabled_reflector_never_reflects(embedder):
    reflector = ThresholdReflector(threshold=1, enabled=False)
    reflector.observe(1.0)
    assert reflector.maybe_reflect(_store(embedder), ScriptedLLM([])) is None
