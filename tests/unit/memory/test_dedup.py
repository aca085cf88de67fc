"""De-duplication on write: exact and near duplicates reinforce instead of adding a copy."""

from __future__ import annotations

import numpy as np
import pytest

from mnemarket.memory import (
    DedupPolicy,
    MemoryStore,
    add_deduplicated,
    find_duplicate,
    normalise_text,
    reinforce,
)
from mnemarket.memory.dedup import text_hash


def test_normalisation_ignores_case_space_and_trailing_punctuation():
    assert normalise_text("  LESSON:  Check   balance first. ") == "lesson: check balance first"
    assert text_hash("- Lesson: check balance first!") == text_hash("lesson: check BALANCE first")
    assert text_hash("lesson: check balance") != text_hash("lesson: check balances")


def test_exact_duplicate_reinforces_with_audit(embedder):
    store = MemoryStore(embedder)
    first = add_deduplicated(store, "LESSON: use integers for prices", importance=0.4, now=1, actor="alice")
    again = add_deduplicated(store, "lesson: use integers for prices.", importance=0.6, now=5, actor="alice", by="wm:7")
    assert not first.reinforced and again.reinforced and again.exact
    assert again.id == first.id and len(store) == 1
    record = store.get(first.id)
    assert record.importance == pytest.approx(0.6 + 0.05)
    assert record.access_count == 1 and record.reinforced_by == ["wm:7"] and record.last_accessed == 5
    (entry,) = store.audit_log("reinforce")
    assert entry.record_ids == [first.id] and entry.actor == "alice" and entry.details["exact"] is True
    assert entry.details["importance_before"] == pytest.approx(0.4)


def test_near_duplicate_uses_the_cosine_threshold(embedder):
    store = MemoryStore(embedder)
    base = "LESSON: escrow deposit requires setting authorized_writer first"
    near = "LESSON: escrow deposit requires setting the authorized_writer first"
    rid = store.add(base, kind="lesson")
    cosine = float(embedder.vectors([base])[0] @ embedder.vectors([near])[0])
    assert 0.5 < cosine < 0.999
    assert find_duplicate(store, near, threshold=cosine - 0.01) == rid
    assert find_duplicate(store, near, threshold=cosine + 0.01) is None
    loose = add_deduplicated(store, near, policy=DedupPolicy(near_threshold=cosine - 0.01))
    assert loose.reinforced and not loose.exact and loose.similarity == pytest.approx(cosine, abs=1e-5)
    strict = add_deduplicated(store, near, policy=DedupPolicy(near_threshold=0.999))
    assert not strict.reinforced and len(store) == 2


def test_policy_kinds_and_switch(embedder):
    store = MemoryStore(embedder)
    store.add("the door is red", kind="observation")
    # observations are not de-duplicated by default (lessons, strategies, insights are)
    assert not add_deduplicated(store, "the door is red", kind="observation").reinforced
    assert len(store) == 2
    store.add("LESSON: be kind", kind="lesson")
    assert not add_deduplicated(store, "LESSON: be kind", policy=DedupPolicy(enabled=False)).reinforced
    everything = DedupPolicy(kinds=None)
    assert add_deduplicated(store, "the door is red", kind="observation", policy=everything).reinforced


def test_archived_records_are_not_reinforced(embedder):
    store = MemoryStore(embedder)
    rid = store.add("LESSON: x marks the spot", kind="lesson")
    store.archive([rid])
    outcome = add_deduplicated(store, "LESSON: x marks the spot")
    assert not outcome.reinforced and outcome.id != rid


def test_reinforce_caps_importance_and_keeps_history(embedder):
    store = MemoryStore(embedder)
    rid = store.add("LESSON: a", kind="lesson", importance=0.98)
    reinforce(store, rid, "m9", importance_boost=0.1, now=3)
    record = reinforce(store, rid, "m10", now=4)
    assert record.importance == 1.0 and record.reinforced_by == ["m9", "m10"] and record.access_count == 2
    assert np.isclose(record.last_accessed, 4)


def test_dedup_persists_and_audits_in_the_callers_transaction(open_store):
    store = open_store()
    rid = store.add("LESSON: check ownership", kind="lesson")
    with store.persistence.engine.connect() as conn:
        with conn.begin():
            add_deduplicated(store, "LESSON: check ownership", connection=conn, actor="bob")
        trans = conn.begin()
        add_deduplicated(store, "LESSON: check ownership", connection=conn, actor="bob")
        trans.rollback()
    reopened = open_store()
    assert reopened.get(rid).access_count == 1  # the rolled-back reinforcement left no trace
    assert [e.actor for e in reopened.audit_log("reinforce")] == ["bob"]
