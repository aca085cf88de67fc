"""Working tier with FIFO eviction, routing by importance, consolidation, decay-weighted retrieval."""

from __future__ import annotations

import pytest

from mnemarket.memory import MemoryStore, TierConfig, WorkingMemoryTier, archived, consolidate


def test_working_capacity_evicts_oldest_to_the_archive(embedder):
    tiers = WorkingMemoryTier(MemoryStore(embedder), TierConfig(working_capacity=10), actor="H001")
    placements = [tiers.add_working(f"Event {i}", importance=0.5, created=i) for i in range(12)]
    assert tiers.count("working") == 10
    assert placements[10].evicted == [placements[0].id] and placements[11].evicted == [placements[1].id]
    assert {r.text for r in archived(tiers.store)} == {"Event 0", "Event 1"}
    entries = tiers.store.audit_log("evict")
    assert [e.record_ids for e in entries] == [[placements[0].id], [placements[1].id]]
    assert entries[0].actor == "H001" and "FIFO" in entries[0].reason


def test_add_experience_routes_by_threshold(embedder):
    tiers = WorkingMemoryTier(MemoryStore(embedder))
    assert tiers.add_experience("major flood", importance=0.9).tier == "episodic"
    assert tiers.add_experience("exactly at threshold", importance=0.7).tier == "episodic"
    assert tiers.add_experience("neighbour adapted", importance=0.4).tier == "working"


def test_consolidate_moves_important_working_items_and_reports(embedder):
    tiers = WorkingMemoryTier(MemoryStore(embedder), TierConfig(episodic_threshold=1.0, consolidation_threshold=0.7))
    low = tiers.add_working("Low importance", importance=0.3).id
    high = tiers.add_working("High importance", importance=0.8).id
    report = tiers.consolidate()
    assert report.moved == [high] and report.working_after == 1 and report.episodic_after == 1
    assert tiers.store.get(high).tier == "episodic" and tiers.store.get(low).tier == "working"
    (entry,) = tiers.store.audit_log("consolidate")
    assert entry.record_ids == [high] and entry.details["moved"] == 1
    assert tiers.consolidate().moved == []


def test_retrieval_lists_working_first_then_decayed_episodic(embedder):
    tiers = WorkingMemoryTier(MemoryStore(embedder), TierConfig(decay=0.95))
    tiers.add_episodic("Year 1 event", importance=0.9, created=1)
    tiers.add_episodic("Year 20 event", importance=0.5, created=20)
    tiers.add_working("Recent event", importance=0.5, created=20)
    items = tiers.retrieve(top_k=3, now=20)
    # working first; then 0.5 * 0.95**0 = 0.5 beats 0.9 * 0.95**19 = 0.34: decay outweighs importance
    assert [i.text for i in items] == ["Recent event", "Year 20 event", "Year 1 event"]
    assert items[2].score == pytest.approx(0.9 * 0.95 ** 19)
    assert tiers.decayed_importance(20)[items[1].id] == pytest.approx(0.5)
    earlier = tiers.retrieve(top_k=3, now=10)  # at year 10 the old flood still weighs more: 0.9*0.95**9 = 0.57
    assert [i.text for i in earlier][1:] == ["Year 1 event", "Year 20 event"]
    mixed = WorkingMemoryTier(tiers.store, TierConfig(working_first=False))
    assert [i.tier for i in mixed.retrieve(top_k=3, now=10)] == ["episodic", "working", "episodic"]


def test_episodic_capacity_archives_the_least_valuable(embedder):
    tiers = WorkingMemoryTier(MemoryStore(embedder), TierConfig(episodic_capacity=2, decay=0.95))
    tiers.add_episodic("old minor", importance=0.71, created=0)
    tiers.add_episodic("big", importance=0.95, created=1)
    placement = tiers.add_episodic("new", importance=0.8, created=5)
    assert [tiers.store.get(i).text for i in placement.evicted] == ["old minor"]
    assert tiers.count("episodic") == 2


def test_scope_separates_agents_in_one_store(embedder):
    store = MemoryStore(embedder)
    alice = WorkingMemoryTier(store, TierConfig(working_capacity=1), scope={"agent": "alice"})
    bob = WorkingMemoryTier(store, TierConfig(working_capacity=1), scope={"agent": "bob"})
    alice.add_working("a1", created=0)
    bob.add_working("b1", created=0)
    alice.add_working("a2", created=1)
    assert [i.text for i in bob.retrieve()] == ["b1"]
    assert store.get(alice.retrieve()[0].id).metadata["agent"] == "alice"
    assert consolidate(store, 0.0, scope={"agent": "bob"}).moved == [bob.retrieve()[0].id]


def test_tiers_survive_reopen(open_store):
    store = open_store()
    tiers = WorkingMemoryTier(store, TierConfig(working_capacity=2))
    for i in range(3):
        tiers.add_working(f"w{i}", importance=0.9 if i == 2 else 0.1, created=i)
    tiers.consolidate()
    again = WorkingMemoryTier(open_store(), TierConfig(working_capacity=2))
    assert again.count("working") == 1 and again.count("episodic") == 1
    assert [r.text for r in archived(again.store)] == ["w0"]
    assert [e.operation for e in again.store.audit_log() if e.operation != "add"] == ["evict", "consolidate"]
