"""Retention caps archive (never lose) records; archived ones are listed and restorable."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemarket.memory import (
    DedupPolicy,
    MemoryStore,
    RetentionCap,
    RetentionPolicy,
    TierConfig,
    WorkingMemoryTier,
    add_deduplicated,
    apply_retention,
    archived,
    migrate_prefixed,
    restore,
)
from mnemarket.providers import HashingEmbedder


def _store(embedder, rows):
    store = MemoryStore(embedder)
    ids = [store.add(text, kind=kind, importance=imp, created=t, last_accessed=acc) for text, kind, imp, t, acc in rows]
    return store, ids


ROWS = [("a", "observation", 0.9, 0, 0), ("b", "observation", 0.1, 1, 9), ("c", "observation", 0.5, 2, 2),
        ("d", "observation", 0.2, 3, 3), ("r", "reflection", 0.9, 4, 4)]


@pytest.mark.parametrize(("strategy", "expected"), [
    ("fifo", ["a", "b"]),                  # oldest created
    ("recency", ["a", "c"]),               # least recently accessed
    ("importance_weighted", ["b", "d"]),   # lowest 0.7*importance + 0.3*recency
])
def test_strategies_choose_what_goes(embedder, strategy, expected):
    store, _ = _store(embedder, ROWS)
    policy = RetentionPolicy(caps=[RetentionCap(kind="observation", max_records=2)], strategy=strategy, decay=0.5)
    pruned = apply_retention(store, policy, now=10)
    assert sorted(store.get(i).text for i in pruned) == expected
    assert store.count({"kind": "observation", "archived": False}) == 2
    assert store.count({"kind": "reflection", "archived": False}) == 1  # other kinds untouched
    assert {r.text for r in archived(store)} == set(expected)
    (entry,) = store.audit_log("prune")
    assert entry.record_ids == pruned and entry.details["strategy"] == strategy and entry.actor == "retention"


def test_archived_records_leave_search_and_come_back(embedder):
    store, _ = _store(embedder, ROWS)
    pruned = apply_retention(store, RetentionPolicy(caps=[RetentionCap(kind="observation", max_records=3)], strategy="fifo"))
    assert [store.get(p).text for p in pruned] == ["a"]
    assert all(h.text != "a" for h in store.search("a", k=10))
    restore(store, pruned, actor="admin")
    assert any(h.text == "a" for h in store.search("a", k=10))
    assert store.audit_log("restore")[0].actor == "admin"
    assert apply_retention(store, RetentionPolicy(caps=[RetentionCap(kind="observation", max_records=10)])) == []


def test_dual_defaults_and_validation():
    policy = RetentionPolicy.dual()
    assert [(c.kind, c.max_records) for c in policy.caps] == [("observation", 1000), ("reflection", 100)]
    assert policy.strategy == "importance_weighted"
    with pytest.raises(ValueError, match="needs a kind or a tier"):
        RetentionCap(max_records=3)


def test_scope_makes_caps_per_agent(embedder):
    store = MemoryStore(embedder)
    for agent in ("alice", "bob"):
        for i in range(3):
            store.add(f"{agent} {i}", created=i, metadata={"agent": agent})
    policy = RetentionPolicy(caps=[RetentionCap(tier="episodic", max_records=1)], strategy="fifo", scope={"agent": "alice"})
    assert len(apply_retention(store, policy)) == 2
    assert store.count({"agent": "bob", "archived": False}) == 3


OPS = st.lists(st.tuples(st.sampled_from(["add", "lesson", "working", "consolidate", "prune", "migrate", "restore"]),
                         st.integers(0, 5), st.floats(0, 1)), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
def test_no_operation_loses_a_record_without_an_archive_entry(ops):
    store = MemoryStore(HashingEmbedder(dim=32))
    tiers = WorkingMemoryTier(store, TierConfig(working_capacity=3, episodic_capacity=4))
    seen: set[str] = set()
    for step, (op, n, importance) in enumerate(ops):
        if op == "add":
            seen.add(store.add(f"event {n} at {step}", created=step, importance=importance))
        elif op == "lesson":
            seen.add(add_deduplicated(store, f"LESSON: rule {n}", importance=importance, now=step).id)
        elif op == "working":
            seen.add(tiers.add_experience(f"item {n} {step}", importance=importance, created=step).id)
        elif op == "consolidate":
            tiers.consolidate(now=step)
        elif op == "prune":
            apply_retention(store, RetentionPolicy(caps=[RetentionCap(tier="episodic", max_records=n)]), now=step)
        elif op == "migrate":
            report = migrate_prefixed(f"LESSON: rule {n}\nnoise {n}", ["LESSON:"], store, now=step,
                                      dedup=DedupPolicy(near_threshold=None))
            seen.update(report.migrated + report.reinforced)
        elif op == "restore" and archived(store):
            restore(store, [archived(store)[0].id])
    assert seen <= set(store.ids())  # nothing ever returned by a write is gone
    hidden = {r.id for r in archived(store)}
    explained = {rid for op in ("prune", "evict", "archive") for e in store.audit_log(op) for rid in e.record_ids}
    assert hidden <= explained  # every archived record has an audit entry saying why
